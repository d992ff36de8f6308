"""xdist workers take the controller's rootdir.

pytest decides the rootdir before plugins load, from the command line's arguments that
name existing paths, and a plugin option's value (``--evals-report-dir ../out``) is one
of them then: pytest does not know the option yet. xdist starts each worker with the
same arguments, later; a folder that appeared in between (the run's output folder,
made by the controller or by CI) moves the worker's rootdir to a common ancestor.
Its node ids then differ from the controller's (``proj/s/j.eval.yaml`` for
``s/j.eval.yaml``), the controller looks for ``<rootdir>/proj/s/j.eval.yaml``, finds no
suite file, and checks no gate.

Each local worker is started with ``--rootdir`` set to the controller's, through the
worker's environment (``PYTEST_ADDOPTS``, read before the rootdir is decided; execnet's
``env:`` gateway setting), so every process agrees on node ids, suite paths, relative
``input_path`` lookups and the cache folder. Remote workers (rsync, ``chdir``) keep
xdist's own rules: the controller's path means nothing on their machine. The
controller's aggregator calls :func:`share_rootdir` from xdist's
``pytest_xdist_setupnodes``, before any worker starts.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

import pytest

ADDOPTS = "PYTEST_ADDOPTS"


def rootdir_addopts(current: str, rootdir: str) -> str:
    """``current`` (a ``PYTEST_ADDOPTS`` value) with ``--rootdir`` appended; the command
    line's own ``--rootdir``, if any, still comes later and wins (it names the same folder)."""
    return f"{current} --rootdir={shlex.quote(rootdir)}".strip()


def share_rootdir(config: pytest.Config, specs: Sequence[Any]) -> None:
    """Start each local worker of ``specs`` (xdist's ``pytest_xdist_setupnodes``, on the
    controller, before any worker starts) with this process's rootdir."""
    rootdir = str(config.rootpath)
    for spec in specs:
        if not getattr(spec, "popen", False) or getattr(spec, "chdir", None):
            continue
        env = getattr(spec, "env", None)
        if not isinstance(env, dict):
            continue
        env[ADDOPTS] = rootdir_addopts(env.get(ADDOPTS, os.environ.get(ADDOPTS, "")), rootdir)
