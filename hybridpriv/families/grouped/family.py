"""The grouped family: a mean or median of records whose groups have different epsilons (Ferrando et al.)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.family import Family
from . import spec as _spec
from .datakind import GROUPED_DATA
from .heldout import REAL_GROUPED

__all__ = ["FAMILY", "GroupedFamily"]


class GroupedFamily(Family):
    name = "grouped"
    summary = "a mean or median estimator for groups of different epsilons (Ferrando et al.)"
    data_kind = "grouped"
    defines = (GROUPED_DATA,)
    spec_module = _spec
    examples = {"grouped": "grouped.toml"}
    context_docs = {
        "groups": "the privacy groups (list of hybridpriv.core.privacy.Group)",
        "bounds": "the records' bounds (hybridpriv.core.privacy.Bounds)",
        "relation": "the neighbouring relation the groups require",
        "statistic": '"mean" or "median"', "clamp": "whether records are clipped into the bounds",
        "sigma2": "the fitted model (its variance_posterior_mean is the records' variance)",
    }
    real_datasets = tuple(REAL_GROUPED)
    quick_calibration = {"real": ["faithful-waiting"], "settings": {"model": {"family": "normal"}, "evaluation": {"draws": 100, "trials": 10}}}
    #: 5-95% ranges on the calibration's held-out truths, seeds 0 / 1 / 2 (docs/calibration.md; runs on ec4ea38,
    #: c06c0f0 and cd3fb3d)
    #: seed 12 on 3113b9a (2026-12-02, held out for every kind, stored as grouped-seed12); fresh seeds 17 and 18 on
    #: 0ed1752 (2026-12-03, stored as grouped-seed17 and -seed18)
    range_coverage = {0: 0.88, 1: 0.89, 2: 0.87, 12: 0.86, 17: 0.919, 18: 0.860}
    #: The same on the real datasets among those truths alone, by stored seed (hybridpriv.calibration_runs;
    #: a test keeps it equal to the stored runs): select's ranges note says it beside the pooled share.
    range_coverage_real = {2: 1.0, 12: 0.938, 17: 0.9375, 18: 0.875}
    #: How often P(best) came true on the held-out synthetic truths of the stored seeds 2, 12, 17 and 18
    #: (hybridpriv.calibration_runs.p_best_bins over grouped-seed2 / -seed12 / -seed17 / -seed18: 120 truths;
    #: Family.p_best_held, docs/calibration.md's table, which a test pins them to).  Chosen before seeds 17 and 18
    #: ran (the seeds 0-1 runs of the earlier table were lost): 0.9-1 came true on 8 of 10 at 0.93, 13 points off;
    #: the other bins within 6 points (0.7-0.9, 17 points off on seeds 0-2, now 84% of 44 at 0.79).
    p_best_held = {"0-0.1": (0.022, 0.058, 189), "0.1-0.3": (0.181, 0.147, 143), "0.3-0.5": (0.397, 0.367, 49),
                   "0.5-0.7": (0.590, 0.556, 45), "0.7-0.9": (0.788, 0.841, 44), "0.9-1": (0.933, 0.800, 10)}
    p_best_seeds = (2, 12, 17, 18)
    release_files = "one CSV per group, DIR/<group>.csv (first column: the records; a header row may come first)"

    def release_posterior(self, tree: Any, problem: Any, attrs: Any) -> Any:
        if "model_family" in attrs:  # the family the selection fitted (family = auto may have fallen back)
            problem.model.use_family(str(attrs["model_family"]))
        return super().release_posterior(tree, problem, attrs)

    def load_private(self, directory: Any, spec: Any) -> list[np.ndarray]:
        from .release import load_grouped

        return load_grouped(directory, spec)

    def stand_in(self, spec: Any) -> list[np.ndarray]:
        return [np.full(g.size, spec.bounds.midpoint) for g in spec.groups]

    def data_bytes(self, data: Any, spec: Any) -> dict[str, bytes]:
        """Per private group, its records as float64 in file order."""
        return {g.name: np.ascontiguousarray(x, dtype="<f8").tobytes()
                for g, x in zip(spec.groups, data) if not g.is_public}

    def released_meaning(self, spec: Any) -> str:
        return f"the {spec.statistic} of all records"

    def audit_data(self, mech: Any, posterior: Any = None, seed: int = 0, stand_in: Any = None) -> tuple[Any, str]:
        if hasattr(mech, "groups") and hasattr(mech, "bounds"):
            from ...testing.matrix import base_data

            return base_data(mech), "worst-case records (every record at the quiet value)"
        return super().audit_data(mech, posterior, seed, stand_in)

    def synthetic_truth(self, i: int, rng: Any, quick: bool = False) -> Any:
        from .heldout import grouped_truth

        return grouped_truth(i, rng, quick)

    def real_truth(self, name: str, rng: Any) -> Any:
        from .heldout import real_grouped_truth

        return real_grouped_truth(name, rng)

    def truth_dataset(self, data: Any, groups: Any = None) -> Any:
        from . import GroupedDataset

        return GroupedDataset(tuple(np.asarray(data[g.name], dtype=float) for g in groups))

    def pythia(self, raw: dict[str, Any], data: Any, share: float, rng: Any) -> tuple[dict[str, Any], Any]:
        from .heldout import pythia_spec

        return pythia_spec(raw, data, share, rng), None


FAMILY = GroupedFamily()
