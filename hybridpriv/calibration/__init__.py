"""How far to trust a recommendation: the select path scored on held-out truths.

For each truth (:mod:`hybridpriv.heldout`) the select path runs on the PUBLIC knowledge only
(:func:`hybridpriv.workflow.run_selection` on the SPEC's problem); then every candidate's realised
risk on the private truth is computed by :func:`hybridpriv.engine.evaluate.evaluate` with a
:class:`~hybridpriv.core.data.FixedSource` (the task's exact risk where it has one, else Monte Carlo of
the mechanism's noise).  :func:`score` compares the two:

* the oracle: the eligible candidate with the lowest realised risk (ties shared);
* the regret of the recommendation: ``realised[recommended] / realised[oracle] - 1``;
* coverage: does the realised risk lie in the reported 5-95% range ``[risk_low, risk_high]``;
* reliability: P(best) against whether the candidate was the oracle, beside the range a calibrated P(best)
  would give in each bin (:mod:`hybridpriv.reliability`).

Layering: :mod:`~hybridpriv.calibration.scoring` (:func:`score`, :func:`summarize`) and :func:`reliability` are
pure NumPy; :mod:`~hybridpriv.calibration.truth` runs one truth (:func:`calibrate_truth`);
:mod:`~hybridpriv.calibration.run` runs many (:func:`calibrate`) and returns an ``xarray.Dataset``;
:mod:`~hybridpriv.calibration.plot` draws it (:func:`plot_calibration`).
"""

from ..reliability import BINS, reliability, reliability_band
from .plot import plot_calibration
from .run import calibrate
from .scoring import SILENT_REGRET, regret_to_best, score, summarize
from .truth import RETRIES, calibrate_truth

__all__ = ["BINS", "RETRIES", "SILENT_REGRET", "calibrate", "calibrate_truth", "plot_calibration", "regret_to_best",
           "reliability", "reliability_band", "score", "summarize"]
