"""SPEC kind ``kmeans``: DP K-means when some users trust the curator and others only their device.

Avent, Dubey & Korolova (2020, Section 7 and Appendix E): the *TCM* users trust the curator
(central DP, the classic DP K-means on their raw points), the *LM* users randomise locally (local
DP).  What is public: the box every coordinate lies in, the number of users ``n``, the share ``c``
who trust the curator, every user's ``epsilon``, the number of clusters ``k``, the iteration
counts to consider, and a **pilot sample** of points (a CSV or a list).  The pilot goes into a
:class:`~hybridpriv.models.KMeansPilotModel` (a Bayesian bootstrap: the posterior of the points'
distribution is a Dirichlet-weighted pilot), whose posterior generates the datasets: ``n`` users
resampled with one draw's weights, a trust split (random, or in half the datasets by default partly
from one cluster: ``model.trust_may_follow_clusters``) and the public start (by default Lloyd's
algorithm on the pilot, the same for every dataset).

Candidates (candidate dimension ``algorithm``): for each iteration count ``T`` in ``iterations``,
``hybrid-T`` (:class:`~hybridpriv.families.kmeans.algorithms.HybridKMeans`, Algorithm 1), ``tcm-T``
(:class:`~hybridpriv.families.kmeans.algorithms.TCMKMeans`), ``lm-T``
(:class:`~hybridpriv.families.kmeans.algorithms.LMKMeans`) and the debiased variants ``lm-debiased-T`` and
``hybrid-debiased-T`` (randomized response inverted, beyond the paper).  Task: the WCSS of all
``n`` users' true points to the released centres.  Requirements: the TCM users central DP for
add/remove-one neighbours, the LM users local DP (replace-one), each at ``epsilon``: so LM K-means,
whose promise to the TCM users is local replace-one (the number of reports is visible), is marked
ineligible, as in ``docs/avent-kmeans.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...spec.schema import (
    Config,
    Context,
    Key,
    SpecError,
    Table,
    _show,
    boolean,
    choice,
    epsilon,
    fit_table,
    integer,
    list_of,
    number,
    pair,
    plan_key,
    read_csv_rows,
    run_keys,
    string,
    table,
    tables,
)

__all__ = ["ALGORITHMS", "CANDIDATES", "EVALUATION", "START", "MODEL", "SECTIONS", "TOP", "build", "check", "make_candidates",
           "points", "requirements"]

#: Every algorithm, in table order (each is a candidate at every iteration count).
ALGORITHMS = ("hybrid", "tcm", "lm", "hybrid-debiased", "lm-debiased")
#: The public start alone (no iteration, spends nothing): the candidate every iterated one must beat.
START = "public-start"
#: Every candidate name ``evaluation.candidates`` may list.
CANDIDATES = (*ALGORITHMS, START)
#: What the pilot-sample premise's warning advises (measured on the calibration's held-out pilot-biased truths).
PILOT_ADVICE = ("Every candidate here starts from the pilot's clustering, so none is safe then: on held-out truths "
                "whose pilot over-sampled some clusters the public start and the iterated candidates failed alike "
                "(docs/kmeans-select.md); a representative pilot is the remedy")
#: Most point-operations of a whole evaluation (datasets x trials x candidates x iterations x users x k).
MAX_WORK = 2e11
#: Most users in one simulated dataset.
MAX_USERS = 10_000_000


def _read_points(path: Path, key: str) -> np.ndarray:
    rows = read_csv_rows(path, key)
    if rows:
        try:
            [float(c) for c in rows[0]]
        except ValueError:
            rows = rows[1:]  # a header line
    if not rows:
        raise SpecError(f"{key} file {path} holds no points")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise SpecError(f"{key} file {path}: every row must have the same number of columns, got {sorted(widths)}")
    try:
        return np.array([[float(c) for c in r] for r in rows])
    except ValueError as exc:
        raise SpecError(f"{key} file {path} has a non-numeric value: {exc}") from None


def points() -> Any:
    """Points: a list of ``[x, y, ...]`` rows, or a CSV path (relative to the SPEC; a header line is
    skipped) whose numeric columns are the coordinates."""

    def parse(value: Any, path: str, ctx: Context) -> np.ndarray:
        if isinstance(value, str):
            arr = _read_points(ctx.base_dir / value, path)
        elif isinstance(value, list) and value and all(isinstance(r, list) for r in value):
            if len({len(r) for r in value}) != 1 or not value[0]:
                raise SpecError(f"{path} rows must all have the same number (>= 1) of coordinates, got {_show(value)}")
            arr = np.array([[number(finite=False)(v, f"{path}[{i}]", ctx) for v in r] for i, r in enumerate(value)])
        else:
            raise SpecError(f"{path} must be a CSV path or a list of points [[x, y], ...], got {_show(value)}")
        if not np.isfinite(arr).all():
            raise SpecError(f"{path} contains NaN or infinite coordinates")
        return arr

    return parse


def _smoothing() -> Any:
    """A number >= 0, or "refit" or "auto"."""
    as_number = number(0.0)

    def parse(value: Any, path: str, ctx: Any) -> float | str:
        if isinstance(value, str):
            if value in ("refit", "auto"):
                return value
            raise SpecError(f'{path} must be a number >= 0, "refit" or "auto", got {value!r}')
        return as_number(value, path, ctx)

    return parse


CELLS = Table((
    Key("group", choice("tcm", "lm"), doc="whose users were counted: tcm or lm", example='"tcm"'),
    Key("counts", list_of(number()), doc="the released (noisy, unbiased) count of the group's users in each cluster "
        "of the pilot start, in its order (k numbers)", example="[70.4, 29.9]"),
    Key("noise_sd", number(0.0), doc="the standard deviation of each count's noise (0: exact)", example="1.41"),
), doc="an earlier DP release of one group's users per cluster of the pilot start")

MODEL = Table((
    Key("pilot", points(), doc="public pilot points: a CSV path (columns = coordinates, header allowed) or a list",
        example='"pilot.csv"'),
    Key("clamp", boolean(), False, doc="clip pilot points into the box instead of refusing points outside"),
    Key("start", choice("pilot", "uniform"), "pilot",
        doc="the public start: pilot (Lloyd's algorithm on the pilot, same for every dataset) or uniform (fresh per dataset)"),
    Key("smoothing", _smoothing(), "refit",
        doc="how the users may spread beyond the pilot's points: \"refit\" (each dataset's users spread about the "
            "pilot's clusters by a factor from a bootstrap of the start's fit), \"auto\" (Gaussian blur of the "
            "cross-validated sd), a number (blur of that sd), 0 (the plain bootstrap)"),
    Key("trust_may_follow_clusters", boolean(), True,
        doc="true: who trusts the curator may go with where their point lies (in half the model's datasets a "
            "uniform share of the TCM users come from one cluster); false: you know trust was split at random"),
    Key("released_cells", tables(CELLS), [],
        doc="earlier DP counts of each group's users per cluster of the pilot start (at most one per group): the "
            "model draws each group's users cell by cell from them, so trust follows them",
        example='[{ group = "tcm", counts = [70.4, 29.9], noise_sd = 1.41 }]'),
    Key("pilot_is_random_sample", boolean(), False,
        doc="true: you know the pilot is a random sample of these users; false (the default): where public-start, "
            "which uses the pilot alone, is recommended, a warning says that it rests on that"),
), doc="what is public besides the setting: a pilot sample of points (KMeansPilotModel, a Bayesian bootstrap)")

FIT = fit_table("posterior chains (exact Dirichlet draws; R-hat and ESS are a check)", tune=None)

EVALUATION = Table((
    Key("candidates", list_of(string()), None,
        doc=f"candidates by name (default: all of {list(CANDIDATES)}; {START}: the public start alone, "
            "no iteration, no budget spent)",
        example='["hybrid", "tcm", "hybrid-debiased"]'),
    plan_key("each group's count of users per cluster of the pilot start (model.start = \"pilot\", k >= 2)"),
    *run_keys(100, 10),
), doc="how the candidates are evaluated")

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("bounds", pair(number()), doc="[lower, upper]: the box of every coordinate", example="[0.0, 1.0]"),
    Key("n", integer(2), doc="users in the private dataset", example="1000"),
    Key("c", number(0.0, strict=True, maximum=1.0), doc="share of users who trust the curator (TCM)", example="0.1"),
    Key("epsilon", epsilon(allow_public=False), doc="every user's total epsilon (both groups)", example="5.0"),
    Key("k", integer(1, 1000), doc="number of clusters", example="2"),
    Key("iterations", list_of(integer(1, 1000)), doc="iteration counts (tau) to consider", example="[1, 2, 3, 5]"),
    Key("model", table(MODEL), doc="what is public besides the setting"),
    Key("fit", table(FIT), None, doc=FIT.doc),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind kmeans: DP K-means for users who trust the curator (TCM) beside users who "
       "trust only their device (LM)")

SECTIONS = (("model", MODEL, False), ("fit", FIT, False), ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("knowledge.chains", "fit.chains"), ("knowledge", "model"), ("evaluation.algorithms", "evaluation.candidates"))


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks and conversions (at load time, before any sampling)."""
    if not v.bounds[0] < v.bounds[1]:
        raise SpecError(f"bounds must be [lower, upper] with lower < upper, got {v.bounds!r}")
    lo, hi = v.bounds
    if not 0.0 < v.c < 1.0:
        raise SpecError(f"c must be < 1 (some users must be LM users), got {v.c!r}")
    n_t = int(round(v.c * v.n))
    if not 1 <= n_t <= v.n - 1:
        raise SpecError(f"c = {v.c!r} with n = {v.n} gives {n_t} TCM users; both groups need at least one user")
    if v.n > MAX_USERS:
        raise SpecError(f"n = {v.n:,} users exceed {MAX_USERS:,}: one simulated dataset would not fit in memory")
    its = v.iterations
    if len(set(its)) != len(its):
        raise SpecError(f"iterations names an iteration count twice: {its!r}")
    kn = v.model
    pilot = kn.pilot
    if kn.clamp:
        pilot = np.clip(pilot, lo, hi)
        v = v.replace(model=kn.replace(pilot=pilot))
    outside = (pilot < lo) | (pilot > hi)
    if outside.any():
        i, j = np.argwhere(outside)[0]
        raise SpecError(f"model.pilot point {i} has coordinate {pilot[i, j]:g}, outside bounds [{lo:g}, {hi:g}] "
                        "(fix it, or set model.clamp = true)")
    if kn.start == "pilot" and pilot.shape[0] < v.k:
        raise SpecError(f"model.start = \"pilot\" needs at least k = {v.k} pilot points, the pilot has {pilot.shape[0]}")
    if not isinstance(kn.smoothing, str) and kn.smoothing > hi - lo:
        raise SpecError(f"model.smoothing = {kn.smoothing!r} exceeds the box's width {hi - lo:g}")
    groups = [r.group for r in kn.released_cells]
    if len(set(groups)) != len(groups):
        raise SpecError(f"model.released_cells names a group twice: {groups}")
    for j, r in enumerate(kn.released_cells):
        if len(r.counts) != v.k:
            raise SpecError(f"model.released_cells[{j}].counts has {len(r.counts)} numbers; it needs one per cluster, "
                            f"k = {v.k}")
    if kn.released_cells and pilot.shape[0] < v.k:
        raise SpecError(f"model.released_cells count users per cluster of the pilot start: it needs at least k = {v.k} "
                        f"pilot points, the pilot has {pilot.shape[0]}")
    ev = v.evaluation
    for name in ev.candidates or []:
        if name not in CANDIDATES:
            raise SpecError(f"evaluation.candidates: unknown candidate {name!r}; known: {list(CANDIDATES)}")
    if ev.candidates is not None and len(set(ev.candidates)) != len(ev.candidates):
        raise SpecError(f"evaluation.candidates names an algorithm twice: {ev.candidates!r}")
    n_alg = len([a for a in (ev.candidates or ALGORITHMS) if a != START])
    work = float(ev.draws) * ev.trials * n_alg * sum(its) * v.n * v.k
    if work > MAX_WORK:
        raise SpecError(f"evaluation.draws = {ev.draws} x evaluation.trials = {ev.trials} x {n_alg} algorithms x "
                        f"iterations {its} x n = {v.n:,} x k = {v.k} is {work:.2g} point-operations (hours of CPU); "
                        "lower them")
    return v


def requirements(v: Config) -> dict[str, Any]:
    """What each unit requires: ``tcm`` central DP (add/remove-one), ``lm`` local DP (replace-one), at ``epsilon``."""
    from ...core.privacy import Guarantee

    return {"tcm": Guarantee(v.epsilon, 0.0, "add-remove", "central"),
            "lm": Guarantee(v.epsilon, 0.0, "replace", "local")}


def make_candidates(v: Config, posterior: Any = None) -> dict[str, Any]:
    """The candidates, ``{"ALGORITHM-T<tau>": mechanism}``, algorithm by algorithm, each over ``iterations``, and
    ``public-start`` (:class:`~hybridpriv.families.kmeans.algorithms.PublicStart`: the start alone)."""
    from .algorithms import HybridKMeans, LMKMeans, PublicStart, TCMKMeans

    kw = {"k": v.k, "epsilon": v.epsilon, "bounds": tuple(v.bounds), "d": int(v.model.pilot.shape[1])}
    build = {"hybrid": lambda t: HybridKMeans(tau=t, **kw), "tcm": lambda t: TCMKMeans(tau=t, **kw),
             "lm": lambda t: LMKMeans(tau=t, **kw), "hybrid-debiased": lambda t: HybridKMeans(tau=t, debias=True, **kw),
             "lm-debiased": lambda t: LMKMeans(tau=t, debias=True, **kw)}
    out: dict[str, Any] = {}
    for name in v.evaluation.candidates or CANDIDATES:
        if name == START:
            out[START] = PublicStart(v.k, tuple(v.bounds), int(v.model.pilot.shape[1]))
        else:
            out.update({f"{name}-T{t}": build[name](t) for t in v.iterations})
    return out


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (:data:`hybridpriv.spec.custom.CONTEXT`)."""
    return {"k": v.k, "epsilon": v.epsilon, "bounds": tuple(v.bounds),
            "d": int(v.model.pilot.shape[1]), "posterior": posterior}


def build(v: Config):
    """The selection problem: the model (built and validated now), candidates, task, requirements."""
    from ...models import KMeansPilotModel
    from ...workflow import Problem
    from .algorithms import WCSS
    from ...core.assumptions import Premise
    from .assumptions import kmeans_assumptions
    from .cells import ReleasedCells
    from .plan import kmeans_probe

    kn, ev = v.model, v.evaluation
    try:
        model = KMeansPilotModel(kn.pilot, tuple(v.bounds), v.n, v.c, v.k, start=kn.start,
                                 smoothing=kn.smoothing, trust_may_follow_clusters=kn.trust_may_follow_clusters,
                                 released_cells=[ReleasedCells(r.group, tuple(r.counts), r.noise_sd)
                                                 for r in kn.released_cells])
        built_in = list(make_candidates(v))  # every candidate can be built (refuses extreme epsilons or boxes first)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise SpecError(msg if msg.startswith("spec:") else f"model: {msg}") from None
    n_t = int(round(v.c * v.n))
    lo, hi = v.bounds
    d = kn.pilot.shape[1]
    header = [f"{v.n} users in [{lo:g}, {hi:g}]^{d}: {n_t} trust the curator (TCM, central DP), "
              f"{v.n - n_t} only their device (LM, local DP); epsilon = {v.epsilon:g} each",
              f"k = {v.k} clusters, iterations {v.iterations}",
              f"public: {kn.pilot.shape[0]} pilot points (Bayesian bootstrap"
              + (f", smoothed by sd {model.smoothing:.3g}" if model.smoothing else "")
              + (" (cross-validated)" if model.smoothing_rule == "auto" else "")
              + (", users spread about the pilot's clusters by a refitted start's optimism"
                 if model.smoothing_rule == "refit" else "") + f"), start: {kn.start}",
              "trust: " + (f"from the released counts per cluster ({', '.join(r.group for r in kn.released_cells)})"
                           if kn.released_cells else "may follow the clusters (half the datasets: a uniform share of the TCM users from one "
                           "cluster)" if kn.trust_may_follow_clusters else "split at random (model.trust_may_follow_clusters "
                                                                          "= false)")]
    if kn.pilot_is_random_sample:
        header.append("pilot: a random sample of these users (model.pilot_is_random_sample = true)")
    # every built-in candidate starts from the pilot's clustering (the public start alone is it): on the held-out
    # pilot-biased truths the iterated ones failed as the start did (docs/calibration.md, premises); a uniform start
    # rests on no pilot
    premises = [] if kn.start != "pilot" else [
        Premise("pilot-sample", "the pilot being a random sample of these users",
                "recruited elsewhere, earlier, or more from some clusters than others", "model.pilot_is_random_sample",
                stated=bool(kn.pilot_is_random_sample), candidates=tuple(built_in), advice=PILOT_ADVICE)]
    return Problem(
        kind="kmeans", description=v.description, model=model, candidates=lambda posterior: make_candidates(v, posterior),
        task=WCSS(), dim="algorithm", requirements=requirements(v), assumptions=kmeans_assumptions(tuple(v.bounds)),
        premises=premises,
        probe=kmeans_probe(v, ev.plan_share, make_candidates) if ev.plan_share > 0 else None,
        chains=v.fit.chains, tune=0,
        datasets=ev.draws, trials=ev.trials, seed=ev.seed, header=header,
        title=f"hybrid-trust K-means: expected WCSS (c = {v.c:.2g}, epsilon = {v.epsilon:g})",
    )
