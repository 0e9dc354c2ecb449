"""The hybrid-trust family: a mean estimator for users who trust the curator beside local-DP users (Avent et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family
from . import spec as _spec

__all__ = ["FAMILY", "HybridTrustFamily"]


class HybridTrustFamily(Family):
    name = "hybrid-trust"
    summary = ("a mean estimator for users who trust the curator beside local-DP users "
               "(Avent et al.)")
    data_kind = "grouped"
    top, sections = _spec.TOP, _spec.SECTIONS
    examples = {"salaries": "salaries.toml"}
    context_docs = {"groups": "the TCM and LM groups (list of Group)", "bounds": "(0, m)",
                    "noise": '"laplace" or "gaussian"', "relation": "the TCM group's neighbouring relation"}

    def check(self, values: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return _spec.check(values, ctx)

    def build(self, values: dict[str, Any]) -> Any:
        return _spec.build(values)

    def plugin_context(self, values: dict[str, Any], posterior: Any) -> dict[str, Any]:
        return _spec.context(values, posterior)


FAMILY = HybridTrustFamily()
