"""SPEC kind ``public-private``: an M-estimate of a private dataset released with the help of public records (Wang et al.).

Wang, Ji, Kim, Wang, Xiong & Jiang (IEEE TKDE 2018).  What is public: the public records (a CSV
file whose used columns are declared ``number``, ``integer`` or ``categorical``; categorical ones
are one-hot encoded in the distances, as the paper's rescaling does), the private dataset's size
``n`` and whatever summaries of it are already published (covariate means and variances, the
outcome rate), the contrast (``mean``, ``median``, ``logistic`` with the outcome column, or a
contrast registered with :func:`register_contrast`) and the total epsilon.

All of it goes into a :class:`~hybridpriv.families.public_private.wang.model.WangPrivateModel`, whose posterior generates
private datasets beside the fixed public records.  Candidates (candidate dimension ``candidate``),
every one charged its full privacy cost against the same total ``epsilon``:

* ``public-only`` -- the unweighted public fit (spends nothing, never reads the private records);
* ``lei`` -- Lei's perturbed histogram on the private records at ``epsilon``, only where its grid
  has at most ``candidates.lei_max_cells`` cells (otherwise left out, the reason in the header);
* ``algorithm2`` -- Algorithm 2 with the budget split ``epsilon * algorithm2_split`` (order,
  weights, selection; logistic contrast only, its criterion needs it);
* ``alg1-n=N`` -- Algorithm 1 with all of ``epsilon`` on the weights, on the first ``N`` public
  points of the model's public order (:func:`~hybridpriv.families.public_private.wang.model.weight_order`): the subset
  sizes are chosen from the model, which costs no budget.

Task: :class:`~hybridpriv.families.public_private.wang.PredictionError` (logistic: Section 5.1's criterion
against the non-private fit of each generated dataset) or
:class:`~hybridpriv.families.public_private.wang.ParameterError` (any other contrast: squared distance to the
non-private M-estimate).  Continuous columns are standardised by the public mean and sd (public
information), so losses and coefficients are on that scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...core.io import read_rows
from ...spec.schema import (
    Config,
    Context,
    Key,
    SpecError,
    Table,
    choice,
    epsilon,
    fit_table,
    integer,
    list_of,
    number,
    plan_key,
    run_keys,
    string,
    table,
)

__all__ = ["CONTRASTS", "COLUMN_TYPES", "EVALUATION", "MODEL", "PRIVATE", "SECTIONS", "TOP", "CANDIDATES",
           "build", "check", "load_public", "make_candidates", "register_contrast"]

#: Column types of the public CSV.
COLUMN_TYPES = ("number", "integer", "categorical")
#: Most private records of one simulated dataset.
MAX_RECORDS = 5_000_000
#: Most record-operations of a whole evaluation (datasets x trials x candidates x private records).
MAX_WORK = 1e11

#: Registered contrasts: name -> factory returning a :class:`~hybridpriv.families.public_private.wang.Contrast`.
CONTRASTS: dict[str, Callable[[], Any]] = {}


def register_contrast(name: str, factory: Callable[[], Any]) -> None:
    """Make ``contrast = "NAME"`` usable in SPECs of this kind: ``factory()`` builds the contrast.

    The contrast is scored by :class:`~hybridpriv.families.public_private.wang.ParameterError` (squared distance
    to the non-private M-estimate of each generated dataset); Algorithm 2 is left out (its
    criterion needs the logistic contrast).
    """
    if not isinstance(name, str) or not name or name in ("mean", "median", "logistic"):
        raise ValueError(f"name must be a new non-empty string (not mean, median or logistic), got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    CONTRASTS[name] = factory


def _per_column(item: Callable[[Any, str, Context], Any]) -> Callable[[Any, str, Context], dict[str, Any]]:
    """A TOML table ``{column name: value}``."""

    def parse(value: Any, path: str, ctx: Context) -> dict[str, Any]:
        if not isinstance(value, dict) or not value:
            raise SpecError(f"{path} must be a table {{column = value, ...}}, got {value!r:.60}")
        return {str(k): item(v, f"{path}.{k}", ctx) for k, v in value.items()}

    return parse


def _path(value: Any, path: str, ctx: Context) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{path} must be the path of a CSV file, got {value!r:.60}")
    p = ctx.base_dir / value
    if not p.is_file():
        raise SpecError(f"{path} file not found: {p}")
    return value


def _fraction_split(value: Any, path: str, ctx: Context) -> list[float]:
    parts = list_of(number(0.0, strict=True), 3)(value, path, ctx)
    if len(parts) != 3 or not math.isclose(sum(parts), 1.0, rel_tol=1e-9):
        raise SpecError(f"{path} must be three fractions > 0 summing to 1 (order, weights, selection), got {value!r}")
    return parts


CROSS_MOMENTS = Table((
    Key("values", _per_column(number()),
        doc="the released cross-moment of every column: the mean over the private records of outcome x the column "
            "standardised by the public mean and sd (categorical: its level code), clipped to [-clip, clip]; with "
            "Laplace noise", example="{ glu = 0.31, bmi = 0.12, age = 0.09 }"),
    Key("noise_scale", number(0.0, strict=True, maximum=1e12), doc="the Laplace noise scale of each value",
        example="0.05"),
    Key("clip", number(0.0, strict=True, maximum=1e12), 2.0,
        doc="the clipping bound (public sds; a categorical column's in level-code units)"),
), doc="an earlier DP release of the private records' cross-moments (what the outcome does with each column)")

PRIVATE = Table((
    Key("n", integer(2, MAX_RECORDS), doc="number of private records (public: replace-one neighbours keep it fixed)",
        example="332"),
    Key("covariate_mean", _per_column(number()), None, doc="published mean of every column (all of them, or leave it out)",
        example="{ glu = 119.3, bmi = 33.2, age = 31.3 }"),
    Key("covariate_variance", _per_column(number(0.0, strict=True)), None,
        doc="published sample variance of every column (all of them, or leave it out)",
        example="{ glu = 930.3, bmi = 53.0, age = 113.1 }"),
    Key("outcome_rate", number(0.0, strict=True, maximum=1.0), None, doc="published share of outcome = 1, in (0, 1)",
        example="0.33"),
    Key("cross_moments", table(CROSS_MOMENTS, optional=True), None,
        doc=CROSS_MOMENTS.doc + ": values, noise_scale, clip (default 2)",
        example="{ values = { glu = 0.31, bmi = 0.12, age = 0.09 }, noise_scale = 0.6 }"),
), doc="the private dataset: its size and the summaries of it that are already public (charged nothing)")

CANDIDATES = Table((
    Key("subset_sizes", list_of(integer(1)), None,
        doc="public subset sizes for Algorithm 1 and Algorithm 2 (default: 5%, 10%, 25%, 50%, 100% of the public records)",
        example="[10, 20, 50, 100, 200]"),
    Key("algorithm2_split", _fraction_split, [0.1, 0.8, 0.1],
        doc="Algorithm 2's split of epsilon: order, weights, selection (fractions summing to 1)"),
    Key("algorithm2_ridge", number(0.0, strict=True), 1.0,
        doc="ridge of Algorithm 2's reference fit (gives its criterion a proven sensitivity)"),
    Key("lei_bins", integer(2, 1000), 10, doc="Lei's histogram: bins per continuous column"),
    Key("lei_max_cells", integer(1, 10_000_000), 10_000,
        doc="Lei's histogram is a candidate only if its grid has at most this many cells"),
    Key("logistic_ridge", number(0.0), 0.01, doc="logistic contrast: ridge on the coefficients (0: the plain MLE)"),
), doc="the candidates")

MODEL = Table((
    Key("shift_sd", number(0.0, strict=True), 1.0, doc="prior sd of the private column means, in public sds"),
    Key("log_scale_sd", number(0.0, strict=True), 0.5, doc="prior sd of log(private sd / public sd) per column"),
    Key("coef_sd", number(0.0, strict=True), 1.0,
        doc="prior sd of private minus public logistic coefficients, when they differ"),
    Key("shared_prior", number(0.0, maximum=1.0), 0.5,
        doc="prior probability that the outcome depends on the covariates as in the public records "
            "(the published outcome rate updates it; 1: only the covariates shift; 0: always different)"),
    Key("order_datasets", integer(1, 10_000), 20, doc="simulated datasets that order the public points"),
), doc="the model of public knowledge (WangPrivateModel)")

FIT = fit_table()

EVALUATION = Table((
    # criterion "regret": on the calibration's 33 truths the mean regret 26% -> 21% and 9 -> 6 truths above 25%
    # (docs/calibration-history.md): public-only's heavy right tail no longer outweighs how often it is best
    *run_keys(100, 10, draws_doc="simulated private datasets", trials_doc="releases per dataset and candidate",
              max_trials=100_000, criterion="regret"),
    plan_key("a Laplace release of the cross-moments of the outcome with each column (logistic contrast)"),
), doc="how the candidates are evaluated")

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("public_records", _path, doc="the public records: a CSV file with a header row", example='"public.csv"'),
    Key("columns", _per_column(choice(*COLUMN_TYPES)),
        doc="the covariates used and their types: number, integer or categorical (one-hot in distances)",
        example='{ glu = "number", bmi = "number", age = "integer" }'),
    Key("outcome", string(), doc="the 0/1 outcome column (the model of public knowledge needs it)", example='"type"'),
    Key("outcome_positive", string(), None, doc='the outcome value coded 1 (default: "1" for a 0/1 column)',
        example='"Yes"'),
    Key("contrast", string(), "logistic",
        doc="logistic (outcome on the columns), mean or median (of the columns), or a registered contrast"),
    Key("epsilon", epsilon(allow_public=False), doc="the total epsilon every candidate is charged at most",
        example="1.0"),
    Key("private", table(PRIVATE), doc="the private dataset"),
    Key("candidates", table(CANDIDATES), None, doc="the candidates"),
    Key("model", table(MODEL), None, doc="the model of public knowledge"),
    Key("fit", table(FIT), None, doc=FIT.doc),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind public-private: release an M-estimate of a private dataset with the help of "
       "public records (Wang et al.)", examples=({"outcome_positive": '"Yes"'},), derived=("public",))

SECTIONS = (("private", PRIVATE, False), ("candidates", CANDIDATES, False), ("model", MODEL, False),
            ("fit", FIT, False), ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("model.chains", "fit.chains"), ("model.tune", "fit.tune"))


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def load_public(path: Path, columns: dict[str, str], outcome: str, positive: str | None,
                key: str = "public_records") -> dict[str, Any]:
    """Read the public CSV: the declared columns converted and checked, the outcome coded 0/1.

    Returns ``{"X": (n_E, p) raw values (categorical: level codes), "y": (n_E,), "levels": {column:
    levels}, "positive": the level coded 1}``.  A value that does not fit its declared type is refused
    naming the column, the row and the value.
    """
    rows = read_rows(path, key, SpecError)
    if len(rows) < 2:
        raise SpecError(f"{key} file {path} needs a header row and at least one record")
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    for name in [*columns, outcome]:
        if name not in header:
            where = "outcome" if name == outcome else f"columns.{name}"
            raise SpecError(f"{where}: {key} file {path.name} has no column {name!r}; it has {header}")
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise SpecError(f"{key} file {path.name} row {i + 2} has {len(r)} fields, the header has {len(header)}")
    X = np.empty((len(body), len(columns)))
    levels: dict[str, tuple[str, ...]] = {}
    for j, (name, kind) in enumerate(columns.items()):
        raw = [r[header.index(name)].strip() for r in body]
        if kind == "categorical":
            lv = tuple(sorted(set(raw), key=lambda s: (_number(s) is None, _number(s) or 0.0, s)))
            levels[name] = lv
            X[:, j] = [lv.index(v) for v in raw]
            continue
        for i, v in enumerate(raw):
            x = _number(v)
            if x is None or (kind == "integer" and x != round(x)):
                raise SpecError(f"columns.{name} is declared {kind}, but {key} file {path.name} row {i + 2} holds "
                                f"{v!r} (declare it categorical, or clean the file)")
            X[i, j] = x
    y_raw = [r[header.index(outcome)].strip() for r in body]
    found = sorted(set(y_raw))
    if len(found) != 2:
        raise SpecError(f"outcome column {outcome!r} must hold two values, {key} file {path.name} has {found[:4]}")
    if positive is None:
        if not set(found) <= {"0", "1"}:
            raise SpecError(f"outcome column {outcome!r} holds {found[:4]}: name the value coded 1 with outcome_positive")
        positive = "1"
    if positive not in found:
        raise SpecError(f"outcome_positive = {positive!r} does not occur in outcome column {outcome!r}; it holds {found[:4]}")
    return {"X": X, "y": np.array([v == positive for v in y_raw], dtype=float), "levels": levels, "positive": positive}


def _default_sizes(n_public: int) -> list[int]:
    return sorted({max(1, round(n_public * f)) for f in (0.05, 0.1, 0.25, 0.5, 1.0)})


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks and the public records read (at load time, before any sampling)."""
    cols, out = v.columns, v.outcome
    if out in cols:
        raise SpecError(f"outcome {out!r} is also listed in columns; the columns are the covariates")
    if v.contrast not in ("mean", "median", "logistic", *CONTRASTS):
        raise SpecError(f"contrast must be 'mean', 'median', 'logistic' or a registered contrast {sorted(CONTRASTS)}, "
                        f"got {v.contrast!r} (register one with hybridpriv.spec.public_private.register_contrast)")
    pub = load_public(ctx.base_dir / v.public_records, cols, out, v.outcome_positive)
    X, y = pub["X"], pub["y"]
    for j, name in enumerate(cols):
        if np.unique(X[:, j]).size < 2:
            raise SpecError(f"columns.{name}: the public records hold one value only; the model needs a spread")
    rows = np.column_stack([X, y])
    _, first = np.unique(rows, axis=0, return_index=True)
    keep = np.sort(first)
    v = v.replace(public={"X": X[keep], "y": y[keep], "levels": pub["levels"], "duplicates": int(len(rows) - keep.size)})
    n_e = int(keep.size)
    if n_e < 3:
        raise SpecError(f"public_records: {n_e} distinct record(s); at least 3 are needed")
    pr = v.private
    for key in ("covariate_mean", "covariate_variance", "cross_moments"):
        given = getattr(pr, key)
        if given is None:
            continue
        if key == "cross_moments":
            key, given = "cross_moments.values", given.values
        unknown = [c for c in given if c not in cols]
        if unknown:
            raise SpecError(f"private.{key} names {unknown[0]!r}, not one of the columns {list(cols)}")
        missing = [c for c in cols if c not in given]
        if missing:
            raise SpecError(f"private.{key} must give every column (or none); missing {missing}")
    if pr.cross_moments is not None:
        from .wang.cross_moments import beyond_text, reachable

        cm = pr.cross_moments
        for c in cols:  # a released value is public: it may be shown
            if abs(cm.values[c]) > reachable(cm.clip, cm.noise_scale):
                raise SpecError(f"private.cross_moments.values.{c} = {cm.values[c]!r} "
                                f"{beyond_text(cm.clip, cm.noise_scale)}")
    if pr.outcome_rate is not None and not 0.0 < pr.outcome_rate < 1.0:
        raise SpecError(f"private.outcome_rate must be strictly between 0 and 1, got {pr.outcome_rate!r}")
    cand = v.candidates
    sizes = cand.subset_sizes if cand.subset_sizes is not None else _default_sizes(n_e)
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise SpecError(f"candidates.subset_sizes must be strictly increasing, got {sizes!r}")
    if sizes[-1] > n_e:
        raise SpecError(f"candidates.subset_sizes must be at most the {n_e} distinct public records, got {sizes[-1]}")
    v = v.replace(candidates=cand.replace(subset_sizes=sizes))
    if v.contrast == "logistic" and len(sizes) < 2:
        raise SpecError(f"candidates.subset_sizes needs at least 2 sizes (Algorithm 2 chooses among them), got {sizes!r}")
    ev = v.evaluation
    work = float(ev.draws) * ev.trials * (len(sizes) + 3) * pr.n
    if work > MAX_WORK:
        raise SpecError(f"evaluation.draws = {ev.draws} x evaluation.trials = {ev.trials} x {len(sizes) + 3} "
                        f"candidates x private.n = {pr.n} is {work:.2g} record-operations (hours of CPU); lower them")
    return v


def _contrast(v: Config):
    from .wang import LogisticContrast, as_contrast

    name = v.contrast
    if name == "logistic":
        return LogisticContrast(intercept=True, l2=v.candidates.logistic_ridge)
    if name in ("mean", "median"):
        return as_contrast(name)
    return CONTRASTS[name]()


def _standardise(v: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Public means and sds of the columns (categorical: 0 and 1, i.e. codes kept) and the standardised X."""
    X = v.public["X"]
    cat = np.array([t == "categorical" for t in v.columns.values()])
    center = np.where(cat, 0.0, X.mean(axis=0))
    scale = np.where(cat, 1.0, X.std(axis=0, ddof=1))
    return center, scale, (X - center) / scale


def _cross(cm: Config, cols: list[str]):
    from .wang.cross_moments import CrossMoments

    return CrossMoments([cm.values[c] for c in cols], cm.noise_scale, cm.clip)


def _summaries(v: Config, center: np.ndarray, scale: np.ndarray):
    from .wang.model import PublishedSummaries

    pr, cols = v.private, list(v.columns)
    mean = None if pr.covariate_mean is None else (np.array([pr.covariate_mean[c] for c in cols]) - center) / scale
    var = None if pr.covariate_variance is None else np.array([pr.covariate_variance[c] for c in cols]) / scale**2
    cross = None if pr.cross_moments is None else _cross(pr.cross_moments, cols)
    return PublishedSummaries(pr.n, mean, var, pr.outcome_rate, cross)


def _lei_cells(v: Config, layout: Any) -> int:
    n_cont = len(v.columns) - len(layout.categorical)
    cells = v.candidates.lei_bins ** n_cont * math.prod(layout.n_levels.values())
    return cells * (2 if layout.logistic else 1)


def make_candidates(v: Config, posterior: Any, layout: Any) -> dict[str, Any]:
    """The candidates ``{coordinate: mechanism}``; Algorithm 1's order comes from ``posterior`` (public)."""
    from .wang.model import weight_order
    from .wang import Algorithm1, Algorithm2, LeiHistogram, PublicOnly

    eps, cand, c = v.epsilon, v.candidates, _contrast(v)
    out: dict[str, Any] = {"public-only": PublicOnly(c)}
    cells = _lei_cells(v, layout)
    if cells <= cand.lei_max_cells:
        discrete = {j: list(range(k)) for j, k in layout.n_levels.items()} or None
        out["lei"] = LeiHistogram(c, eps, cand.lei_bins, discrete=discrete, max_cells=cand.lei_max_cells)
    if layout.logistic:
        f1, f2, _ = cand.algorithm2_split
        e1, e2 = eps * f1, eps * f2
        out["algorithm2"] = Algorithm2(c, (e1, e2, eps - e1 - e2), cand.subset_sizes,
                                       reference_ridge=cand.algorithm2_ridge)
    order, _ = weight_order(posterior, v.model.order_datasets, posterior.seed)
    for n in cand.subset_sizes:
        out[f"alg1-n={n}"] = Algorithm1(c, eps, n, order=order)
    for name, m in out.items():  # every candidate is charged its full cost, at most the total epsilon
        spent = m.privacy["private"].epsilon
        if spent > eps * (1 + 1e-9):
            raise SpecError(f"candidate {name} would spend epsilon = {spent!r} > epsilon = {eps!r}")
    return out


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (:data:`hybridpriv.spec.custom.CONTEXT`)."""
    return {"contrast": _contrast(v), "epsilon": v.epsilon, "posterior": posterior}


def build(v: Config):
    """The selection problem: the model (built and validated now), candidates, task, requirements."""
    from ...core.privacy import Guarantee
    from ...workflow import Problem
    from .model import Layout, SpecWangModel
    from .plan import public_private_probe
    from .wang import ParameterError, PredictionError

    layout = Layout(v, *_standardise(v))
    Z = layout.public[:, :len(v.columns)]
    mo, ev, cand = v.model, v.evaluation, v.candidates
    try:
        summaries = _summaries(v, layout.center, layout.scale)
        model = SpecWangModel(Z, v.public["y"], summaries, layout, shift_sd=mo.shift_sd,
                              log_scale_sd=mo.log_scale_sd, coef_sd=mo.coef_sd, shared_prior=mo.shared_prior,
                              seed=ev.seed)
        contrast = _contrast(v)
        task = PredictionError(contrast) if layout.logistic else ParameterError(contrast)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise SpecError(msg if msg.startswith("spec:") else f"model: {msg}") from None
    eps, pr, pub = v.epsilon, v.private, v.public
    known = [k for k in ("covariate_mean", "covariate_variance", "outcome_rate", "cross_moments")
             if getattr(pr, k) is not None]
    cells = _lei_cells(v, layout)
    f1, f2, f3 = cand.algorithm2_split
    types = ", ".join(f"{c} ({t})" for c, t in v.columns.items())
    header = [
        f"public records: {pub['X'].shape[0]} distinct ({pub['duplicates']} repeated rows dropped); columns {types}; "
        f"outcome {v.outcome} (1 = {v.outcome_positive or '1'})",
        f"private dataset: n = {pr.n}; published: {', '.join(known) if known else 'nothing but n'}",
        f"contrast {v.contrast}; loss: {task.loss_name} (continuous columns standardised by the public mean and sd)",
        f"every candidate is charged its full privacy cost, all at total epsilon = {eps:g} (replace-one): "
        f"Algorithm 1 spends it all on the weights (its subset sizes are chosen from the model: no budget), "
        + (f"Algorithm 2 splits it {f1:g}/{f2:g}/{f3:g} (order/weights/selection), " if layout.logistic else "")
        + ("Lei's histogram spends it on the cells, " if cells <= cand.lei_max_cells else "")
        + "public-only spends nothing (never reads the private records)",
    ]
    if cells > cand.lei_max_cells:
        header.append(f"left out: lei (its grid has {cells:.3g} cells > candidates.lei_max_cells = "
                      f"{cand.lei_max_cells}: {cand.lei_bins} bins per continuous column)")
    if not layout.logistic:
        header.append(f"left out: algorithm2 (its selection criterion needs the logistic contrast, not {v.contrast!r})")
    return Problem(
        kind="public-private", description=v.description, model=model,
        candidates=lambda posterior: make_candidates(v, posterior, layout), task=task, dim="candidate",
        requirements={"private": Guarantee(eps, 0.0, "replace")}, chains=v.fit.chains, tune=v.fit.tune,
        datasets=ev.draws, trials=ev.trials, seed=ev.seed, header=header,
        title=f"public + private records: expected {task.loss_name} at total epsilon = {eps:g}",
        group_of=lambda c: "alg1 (best n)" if str(c).startswith("alg1-n=") else str(c), group_name="approach",
        probe=(public_private_probe(v, ev.plan_share, lambda values, posterior: make_candidates(values, posterior, layout))
               if ev.plan_share > 0 and layout.logistic else None),
    )
