"""Suite files and the cases they point at, read without knowing any task class.

:mod:`.suite_config` reads, overrides and validates a suite file (the task layer passes a
catalog of task configuration models); :mod:`.jsonl_cases` reads JSON Lines case files
lazily, with line numbers and limits.
"""
