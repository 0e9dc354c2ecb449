"""The one Monte Carlo engine: candidates x datasets x trials -> ``xarray.Dataset``, for every family.

``evaluate(candidates, source, task)`` asks the source for the dataset of every ``(chain, draw)``,
the task for its truth, and every candidate for ``trials`` releases on it, scored by the task's
loss; where the task has the exact risk given the dataset (user-item counts), that is used
instead of releases.  The candidates are any :class:`~hybridpriv.core.mechanism.Mechanism` of the
task's data kind, along any candidate dimension (``estimator``, ``k``, ``subset_size``, ``tau``).

Seeding (:mod:`hybridpriv.core.random`): the dataset at ``(chain, draw)`` comes from stream
``("dataset", chain, draw)`` and candidate ``label``'s releases on it from
``("mechanism", label, chain, draw)``; nothing depends on chunking, workers, the order of work or
on which other candidates run.

Streaming: datasets are generated chunk by chunk and dropped once every candidate has run on
them; memory holds one chunk of datasets plus the (candidate, chain, draw, trial) result.  Chunks
run in this process, or as tasks on a ``dask.distributed`` cluster (``client=``), and can be kept
on disk to resume a killed run (``checkpoint=``): see :mod:`hybridpriv.engine.chunks` and
:mod:`hybridpriv.engine.checkpoint`.  The checkpoint records every candidate's parameters, the source's
and the task's: resuming with any of them changed is refused, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..core.data import check_source, strata_of
from ..core.mechanism import Mechanism
from ..core.params import describe, fingerprint
from ..core.privacy import NOT_READ, Guarantee
from ..core.random import STREAM_SCHEME, check_seed, rng
from ..core.tasks import Task
from ..core.validation import check_trials
from .options import Engine, as_engine
from .progress import Phase

__all__ = ["CANDIDATE_COORDS", "MAX_RESULT_CELLS", "check_result_size", "evaluate", "evaluate_many", "requirements_of"]

#: The per-candidate coordinates of an evaluation (and of its decision).
CANDIDATE_COORDS = ("label", "mechanism", "params_fingerprint", "exact", "privacy")


# -- arguments ------------------------------------------------------------------------------------
def _as_candidates(candidates: object) -> dict[Any, Mechanism]:
    """``{coordinate: mechanism}`` from a mapping, a sequence (coordinates: labels) or one mechanism."""
    if isinstance(candidates, Mapping):
        items = list(candidates.items())
    else:
        if isinstance(candidates, Mechanism):
            candidates = [candidates]
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise TypeError(f"candidates must be a sequence of mechanisms or a mapping coordinate -> mechanism, got {candidates!r}")
        items = [(getattr(m, "label", None), m) for m in candidates]
    if not items:
        raise ValueError("candidates must hold at least one mechanism, got none")
    out: dict[Any, Mechanism] = {}
    for coord, mech in items:
        if not isinstance(mech, Mechanism):
            raise TypeError(f"candidates must be Mechanism instances (hybridpriv.core.mechanism.Mechanism), got {mech!r}")
        if isinstance(coord, (bool, np.bool_)) or not isinstance(coord, (str, int, float, np.integer, np.floating)):
            raise ValueError(f"every candidate needs a string or number coordinate (its label), got {coord!r}")
        if isinstance(coord, str) and not coord:
            raise ValueError("candidate labels must be non-empty strings")
        if coord in out:
            raise ValueError(f"candidate coordinates must be unique, got {coord!r} twice (pass a mapping coordinate -> mechanism)")
        out[coord.item() if isinstance(coord, np.generic) else coord] = mech
    return out


def _check_dim(dim: object) -> str:
    if not isinstance(dim, str) or not dim.isidentifier() or dim in ("chain", "draw", "trial", "unit", "quantity"):
        raise ValueError(f"dim must be a name other than chain, draw, trial, unit, quantity, got {dim!r}")
    return dim


#: Most (candidate, dataset, trial) results one evaluation holds: its loss and estimate arrays take 8 bytes
#: each per result (4 GiB in all at this size).  Refused before any work, naming trials and datasets.
MAX_RESULT_CELLS = 2**28


def check_result_size(candidate_datasets: int, trials: int) -> None:
    """Refuse an evaluation whose results (``candidate_datasets`` x ``trials``) would exceed
    :data:`MAX_RESULT_CELLS`, before anything is allocated or run."""
    cells = int(candidate_datasets) * int(trials)
    if cells > MAX_RESULT_CELLS:
        raise ValueError(f"trials = {trials:,} with {candidate_datasets:,} (candidate, dataset) pairs would hold {cells:.3g} "
                         f"results ({8 * 2 * cells / 2**30:.3g} GiB), more than {MAX_RESULT_CELLS:,}: lower trials or "
                         "draws")


def requirements_of(source: object, requirements: object = None) -> dict[str, Guarantee] | None:
    """The protection every unit requires: ``requirements`` as given (a mapping unit -> Guarantee),
    or, for a grouped source, its groups' epsilons and deltas under the relation ``requirements``
    names (default ``"add-remove"``); ``False``: none (no eligibility in the decision)."""
    if requirements is False:
        return None
    if isinstance(requirements, Mapping):
        out = {}
        for unit, g in requirements.items():
            if not isinstance(g, Guarantee):
                raise TypeError(f"requirements[{unit!r}] must be a Guarantee, got {g!r}")
            out[str(unit)] = g
        return out
    groups = getattr(source, "groups", None)
    if groups is None:
        if requirements is not None:
            raise ValueError(f"requirements={requirements!r} needs a grouped source; pass a mapping unit -> Guarantee")
        return None
    relation = "add-remove" if requirements is None else requirements
    return {g.name: g.requirement(relation) for g in groups}  # type: ignore[arg-type]


# -- the chunk task -------------------------------------------------------------------------------
@dataclass
class _Job:
    """What a chunk task needs: the candidates, the source and the task (data are made in the task)."""

    coords: list[Any]
    labels: list[str]
    mechanisms: list[Mechanism]
    source: Any
    task: Task
    seed: int
    trials: int
    draws: int


def _evaluate_chunk(job: _Job, item_range: tuple) -> dict[str, np.ndarray]:
    """Items ``start..stop`` (item ``i`` is ``(chain, draw) = divmod(i, draws)``): risks, losses, truths.

    ``loss`` and ``estimate`` hold the Monte Carlo candidates only (``mc``: their indices), so a run
    scored by exact risks ships and stores one number per candidate and dataset.
    """
    start, stop = item_range[0], item_range[1]
    n, k, t = stop - start, len(job.mechanisms), job.trials
    risk = np.empty((k, n))
    exact_of: np.ndarray | None = None
    loss = estimate = None
    names: list[str] | None = None
    truth_rows = []
    scalar = True
    for j, i in enumerate(range(start, stop)):
        c, d = divmod(i, job.draws)
        data = job.source.generate(c, d, rng(job.seed, "dataset", c, d))
        truth = dict(job.task.truth(data))
        if names is None:
            names = sorted(truth)
        elif sorted(truth) != names:
            raise RuntimeError(f"{type(job.task).__name__}.truth returned other quantities on dataset {(c, d)}")
        truth_rows.append([float(truth[q]) for q in names])
        exact = job.task.exact_risk(job.mechanisms, data, truth)
        exact = np.full(k, np.nan) if exact is None else np.asarray(exact, dtype=float)
        if exact.shape != (k,):
            raise RuntimeError(f"{type(job.task).__name__}.exact_risk returned shape {exact.shape}, expected ({k},)")
        has = np.isfinite(exact)
        if exact_of is None:
            exact_of = has
            mc = np.flatnonzero(~has)
            loss = np.empty((mc.size, n, t))
            estimate = np.empty((mc.size, n, t))
        elif not np.array_equal(has, exact_of):
            raise RuntimeError(f"{type(job.task).__name__}.exact_risk covers other candidates on dataset {(c, d)}")
        risk[has, j] = exact[has]
        for slot, m in enumerate(mc):
            mech = job.mechanisms[m]
            releases = np.asarray(mech.release(data, rng(job.seed, "mechanism", job.labels[m], c, d), t))
            if releases.shape[:1] != (t,):
                raise RuntimeError(f"{type(mech).__name__}.release returned shape {releases.shape}, expected ({t}, ...)")
            lo = np.asarray(job.task.loss(mech, releases, data, truth), dtype=float)
            if lo.shape != (t,) or not np.isfinite(lo).all():
                raise RuntimeError(f"{type(job.task).__name__}.loss of {job.labels[m]!r} is not {t} finite numbers: {lo!r}")
            loss[slot, j] = lo
            risk[m, j] = lo.mean()
            if releases.ndim == 1:
                estimate[slot, j] = releases
            else:
                scalar = False  # releases are vectors: keep only their losses
    out = {"risk": risk, "loss": loss, "exact": np.asarray(exact_of, dtype=bool),
           "truth": np.array(truth_rows, dtype=float).reshape(n, len(names or [])).T,
           "truth_names": np.array(names or [], dtype=str)}
    if scalar:
        out["estimate"] = estimate
    return out


# -- assembling ------------------------------------------------------------------------------------
def _privacy_table(job: _Job, dim: str, required: Mapping[str, Guarantee] | None) -> xr.Dataset:
    decl = [m.privacy for m in job.mechanisms]
    for label, p in zip(job.labels, decl):
        if not isinstance(p, Mapping) or not all(isinstance(g, Guarantee) for g in p.values()):
            raise TypeError(f"candidate {label!r}: privacy must be a mapping unit -> Guarantee, got {p!r}")
    units: list[str] = []
    for p in [*(decl), required or {}]:
        units.extend(u for u in p if u not in units)
    rows = [[p.get(u, NOT_READ) for u in units] for p in decl]  # a unit the mechanism never reads: nothing leaks
    ds = xr.Dataset(
        {
            "privacy_epsilon": ((dim, "unit"), np.array([[g.epsilon for g in r] for r in rows], dtype=float).reshape(len(rows), len(units))),
            "privacy_delta": ((dim, "unit"), np.array([[g.delta for g in r] for r in rows], dtype=float).reshape(len(rows), len(units))),
            "privacy_relation": ((dim, "unit"), np.array([[g.relation for g in r] for r in rows], dtype=str).reshape(len(rows), len(units))),
            "privacy_trust": ((dim, "unit"), np.array([[g.trust for g in r] for r in rows], dtype=str).reshape(len(rows), len(units))),
        },
        coords={"unit": np.array(units, dtype=str)},
    )
    ds["privacy_epsilon"].attrs["description"] = "epsilon each candidate promises each unit (its privacy declaration)"
    if required is not None:
        req = [required.get(u, Guarantee(np.inf)) for u in units]
        ds["required_epsilon"] = ("unit", np.array([g.epsilon for g in req], dtype=float))
        ds["required_delta"] = ("unit", np.array([g.delta for g in req], dtype=float))
        ds["required_relation"] = ("unit", np.array([g.relation for g in req], dtype=str))
        ds["required_trust"] = ("unit", np.array([g.trust for g in req], dtype=str))
        ds["required_epsilon"].attrs["description"] = "epsilon each unit requires (inf: public, no requirement)"
    return ds


def _assemble(job: _Job, parts: list[dict[str, np.ndarray]], dim: str, required) -> xr.Dataset:
    chains = job.source.shape[0]
    k, t, draws = len(job.mechanisms), job.trials, job.draws
    names = [list(p["truth_names"]) for p in parts]
    exact = [p["exact"] for p in parts]
    if any(nm != names[0] for nm in names) or any(not np.array_equal(e, exact[0]) for e in exact):
        raise RuntimeError("chunks disagree on the task's truths or exact risks (a resumed run of another task?)")
    risk = np.concatenate([p["risk"] for p in parts], axis=1).reshape(k, chains, draws)
    mc = np.flatnonzero(~np.asarray(exact[0], dtype=bool))
    loss = np.full((k, chains, draws, t), np.nan)
    loss[mc] = np.concatenate([p["loss"] for p in parts], axis=1).reshape(mc.size, chains, draws, t)
    truth = np.concatenate([p["truth"] for p in parts], axis=1).reshape(len(names[0]), chains, draws)
    coords = {dim: job.coords, "chain": np.arange(chains), "draw": np.arange(draws), "trial": np.arange(t),
              "quantity": np.array(names[0], dtype=str)}
    exact_flags = np.asarray(exact[0], dtype=bool)
    out = xr.Dataset(
        {
            "risk": ((dim, "chain", "draw"), risk),
            "truth": (("quantity", "chain", "draw"), truth),
        },
        coords=coords,
    )
    if not exact_flags.all():
        out["loss"] = ((dim, "chain", "draw", "trial"), loss)
        out["loss"].attrs["description"] = (f"{job.task.loss_name} of each release"
                                            + ("; NaN for candidates scored by their exact risk" if exact_flags.any() else ""))
    if all("estimate" in p for p in parts) and not exact_flags.any():
        est = np.concatenate([p["estimate"] for p in parts], axis=1).reshape(k, chains, draws, t)
        out["estimate"] = ((dim, "chain", "draw", "trial"), est)
    out["risk"].attrs["description"] = (f"expected {job.task.loss_name} given the dataset: exact where the task has "
                                        "it, else the mean over trials")
    out = out.assign_coords(
        {
            "label": (dim, [str(getattr(m, "label", "")) for m in job.mechanisms]),
            "mechanism": (dim, [type(m).__name__ for m in job.mechanisms]),
            "params_fingerprint": (dim, [fingerprint(m.get_params()) for m in job.mechanisms]),
            "exact": (dim, exact_flags),
            "privacy": (dim, [m.describe_privacy() for m in job.mechanisms]),
        }
    )
    out["params_fingerprint"].attrs["description"] = (
        "SHA-256 of the candidate's parameters (hybridpriv.core.params.fingerprint); a selection.nc holds the "
        "parameters themselves in its candidates group")
    strata = strata_of(job.source)
    if strata is not None:  # the source's draws come in strata: Monte Carlo errors are computed within them
        out = out.assign_coords(stratum=(("chain", "draw"), strata[:, :draws]))
        out["stratum"].attrs["description"] = ("the stratum of each dataset's draw (a mixture's component, fitted "
                                               "apart): hybridpriv.engine.stats.mcse_mean works within strata")
    out = out.merge(_privacy_table(job, dim, required))
    out.attrs.update({
        "seed": job.seed, "trials": t, "candidate_dim": dim, "task": repr(job.task), "loss": job.task.loss_name,
        "task_params": json.dumps(describe(job.task.get_params()), sort_keys=True),
        "source": type(job.source).__name__,
    })
    return out


# -- public entry points ---------------------------------------------------------------------------
def _prepare(candidates, source, task, trials, seed, draws) -> _Job:
    mechs = _as_candidates(candidates)
    check_source(source)
    from ..families import data_kind

    kinds = {m.data_kind for m in mechs.values()}
    if task is None:  # the data kind's default task, if it has one (and the candidates share their kind)
        task = data_kind(next(iter(kinds))).default_task() if len(kinds) == 1 else None
        if task is None:
            raise ValueError(f"task is required for mechanisms that read {sorted(kinds)} data (e.g. ItemCounts(), "
                             "WCSS())")
    if not isinstance(task, Task):
        raise TypeError(f"task must be a hybridpriv.core.tasks.Task, got {type(task).__name__}")
    source_kind = getattr(source, "data_kind", None)
    for coord, mech in mechs.items():
        task.check(mech)
        if source_kind is not None and mech.data_kind != source_kind:
            raise ValueError(f"candidate {coord!r} reads {mech.data_kind!r} data, the source makes {source_kind!r} data")
        data_kind(mech.data_kind).check_candidate(mech, source, coord)
    chains, n_draws = source.shape
    if draws is not None:
        if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= n_draws:
            raise ValueError(f"draws must be an integer in [1, {n_draws}], got {draws!r}")
        n_draws = int(draws)
    coords = list(mechs)
    labels = [str(c) for c in coords]
    if len(set(labels)) != len(labels):
        raise ValueError(f"candidate coordinates must be distinct as strings, got {coords!r}")
    return _Job(coords, labels, list(mechs.values()), source, task, int(seed), int(trials), n_draws)


def _engine_settings(job: _Job, dim: str, setting: Mapping[str, object]) -> dict[str, object]:
    """What a checkpoint records and compares: every parameter that changes the numbers."""
    return {
        "setting": dict(setting), "dim": dim, "shape": [job.source.shape[0], job.draws], "trials": job.trials,
        "seed": job.seed, "streams": STREAM_SCHEME,
        "candidates": {label: describe(m) for label, m in zip(job.labels, job.mechanisms)},
        "source": describe(job.source), "task": describe(job.task),
    }


def _open_checkpoint(checkpoint, seed: int):
    """``(checkpoint, opened here)``: the engine's checkpoint (its type checked by :class:`Engine`), a folder opened."""
    from .checkpoint import Checkpoint

    if checkpoint is None or isinstance(checkpoint, Checkpoint):
        return checkpoint, False
    return Checkpoint(checkpoint, {"run": "evaluate", "seed": seed}), True


def evaluate(
    candidates: Sequence[Mechanism] | Mapping[Any, Mechanism],
    source,
    task: Task | None = None,
    trials: int = 1,
    seed: int = 0,
    dim: str = "estimator",
    requirements: object = None,
    draws: int | None = None,
    engine: Engine | None = None,
) -> xr.Dataset:
    """Run every candidate on every dataset of ``source``, ``trials`` times each, scored by ``task``.

    Parameters
    ----------
    candidates
        Mechanisms: a sequence (coordinates: their labels) or a mapping coordinate -> mechanism
        (e.g. ``{k: ContributionBoundedCounts(k, eps) for k in ks}`` with ``dim="k"``).
    source
        A dataset source (:class:`hybridpriv.core.data.DatasetSource`): any fitted model, an
        :class:`~hybridpriv.families.grouped.IIDSource`, a :class:`~hybridpriv.core.data.FixedSource`.
    task
        A :class:`hybridpriv.core.tasks.Task` (default: the candidates' data kind's
        :meth:`~hybridpriv.core.datakind.DataKind.default_task`, e.g. a :class:`~hybridpriv.families.grouped.Statistic`
        for grouped estimators).
    trials
        Independent releases of each candidate per dataset (vectorised; ignored by candidates
        the task scores by their exact risk).
    seed
        The one seed everything derives from (:mod:`hybridpriv.core.random`).
    dim
        Name of the candidate dimension (``"estimator"``, ``"k"``, ``"subset_size"``, ``"tau"`` ...).
    requirements
        What each protected unit requires (see :func:`requirements_of`): default, for a grouped
        source, its groups' epsilons under add/remove-one; a relation name; a mapping
        unit -> :class:`~hybridpriv.core.privacy.Guarantee`; ``False`` for none.
    draws
        Use only the first ``draws`` draws of every chain (default: all).
    engine
        How the work runs (:class:`~hybridpriv.engine.options.Engine`: a dask client, a checkpoint to
        resume from, the chunk size, progress); never what it computes.

    Returns
    -------
    xarray.Dataset
        ``risk`` ``(dim, chain, draw)`` (exact given the dataset, or the mean over trials);
        ``loss`` and, for scalar releases, ``estimate`` ``(dim, chain, draw, trial)``; ``truth``
        ``(quantity, chain, draw)``; per candidate the coordinates ``label``, ``mechanism``,
        ``params`` (JSON of its constructor arguments), ``exact`` and ``privacy``; its declaration
        ``privacy_epsilon``/``_delta``/``_relation``/``_trust`` ``(dim, unit)`` and the units'
        ``required_*`` ``(unit)``.
    """
    return _evaluate_settings([({}, candidates, source)], {}, task, trials, seed, dim, requirements, draws,
                              engine)[0]


def evaluate_many(
    runs: Iterable[tuple[Mapping[str, object], Sequence[Mechanism] | Mapping[Any, Mechanism], object]],
    dim_values: Mapping[str, Sequence[object]],
    task: Task | None = None,
    trials: int = 1,
    seed: int = 0,
    dim: str = "estimator",
    requirements: object = None,
    draws: int | None = None,
    engine: Engine | None = None,
) -> xr.Dataset:
    """Evaluate a grid of settings and stack the results along swept dimensions.

    ``runs`` yields ``(coords, candidates, source)`` with ``coords`` mapping every swept dimension
    name (``n``, ``share``, ...) to its value; results are stacked in the order of ``dim_values``.
    The other arguments are :func:`evaluate`'s; the chunks of every setting run together (on the
    engine's cluster when it has a client), each setting with its own chunk size.  Per-candidate
    coordinates that differ between settings (a threshold chosen per setting) become variables, as does a
    source's ``stratum``.
    """
    runs_list = list(runs)
    results = _evaluate_settings(runs_list, dim_values, task, trials, seed, dim, requirements, draws, engine)
    parts = []
    per_candidate = list(CANDIDATE_COORDS)
    for (coords, _, _), out in zip(runs_list, results):
        out = out.reset_coords(per_candidate + (["stratum"] if "stratum" in out.coords else []))
        parts.append(out.expand_dims({k: [coords[k]] for k in dim_values}))
    # settings with other candidates (or other truth quantities): every setting gets them all, missing
    # ones as NaN ("" for text, False for flags), so the settings stack along the swept dimensions only
    other = {d for part in parts for d in part.dims if d not in dim_values}
    union = {d: list(dict.fromkeys(x for part in parts if d in part.dims for x in part[d].values.tolist()))
             for d in sorted(other)}
    if any(d in part.dims and part[d].values.tolist() != u for d, u in union.items() for part in parts):
        fill = {k: "" if v.dtype.kind in "OUS" else (False if v.dtype.kind == "b" else np.nan)
                for part in parts for k, v in part.data_vars.items()}
        parts = [part.reindex({d: u for d, u in union.items() if d in part.dims}, fill_value=fill) for part in parts]
    combined = xr.combine_by_coords(parts, combine_attrs="drop_conflicts", data_vars="all", join="outer",
                                   compat="no_conflicts")  # the current defaults, said (xarray will change them)
    return combined.reindex({k: list(v) for k, v in dim_values.items()})  # type: ignore[return-value]


def _evaluate_settings(runs, dim_values, task, trials, seed, dim, requirements, draws, engine) -> list[xr.Dataset]:
    """One dataset per setting of ``runs``; the chunks of all settings run together."""
    from .chunks import Section, run_sections

    trials = check_trials(trials)
    seed = check_seed(seed)
    dim = _check_dim(dim)
    engine = as_engine(engine)
    progress = engine.progress
    settings = []
    for coords, cands, src in runs:
        missing = [k for k in dim_values if k not in coords]
        if missing:
            raise ValueError(f"a run's coords lack the swept dimension(s) {missing}")
        job = _prepare(cands, src, task, trials, seed, draws)
        settings.append((coords, job, requirements_of(src, requirements)))
    if not settings:
        raise ValueError("runs must yield at least one setting")
    check_result_size(sum(len(job.mechanisms) * job.source.shape[0] * job.draws for _, job, _ in settings), trials)
    checkpoint, owned = _open_checkpoint(engine.checkpoint, seed)
    call = checkpoint.next_call() if checkpoint is not None else 0
    prefix = "evaluate" if call == 0 else f"evaluate{call}"  # the k-th evaluation through this checkpoint
    sections = []
    for i, (coords, job, _) in enumerate(settings):
        recorded = _engine_settings(job, dim, {k: coords[k] for k in dim_values})
        sections.append(Section(f"{prefix}-{i}", _evaluate_chunk, job, job.source.shape[0] * job.draws, recorded))
    total = sum(sec.n_items for sec in sections)
    shown = Phase("evaluating", total, "datasets") if progress is True else None
    report = shown if shown is not None else (progress or None)
    try:
        results = run_sections(sections, engine.chunk_size, client=engine.client, checkpoint=checkpoint,
                               progress=report)
    finally:
        if shown is not None:
            shown.close()
        if owned:
            checkpoint.close()
    return [_assemble(job, res, dim, req) for (_, job, req), res in zip(settings, results)]
