"""Fixtures and process setup for the core tests."""

from __future__ import annotations

# pytester restores ``sys.modules`` after each in-process run. numpy refuses to be
# imported a second time in one process, and the metrics import it lazily inside an
# inner run, so import it here, before pytester takes its snapshot.
import numpy  # noqa: F401
