"""The K-means family: DP K-means for users who trust the curator beside local-DP users (Avent et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family, NoChecks
from . import spec as _spec
from .datakind import POINTS_DATA
from .heldout import REAL_KMEANS

__all__ = ["FAMILY", "KMeansFamily"]


class KMeansFamily(Family):
    name = "kmeans"
    summary = ("DP K-means for users who trust the curator beside local-DP users: the algorithm "
               "and its iterations (Avent et al.)")
    data_kind = "points"
    defines = (POINTS_DATA,)
    spec_module = _spec
    examples = {"faithful": "faithful.toml"}
    real_datasets = tuple(REAL_KMEANS)
    quick_calibration = {"real": ["faithful"], "settings": {"evaluation": {"draws": 40, "trials": 5}}}
    #: 5-95% ranges on the calibration's held-out truths, of the model since the twenty-sixth session (trust may
    #: follow the clusters, users spread by the refit bootstrap): seeds 4-7, run on that model's code and stored
    #: as kmeans-seed4 ... kmeans-seed7, eligible candidates alone (docs/calibration.md's held-out table).  The
    #: previous model's seeds 0-3 (79-83% over every candidate, 62.9% eligible at seed 3) no longer describe it.
    #: seed 12 on 3113b9a (2026-12-02, held out for every kind, stored as kmeans-seed12); fresh seeds 23 and 24 on
    #: 6c67590 (2026-12-03, the first with the budget-spending selector, stored as kmeans-seed23, kmeans-seed24);
    #: fresh seeds 25 and 26 on ad36d09 (2026-12-03, the first with select judging the two-stage plan); fresh seeds
    #: 29 and 30 on 8dc625e (2026-12-03, the test of a pooled held-out rule, which failed); fresh seeds 33 and 34 on
    #: 39d4229 (2026-12-03, this model's side of the test of direction trust, which failed: kmeans-seed33-direction
    #: and -seed34-direction are the other model's, docs/calibration-history.md)
    range_coverage = {4: 0.876, 5: 0.876, 6: 0.871, 7: 0.900, 12: 0.943, 23: 0.880, 24: 0.896, 25: 0.844, 26: 0.932,
                      29: 0.898, 30: 0.910, 33: 0.905, 34: 0.860}
    #: The same on the real datasets among those truths alone, by stored seed (hybridpriv.calibration_runs;
    #: a test keeps it equal to the stored runs): select's ranges note says it beside the pooled share.
    range_coverage_real = {4: 0.596, 5: 0.596, 6: 0.481, 7: 0.615, 12: 0.654, 23: 0.596, 24: 0.654, 25: 0.577,
                           26: 0.635, 29: 0.615, 30: 0.500, 33: 0.577, 34: 0.577}
    #: The two-stage plan carried out on every truth by refitting the model on the released counts per cluster
    #: (relative regret in %, mean and p90), against choosing now: seeds 23-24 (6c67590: the budget-spending
    #: selector, the same procedure at the same share) and fresh seeds 25-26 (ad36d09, where select judged the plan
    #: and found it paid on no truth), 29-30 (8dc625e, the same code) and 33-34 (39d4229, the same model).  The refit
    #: was lower in the mean and at p90 on seeds 23 and 26, not on 24 (p90), 25 (mean; p90 tied), 29 (p90), 30
    #: (both), 33 (p90) nor 34 (both), so select does not
    #: recommend it on held-out evidence (engine.plan.held_out_pays) and says so (plan_held_line).  A pooled rule
    #: (lower over all the truths, a bootstrap interval above 0) held on seeds 23-26 and was tested on fresh seeds
    #: 29-30 before adoption: there the refit was higher in both (docs/calibration-history.md), so it was not
    #: adopted.  A test keeps every seed equal to the stored runs.
    plan_held_out = {"truths": 34, "seeds": {
        23: {"now": (8.03, 26.11), "refit": (6.82, 10.50)},
        24: {"now": (2.25, 0.90), "refit": (1.35, 1.05)},
        25: {"now": (16.92, 9.32), "refit": (17.36, 9.32)},
        26: {"now": (2.66, 2.25), "refit": (0.83, 2.07)},
        29: {"now": (8.21, 31.97), "refit": (8.20, 34.13)},
        30: {"now": (1.55, 4.44), "refit": (3.16, 8.10)},
        33: {"now": (3.83, 6.13), "refit": (3.09, 6.80)},
        34: {"now": (3.24, 9.65), "refit": (3.62, 10.09)}}}
    #: How often P(best) came true on the same seeds' held-out synthetic truths (21 candidates each;
    #: Family.p_best_held, docs/calibration.md's table, which a test pins them to and to the stored runs).
    #: Since the forty-fifth session pooled over every stored seed of this model (the thirteen of range_coverage,
    #: 390 synthetic truths): within 7 points in every bin, so select prints no K-means P(best) note; seeds 4-7 alone
    #: (the first 120 truths) had been 10-14 points too sure from 0.3 up, and seeds 33-34 alone 22 points too modest
    #: at 0.3-0.5 (16 pairs): a bin of 10-40 pairs moves that much from seed to seed.
    p_best_held = {"0-0.1": (0.014, 0.017, 3958), "0.1-0.3": (0.178, 0.173, 804), "0.3-0.5": (0.343, 0.343, 137),
                   "0.5-0.7": (0.586, 0.561, 41), "0.7-0.9": (0.789, 0.719, 32), "0.9-1": (0.983, 0.918, 98)}
    p_best_seeds = (4, 5, 6, 7, 12, 23, 24, 25, 26, 29, 30, 33, 34)
    calibration_trials = 500  # 8 x 500 runs of 21 iterating candidates per truth (5,000: 40 s a truth)
    context_docs = {"k": "clusters", "epsilon": "each user's epsilon", "bounds": "(low, high) of every coordinate",
                    "d": "the points' dimension"}

    release_files = ("DIR/tcm.csv: the raw points of the users who trust the curator; DIR/<group>-reports.csv: the "
                     "local users' device reports, then DIR/<group>-round-<t>.csv: their answers to each round "
                     "(python -m hybridpriv.families.kmeans.device); the release runs in rounds.  A two-stage plan "
                     "asks DIR/lm-cells.csv (each LM device's cell, device cell) first, then the reports")

    def release_rounds(self, mech: Any, spec: Any) -> Any:
        """Every built-in K-means candidate is released in rounds (:mod:`.rounds`; ``tcm-T`` needs no device;
        ``public-start`` none and no data: zero rounds, the start itself), and so is a two-stage plan's probe (one
        round: the LM devices' cells, :mod:`.plan_rounds`)."""
        from .algorithms.mechanisms import PublicStart, _KMeans
        from .plan import CellCountsProbe
        from .plan_rounds import CellCountsRounds
        from .rounds import KMeansRounds

        if isinstance(mech, CellCountsProbe):
            return CellCountsRounds(mech, spec)
        return KMeansRounds(mech, spec) if isinstance(mech, (_KMeans, PublicStart)) else None

    def stand_in(self, spec: Any) -> Any:
        """Every user at the box's centre, the public group sizes, the pilot start."""
        import numpy as np

        from .model import pilot_start
        from .algorithms import PointCloud
        from .cells import group_sizes

        sizes = group_sizes(spec)
        lo, hi = spec.values.bounds
        pilot = spec.values.model.pilot
        points = np.full((sizes["tcm"] + sizes["lm"], pilot.shape[1]), (lo + hi) / 2.0)
        trusted = np.arange(points.shape[0]) < sizes["tcm"]
        init = pilot_start(pilot, spec.values.k) if spec.values.model.start == "pilot" else None
        return PointCloud(points, trusted, (lo, hi), init)

    def synthetic_truth(self, i: int, rng: Any, quick: bool = False) -> Any:
        from .heldout import kmeans_truth

        return kmeans_truth(i, rng, quick)

    def real_truth(self, name: str, rng: Any) -> Any:
        from .heldout import real_kmeans_truth

        return real_kmeans_truth(name, rng)

    def pythia(self, raw: dict[str, Any], data: Any, share: float, rng: Any) -> tuple[dict[str, Any], Any]:
        """Every user spends ``share`` of its epsilon on its group's counts per cluster of the pilot start
        (:func:`~hybridpriv.families.kmeans.cells.pythia_kmeans`); the candidates get the rest."""
        from .cells import pythia_kmeans

        return pythia_kmeans(raw, data, share, rng), None

    def released_meaning(self, spec: Any) -> str:
        return f"the {spec.values.k} final centres (k rows of d coordinates, row by row), after every round"

    def predictive_checks(self, posterior: Any, seed: int) -> Any:
        return NoChecks("the model is the Bayesian bootstrap of the pilot sample: every simulated dataset resamples the "
                        "pilot's points (spread or blurred by model.smoothing), so it reproduces the pilot by construction; what "
                        "it cannot show is structure the pilot lacks (a cluster no pilot point fell in)")

    def template_files(self) -> dict[str, str]:
        """The template's data: a built-in example's real file (its source and licence: hybridpriv/examples/README.md)."""
        from importlib import resources

        return {name: (resources.files("hybridpriv") / "examples" / src).read_text()
                for name, src in {"pilot.csv": "faithful-pilot.csv"}.items()}


FAMILY = KMeansFamily()
