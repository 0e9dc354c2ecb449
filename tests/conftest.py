"""Shared fixtures of the test suite.

Markers: ``slow`` (long-running; ``pytest -m "not slow"`` is the fast inner loop, ``make test``
runs everything).  Test helpers shared by several modules live in ``tests/_support/`` (on
``sys.path`` through pytest's ``pythonpath`` setting).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.privacy import Bounds, Group


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed (each test gets its own)."""
    return np.random.default_rng(20261123)


@pytest.fixture
def grouped_setting() -> tuple[list[Group], Bounds]:
    """A small grouped setting: a public panel beside two private groups of different epsilons."""
    return [Group("pub", 50, math.inf), Group("a", 200, 1.0), Group("b", 100, 0.2)], Bounds(-10.0, 10.0)
