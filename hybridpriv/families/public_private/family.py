"""The public-private family: an M-estimator of private records helped by public ones (Wang et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family
from . import spec as _spec
from .datakind import DESIGN_DATA
from .heldout import REAL_PUBLIC_PRIVATE

__all__ = ["FAMILY", "PublicPrivateFamily"]


class PublicPrivateFamily(Family):
    name = "public-private"
    summary = ("an M-estimator of private records helped by public ones: the approach and the "
               "public subset size (Wang et al.)")
    data_kind = "public-private"
    defines = (DESIGN_DATA,)
    spec_module = _spec
    examples = {"pima": "pima.toml"}
    context_docs = {"contrast": "the contrast the task scores (numpy array)",
                    "epsilon": "the private records' total epsilon"}

    release_files = "DIR/private.csv: the private cohort's records, with the SPEC's columns and outcome (header row)"
    real_datasets = tuple(REAL_PUBLIC_PRIVATE)
    quick_calibration = {"real": ["pima"], "settings": {"evaluation": {"draws": 40, "trials": 5}}}
    #: 5-95% ranges on the calibration's held-out truths, seeds 0 / 1 / 2 (docs/calibration.md; runs on ec4ea38,
    #: c06c0f0 and cd3fb3d) and seed 3 (59c5e4f, held out, stored as public-private-seed3)
    #: seed 4 on e3173e6 (held out, stored as public-private-seed4)
    #: seed 5 on a8fe8bd (held out; 246 of 261), run again on 086dd42 with the same numbers (public-private-seed5)
    #: seed 12 on 3113b9a (2026-12-02, held out for every kind, stored as public-private-seed12)
    range_coverage = {0: 0.87, 1: 0.91, 2: 0.95, 3: 0.908, 4: 0.874, 5: 0.943, 12: 0.935}
    #: The same on the real datasets among those truths alone, by stored seed (hybridpriv.calibration_runs;
    #: a test keeps it equal to the stored runs): select's ranges note says it beside the pooled share.
    range_coverage_real = {3: 0.857, 4: 0.905, 5: 0.857, 12: 0.857}
    #: The two-stage plan carried out on every truth (relative regret in %, mean and p90), per seed: seed 4
    #: (public-private-seed4, e3173e6) by importance weights ("plan") and by refitting the model on the release
    #: ("refit", the budget-spending selector's procedure, the probe's refit), both better than choosing now, which
    #: is why the refit was built; seed 3 again (public-private-seed3-plan, 5f95424) and fresh seed 5 (a8fe8bd,
    #: thirty-fourth session; run again and stored on 086dd42, public-private-seed5, every number the same): the
    #: refit worse than choosing now in the mean and at p90 on both.  So select recommends choosing now and says so
    #: (engine.plan.plan_held_line); a test keeps every seed equal to the stored runs.
    plan_held_out = {"truths": 33, "seeds": {
        3: {"now": (9.0, 28.6), "refit": (19.3, 53.5)},
        4: {"now": (21.1, 67.8), "plan": (15.0, 43.5), "refit": (9.2, 29.9)},
        5: {"now": (9.7, 26.8), "refit": (12.3, 41.7)}}}
    calibration_trials = 100  # 8 x 100 releases per candidate (each fits a DP logistic regression)

    def synthetic_truth(self, i: int, rng: Any, quick: bool = False) -> Any:
        from .heldout import public_private_truth

        return public_private_truth(i, rng, quick)

    def real_truth(self, name: str, rng: Any) -> Any:
        from .heldout import real_public_private_truth

        return real_public_private_truth(name, rng)

    def truth_dataset(self, data: Any, groups: Any = None) -> Any:
        """The truth's private cohort read by the release loader (``private.csv`` of its folder) beside its public records."""
        from ...spec import parse_spec
        from .release import load_private_records

        return load_private_records(data["folder"], parse_spec(data["spec"]))

    def load_private(self, directory: Any, spec: Any) -> Any:
        from .release import load_private_records

        return load_private_records(directory, spec)

    def stand_in(self, spec: Any) -> Any:
        from .release import stand_in_design

        return stand_in_design(spec)

    def data_bytes(self, data: Any, spec: Any) -> dict[str, bytes]:
        """The private cohort as standardised, in file order."""
        import numpy as np

        return {"private": np.ascontiguousarray(data.private, dtype="<f8").tobytes()}

    def pythia(self, raw: dict[str, Any], data: Any, share: float, rng: Any) -> tuple[dict[str, Any], Any]:
        from .heldout import pythia_public_private

        return pythia_public_private(raw, data, share, rng), None

    def released_meaning(self, spec: Any) -> str:
        return f"the {spec.contrast} contrast's estimate from the public and private records (its parameters)"

    def template_files(self) -> dict[str, str]:
        """The template's data: a built-in example's real file (its source and licence: hybridpriv/examples/README.md)."""
        from importlib import resources

        return {name: (resources.files("hybridpriv") / "examples" / src).read_text()
                for name, src in {"public.csv": "pima-public.csv"}.items()}


FAMILY = PublicPrivateFamily()
