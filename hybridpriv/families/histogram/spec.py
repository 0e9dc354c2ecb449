"""SPEC kind ``histogram``: the shares of public categories, for groups of different epsilons.

What is public: the categories, every group's size and epsilon, the public groups' records (category
names, a list or a CSV file), the neighbouring relation.  Candidates (candidate dimension ``estimator``):
``weighted`` and ``proportional`` (:class:`~hybridpriv.families.histogram.mechanisms.LaplaceHistograms`),
``adaptive`` (``weighted``'s releases, weights adapted to the groups' disagreement), ``pooled``,
``sample-avg`` and ``sample-max`` (Jorgensen et al.'s PDP Sample) and, with a public group,
``public-only``.  Task: the squared error of the released shares (exact risk given the counts, except
for Sample), or the largest error of a share.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...core.privacy import NEIGHBOUR_RELATIONS
from .data import BETWEEN, SHARED_PRIOR
from .model_released import MAX_RELEASE_CATEGORIES
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
    integer,
    list_of,
    number,
    plan_key,
    read_csv_rows,
    run_keys,
    spec_groups,
    string,
    table,
    tables,
)

__all__ = ["CANDIDATES", "EVALUATION", "GROUP", "MODEL", "SECTIONS", "TOP", "build", "check", "context"]

#: The built-in candidates, by label.
CANDIDATES = ("weighted", "adaptive", "adaptive-1se", "proportional", "pooled", "sample-avg", "sample-max",
              "public-only")
#: Most categories, and most records in all groups (one simulated dataset holds groups x categories counts).
MAX_CATEGORIES = 10_000
MAX_RECORDS = 50_000_000
#: Most (dataset x trial x candidate x (category + record)) operations of an evaluation.
MAX_WORK = 3e12


def _records(value: Any, path: str, ctx: Context) -> list[str]:
    """Public records: a list of category names, or the path of a CSV whose first column holds them."""
    if isinstance(value, str):
        rows = read_csv_rows(ctx.base_dir / value, path)
        return [r[0].strip() for r in rows]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SpecError(f"{path} must be a list of category names or a CSV path, got {_show(value)}")


GROUP = Table((
    Key("name", string(), doc="the group's name (unique)", example='"panel"'),
    Key("size", integer(1), doc="number of records (public: group sizes are known)", example="120"),
    Key("epsilon", epsilon(), doc="the group's epsilon; inf for public records", example="inf"),
    Key("data", _records, None, doc="public records: a list of category names or a CSV path (public groups only)",
        example='"panel.csv"'),
), doc="one [[groups]] table per privacy group",
    examples=({"name": '"panel"', "size": "6", "epsilon": "inf",
               "data": '["a", "b", "a", "c", "a", "b"]'},
              {"name": '"opt-in"', "size": "800", "epsilon": "1.0"},
              {"name": '"strict"', "size": "300", "epsilon": "0.2"}))

RELEASE = Table((
    Key("group", string(), doc="the private group whose counts were released", example='"opt-in"'),
    Key("counts", list_of(number(), 2),
        doc="the released (noisy) counts, one per category in the order of categories", example="[412.3, 388.9, -2.1]"),
    Key("noise_scale", number(0.0, strict=True), doc="the Laplace scale of each count's noise", example="10.0"),
), doc="an earlier noisy release of a private group's counts (e.g. a budget-spending selector's feature)")

MODEL = Table((
    Key("prior", number(0.0, strict=True), 1.0, doc="Dirichlet concentration of every category's share"),
    Key("groups_may_differ", boolean(), True,
        doc="each private group's shares may differ from the public groups' and each other's (false: they answer "
            "alike, as when people were put in groups at random)"),
    Key("shared_prior", number(0.0, maximum=1.0), SHARED_PRIOR,
        doc="prior probability that the private groups answer alike (else their shares spread by `between`)"),
    Key("between", number(0.0, strict=True, maximum=1.0), BETWEEN,
        doc="prior scale of the groups' spread: a share's sd across groups over sqrt(p (1 - p)) (half-normal)"),
    Key("released_counts", tables(RELEASE), [], doc="earlier noisy releases of private groups' counts (at most one "
        "per group): the model then updates in a Gaussian approximation (docs/histogram.md)",
        example='[{ group = "opt-in", counts = [412.3, 388.9, -2.1], noise_scale = 10.0 }]'),
), doc="the model of public knowledge: the categories' shares, and how far the private groups' may differ")

EVALUATION = Table((
    Key("candidates", list_of(choice(*CANDIDATES)), None, doc="candidates by name (default: every built-in one)",
        example='["weighted", "pooled"]'),
    # criterion "regret": on the calibration's 31 truths the mean regret 11% -> 8% (docs/calibration-history.md): pooled and
    # Sample, safe when the groups differ, are several times worse when they answer alike
    *run_keys(200, 50, trials_doc="releases per dataset (PDP Sample and adaptive are run; the others are exact)",
              criterion="regret"),
    Key("loss", choice("squared", "max"), "squared", doc="squared error summed over categories, or the largest"),
    plan_key("a Laplace histogram of each private group's counts"),
), doc="how the candidates are evaluated")

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("categories", list_of(string(), 2), doc="the categories (public), in the order shares are released",
        example='["a", "b", "c"]'),
    Key("relation", choice(*NEIGHBOUR_RELATIONS), "add-remove", doc="neighbouring relation the groups require"),
    Key("groups", tables(GROUP, 1), doc="the privacy groups"),
    Key("model", table(MODEL), None, doc="the model of public knowledge"),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind histogram: choose a histogram mechanism over public categories for groups of "
       "different epsilons", derived=("public_counts",))

#: Sections of the template.
SECTIONS = (("groups", GROUP, True), ("model", MODEL, False), ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("evaluation.estimators", "evaluation.candidates"),)


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks and conversions (run at load time, before any sampling)."""
    cats = v.categories
    if len(cats) > MAX_CATEGORIES:
        raise SpecError(f"categories: {len(cats):,} categories exceed the limit of {MAX_CATEGORIES:,}")
    dup = sorted(c for c, k in Counter(cats).items() if k > 1)
    if dup:
        raise SpecError(f"categories must be distinct, got {dup[0]!r} twice")
    index = {c: j for j, c in enumerate(cats)}
    groups, public = [], {}
    for k, group, data in spec_groups(v.groups):
        if data is not None:
            unknown = [r for r in data if r not in index]
            if unknown:
                raise SpecError(f"groups[{k}].data holds {unknown[0]!r}, which is not one of the categories")
            public[group.name] = np.bincount([index[r] for r in data], minlength=len(cats))
        groups.append(group)
    if all(g.is_public for g in groups):
        raise SpecError("groups: at least one group must be private (a finite epsilon)")
    v = v.replace(groups=tuple(groups), public_counts=public)
    private, released = {g.name for g in groups if not g.is_public}, set()
    for k, r in enumerate(v.model.released_counts):
        if r.group not in private:
            raise SpecError(f"model.released_counts[{k}].group must name a private group, got {r.group!r}")
        if r.group in released:
            raise SpecError(f"model.released_counts[{k}].group {r.group!r} is released twice: give one release a group")
        released.add(r.group)
        if len(r.counts) != len(cats):
            raise SpecError(f"model.released_counts[{k}].counts must hold {len(cats)} counts (one per category), got "
                            f"{len(r.counts)}")
    if released and len(cats) > MAX_RELEASE_CATEGORIES:
        raise SpecError(f"model.released_counts: a model with releases takes at most {MAX_RELEASE_CATEGORIES} "
                        f"categories, got {len(cats)}")
    records = sum(g.size for g in groups)
    if records > MAX_RECORDS:
        raise SpecError(f"groups: {records:,} records in all exceed {MAX_RECORDS:,}")
    ev = v.evaluation
    n_cand = len(ev.candidates) if ev.candidates is not None else len(CANDIDATES)
    work = float(ev.draws) * ev.trials * n_cand * (len(cats) + records)
    if work > MAX_WORK:
        raise SpecError(f"evaluation.draws = {ev.draws} x evaluation.trials = {ev.trials} x {n_cand} candidates "
                        f"x ({len(cats)} categories + {records:,} records) is {work:.2g} operations (hours of CPU); "
                        "lower evaluation.draws or evaluation.trials")
    return v


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (the family's ``context_docs``)."""
    return {"groups": v.groups, "categories": tuple(v.categories), "relation": v.relation,
            "s2": 0.25 if posterior is None else posterior, "posterior": posterior}


def make_candidates(v: Config, posterior: Any, names: Any = None, groups: Any = None) -> dict[str, Any]:
    """The built-in candidates ``names`` (default: all that apply), by label; ``groups``: other budgets for the
    SPEC's groups (the two-stage plan's second stage), default the SPEC's."""
    from .mechanisms import (EAGER_MARGIN, AdaptiveHistograms, LaplaceHistograms, PooledHistogram, PublicHistogram,
                             SampleHistogram)

    groups, cats, rel = v.groups if groups is None else tuple(groups), tuple(v.categories), v.relation
    s2 = 0.25 if posterior is None else posterior
    has_public = any(g.is_public for g in groups)
    make = {"weighted": lambda: LaplaceHistograms(groups, cats, rel, "inverse-variance", s2),
            "adaptive": lambda: AdaptiveHistograms(groups, cats, rel, s2),
            "adaptive-1se": lambda: AdaptiveHistograms(groups, cats, rel, s2, EAGER_MARGIN),
            "proportional": lambda: LaplaceHistograms(groups, cats, rel, "size", s2),
            "pooled": lambda: PooledHistogram(groups, cats, rel),
            "sample-avg": lambda: SampleHistogram(groups, cats, rel, "avg"),
            "sample-max": lambda: SampleHistogram(groups, cats, rel, "max"),
            "public-only": lambda: PublicHistogram(groups, cats, rel)}
    wanted = names or [n for n in CANDIDATES if has_public or n != "public-only"]
    if "public-only" in wanted and not has_public:
        raise SpecError("evaluation.estimators: public-only needs a public group")
    return {n: make[n]() for n in wanted}


def build(v: Config):
    """The selection problem: the model of the shares, the candidates, the task, the requirements."""
    from ...workflow import Problem
    from .assumptions import histogram_assumptions
    from .model import CategoryModel, ReleasedCounts
    from .plan import histogram_probe
    from .task import HistogramError

    releases = []
    for k, r in enumerate(v.model.released_counts):
        try:
            releases.append(ReleasedCounts(r.group, tuple(r.counts), r.noise_scale))
        except (TypeError, ValueError) as exc:
            raise SpecError(f"model.released_counts[{k}]: {exc}") from None
    model = CategoryModel(v.groups, v.categories, v.public_counts, v.model.prior,
                          v.model.between if v.model.groups_may_differ else 0.0, v.model.shared_prior, releases)
    ev = v.evaluation
    make_candidates(v, None, ev.candidates)  # every named candidate can be built: fail before sampling
    header = [f"{len(v.categories)} categories; relation {v.relation}"]
    for g in v.groups:
        kind = "public" if g.is_public else f"epsilon={g.epsilon:g}"
        known = " (records known)" if g.name in v.public_counts else ""
        known += " (counts released earlier)" if any(r.group == g.name for r in v.model.released_counts) else ""
        header.append(f"group {g.name:<10} n={g.size:<7} {kind}{known}")
    return Problem(
        kind="histogram", description=v.description, model=model,
        candidates=lambda posterior: make_candidates(v, posterior, ev.candidates),
        task=HistogramError(ev.loss), dim="estimator", requirements=v.relation, chains=2, tune=0,
        assumptions=histogram_assumptions(v.groups),
        datasets=ev.draws, trials=ev.trials, seed=ev.seed, header=header,
        title=f"category shares: expected {ev.loss} error",
        probe=(histogram_probe(v, ev.plan_share, lambda groups, posterior: make_candidates(
            v, posterior, ev.candidates, groups)) if ev.plan_share > 0 else None),
    )
