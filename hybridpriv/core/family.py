"""A family is one object: everything that differs between families is a method of a :class:`Family`.

A family (grouped means and medians, user-item counts, hybrid trust, K-means, public + private
M-estimators, and the next one) bundles its SPEC schema, the selection problem it builds (model of
public knowledge, candidates, task, requirements), the data its mechanisms read, how its private data
are loaded and fingerprinted for a release, the stand-in data a release is probed and audited on,
the context a plugin mechanism's constructor receives, and its predictive checks.  The core (the
CLI, ``select``, ``release``, ``audit``, plugins) asks the family and never names one; a family is
registered once (:mod:`hybridpriv.families`: a list, plus the entry-point group
``hybridpriv.families`` for outside packages).

A capability a family lacks is a method it does not override: the base raises :class:`Unsupported`
naming the family and the capability, e.g. ``family 'kmeans' cannot be released: it has no loader
of private data (load_private)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

__all__ = ["Family", "NoChecks", "Unsupported"]


class Unsupported(ValueError):
    """A family lacks a capability (the method is not implemented), named with the family."""


class NoChecks:
    """A family's explicit "no predictive check is possible", with the reason (printed by ``select``)."""

    def __init__(self, reason: str) -> None:
        self.reason = str(reason)

    def __repr__(self) -> str:
        return f"NoChecks({self.reason!r})"


class Family:
    """The protocol every family implements (subclass it; one instance is registered).

    Class attributes
    ----------------
    name
        The SPEC ``kind`` (``"grouped"``, ``"user-item"``, ...).
    summary
        One line: what its selection chooses (``hybridpriv spec`` lists it).
    data_kind
        What its mechanisms read: the name of a registered :class:`~hybridpriv.core.datakind.DataKind`.
    defines
        The data kinds this family introduces (another family's may be reused by name).
    top, sections
        Its SPEC schema (:class:`hybridpriv.spec.schema.Table`; ``sections``: ``(name, table, is_array)``
        for the template); every family's SPEC also accepts ``[[mechanisms]]``.
    context_docs
        What :meth:`plugin_context` offers a plugin's constructor, by argument name (``posterior`` is
        added for every family).
    release_files
        What :meth:`load_private` reads, for the help text and docs ("" when it cannot be released).
    examples
        Built-in example SPECs (``--example NAME``): name -> a file name in ``hybridpriv/examples``, or a
        :class:`~pathlib.Path` to a SPEC the family ships in its own folder.
    renamed
        Keys its format-1 SPECs name otherwise, ``(format-1 path, format-2 path)`` in the order they are
        moved (``spec_module.RENAMED``): a format-1 SPEC is read as format 2.
    real_datasets
        Names of the real held-out truths :meth:`real_truth` makes (the calibration study).
    quick_calibration
        The calibration study's quick scale for this family: ``{"real": [names], "settings": {SPEC values}}``.
    calibration_trials
        At most this many realised-risk releases per draw of a truth (``None``: the study's own number): for a
        family whose candidates are slow to run (K-means iterates), with a Monte Carlo error still recorded.
    range_coverage
        How well its printed 5-95% ranges held on data its model did not generate: the share of realised risks
        inside them on the calibration study's held-out truths at default scale, by seed (``{}``: never
        measured).  ``select`` prints it under every recommendation (:func:`hybridpriv.engine.decision.range_line`);
        the calibration study writes it beside its own measurement (``coverage_recorded``), and a test keeps it
        equal to the tables in ``docs/calibration.md`` (seeds 0-2: the per-family table; later seeds: the held-out
        seeds' table).  Update all three after a calibration run.
    range_coverage_real
        The same share on the real datasets among those truths alone, by seed, from the stored runs
        (:mod:`hybridpriv.calibration_runs`; ``{}``: not stored).  ``select``'s ranges note says it beside the pooled
        share, and says to read the ranges as too narrow on real data where it falls below 80%; a test keeps it
        equal to the stored runs.
    p_best_held, p_best_seeds
        How often P(best) came true on data its model did not generate: per bin of the reliability diagram
        (:data:`hybridpriv.reliability.BIN_LABELS`), ``(mean P(best) reported, share of those candidates that were
        best, pairs)`` over the calibration study's held-out synthetic truths of the seeds ``p_best_seeds``, pooled
        (``{}``: never measured).  ``select`` notes it where the recommendation's P(best) lies in a bin of at least
        10 pairs that came true more than 10 points away (:func:`hybridpriv.engine.decision.p_best_line`); the study
        writes it as ``reliability_recorded``, and a test keeps it equal to the table in ``docs/calibration.md``.
    plan_gain_floor
        The smallest gain (a share of choosing now's expected loss or regret) at which ``select`` recommends the
        family's two-stage plan (:mod:`hybridpriv.engine.plan`), chosen on the family's own held-out truths;
        ``None``: :data:`hybridpriv.engine.plan.PAYS_GAIN`, the cautious default for a family whose plans have not
        been scored.  The calibration study records each truth's gain, so a floor can be scored again on stored
        runs (``plan_gain``, ``plan_significant``).
    plan_held_out
        How the two-stage plan did on the family's held-out truths, carried out on every one of them whatever its
        analysis said, seed by seed: ``{"truths": N (a seed; a range such as "33-34" where a seed refused some), "seeds": {seed: {"now": (mean, p90), "plan": (mean,
        p90), "refit": (mean, p90)}}}`` (relative regret in %; ``"plan"``: the second stage by the analysis's
        importance weights; ``"refit"``, for a probe that refits (:attr:`hybridpriv.engine.plan.Probe.refit`): the
        model fitted again on the release and the choice made again, the budget-spending selector's procedure;
        either may be missing on a seed; ``{}``: not measured).  Where the refit did better than choosing now in the
        mean and at the 90th percentile on every seed, ``select`` recommends the plan whatever its analysis found
        (:func:`hybridpriv.engine.plan.held_out_pays`), and ``release`` carries it out by refitting; under a verdict
        that the plan does not pay, ``select`` notes where the weighted plan did better on every seed, or where the
        refit did worse on some (:func:`hybridpriv.engine.plan.plan_held_line`).  A test keeps these numbers equal
        to the stored runs.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: The family's SPEC module (``TOP``, ``SECTIONS``, ``check``, ``build``, ``context``): with it, ``top``,
    #: ``sections`` and the three SPEC methods need not be written out.
    spec_module: ClassVar[Any] = None
    data_kind: ClassVar[str] = ""
    defines: ClassVar[Sequence[Any]] = ()
    top: ClassVar[Any] = None
    sections: ClassVar[Sequence[tuple[str, Any, bool]]] = ()
    context_docs: ClassVar[Mapping[str, str]] = {}
    release_files: ClassVar[str] = ""
    examples: ClassVar[Mapping[str, Any]] = {}
    renamed: ClassVar[Sequence[tuple[str, str]]] = ()
    real_datasets: ClassVar[Sequence[str]] = ()
    quick_calibration: ClassVar[Mapping[str, Any]] = {}
    calibration_trials: ClassVar[int | None] = None
    range_coverage: ClassVar[Mapping[int, float]] = {}
    range_coverage_real: ClassVar[Mapping[int, float]] = {}
    plan_gain_floor: ClassVar[float | None] = None
    plan_held_out: ClassVar[Mapping[str, Any]] = {}
    p_best_held: ClassVar[Mapping[str, tuple[float, float, int]]] = {}
    p_best_seeds: ClassVar[Sequence[int]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        mod = cls.__dict__.get("spec_module")
        if mod is not None:
            cls.top, cls.sections = mod.TOP, mod.SECTIONS
            cls.renamed = getattr(mod, "RENAMED", ())

    def __repr__(self) -> str:
        return f"<family {self.name!r}>"

    def _unsupported(self, what: str, method: str) -> Unsupported:
        return Unsupported(f"family {self.name!r} {what} (it has no {method} method)")

    # -- the SPEC -------------------------------------------------------------------------
    def check(self, values: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Cross-key checks and conversions of parsed SPEC values (before any sampling): ``spec_module.check``."""
        return self.spec_module.check(values, ctx) if self.spec_module is not None else values

    def build(self, values: dict[str, Any]) -> Any:
        """The selection problem (:class:`hybridpriv.workflow.Problem`) the SPEC values describe: ``spec_module.build``."""
        if self.spec_module is None:
            raise self._unsupported("builds no selection problem", "build")
        return self.spec_module.build(values)

    def plugin_context(self, values: dict[str, Any], posterior: Any) -> dict[str, Any]:
        """What a SPEC-named mechanism's constructor may take, by argument name (:attr:`context_docs`;
        ``posterior`` is ``None`` while the SPEC is checked): ``spec_module.context``."""
        if self.spec_module is not None:
            return self.spec_module.context(values, posterior)
        return {"posterior": posterior}

    def template_files(self) -> dict[str, str]:
        """The data files the SPEC template names (file name -> text): small real data, written beside the
        template by ``hybridpriv spec KIND --with-data DIR`` so that it runs as printed."""
        return {}

    # -- release ----------------------------------------------------------------------------
    def budgets(self, spec: Any, problem: Any) -> dict[str, Any]:
        """Each protected unit's budget, with its relation and trust: the units' requirements (a mapping), or
        each SPEC group's requirement under the relation the problem names."""
        req = problem.requirements
        if isinstance(req, Mapping):
            return dict(req)
        groups = getattr(getattr(spec, "values", None), "groups", None)
        if groups and (req is None or isinstance(req, str)):
            return {g.name: g.requirement(req or "add-remove") for g in groups}
        raise self._unsupported("declares no per-unit budgets", "budgets")

    def release_posterior(self, tree: Any, problem: Any, attrs: Mapping[str, Any]) -> Any:
        """The fitted model a release rebuilds the candidates with, read back from a selection's DataTree
        (its posterior groups, as the select run wrote them: no refit); a family whose candidates need no
        fitted model may return ``None``."""
        import xarray as xr

        skip = {"evaluation", "decision", "predictive_checks", "summary"}
        idata = xr.DataTree.from_dict({f"/{name}": tree[name].to_dataset().load() for name in tree.children
                                       if name not in skip})
        model = problem.model
        if hasattr(model, "build"):
            model.build()  # sets what the posterior reads of the model (its parameter names); no sampling
        return model.posterior_class(model, idata, int(attrs["seed"]))

    def load_private(self, directory: Any, spec: Any) -> Any:
        """The private data of a release, read from ``directory`` and checked against the SPEC (refusals
        name the unit, row and rule, never a value: :class:`hybridpriv.release.data.PrivateDataError`)."""
        raise self._unsupported("cannot be released: it has no loader of private data", "load_private")

    def release_rounds(self, mech: Any, spec: Any) -> Any:
        """For a candidate released in rounds with its users' devices between them, the protocol object
        :mod:`hybridpriv.release.rounds` drives (it then loads the private data itself); ``None`` (default): the
        candidate is released at once from :meth:`load_private`'s data."""
        return None

    def stand_in(self, spec: Any) -> Any:
        """Data of the right shape, public, on which a candidate is probed before a release."""
        raise self._unsupported("cannot be released: it has no stand-in data", "stand_in")

    def data_bytes(self, data: Any, spec: Any) -> dict[str, bytes]:
        """Each unit's private data as canonical bytes (for the ledger's salted fingerprints)."""
        raise self._unsupported("cannot be released: it gives no canonical form of its data", "data_bytes")

    def released_meaning(self, spec: Any) -> str:
        """What the released value is, in words (``release.json``)."""
        return "the release of the chosen candidate"

    # -- audit ------------------------------------------------------------------------------
    def audit_cases(self) -> dict[str, Any]:
        """The family's own DP-claiming mechanisms for the audit-case registry
        (:mod:`hybridpriv.testing.cases`): case name -> a function building the mechanism, at least two
        settings of each class.  Each is audited on :meth:`audit_data` (its ``stand_in``-free form must
        work for it).  Default: none (the built-in families' cases live in :mod:`hybridpriv.testing.cases`)."""
        return {}

    def audit_data(self, mech: Any, posterior: Any = None, seed: int = 0, stand_in: Any = None) -> tuple[Any, str]:
        """The dataset a candidate's privacy audit runs on, and its description: by default one dataset
        the fitted model generates, else ``stand_in``."""
        if posterior is not None:
            import numpy as np

            from .random import stream

            rng = np.random.default_rng(stream(seed, "audit-data"))
            return posterior.generate(0, posterior.shape[1] - 1, rng), "one dataset from the fitted model"
        if stand_in is None:
            raise ValueError(f"no base data to audit {getattr(mech, 'label', mech)!r} on: give the fitted model or "
                             "stand-in data")
        return stand_in, "the release's stand-in data"

    # -- calibration (held-out truths, the budget-spending selector) ---------------------------
    @property
    def has_truths(self) -> bool:
        """Whether the family makes held-out truths (the calibration study covers it)."""
        return type(self).synthetic_truth is not Family.synthetic_truth

    def synthetic_truth(self, i: int, rng: Any, quick: bool = False) -> Any:
        """Synthetic held-out truth number ``i`` (:class:`hybridpriv.heldout.Truth`), drawn with ``rng``."""
        raise self._unsupported("has no held-out truths", "synthetic_truth")

    def real_truth(self, name: str, rng: Any) -> Any:
        """The held-out truth of real dataset ``name`` (one of :attr:`real_datasets`)."""
        raise self._unsupported("has no real held-out truths", "real_truth")

    def truth_dataset(self, data: Any, groups: Any = None) -> Any:
        """A truth's private data as the family's mechanisms read them (``groups``: the fitted model's)."""
        return data

    def pythia(self, raw: dict[str, Any], data: Any, share: float, rng: Any) -> tuple[dict[str, Any], Any]:
        """The budget-spending selector: ``share`` of each unit's epsilon spent on DP features of ``data``
        that enter the model; returns the SPEC for the rest of the budget and ``adjust(problem) -> problem``
        (or ``None``)."""
        raise self._unsupported("has no budget-spending selector", "pythia")

    # -- criticism --------------------------------------------------------------------------
    def predictive_checks(self, posterior: Any, seed: int) -> Any:
        """Posterior predictive checks of the public knowledge (an ``xarray.Dataset``), or
        :class:`NoChecks` saying why none is possible."""
        checks = getattr(posterior, "predictive_checks", None)
        if callable(checks):
            return checks(seed)
        return NoChecks(f"the {self.name} model has no predictive checks")
