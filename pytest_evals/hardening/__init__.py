"""What protects users from their own data: secret redaction and input limits.

:mod:`.redaction` scrubs API keys and other secrets from anything that leaves a process;
:mod:`.input_limits` holds the case reader's size limits; :mod:`.report_guard` is the
pytest plugin that scrubs every report and sets the limits from ini keys.
"""
