"""The one select path: a SPEC kind's problem -> fitted model -> datasets -> evaluation -> decision.

Every SPEC kind (:mod:`hybridpriv.spec`) builds a :class:`Problem`: the model of public knowledge,
the candidates, the task, the candidate dimension and the units' requirements.
:func:`run_selection` runs it the same way for every kind (the CLI's ``select`` is a thin layer over
it), so researchers can run the same steps from Python::

    import hybridpriv

    result = hybridpriv.select("my.toml", draws=200, seed=1)   # or a Spec, or a Problem
    print(result.table())
    result.to_datatree().to_netcdf("selection.nc")

:func:`select` reads the SPEC (a path or a :class:`~hybridpriv.spec.Spec`), applies ``draws``/``trials``/
``seed`` as the CLI's flags do, builds its problem and calls :func:`run_selection`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from .engine.decision import CHANCE_WARNING
from .engine.options import Engine, as_engine

__all__ = ["MIN_POSTERIOR_DRAWS", "Problem", "Selection", "read_selection", "run_selection", "select"]

#: Posterior draws kept per chain at least, whatever the number of datasets wanted, so that R-hat
#: and ESS of the model are meaningful; datasets are then spread evenly over them.
MIN_POSTERIOR_DRAWS = 500


@dataclass
class Problem:
    """A selection problem, as a SPEC kind builds it.

    Parameters
    ----------
    kind, description
        The SPEC kind and its description line.
    model
        The model of public knowledge (a :class:`hybridpriv.core.model.KnowledgeModel`), built and
        validated (fitting it is the first expensive step).
    candidates
        ``candidates(posterior) -> {coordinate: mechanism}`` (they may use the posterior, e.g. a
        plug-in variance).
    task, dim, requirements
        As :func:`hybridpriv.engine.evaluate.evaluate` takes them.
    chains, tune, min_posterior_draws
        The fit: ``max(min_posterior_draws, ceil(datasets / chains))`` draws per chain (at least
        :data:`MIN_POSTERIOR_DRAWS` by default, so R-hat and ESS are meaningful).
    datasets, trials, seed
        Datasets evaluated (spread evenly over the posterior draws), releases per dataset, seed.
    header
        Lines describing the setting (printed before fitting).
    title
        The figure's title.
    diagnostics
        ``diagnostics(posterior, seed) -> (lines, attrs)``: extra checks of the fit to print and store.
    group_of, group_name
        ``group_of(coordinate) -> group``: candidates in groups (e.g. one approach at several subset
        sizes); the selection then also summarises the decision by group
        (:func:`hybridpriv.engine.decision.summarize_by`, a dimension named ``group_name``).
    assumptions
        What the model assumes that the data may break (:class:`~hybridpriv.core.assumptions.Assumption`): the
        decision is taken again on the same datasets departed from each (:mod:`hybridpriv.engine.sensitivity`),
        on ``sensitivity_datasets`` of them (at most ``datasets``), and the tipping points are printed with it.
    premises
        What some candidates rest on that nothing public can check (:class:`~hybridpriv.core.assumptions.Premise`):
        a recommendation resting on one the user did not state is printed with a warning saying so and what to do
        (:func:`hybridpriv.engine.decision.premise_lines`).
    probe
        A two-stage plan's first stage (:class:`hybridpriv.engine.plan.Probe`: DP features bought with a share of
        the budget) or ``None``: the selection then also says whether spending that share to choose pays
        (:mod:`hybridpriv.engine.plan`, on the same datasets).
    criterion
        What the recommendation minimises (:data:`hybridpriv.engine.decision.CRITERIA`): ``"loss"``, the
        expected loss, or ``"regret"``, the expected relative regret against the best candidate per dataset
        (SPEC key ``evaluation.criterion``).
    chance_warning
        The recommendation's chance of a costly miss (``p_costly``) from which ``select`` prints a warning
        (:func:`hybridpriv.engine.decision.chance_line`; SPEC key ``evaluation.chance_warning``; default
        :data:`hybridpriv.engine.decision.CHANCE_WARNING`).
    widen
        ``widen(decision, posterior) -> {coordinate: mechanism}`` or ``None``: more candidates to
        evaluate when the decision asks for them (e.g. the best ``k`` sits at the edge of the range
        searched); they are evaluated on the same datasets with the same streams (the numbers
        equal those of one evaluation of all candidates) and the decision is taken again, until
        ``widen`` returns nothing.
    """

    kind: str
    description: str
    model: Any
    candidates: Callable[[Any], Mapping[Any, Any]]
    task: Any
    dim: str = "estimator"
    requirements: Any = None
    chains: int = 2
    tune: int = 500
    min_posterior_draws: int = MIN_POSTERIOR_DRAWS
    datasets: int = 200
    trials: int = 20
    seed: int = 0
    header: list[str] = field(default_factory=list)
    title: str | None = None
    diagnostics: Callable[[Any, int], tuple[list[str], dict[str, Any]]] | None = None
    group_of: Callable[[Any], str] | None = None
    group_name: str = "approach"
    widen: Callable[[xr.Dataset, Any], Mapping[Any, Any] | None] | None = None
    criterion: str = "loss"
    assumptions: Sequence[Any] = ()
    sensitivity_datasets: int = 60
    premises: Sequence[Any] = ()
    probe: Any = None
    chance_warning: float = CHANCE_WARNING

    def __post_init__(self) -> None:
        from .core.assumptions import Premise

        line = self.chance_warning
        if not (isinstance(line, (int, float)) and not isinstance(line, bool) and 0 < line <= 1):
            raise ValueError(f"chance_warning must be a share in (0, 1], got {line!r}")

        given = self.premises
        premises = tuple(given) if isinstance(given, (list, tuple)) else None
        if premises is None or not all(isinstance(p, Premise) for p in premises):
            raise TypeError(f"premises must be a list or tuple of Premise (hybridpriv.core.assumptions), got {given!r}")
        self.premises = premises

    def draws_per_chain(self) -> int:
        """Posterior draws per chain to sample."""
        return max(self.min_posterior_draws, math.ceil(self.datasets / self.chains))


@dataclass
class Selection:
    """What :func:`run_selection` returns: the posterior, the evaluation, the decision, the fit's
    diagnostics and, where the model has them, its posterior predictive checks of the public
    knowledge (:mod:`hybridpriv.criticism`; a flagged statistic is also a ``UserWarning``)."""

    problem: Problem
    posterior: Any
    evaluation: xr.Dataset
    decision: xr.Dataset
    diagnostics: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    checks: xr.Dataset | None = None
    summary: xr.Dataset | None = None
    config: dict[str, Any] | None = None  # the SPEC's configuration, when :func:`select` read one
    #: Each candidate's class and parameters as attributes (:func:`candidate_attrs`), by its coordinate.
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The decision again with the data departed from each of the model's assumptions
    #: (:func:`hybridpriv.engine.sensitivity.sensitivity`), or ``None``.
    sensitivity: xr.Dataset | None = None
    #: The decision again within each alternative the model draws (:func:`hybridpriv.engine.branches.branch_check`),
    #: or ``None`` for a model without any.
    branches: xr.Dataset | None = None
    #: The two-stage plan against choosing now (:func:`hybridpriv.engine.plan.preposterior`), or ``None``.
    plan: xr.Dataset | None = None
    #: The plan's second-stage candidates (at the rest of the budget), by coordinate.
    later: dict[Any, Any] = field(default_factory=dict)

    def plan_lines(self) -> list[str]:
        """The two-stage plan's verdict in words (:func:`hybridpriv.engine.plan.plan_lines`); ``[]`` without."""
        if self.plan is None:
            return []
        from .engine.plan import plan_lines

        note = self.plan_held_note()
        return plan_lines(self.plan) + ([note] if note else [])

    def plan_held_note(self, short: bool = False) -> str:
        """The note under the plan's verdict from the kind's held-out truths
        (:func:`hybridpriv.engine.plan.plan_held_line`; ``short``: a figure's, without the numbers); ``""`` without a
        plan or a note."""
        if self.plan is None:
            return ""
        from .engine.plan import plan_held_line
        from .families import family

        return plan_held_line(family(self.problem.kind).plan_held_out, bool(self.plan.attrs["pays"]), short=short)

    def sensitivity_lines(self) -> list[str]:
        """The tipping points in words (:func:`hybridpriv.engine.sensitivity.sensitivity_lines`); ``[]`` without."""
        if self.sensitivity is None:
            return []
        from .engine.sensitivity import sensitivity_lines

        return sensitivity_lines(self.sensitivity, str(self.decision.attrs["recommended"]))

    def branch_lines(self) -> list[str]:
        """The decision within each of the model's alternatives, in words
        (:func:`hybridpriv.engine.branches.branch_lines`); ``[]`` without."""
        if self.branches is None:
            return []
        from .engine.branches import branch_lines

        return branch_lines(self.branches)

    def table(self) -> str:
        from .engine.decision import format_table

        return format_table(self.decision)

    def to_datatree(self, config: Mapping[str, Any] | None = None, started: float | None = None,
                    dask: str = "none") -> xr.DataTree:
        """The selection as one DataTree, as ``hybridpriv select`` writes ``selection.nc``: the posterior's groups
        as PyMC wrote them, ``evaluation`` (its ``posterior_draw`` coordinate names the posterior draw each
        dataset came from), ``decision`` (without the per-dataset ``risk``, which is the evaluation's),
        ``predictive_checks`` and ``summary`` where there are, ``candidates/<coordinate>`` with each candidate's
        class and parameters as attributes (:func:`candidate_attrs`); at the root the provenance
        (:func:`hybridpriv.report.provenance` of ``config``), the fit's diagnostics, the kind, the
        recommendation and its premise warnings (``premise_warnings``, one a line).  ``xarray.open_datatree`` reads it back; ``hybridpriv release`` and
        ``hybridpriv audit --selection`` rebuild the candidates from it."""
        from .report import provenance, result_tree

        attrs = {**provenance(config or self.config or {"kind": self.problem.kind}, self.problem.seed, started, dask=dask),
                 **self.attrs, "kind": self.problem.kind, "recommended": str(self.decision.attrs["recommended"])}
        attrs.update(self._held_out_attrs())
        attrs["premise_warnings"] = "\n".join(self.premise_lines())  # as printed, one a line ("" for none)
        idata = self.posterior.idata
        groups: dict[str, Any] = {name: idata[name].to_dataset() for name in idata.children}
        groups.update(evaluation=self.evaluation, decision=self.decision.drop_vars("risk", errors="ignore"))
        if self.checks is not None:
            groups["predictive_checks"] = self.checks
        if self.summary is not None:
            groups["summary"] = self.summary.assign(best=self.summary.best.astype(str))
        if self.sensitivity is not None:
            groups["sensitivity"] = self.sensitivity
        if self.branches is not None:
            groups["branches"] = self.branches
        if self.plan is not None:
            groups["plan"] = self.plan
        if self.candidates:
            groups["candidates"] = xr.Dataset(attrs={
                "description": "each candidate's class and constructor parameters, one attribute per parameter "
                               "(nested ones by path); its identity is the decision's params_fingerprint"})
            for coord, values in self.candidates.items():
                groups[f"candidates/{coord}"] = xr.Dataset(attrs=values)
        return result_tree(groups, attrs)

    def premise_lines(self, short: bool = False) -> list[str]:
        """A warning for each of the problem's premises the recommendation rests on and the user did not state
        (:func:`hybridpriv.engine.decision.premise_lines`); ``[]`` for none."""
        from .engine.decision import premise_lines

        return premise_lines(self.decision, self.problem.premises, short=short)

    def range_line(self, short: bool = False) -> str:
        """How well the family's 5-95% ranges held on data its model did not generate (the calibration's held-out
        truths; :func:`hybridpriv.engine.decision.range_line`); ``""`` if never measured."""
        from .engine.decision import range_line
        from .families import family

        fam = family(self.problem.kind)
        return range_line(fam.range_coverage, short=short, real=fam.range_coverage_real)

    def p_best_line(self, short: bool = False) -> str:
        """How often the recommendation's P(best) came true on the calibration's held-out truths, where it was more
        than 10 points off (:func:`hybridpriv.engine.decision.p_best_line`); ``""`` otherwise or if never measured."""
        from .engine.decision import p_best_line
        from .families import family

        fam = family(self.problem.kind)
        dim = self.decision.attrs["candidate_dim"]
        p = float(self.decision["p_best"].sel({dim: self.decision.attrs["recommended"]}))
        return p_best_line(fam.p_best_held, fam.p_best_seeds, p, short=short)

    def _held_out_attrs(self) -> dict[str, Any]:
        """What ``selection.nc`` keeps of how the family's numbers held on the calibration's held-out truths, so a
        reader of the file can judge them without the package's version at hand: the ranges' coverage by seed
        (``range_coverage_held_out``, ``range_coverage_seeds``; ``Family.range_coverage``) and on their real datasets
        alone (``range_coverage_real``, ``range_coverage_real_seeds``; ``Family.range_coverage_real``), the P(best) note as
        printed (``p_best_note``, ``""`` if none) and the ``Family.p_best_held`` table it read, by bin (reported
        mean, share that came true, pairs) with the seeds it pooled.  Only what the family measured is written."""
        from .families import family
        from .reliability import BIN_LABELS

        fam = family(self.problem.kind)
        attrs: dict[str, Any] = {"p_best_note": self.p_best_line()}
        if fam.range_coverage:
            seeds = sorted(fam.range_coverage)
            attrs.update(range_coverage_held_out=np.array([float(fam.range_coverage[k]) for k in seeds]),
                         range_coverage_seeds=np.array([int(k) for k in seeds]))
        if fam.range_coverage_real:
            seeds = sorted(fam.range_coverage_real)
            attrs.update(range_coverage_real=np.array([float(fam.range_coverage_real[k]) for k in seeds]),
                         range_coverage_real_seeds=np.array([int(k) for k in seeds]))
        if fam.p_best_held:
            bins = [b for b in BIN_LABELS if b in fam.p_best_held]
            attrs.update(p_best_held_bins=", ".join(bins),
                         p_best_held_reported=np.array([float(fam.p_best_held[b][0]) for b in bins]),
                         p_best_held_came_true=np.array([float(fam.p_best_held[b][1]) for b in bins]),
                         p_best_held_pairs=np.array([int(fam.p_best_held[b][2]) for b in bins]),
                         p_best_held_seeds=np.array([int(s) for s in fam.p_best_seeds]))
        return attrs

    def figure_notes(self) -> list[str]:
        """What the figure says under the plot: each sensitivity warning, short, the chance warning and the two-stage
        plan's verdict."""
        from .engine.decision import chance_line, free_line

        notes = []
        if self.sensitivity is not None:
            from .engine.sensitivity import warning_notes

            notes += warning_notes(self.sensitivity, str(self.decision.attrs["recommended"]))
        if self.branches is not None:
            from .engine.branches import branch_notes

            notes += branch_notes(self.branches)
        notes += [line for line in (chance_line(self.decision, short=True), free_line(self.decision, short=True),
                                    *self.premise_lines(short=True), self.range_line(short=True),
                                    self.p_best_line(short=True)) if line]
        if self.plan is not None:
            head, verdict = self.plan_lines()[:2]
            notes.append(f"{head}; {verdict.strip()}")
            if note := self.plan_held_note(short=True):
                notes.append(note)
        return notes

    def figure(self, ax=None):
        from .report import plot_decision

        return plot_decision(self.decision, ax=ax, title=self.problem.title, notes=self.figure_notes())


def candidate_attrs(candidates: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """Each candidate's ``class`` (``module:Qualname``) and parameters as netCDF attributes
    (:func:`hybridpriv.core.params.as_attrs` of :func:`~hybridpriv.core.params.describe`), by its coordinate."""
    from .core.params import as_attrs, describe

    out = {}
    for coord, mech in candidates.items():
        name = str(coord)
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"candidate {name!r}: a candidate's coordinate must not hold '/' (it names a group)")
        cls = type(mech)
        out[name] = {"class": f"{cls.__module__}:{cls.__qualname__}", **as_attrs(describe(mech.get_params()))}
    return out


def run_selection(problem: Problem, engine: Engine | None = None, log: Callable[[str], None] | None = None
                  ) -> Selection:
    """Fit ``problem``'s model, evaluate its candidates on datasets from the posterior, decide.

    ``engine``: how the evaluation runs (:class:`~hybridpriv.engine.options.Engine`; the same numbers with
    every engine).  Its ``checkpoint`` is a folder keeping every finished evaluation chunk; rerunning with
    it skips them.  The fit is repeated (it gives the same draws for the same seed); a changed candidate
    parameter or a changed piece of knowledge (the posterior's parameters) is refused naming it, never
    reused.  ``log``: where progress lines go (e.g. ``print``); silent by default.
    """
    from .engine.decision import decide
    from .engine.evaluate import check_result_size

    engine = as_engine(engine)
    say = log or (lambda _line: None)
    check_result_size(problem.datasets, problem.trials)  # before the fit: at least one candidate
    if engine.checkpoint is None:
        posterior, evaluation, lines, attrs, checks, evaluate_more, mechanisms = _fit_and_evaluate(problem, engine, say)
    else:
        from .engine.checkpoint import Checkpoint

        # opened before the fit, so a folder of another run is refused before any sampling
        with Checkpoint(engine.checkpoint, {"run": "select", "kind": problem.kind}) as checkpoint:
            posterior, evaluation, lines, attrs, checks, evaluate_more, mechanisms = _fit_and_evaluate(
                problem, engine.replace(checkpoint=checkpoint), say)
    decision = _mark_decision(decide(evaluation, criterion=problem.criterion), attrs, problem)
    while problem.widen is not None:
        extra = problem.widen(decision, posterior)
        if not extra:
            break
        dim = problem.dim
        line = (f"the best {dim} = {decision.attrs['recommended']} is at the edge of the range searched: "
                f"evaluating {dim} = {', '.join(str(c) for c in extra)} too")
        say(line)
        lines.append(line)
        attrs["widened"] = ", ".join(filter(None, [attrs.get("widened", ""), *(str(c) for c in extra)]))
        mechanisms.update(extra)
        evaluation = xr.concat([evaluation, evaluate_more(extra)], dim=dim, data_vars="minimal", coords="minimal",
                               compat="override", join="outer")
        decision = _mark_decision(decide(evaluation, criterion=problem.criterion), attrs, problem)
    summary = None
    if problem.group_of is not None:
        from .engine.decision import summarize_by

        summary = summarize_by(decision, problem.group_of, problem.group_name)
    sens = None
    if problem.assumptions:
        from .core.assumptions import SHIFTS
        from .core.data import ThinnedSource
        from .engine.sensitivity import sensitivity

        n_sens = min(problem.sensitivity_datasets, problem.datasets)  # never more than the decision's own
        source = ThinnedSource(posterior, min(math.ceil(n_sens / problem.chains), posterior.shape[1]))
        say(f"checking the decision against {len(problem.assumptions)} of the model's assumptions "
            f"({source.shape[0] * source.shape[1]} datasets each departed {len(SHIFTS)} ways) ...")
        sens = sensitivity(mechanisms, source, problem.task, problem.assumptions, dim=problem.dim, trials=problem.trials,
                           seed=problem.seed, requirements=problem.requirements, engine=engine,
                           criterion=problem.criterion)
    branches = getattr(posterior, "branches", list)()  # a Posterior's; [] for a source without the hook
    checked = None
    if branches:
        from .engine.branches import branch_check

        checked = branch_check(evaluation, branches, _source(problem, posterior).index, decision.attrs["recommended"],
                               problem.criterion)
    plan, later = None, {}
    if problem.probe is not None:
        from .engine.plan import held_out_pays, run_plan
        from .families import family

        say(f"judging a two-stage plan: {problem.probe.share:.0%} of the budget on {problem.probe.what} first ...")
        fam = family(problem.kind)
        plan, later = run_plan(problem.probe, mechanisms, _source(problem, posterior), evaluation, problem, posterior,
                               engine, gain_floor=fam.plan_gain_floor)
        held = held_out_pays(fam.plan_held_out, problem.probe)
        if held and not plan.attrs["pays"]:  # the refit paid on held-out truths: the analysis undervalues it
            plan.attrs.update(pays=1, pays_by="held-out", held_out=held)
        attrs["plan_pays"] = plan.attrs["pays"]
    result = Selection(problem, posterior, evaluation, decision, lines, attrs, checks, summary,
                       candidates=candidate_attrs(mechanisms), sensitivity=sens, branches=checked, plan=plan,
                       later=later)
    import warnings

    for line in [*result.sensitivity_lines(), *result.branch_lines()]:
        if line.startswith("warning: "):
            warnings.warn(line.removeprefix("warning: "), UserWarning, stacklevel=2)
    for line in result.premise_lines():  # each one a warning, named by its premise
        warnings.warn(line, UserWarning, stacklevel=2)
    return result


def select(spec: Any, *, draws: int | None = None, trials: int | None = None, seed: int | None = None,
           chance_warning: float | None = None, **run: Any) -> Selection:
    """Choose a mechanism for ``spec`` from public knowledge alone: fit, evaluate, decide.

    Parameters
    ----------
    spec
        A SPEC file's path, a :class:`~hybridpriv.spec.Spec` or a :class:`Problem`.
    draws, trials, seed, chance_warning
        Replace the SPEC's ``[evaluation]`` values, checked as if the file said so (the CLI's
        ``--draws``/``--trials``/``--seed``/``--chance-warning``); not accepted with a :class:`Problem`, which is
        built already.
    **run
        Passed on to :func:`run_selection` (``engine``, ``log``).

    Returns
    -------
    Selection
        ``.decision``, ``.table()``, ``.figure()``, ``.to_datatree()``.
    """
    from .spec import OVERRIDABLE, Spec, load_spec

    given = dict(zip(OVERRIDABLE, (draws, trials, seed, chance_warning)))
    overrides = {k: v for k, v in given.items() if v is not None}
    if isinstance(spec, Problem):
        if overrides:
            raise ValueError(f"{', '.join(overrides)}: a Problem is built already; pass a SPEC (path or Spec) to "
                             "override its [evaluation] values")
        return run_selection(spec, **run)
    if not isinstance(spec, Spec):
        if not isinstance(spec, (str, os.PathLike)):
            raise TypeError(f"spec must be a SPEC path, a Spec or a Problem, got {type(spec).__name__}")
        spec = load_spec(spec)
    result = run_selection(spec.with_overrides(overrides).problem(), **run)
    result.config = {**spec.config(), "overrides": overrides}
    return result


def _with_posterior_draws(evaluation: xr.Dataset, source: Any) -> xr.Dataset:
    """The evaluation with ``posterior_draw`` along ``draw``: the posterior draw each dataset was generated from."""
    out = evaluation.assign_coords(posterior_draw=("draw", np.asarray(source.index, dtype=np.int64)))
    out["posterior_draw"].attrs["description"] = "the posterior draw (in each chain) the dataset was generated from"
    return out


def _mark_decision(decision: xr.Dataset, attrs: Mapping[str, Any], problem: Problem) -> xr.Dataset:
    """The decision with ``attrs["unaudited_plugins"]``: candidates that do not ship with hybridpriv
    (a SPEC's ``[[mechanisms]]``), whose declarations nobody has audited yet (the table marks them); and with
    ``attrs["chance_warning"]``: the problem's chance line (:func:`hybridpriv.engine.decision.chance_line` reads it)."""
    decision.attrs["unaudited_plugins"] = attrs.get("unaudited_plugins", "")
    decision.attrs["chance_warning"] = float(problem.chance_warning)
    return decision


def _source(problem: Problem, posterior: Any) -> Any:
    """The datasets a selection evaluates: ``ceil(datasets / chains)`` per chain, spread evenly over the draws."""
    from .core.data import ThinnedSource

    return ThinnedSource(posterior, min(math.ceil(problem.datasets / problem.chains), posterior.shape[1]))


def _fit_and_evaluate(problem: Problem, engine: Engine, say):
    from .engine.evaluate import evaluate

    per_chain = problem.draws_per_chain()
    say(f"fitting the model of public knowledge ({problem.chains} chains x {per_chain} draws) ...")
    from .engine.progress import interactive

    posterior = problem.model.fit(draws=per_chain, tune=problem.tune, chains=problem.chains, seed=problem.seed,
                                  progressbar=engine.progress is True and interactive())  # PyMC's bar: on a terminal only
    lines = []
    summary = posterior.summary()
    width = max([16, *(len(str(name)) for name in summary.index)])
    for name, row in summary.iterrows():
        lines.append(f"{name:<{width}} {row['mean']:.4g} ± {row['sd']:.2g}   R-hat {row['r_hat']:.3f}  ESS {row['ess_bulk']:.0f}")
    attrs: dict[str, Any] = {"posterior_max_rhat": float(summary["r_hat"].max()),
                             "posterior_min_ess": float(summary["ess_bulk"].min())}
    from .core.family import NoChecks
    from .families import family

    checks = family(problem.kind).predictive_checks(posterior, problem.seed)
    if isinstance(checks, NoChecks):
        lines.append(f"posterior predictive checks: none possible: {checks.reason}")
        attrs["predictive_checks"] = f"none possible: {checks.reason}"
        checks = None
    if checks is not None:
        import warnings

        from .criticism import format_checks

        shown = format_checks(checks)
        lines += ["posterior predictive checks of the public knowledge:", *(shown[:-1] if checks.flagged.any() else shown)]
        flagged = [str(n) for n in checks.statistic.values[checks.flagged.values]]
        attrs["predictive_checks_flagged"] = ", ".join(flagged)
        if flagged:
            warnings.warn(shown[-1].removeprefix("warning: "), UserWarning, stacklevel=3)
            lines.append(shown[-1])
    if problem.diagnostics is not None:
        more, more_attrs = problem.diagnostics(posterior, problem.seed)
        lines += more
        attrs.update(more_attrs)
    for line in lines:
        say(f"  {line}")
    source = _source(problem, posterior)
    candidates = problem.candidates(posterior)
    from .auditing import is_shipped

    attrs["unaudited_plugins"] = ", ".join(str(c) for c, m in candidates.items() if not is_shipped(m))
    n_sets = source.shape[0] * source.shape[1]
    say(f"evaluating {len(candidates)} candidates x {n_sets} datasets"
        + (f" x {problem.trials} trials" if problem.trials > 1 else "") + " ...")
    evaluation = evaluate(candidates, source, problem.task, trials=problem.trials, seed=problem.seed,
                          dim=problem.dim, requirements=problem.requirements, engine=engine)
    evaluation = _with_posterior_draws(evaluation, source)

    def evaluate_more(extra: Mapping[Any, Any]) -> xr.Dataset:
        # the same datasets and streams; not kept in the checkpoint (recomputed on a resume, never reused)
        return _with_posterior_draws(evaluate(dict(extra), source, problem.task, trials=problem.trials, seed=problem.seed,
                                              dim=problem.dim, requirements=problem.requirements,
                                              engine=engine.replace(checkpoint=None)), source)

    return posterior, evaluation, lines, attrs, checks, evaluate_more, dict(candidates)


def read_selection(path: Any, spec: Any, problem: Problem) -> tuple[Any, xr.Dataset, dict[str, Any]]:
    """A select run's ``selection.nc`` for ``spec``: ``(posterior, decision, attrs)`` (``attrs``: the root's, and
    ``candidate_params``: the ``candidates`` group's attributes by coordinate).

    Refused (``ValueError``) unless it was made for this SPEC: the same kind, and its recorded SPEC config equal to
    this SPEC's (the file's path and the run's ``--draws/--trials/--seed`` aside; a differing key is named).  The
    posterior is rebuilt from the file, not refitted (:meth:`hybridpriv.core.family.Family.release_posterior`), so
    the candidates built from it are those the selection evaluated.
    """
    import json

    from .release.run import check_config

    with xr.open_datatree(path) as tree:
        attrs = dict(tree.attrs)
        if attrs.get("kind") != spec.kind:
            raise ValueError(f"the selection {path} is of kind {attrs.get('kind')!r}, the SPEC of kind {spec.kind!r}")
        check_config(json.loads(attrs["config"]), spec.config())
        decision = tree["decision"].to_dataset().load()
        if "candidates" in tree.children:  # each candidate's parameters, to name what changed
            attrs["candidate_params"] = {str(k): dict(node.attrs) for k, node in tree["candidates"].children.items()}
        posterior = spec.family.release_posterior(tree, problem, attrs)
    return posterior, decision, attrs
