"""Shared fixtures of the test suite, and which tests are ``slow``.

Markers: ``slow``: end-to-end runs (a CLI selection, a study, a dask cluster, a fresh interpreter,
the docs' examples) and the few unit tests that take seconds, marked where they are written
(``pytestmark = pytest.mark.slow`` in a module, ``@pytest.mark.slow`` on a test; a test over ~3 s
on 2 cores belongs there).  ``make test`` and ``pytest`` alone (the default ``-m "not slow"`` in
pyproject.toml) run the others, under 10 minutes on 2 cores; ``make test-slow`` runs the slow ones and
``make test-all`` everything (``-m "slow or not slow"``); CI runs ``make test`` then ``make test-slow``.  Test helpers shared by
several modules live in ``tests/_support/`` (on ``sys.path`` through pytest's ``pythonpath`` setting).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile

import numpy as np
import pytest

from hybridpriv.core.privacy import Bounds, Group

_SCRATCH: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Every temporary file of this test process in one folder, removed at the end: PyTensor's numba backend
    writes each compiled graph's source to a named temporary file it never deletes (thousands per run)."""
    scratch = tempfile.mkdtemp(prefix="hybridpriv-tests-")
    _SCRATCH.append(scratch)
    os.environ["TMPDIR"] = tempfile.tempdir = scratch


def pytest_unconfigure(config: pytest.Config) -> None:
    # after multiprocessing's own exit finalizers (its pymp-* folders live in the scratch folder and are removed at
    # priority -100; removing the folder first made them print a FileNotFoundError traceback at exit)
    from multiprocessing.util import Finalize

    for scratch in _SCRATCH:
        Finalize(None, shutil.rmtree, args=(scratch,), kwargs={"ignore_errors": True}, exitpriority=-101)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed (each test gets its own)."""
    return np.random.default_rng(20261123)


@pytest.fixture
def grouped_setting() -> tuple[list[Group], Bounds]:
    """A small grouped setting: a public panel beside two private groups of different epsilons."""
    return [Group("pub", 50, math.inf), Group("a", 200, 1.0), Group("b", 100, 0.2)], Bounds(-10.0, 10.0)
