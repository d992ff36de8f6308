"""Test helpers shipped with the package, for this project's tests, benchmarks and users'.

Owns the loopback OpenAI-compatible server (:mod:`.fake_openai`: chat completions with
scripted responders, latency and failures; ``python -m pytest_evals.testing.fake_openai``)
and its files and batches endpoints (:mod:`.fake_batches`). Nothing here is imported by
a run.
"""
