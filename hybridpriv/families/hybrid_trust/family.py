"""The hybrid-trust family: a mean estimator for users who trust the curator beside local-DP users (Avent et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family
from . import spec as _spec
from .heldout import REAL_HYBRID_TRUST

__all__ = ["FAMILY", "HybridTrustFamily"]


class HybridTrustFamily(Family):
    name = "hybrid-trust"
    summary = ("a mean estimator for users who trust the curator beside local-DP users "
               "(Avent et al.)")
    data_kind = "grouped"
    top, sections = _spec.TOP, _spec.SECTIONS
    examples = {"salaries": "salaries.toml"}
    tune_section = "knowledge"
    real_datasets = tuple(REAL_HYBRID_TRUST)
    quick_calibration = {"real": ["salaries"], "settings": {"evaluation": {"draws": 100, "trials": 10}}}
    context_docs = {"groups": "the TCM and LM groups (list of Group)", "bounds": "(0, m)",
                    "noise": '"laplace" or "gaussian"', "relation": "the TCM group's neighbouring relation"}

    def check(self, values: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return _spec.check(values, ctx)

    def build(self, values: dict[str, Any]) -> Any:
        return _spec.build(values)

    def plugin_context(self, values: dict[str, Any], posterior: Any) -> dict[str, Any]:
        return _spec.context(values, posterior)

    def synthetic_truth(self, i: int, rng: Any, quick: bool = False) -> Any:
        from .heldout import hybrid_trust_truth

        return hybrid_trust_truth(i, rng, quick)

    def real_truth(self, name: str, rng: Any) -> Any:
        from .heldout import real_hybrid_trust_truth

        return real_hybrid_trust_truth(name, rng)

    def truth_dataset(self, data: Any, groups: Any = None) -> Any:
        """The TCM then the LM records."""
        import numpy as np

        from ...data import GroupedDataset

        return GroupedDataset((np.asarray(data["tcm"], dtype=float), np.asarray(data["lm"], dtype=float)))


FAMILY = HybridTrustFamily()
