"""Evaluating cases in the process that runs them (a plain run, or each xdist worker).

:mod:`.case_runner` decides how each case runs (inline on pytest's thread, driven, or
prefetched on the event loop); :mod:`.prefetch` evaluates cases ahead of pytest's item
loop within a window; :mod:`.inline_eval` tries cached cases on pytest's thread;
:mod:`.heap_freeze` keeps the garbage collector off long-lived objects;
:mod:`.batch_phase` and :mod:`.batch_plugin` run the Batch API mode before the items.
"""
