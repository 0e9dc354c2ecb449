"""The case registry's tables: ``CORRECT``, ``BROKEN`` and ``COVERS`` (filled by the family modules)."""

from __future__ import annotations

from collections.abc import Callable

from ..core import AuditReport

__all__ = ["BROKEN", "CONFIDENCE", "CORRECT", "COVERS", "Run", "SAMPLES", "one"]

#: Outputs per dataset in every audit (half select the event, half bound it).
SAMPLES = 50_000
#: Confidence of every audit: a correct mechanism is flagged with probability at most 1%.
CONFIDENCE = 0.99

Run = Callable[[int], dict[str, AuditReport]]
#: name -> run(seed): built-ins that must pass.
CORRECT: dict[str, Run] = {}
#: name -> (run(seed), the group whose promise is broken): variants that must be caught.
BROKEN: dict[str, tuple[Run, str]] = {}
#: What each correct case audits (names of mechanisms / estimator classes), for the coverage test.
COVERS: dict[str, str] = {}



def one(report: AuditReport) -> dict[str, AuditReport]:
    """A single-unit mechanism's report, keyed ``"mechanism"``."""
    return {"mechanism": report}
