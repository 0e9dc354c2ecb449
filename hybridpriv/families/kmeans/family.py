"""The K-means family: DP K-means for users who trust the curator beside local-DP users (Avent et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family, NoChecks
from . import spec as _spec
from .datakind import POINTS_DATA

__all__ = ["FAMILY", "KMeansFamily"]


class KMeansFamily(Family):
    name = "kmeans"
    summary = ("DP K-means for users who trust the curator beside local-DP users: the algorithm "
               "and its iterations (Avent et al.)")
    data_kind = "points"
    defines = (POINTS_DATA,)
    spec_module = _spec
    examples = {"faithful": "faithful.toml"}
    context_docs = {"k": "clusters", "epsilon": "each user's epsilon", "bounds": "(low, high) of every coordinate",
                    "d": "the points' dimension"}

    def predictive_checks(self, posterior: Any, seed: int) -> Any:
        return NoChecks("the model is the Bayesian bootstrap of the pilot sample: every simulated dataset "
                        "resamples the pilot points themselves, so there is no modelled law to check them against")

    def template_files(self) -> dict[str, str]:
        """The template's data: a built-in example's real file (its source and licence: hybridpriv/examples/README.md)."""
        from importlib import resources

        return {name: (resources.files("hybridpriv") / "examples" / src).read_text()
                for name, src in {"pilot.csv": "faithful-pilot.csv"}.items()}


FAMILY = KMeansFamily()
