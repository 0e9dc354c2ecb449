"""PyMC generative models of public knowledge (installed as ``hybridpriv.models``)."""

from .grouped import (
    BETA_BOUNDARY_NUDGE,
    CUSTOM_MC_SAMPLES,
    BetaFamily,
    CustomFamily,
    Family,
    GroupedDataModel,
    GroupedPosterior,
    NormalFamily,
    ReleasedMean,
)

__all__ = [
    "BETA_BOUNDARY_NUDGE",
    "BetaFamily",
    "CUSTOM_MC_SAMPLES",
    "CustomFamily",
    "Family",
    "GroupedDataModel",
    "GroupedPosterior",
    "NormalFamily",
    "ReleasedMean",
]
