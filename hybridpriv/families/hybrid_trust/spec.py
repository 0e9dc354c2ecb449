"""SPEC kind ``hybrid-trust``: a mean release when some users trust the curator and others only their device.

Avent, Dubey & Korolova (2020): the *TCM* users trust the curator (central DP), the *LM* users
randomise locally (local DP).  What is public: the bounds ``[0, m]``, the two groups' sizes (or
``n`` and the TCM share ``c``), every group's epsilon (and delta), the noise, pilot records of
either group, earlier noisy releases of a group's mean, and prior beliefs about the groups'
means, variances and mean gap.  All of it goes into one
:class:`~hybridpriv.families.hybrid_trust.model.HybridTrustModel`, whose posterior generates the datasets.

Candidates (candidate dimension ``estimator``): ``tcm-only``, ``full-lm``, ``lm-only`` and the
hybrid ``w * TCM + (1 - w) * LM`` with the weights ``kvh``, ``kvh-heterogeneous``, ``pwh``,
``naive`` and ``bayes``.  KVH and heterogeneous KVH are the paper's oracle weights: here they
get the posterior means of what they need (a plug-in, like the grouped kind's variance);
``bayes`` is the weight minimising the posterior expected squared error of the same posterior
that generates the datasets (``docs/hybrid-trust.md`` says why that is no peeking).  Task:
squared (or absolute) error against the dataset's own mean of all ``n`` records (the paper's
Definition 2.2).  Requirements: central for the TCM group, local for the LM group, each at its
epsilon and delta, so a candidate that protects a group less is marked ineligible.
"""

from __future__ import annotations

from typing import Any

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
    string,
    table,
    tables,
    values,
)

__all__ = ["CANDIDATES", "EVALUATION", "MODEL", "LM", "RELEASE", "SECTIONS", "TCM", "TOP", "build", "check",
           "make_candidates", "requirements"]

#: Every candidate, in table order (``hybrid-*`` are :class:`~hybridpriv.families.hybrid_trust.mechanisms.Hybrid` weights).
CANDIDATES = ("tcm-only", "full-lm", "lm-only", "hybrid-kvh", "hybrid-hkvh", "hybrid-pwh",
              "hybrid-naive", "hybrid-bayes")
#: Most records in one simulated dataset (both groups).
MAX_RECORDS = 50_000_000
#: Most record-operations of a whole evaluation (datasets x trials x candidates x records).
MAX_WORK = 3e12


def _group(default_name: str, size: str, doc: str) -> Table:
    return Table((
        Key("name", string(), default_name, doc="the group's name (unique; the protected unit in the results)"),
        Key("size", integer(1), None, doc="number of users (or give n and c at the top level)", example=size),
        Key("epsilon", epsilon(allow_public=False), doc="the group's epsilon", example="1.0"),
        Key("delta", number(0.0, maximum=0.999999), 0.0, doc="delta, in (0, 1) with gaussian noise; 0 with laplace"),
    ), doc=doc, examples=({"size": size},))  # the template gives the sizes, so that it runs as printed


TCM = _group("tcm", "100", "the users who trust the curator (TCM: central DP, noise added once to their mean)")
LM = _group("lm", "900", "the users who trust only their device (LM: each report is local DP)")

RELEASE = Table((
    Key("group", string(), None, doc="the group whose mean was released: tcm.name or lm.name (default: both pooled)"),
    Key("value", number(finite=False), doc="the released (noisy) mean", example="100.0"),
    Key("noise_scale", number(0.0, strict=True), doc="the Laplace scale of its noise", example="5.0"),
), doc="an earlier noisy release of a mean")

MODEL = Table((
    Key("pilot_tcm", values(), None, doc="public pilot records of TCM users: a list or a CSV path (first column)",
        example='"pilot-tcm.csv"'),
    Key("pilot_lm", values(), None, doc="public pilot records of LM users: a list or a CSV path (first column)",
        example='"pilot-lm.csv"'),
    Key("clamp", boolean(), False, doc="clip pilot records into [0, m] instead of refusing records outside"),
    Key("released_means", tables(RELEASE), [], doc="earlier noisy releases of a group's mean (Laplace noise)",
        example='[{ group = "tcm", value = 100.0, noise_scale = 5.0 }]'),
    Key("homogeneous", boolean(), False, doc="true: both groups share one distribution (no mean gap)"),
    Key("shared_prior", number(0.0, maximum=1.0), None,
        doc="prior probability that both groups share one law, learned from the pilots (default 0.5; 1 with "
            "homogeneous = true; 0: always two laws)", example="0.5"),
    Key("mean", pair(number(0.0, strict=True)), [1.0, 1.0],
        doc="(alpha, beta) of the Beta prior on the central mean / m"),
    Key("variance_fraction", pair(number(0.0, strict=True)), [1.0, 1.0],
        doc="(alpha, beta) of the Beta prior on each group's variance / its largest possible value"),
    Key("gap_logit_sd", number(0.0, strict=True), 0.5,
        doc="sd of the Normal prior on the groups' mean gap, logit scale (0.5: gap sd about m / 8)"),
    Key("pilot_likelihood", choice("beta", "moments"), "moments",  # model.PILOT_LIKELIHOODS (not imported: pymc at start-up)
        doc="how pilot records inform their group's law: moments (only each group's pilot mean and variance, "
            "through their sampling laws: robust to the records' shape; calibrated, docs/calibration.md) or beta "
            "(each record's Beta density)"),
), doc="what is public besides the groups: pilot records, earlier releases, priors (HybridTrustModel)")

FIT = fit_table()

EVALUATION = Table((
    Key("candidates", list_of(string()), None, doc=f"candidates by name (default: all of {list(CANDIDATES)})",
        example='["tcm-only", "full-lm", "hybrid-pwh", "hybrid-bayes"]'),
    *run_keys(200, 20, criterion="regret"),  # calibration: expected loss lost to the hkvh fixed rule (docs/calibration-history.md)
    plan_key("a Laplace release of the TCM group's mean (laplace noise)"),
    Key("loss", choice("squared", "absolute"), "squared", doc="squared or absolute error against the dataset's mean"),
), doc="how the candidates are evaluated")

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("m", number(0.0, strict=True), doc="every record lies in [0, m]", example="250.0"),
    Key("n", integer(2), None, doc="number of users in all (with c, instead of tcm.size and lm.size)", example="1000"),
    Key("c", number(0.0, strict=True, maximum=1.0), None, doc="share of users who trust the curator (with n)", example="0.1"),
    Key("noise", choice("laplace", "gaussian"), "laplace", doc="laplace (epsilon-DP) or gaussian ((epsilon, delta)-DP)"),
    Key("relation", choice("replace", "add-remove"), "replace",
        doc="neighbours the TCM users require: replace (the paper's, n known) or add-remove"),
    Key("tcm", table(TCM), doc="the TCM group"),
    Key("lm", table(LM), doc="the LM group"),
    Key("model", table(MODEL), None, doc="what is public besides the groups"),
    Key("fit", table(FIT), None, doc=FIT.doc),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind hybrid-trust: a mean release for users who trust the curator (TCM) "
       "beside users who trust only their device (LM)", derived=("sizes",))

SECTIONS = (("tcm", TCM, False), ("lm", LM, False), ("model", MODEL, False), ("fit", FIT, False),
            ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("knowledge.chains", "fit.chains"), ("knowledge.tune", "fit.tune"), ("knowledge", "model"))


def _sizes(v: Config) -> tuple[int, int]:
    given = [v.tcm.size is not None, v.lm.size is not None]
    if v.n is not None or v.c is not None:
        if v.n is None or v.c is None:
            missing = "n" if v.n is None else "c"
            raise SpecError(f"{missing} is required with {'c' if missing == 'n' else 'n'} (or give tcm.size and lm.size)")
        if any(given):
            raise SpecError("give n and c, or tcm.size and lm.size, not both")
        n_T = int(round(v.c * v.n))
        if not 1 <= n_T <= v.n - 1:
            raise SpecError(f"c = {v.c!r} with n = {v.n} gives {n_T} TCM users; both groups need at least one user")
        return n_T, v.n - n_T
    if not all(given):
        missing = "tcm.size" if not given[0] else "lm.size"
        raise SpecError(f"{missing} is required (or give n and c at the top level)")
    return v.tcm.size, v.lm.size


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks and conversions (at load time, before any sampling): ``sizes`` = (TCM, LM) users."""
    v = v.replace(sizes=_sizes(v))
    if v.tcm.name == v.lm.name:
        raise SpecError(f"tcm.name and lm.name must differ, both are {v.tcm.name!r}")
    for unit in ("tcm", "lm"):
        d = getattr(v, unit).delta
        if v.noise == "gaussian" and not 0.0 < d < 1.0:
            raise SpecError(f"{unit}.delta must be in (0, 1) with noise = \"gaussian\", got {d!r}")
        if v.noise == "laplace" and d != 0.0:
            raise SpecError(f"{unit}.delta must be 0 with noise = \"laplace\" (pure DP), got {d!r}")
    kn, m = v.model, v.m
    for key in ("pilot_tcm", "pilot_lm"):
        rec = getattr(kn, key)
        if rec is not None and not kn.clamp and ((rec < 0).any() or (rec > m).any()):
            bad = float(rec[(rec < 0) | (rec > m)][0])
            raise SpecError(f"model.{key} holds {bad:g}, outside [0, m = {m:g}] (fix it, or set model.clamp = true)")
    if kn.homogeneous and kn.gap_logit_sd != 0.5:
        raise SpecError(f"model.gap_logit_sd = {kn.gap_logit_sd!r} is not used with model.homogeneous = true")
    if kn.homogeneous and kn.shared_prior not in (None, 1.0):
        raise SpecError(f"model.shared_prior = {kn.shared_prior!r} contradicts model.homogeneous = true "
                        "(one shared law: leave shared_prior out)")
    names = {v.tcm.name: "T", v.lm.name: "L"}
    for k, r in enumerate(kn.released_means):
        if r.group is not None and r.group not in names:
            raise SpecError(f"model.released_means[{k}].group names unknown group {r.group!r}; "
                            f"known: {list(names)} (or leave it out: both groups pooled)")
        slack = 50.0 * r.noise_scale
        if not -slack <= r.value <= m + slack:
            raise SpecError(f"model.released_means[{k}].value = {r.value:g} is impossible: a mean lies in "
                            f"[0, m = {m:g}] and its Laplace noise (scale {r.noise_scale:g}) is never 50 scales")
    ev = v.evaluation
    for name in ev.candidates or []:
        if name not in CANDIDATES:
            raise SpecError(f"evaluation.candidates: unknown candidate {name!r}; known: {list(CANDIDATES)}")
    if ev.candidates is not None and len(set(ev.candidates)) != len(ev.candidates):
        raise SpecError(f"evaluation.candidates names a candidate twice: {ev.candidates!r}")
    records = sum(v.sizes)
    if records > MAX_RECORDS:
        raise SpecError(f"{records:,} users in all exceed {MAX_RECORDS:,}: one simulated dataset would not fit in memory")
    n_cand = len(ev.candidates or CANDIDATES)
    work = float(ev.draws) * ev.trials * n_cand * records
    if work > MAX_WORK:
        raise SpecError(f"evaluation.draws = {ev.draws} x evaluation.trials = {ev.trials} x {n_cand} candidates x "
                        f"{records:,} users is {work:.2g} record-operations (hours of CPU); lower them")
    return v


def _groups(v: Config):
    from ...core.privacy import Group

    n_T, n_L = v.sizes
    t, l_ = v.tcm, v.lm
    return [Group(t.name, n_T, t.epsilon, t.delta, "central"), Group(l_.name, n_L, l_.epsilon, l_.delta, "local")]


def requirements(v: Config) -> dict[str, Any]:
    """What each group requires: the TCM group central DP under ``relation``, the LM group local DP (replace)."""
    from ...core.privacy import Guarantee

    t, l_ = v.tcm, v.lm
    return {t.name: Guarantee(t.epsilon, t.delta, v.relation, "central"),
            l_.name: Guarantee(l_.epsilon, l_.delta, "replace", "local")}


def make_candidates(v: Config, posterior: Any) -> dict[str, Any]:
    """The candidates, ``{label: estimator}``; the weights use the posterior's moments (plug-in or Bayes)."""
    from .mechanisms import FullLM, Hybrid, LMOnly, TCMOnly

    groups, bounds = _groups(v), (0.0, v.m)
    common = {"noise": v.noise, "relation": v.relation}
    post = posterior.idata["posterior"]
    e = {k: float(post[k].mean()) for k in ("sigma_T2", "sigma_L2", "mu_T", "mu_L")}
    n_T, n_L = v.sizes
    c = n_T / (n_T + n_L)
    # the records' variance of the pooled population (KVH assumes one distribution): plug-in means
    sigma2 = c * e["sigma_T2"] + (1 - c) * e["sigma_L2"] + c * (1 - c) * posterior.moments["gap2"]
    build = {
        "tcm-only": lambda: TCMOnly(groups, bounds, **common),
        "full-lm": lambda: FullLM(groups, bounds, **common),
        "lm-only": lambda: LMOnly(groups, bounds, **common),
        "hybrid-kvh": lambda: Hybrid(groups, bounds, "kvh", sigma2=sigma2, **common),
        "hybrid-hkvh": lambda: Hybrid(groups, bounds, "kvh-heterogeneous", sigma_T2=e["sigma_T2"],
                                      sigma_L2=e["sigma_L2"], mu_T=e["mu_T"], mu_L=e["mu_L"], **common),
        "hybrid-pwh": lambda: Hybrid(groups, bounds, "pwh", **common),
        "hybrid-naive": lambda: Hybrid(groups, bounds, "naive", **common),
        "hybrid-bayes": lambda: Hybrid(groups, bounds, "bayes", posterior=posterior, **common),
    }
    return {name: build[name]() for name in v.evaluation.candidates or CANDIDATES}


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (:data:`hybridpriv.spec.custom.CONTEXT`)."""
    return {"groups": _groups(v), "bounds": (0.0, v.m), "noise": v.noise, "relation": v.relation,
            "posterior": posterior}


def _laws(model: Any) -> str:
    if model.shared_prior == 1.0:
        return "one shared distribution"
    if model.shared_prior == 0.0:
        return "per-group distributions"
    return f"one shared law with prior probability {model.shared_prior:g}, else per-group (learned from the pilots)"


def build(v: Config):
    """The selection problem: the model (built and validated now), candidates, task, requirements."""
    from ...models import HybridTrustModel, ReleasedMean
    from ...workflow import Problem
    from ..grouped import Statistic
    from .assumptions import hybrid_trust_assumptions
    from .mechanisms import TCMOnly
    from .plan import hybrid_trust_probe

    kn, ev = v.model, v.evaluation
    names = {v.tcm.name: "T", v.lm.name: "L", None: None}
    try:
        releases = [ReleasedMean(r.value, r.noise_scale, names[r.group]) for r in kn.released_means]
        model = HybridTrustModel(v.m, homogeneous=kn.homogeneous, mean=tuple(kn.mean),
                                 variance_fraction=tuple(kn.variance_fraction), gap_logit_sd=kn.gap_logit_sd,
                                 shared_prior=kn.shared_prior, pilot_T=kn.pilot_tcm, pilot_L=kn.pilot_lm, sizes=v.sizes, clamp=kn.clamp,
                                 released_means=releases, pilot_likelihood=kn.pilot_likelihood)
        # the noise can be calibrated for both groups (refuses extreme epsilons and deltas before sampling)
        TCMOnly(_groups(v), (0.0, v.m), noise=v.noise, relation=v.relation)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise SpecError(msg if msg.startswith("spec:") else f"model: {msg}") from None
    n_T, n_L = v.sizes
    t, l_ = v.tcm, v.lm

    def unit(g: dict[str, Any], size: int, trust: str) -> str:
        d = f", delta={g.delta:g}" if g.delta else ""
        return f"{trust} group {g.name:<10} n={size:<7} epsilon={g.epsilon:g}{d}"

    pilots = [f"{k}: {getattr(kn, k).size} records" for k in ("pilot_tcm", "pilot_lm")
              if getattr(kn, k) is not None]
    header = [f"records in [0, {v.m:g}], c = {n_T / (n_T + n_L):.3g}, {v.noise} noise, TCM relation {v.relation}",
              unit(t, n_T, "TCM"), unit(l_, n_L, "LM "),
              "public: " + (", ".join(pilots) if pilots else "no pilot records")
              + f", {len(releases)} earlier release(s), {_laws(model)}"]
    return Problem(
        kind="hybrid-trust", description=v.description, model=model,
        candidates=lambda posterior: make_candidates(v, posterior), task=Statistic("sample", ev.loss),
        dim="estimator", requirements=requirements(v), assumptions=hybrid_trust_assumptions(v.m),
        probe=hybrid_trust_probe(v, ev.plan_share, make_candidates) if ev.plan_share > 0 else None,
        chains=v.fit.chains, tune=v.fit.tune, datasets=ev.draws,
        trials=ev.trials, seed=ev.seed, header=header,
        title=f"hybrid trust: expected {ev.loss} error of the mean (c = {n_T / (n_T + n_L):.2g})",
    )

