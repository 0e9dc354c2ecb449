"""The audit case registry: every DP-claiming built-in at two settings, and broken variants.

``CORRECT``: name -> ``run(seed)`` returning :class:`~hybridpriv.testing.AuditReport` by unit; a
correct built-in must pass.  ``BROKEN``: name -> ``(run(seed), unit)``; the variant breaks the
promise of ``unit`` and must be caught there.  ``COVERS``: correct case name -> the name of the
class or primitive it audits, read by :func:`dp_claiming_built_ins` / :func:`uncovered` (the
coverage check: every DP-claiming built-in needs cases at two settings).

Every case uses ``SAMPLES`` outputs per dataset and confidence ``CONFIDENCE``.  The cases live
in one module per family: :mod:`.primitives` (noise primitives, contribution-bounded counts),
:mod:`.grouped` (grouped and hybrid-trust estimators), :mod:`.wang` (Wang et al.) and
:mod:`.kmeans` (K-means and randomized response); a family added as a package brings its own
(:meth:`hybridpriv.core.family.Family.audit_cases`, audited on its ``audit_data``).  ``tests/test_audits.py`` runs them, and
``benchmarks/audit_rates.py`` measures their false-alarm and detection rates.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter
from types import ModuleType

from . import grouped, kmeans, primitives, wang  # noqa: F401  (each fills the tables)
from ._registry import BROKEN, CONFIDENCE, CORRECT, COVERS, SAMPLES, Run, one


def _family_run(fam, build) -> Run:
    def run(seed: int):
        from ..pairs import audit_estimator

        mech = build()
        data, _ = fam.audit_data(mech)
        return audit_estimator(mech, data, samples=SAMPLES, confidence=CONFIDENCE, seed=seed)

    return run


def _register_family_cases() -> None:
    """Every registered family's own cases (:meth:`hybridpriv.core.family.Family.audit_cases`): a family added as
    one package brings its audit cases with it."""
    from ...families import registry

    for fam in registry().values():
        for name, build in fam.audit_cases().items():
            CORRECT[name] = _family_run(fam, build)
            COVERS[name] = type(build()).__name__


_register_family_cases()

__all__ = [
    "BROKEN",
    "BUDGET_PARAMETERS",
    "CONFIDENCE",
    "CORRECT",
    "COVERS",
    "PRIMITIVE_NOISE_PARAMETERS",
    "Run",
    "SAMPLES",
    "dp_claiming_built_ins",
    "one",
    "uncovered",
]

#: A Mechanism subclass that takes one of these constructor parameters spends a privacy budget,
#: so it claims differential privacy (``groups`` carry each group's epsilon).
BUDGET_PARAMETERS = frozenset({"epsilon", "epsilons", "groups"})
#: A function of :mod:`hybridpriv.noise` that takes ``rng`` and one of these is a noise primitive.
PRIMITIVE_NOISE_PARAMETERS = frozenset({"epsilon", "scale", "sigma"})


def _walk(package: ModuleType):
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield importlib.import_module(info.name)


def dp_claiming_built_ins(extra_modules: tuple[ModuleType, ...] = ()) -> dict[str, str]:
    """Every DP-claiming built-in: name -> where it is defined.

    Walks every module of the family packages (:mod:`hybridpriv.families`, where each family's mechanisms
    live; and ``extra_modules``) for public,
    concrete :class:`~hybridpriv.core.mechanism.Mechanism` subclasses defined there whose
    constructor takes a budget (:data:`BUDGET_PARAMETERS`), and lists the functions of
    :mod:`hybridpriv.noise` that take ``rng`` and a noise parameter
    (:data:`PRIMITIVE_NOISE_PARAMETERS`).
    """
    from ... import families
    from ... import noise as mechanisms
    from ...core.mechanism import Mechanism

    found: dict[str, str] = {}
    for module in (*_walk(families), *extra_modules):
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, Mechanism) and obj.__module__ == module.__name__
                    and not name.startswith("_") and not inspect.isabstract(obj)
                    and BUDGET_PARAMETERS & set(inspect.signature(obj).parameters)):
                found[name] = module.__name__
    for name in mechanisms.__all__:
        obj = getattr(mechanisms, name)
        if inspect.isfunction(obj):
            params = set(inspect.signature(obj).parameters)
            if "rng" in params and PRIMITIVE_NOISE_PARAMETERS & params:
                found[name] = mechanisms.__name__
    return found


def uncovered(claiming: dict[str, str] | None = None, covers: dict[str, str] | None = None,
              settings: int = 2) -> dict[str, int]:
    """DP-claiming built-ins with fewer than ``settings`` correct cases: name -> number of cases."""
    claiming = dp_claiming_built_ins() if claiming is None else claiming
    counts = Counter((COVERS if covers is None else covers).values())
    return {name: counts.get(name, 0) for name in sorted(claiming) if counts.get(name, 0) < settings}
