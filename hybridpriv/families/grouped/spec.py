"""SPEC kind ``grouped``: a mean or median release over privacy groups (Ferrando et al.; Jorgensen et al.).

What is public: the groups (sizes, epsilons), the bounds, optionally some groups' records, a known
variance, earlier noisy releases of means, and prior beliefs about the records' distribution.
Candidates: the built-in estimators of the statistic (or those named); task: their squared or
absolute error against the population (or sample) statistic.
"""

from __future__ import annotations

from typing import Any

from ...core.privacy import NEIGHBOUR_RELATIONS, Bounds
from .data import GROUP_SHIFT
from ...spec.schema import (
    Config,
    Context,
    Key,
    SpecError,
    Table,
    boolean,
    choice,
    epsilon,
    fit_table,
    integer,
    list_of,
    number,
    pair,
    plan_key,
    run_keys,
    spec_groups,
    string,
    table,
    tables,
    values,
)

__all__ = ["FIT", "GROUP", "MODEL", "RELEASE", "EVALUATION", "TOP", "build", "check"]

#: Most records in one simulated dataset (all groups): 8 bytes each, a few copies in flight.
MAX_RECORDS = 50_000_000
#: Most record-operations of a whole evaluation (datasets x trials x candidates x records); about
#: 1e9 per second per core, so this is roughly half an hour on 2 cores.
MAX_WORK = 3e12

GROUP = Table((
    Key("name", string(), doc="the group's name (unique)", example='"panel"'),
    Key("size", integer(1), doc="number of records (public: group sizes are known)", example="150"),
    Key("epsilon", epsilon(), doc="the group's epsilon; inf for public records", example="inf"),
    Key("delta", number(0.0, maximum=0.999999), 0.0, doc="delta for approximate DP (0: pure DP)"),
    Key("trust", choice("central", "local"), "central", doc="central (trusts the curator) or local"),
    Key("data", values(), None, doc="public records: a list or a CSV path (public groups only)", example='"panel.csv"'),
), doc="one [[groups]] table per privacy group",
    examples=({"name": '"panel"', "size": "150", "epsilon": "inf"},
              {"name": '"opt-in"', "size": "2000", "epsilon": "1.0"},
              {"name": '"strict"', "size": "1000", "epsilon": "0.1"}))

RELEASE = Table((
    Key("group", string(), None, doc="the group whose mean was released (default: all records)"),
    Key("value", number(finite=False), doc="the released (noisy) mean", example="23.1"),
    Key("noise_scale", number(0.0, strict=True), doc="the Laplace scale of its noise", example="0.5"),
), doc="an earlier noisy release of a mean")

MODEL = Table((
    Key("family", choice("normal", "beta", "mixture", "auto"), "auto",
        doc="distribution family of the records: normal, beta, mixture (point masses at the bounds + two Betas) "
            "or auto (chosen by PSIS-LOO on the public records; normal without them)"),
    Key("family_options", table(Table((
        Key("mu", pair(number()), None, doc="normal: prior (mean, sd) of mu"),
        Key("sigma_scale", number(0.0, strict=True), None, doc="normal: scale of the half-normal prior on sigma"),
        Key("mean", pair(number()), None, doc="beta: prior (mean, sd) of the mean on [0, 1]"),
        Key("concentration", pair(number()), None, doc="beta: prior (mean, sd) of the concentration"),
    ))), None, doc="priors of the family's parameters", example="{ mu = [20.0, 20.0], sigma_scale = 30.0 }"),
    Key("known_variance", number(0.0, strict=True), None, doc="the records' variance if it is public"),
    Key("released_means", tables(RELEASE), [], doc="earlier noisy releases of means",
        example='[{ group = "default", value = 23.1, noise_scale = 0.5 }]'),
    Key("groups_may_differ", boolean(), False,
        doc="the private groups' laws may be moved against the public one and each other, each by its own shift "
            "(false: they share the public law, as when people were put in groups at random)"),
    Key("group_shift", number(0.0, strict=True, maximum=1.0), GROUP_SHIFT,
        doc="prior scale of a private group's shift, as a share of the bounds' width (half-normal)"),
), doc="the PyMC model of public knowledge")

FIT = fit_table()

EVALUATION = Table((
    Key("candidates", list_of(string()), None, doc="candidates by name (default: every built-in one)",
        example='["weighted", "pdp-opt-expected"]'),
    *run_keys(200, 20),
    plan_key("each private group's mean"),
    Key("target", choice("population", "sample"), "population", doc="score against the population or sample statistic"),
    Key("loss", choice("squared", "absolute"), "squared", doc="squared or absolute error"),
), doc="how the candidates are evaluated")

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("statistic", choice("mean", "median"), "mean", doc="mean or median"),
    Key("bounds", pair(number()), doc="[lower, upper] of every record", example="[0, 80]"),
    Key("clamp", boolean(), False, doc="clip public records into the bounds instead of refusing them"),
    Key("relation", choice(*NEIGHBOUR_RELATIONS), "add-remove", doc="neighbouring relation the groups require"),
    Key("groups", tables(GROUP, 1), doc="the privacy groups"),
    Key("model", table(MODEL), None, doc="the model of public knowledge"),
    Key("fit", table(FIT), None, doc=FIT.doc),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind grouped: choose a mean or median estimator for groups of different epsilons",
    derived=("public_data",))

#: Sections of the template.
SECTIONS = (("groups", GROUP, True), ("model", MODEL, False), ("fit", FIT, False), ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("model.chains", "fit.chains"), ("model.tune", "fit.tune"), ("evaluation.estimators", "evaluation.candidates"))


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks and conversions (run at load time, before any sampling): the bounds as
    :class:`~hybridpriv.core.privacy.Bounds`, the groups as :class:`~hybridpriv.core.privacy.Group` objects and the
    public groups' records as ``public_data`` (name -> records)."""
    try:
        bounds = Bounds.from_pair(v.bounds)
    except (TypeError, ValueError) as exc:
        raise SpecError(str(exc)) from None
    groups, public = [], {}
    for k, group, data in spec_groups(v.groups, ("delta", "trust")):
        if data is not None:
            if not v.clamp:
                try:
                    bounds.check(data, f"groups[{k}].data")
                except ValueError as exc:
                    raise SpecError(str(exc)) from None
            public[group.name] = data
        groups.append(group)
    v = v.replace(bounds=bounds, groups=tuple(groups), public_data=public)
    records = sum(g.size for g in groups)
    if records > MAX_RECORDS:
        raise SpecError(f"groups: {records:,} records in all (the sum of groups[*].size) exceed {MAX_RECORDS:,}: one "
                        "simulated dataset would not fit in memory; simulate a scaled-down setting")
    ev = v.evaluation
    n_cand = len(ev.candidates) if ev.candidates is not None else 8
    work = float(ev.draws) * ev.trials * n_cand * records
    if work > MAX_WORK:
        raise SpecError(f"evaluation.draws = {ev.draws} x evaluation.trials = {ev.trials} x {n_cand} candidates x "
                        f"{records:,} records is {work:.2g} record-operations (hours of CPU); lower evaluation.draws "
                        "or evaluation.trials")
    names = {g.name for g in groups}
    for k, r in enumerate(v.model.released_means):
        if r.group is not None and r.group not in names:
            raise SpecError(f"model.released_means[{k}].group names unknown group {r.group!r}")
    est = v.evaluation.candidates
    if est is not None:
        from ...estimators import ESTIMATOR_NAMES, ESTIMATOR_STATISTIC

        for name in est:
            if name not in ESTIMATOR_NAMES:
                raise SpecError(f"unknown estimator {name!r}; known: {list(ESTIMATOR_NAMES)}")
            if ESTIMATOR_STATISTIC[name] != v.statistic:
                raise SpecError(f"estimator {name!r} estimates the {ESTIMATOR_STATISTIC[name]}, "
                                f"but statistic = {v.statistic!r}")
    return v


def family_choice_lines(table) -> list[str]:
    """The lines ``select`` prints for ``family = "auto"``: each family's PSIS-LOO ELPD and the
    uniformity p-value of its LOO-PIT values, the choice, and a warning when even the chosen
    family misplaces the public records (LOO-PIT p < 0.01)."""
    if table is None:
        return []
    lines = [f"family = auto ({table.attrs['records']} public records; PSIS-LOO ELPD, Pareto k, LOO-PIT uniformity p):"]
    for name in table.family.values:
        t = table.sel(family=name)
        mark = "  <- chosen" if bool(t.chosen) else ""
        k = float(t.max_pareto_k) if "max_pareto_k" in t else float("nan")
        lines.append(f"  {str(name):<8} ELPD {float(t.elpd):10.1f} ± {float(t.se):.1f}   max k {k:.2f}   "
                     f"LOO-PIT p {float(t.loo_pit_p):.3f}{mark}")
    shaky = [str(n) for n in table.family.values if "max_pareto_k" in table
             and float(table.sel(family=n).max_pareto_k) > 0.7]
    if shaky:
        lines.append(f"note: Pareto k > 0.7 for some records under {', '.join(shaky)}: those ELPDs are approximate "
                     "(a few records dominate the leave-one-out estimate)")
    chosen = table.sel(family=table.family.values[table.chosen.values][0])
    if float(chosen.loo_pit_p) < 0.01:
        lines.append(f"warning: even the chosen family ({chosen.family.item()}) misplaces the public records "
                     f"(LOO-PIT p = {float(chosen.loo_pit_p):.2g}): read its expected losses as approximate")
    return lines


def _family(v: Config):
    from ...models import BetaFamily, MixtureFamily, NormalFamily

    options = {k: x for k, x in v.model.family_options.as_dict().items() if x is not None}
    if v.model.family == "auto":
        if options:
            raise SpecError(f"model.family_options {sorted(options)} need a named family (normal or beta), not "
                            "family = 'auto'")
        return "auto"
    cls = {"normal": NormalFamily, "beta": BetaFamily, "mixture": MixtureFamily}[v.model.family]
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"model.family_options for {v.model.family!r}: {exc}") from None


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (:data:`hybridpriv.spec.custom.CONTEXT`)."""
    return {"groups": v.groups, "bounds": v.bounds, "relation": v.relation, "statistic": v.statistic,
            "clamp": v.clamp, "sigma2": 1.0 if posterior is None else posterior, "posterior": posterior}


def _group_shift(v: Config) -> float:
    """The model's ``group_shift``: 0 when the SPEC says the groups share one law, or for a median scored against
    the population's (a shift does not tell the median)."""
    shifts_tell = v.statistic == "mean" or v.evaluation.target == "sample"
    return v.model.group_shift if v.model.groups_may_differ and shifts_tell else 0.0


def build(v: Config):
    """The selection problem: the model (built and validated now), candidates, task, requirements."""
    from ...estimators import default_estimators, make_estimator
    from ...models import GroupedDataModel, ReleasedMean
    from ...workflow import Problem
    from . import Statistic

    releases = []
    for k, r in enumerate(v.model.released_means):
        try:
            releases.append(ReleasedMean(r.value, r.noise_scale, r.group))
        except (TypeError, ValueError) as exc:
            raise SpecError(f"model.released_means[{k}]: {exc}") from None
    try:
        model = GroupedDataModel(v.groups, v.bounds, family=_family(v), public_data=v.public_data or None,
                                 known_variance=v.model.known_variance, released_means=releases,
                                 clamp=v.clamp, group_shift=_group_shift(v))
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise SpecError(msg if msg.startswith("spec:") else f"model: {msg}") from None
    ev = v.evaluation

    def for_groups(groups, posterior) -> dict:
        kw = {"sigma2": posterior, "relation": v.relation}
        if ev.candidates is None:
            ests = default_estimators(groups, v.bounds, v.statistic, **kw)
        else:
            ests = [make_estimator(n, groups, v.bounds, **kw) for n in ev.candidates]
        return {e.label: e for e in ests}

    def candidates(posterior) -> dict:
        return for_groups(v.groups, posterior)

    # every named candidate can be built: fail before sampling
    for name in ev.candidates or []:
        make_estimator(name, v.groups, v.bounds, sigma2=1.0, relation=v.relation, mean_square=0.0)
    header = []
    for g in v.groups:
        kind = "public" if g.is_public else f"epsilon={g.epsilon:g}" + (f", delta={g.delta:g}" if g.delta else "")
        known = " (records known)" if g.name in v.public_data else ""
        header.append(f"group {g.name:<10} n={g.size:<7} {kind}{known}")
    header += family_choice_lines(model.family_choice)

    def diagnostics(posterior, seed: int) -> tuple[list[str], dict[str, Any]]:
        # the family actually fitted (family = auto may have fallen back): a release rebuilds it
        fallback = model.family_choice.attrs.get("fallback", "") if model.family_choice is not None else ""
        lines = [f"warning: family = auto: {fallback}"] if fallback else []
        return lines, {"model_family": posterior.family.name, "family_fallback": fallback}

    from .assumptions import grouped_assumptions
    from .plan import grouped_probe

    return Problem(
        kind="grouped", description=v.description, model=model, candidates=candidates,
        assumptions=grouped_assumptions(v.groups, v.bounds, v.statistic, ev.target),
        task=Statistic(ev.target, ev.loss), dim="estimator", requirements=v.relation,
        chains=v.fit.chains, tune=v.fit.tune, datasets=ev.draws, trials=ev.trials,
        seed=ev.seed, header=header, title=f"{v.statistic} release: expected {ev.loss} error",
        diagnostics=diagnostics,
        probe=grouped_probe(v, ev.plan_share, for_groups) if ev.plan_share > 0 else None,
    )


