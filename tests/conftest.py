"""Shared fixtures of the test suite, and which tests are ``slow``.

Markers: ``slow``: end-to-end runs (a CLI selection, a study, a dask cluster, a fresh interpreter,
the docs' examples) and the few unit tests that take seconds.  ``pytest`` alone (the default
``-m "not slow"`` in pyproject.toml) is the fast inner loop; ``make test`` runs everything
(``-m "slow or not slow"``).  :data:`SLOW` lists them in one place (timed on 2 cores; a test over
~3 s belongs here).  Test helpers shared by several modules live in ``tests/_support/`` (on
``sys.path`` through pytest's ``pythonpath`` setting).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.privacy import Bounds, Group


#: Node-id prefixes of the slow tests: whole end-to-end modules, then single tests.
SLOW = (
    "tests/studies/",
    "tests/test_spec_public_private.py",
    "tests/test_spec_hybrid_trust.py",
    "tests/test_spec_kmeans.py",
    "tests/test_distributed.py",
    "tests/test_resume.py",
    "tests/release/test_cli.py",
    "tests/release/test_auto_family.py",
    "tests/test_custom_mechanisms.py::test_a_spec_named_mechanism_is",
    "tests/test_custom_mechanisms.py::test_the_audit",
    "tests/test_docs.py::test_block_runs",
    "tests/test_cli.py::test_select_",
    "tests/test_cli.py::test_contradictory_knowledge_is_refused",
    "tests/test_cli.py::test_study_run_is_reproducible",
    "tests/models/test_determinism.py::test_nuts_draws_are_the_same_bytes",
    "tests/test_audit_matrix.py::test_the_whole_matrix_at_one_seed",
    "tests/test_study_registry.py::test_study_run_all",
    "tests/test_progress.py::test_quiet_select",
    "tests/models/test_avent_released.py",
    "tests/test_useritem.py::test_numbers_on_a_two_worker_cluster",
    "tests/bad_input/test_estimators.py::test_estimate_rejects_bad_data",
    "tests/bad_input/test_theory.py",
    "tests/bad_input/test_cli.py",
    "tests/models/test_grouped.py::test_fit_is_reproducible",
    "tests/models/test_grouped.py::test_released_mean_moves_mu_toward_it",
    "tests/test_theory.py::test_pdp_optimal_threshold_beats_dense_grid",
    "tests/release/test_noise.py::test_opendp_gaussian",
    "tests/models/test_useritem.py::test_known_n_and_a_prior_on_n",
    "tests/bad_input/test_useritem.py::test_user_item_model_accepts_feasible_knowledge",
    "tests/models/test_grouped_mixture.py::test_auto_",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW` (node ids are relative to the repository root)."""
    root = config.rootpath
    for item in items:
        nodeid = item.nodeid
        if not nodeid.startswith("tests/"):  # run from another folder: make the id root-relative
            try:
                nodeid = str(item.path.relative_to(root)) + nodeid[nodeid.index("::"):]
            except ValueError:
                continue
        if nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed (each test gets its own)."""
    return np.random.default_rng(20261123)


@pytest.fixture
def grouped_setting() -> tuple[list[Group], Bounds]:
    """A small grouped setting: a public panel beside two private groups of different epsilons."""
    return [Group("pub", 50, math.inf), Group("a", 200, 1.0), Group("b", 100, 0.2)], Bounds(-10.0, 10.0)
