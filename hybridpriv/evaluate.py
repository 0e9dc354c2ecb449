"""The Monte Carlo engine: estimators x simulated datasets x trials -> ``xarray.Dataset``.

Seeding: one integer ``seed`` makes everything.  The dataset at ``(chain, draw)`` uses a
generator keyed ``SeedSequence(seed, spawn_key=(0, chain, draw))`` and estimator ``e`` on it
uses ``SeedSequence(seed, spawn_key=(1, crc32(label), chain, draw))``.  Keys do not depend on
chunking, on the order of evaluation, or on which other estimators run, so the same seed
gives the same numbers however the work is split.

Streaming: datasets are generated chunk by chunk and dropped once every estimator has run
on them; memory holds one chunk of datasets plus the (estimator, chain, draw, trial) result.
Chunks run in this process, or as tasks on a ``dask.distributed`` cluster (``client=``), and
can be kept on disk to resume a killed run (``checkpoint=``): see :mod:`hybridpriv.chunks`
and :mod:`hybridpriv.checkpoint`.
"""

from __future__ import annotations

import sys
import time
import zlib
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import xarray as xr

from .data import DatasetSource
from .estimators.base import Estimator
from .mechanisms import check_rng  # noqa: F401  (re-exported for users writing sources)

__all__ = ["LOSSES", "data_rng", "estimator_rng", "evaluate", "Progress"]

#: Loss functions of an estimate against the truth.
LOSSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "squared": np.square,
    "absolute": np.abs,
}


def data_rng(seed: int, chain: int, draw: int) -> np.random.Generator:
    """The generator that makes the dataset at ``(chain, draw)``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, chain, draw)))


def estimator_rng(seed: int, label: str, chain: int, draw: int) -> np.random.Generator:
    """The generator estimator ``label`` uses on the dataset at ``(chain, draw)``."""
    return np.random.default_rng(
        np.random.SeedSequence(seed, spawn_key=(1, zlib.crc32(label.encode()), chain, draw))
    )


class Progress:
    """A one-line progress report on stderr for runs longer than ``after`` seconds."""

    def __init__(self, total: int, label: str = "evaluating", after: float = 2.0, stream=None) -> None:
        self.total, self.label, self.after = total, label, after
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, done: int) -> None:
        elapsed = time.perf_counter() - self.start
        if elapsed < self.after and done < self.total:
            return
        if not self.shown and done >= self.total and elapsed < self.after:
            return
        rate = done / elapsed if elapsed > 0 else float("inf")
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        end = "\n" if done >= self.total else ""
        self.stream.write(f"\r{self.label}: {done}/{self.total} datasets, {elapsed:.0f}s elapsed, ~{eta:.0f}s left   {end}")
        self.stream.flush()
        self.shown = True


def _as_mapping(estimators: Sequence[Estimator] | Mapping[str, Estimator]) -> dict[str, Estimator]:
    if isinstance(estimators, Mapping):
        items = list(estimators.items())
    else:
        if isinstance(estimators, Estimator):
            estimators = [estimators]
        if isinstance(estimators, (str, bytes)) or not isinstance(estimators, Iterable):
            raise TypeError(
                f"estimators must be a sequence of Estimator or a mapping label -> Estimator, got {estimators!r}"
            )
        items = [(getattr(e, "label", None), e) for e in estimators]
    if not items:
        raise ValueError("estimators must hold at least one estimator, got none")
    out: dict[str, Estimator] = {}
    for label, est in items:
        if not isinstance(est, Estimator):
            raise TypeError(f"estimators must be Estimator instances, got {est!r}")
        if not isinstance(label, str) or not label:
            raise ValueError(f"every estimator needs a non-empty string label, got {label!r}")
        if label in out:
            raise ValueError(f"estimator labels must be unique, got {label!r} twice (pass a mapping label -> estimator)")
        out[label] = est
    return out


@dataclass
class _Job:
    """What a chunk task needs: the estimators and the source (data are generated in the task)."""

    ests: dict[str, Estimator]
    source: DatasetSource
    statistics: list[str]
    seed: int
    trials: int
    draws: int


def _evaluate_chunk(job: _Job, task: tuple) -> dict[str, np.ndarray]:
    """Items ``start..stop`` (item ``i`` is ``(chain, draw) = divmod(i, draws)``): estimates and truths."""
    start, stop = task[0], task[1]
    labels = list(job.ests)
    n = stop - start
    estimate = np.empty((len(labels), n, job.trials))
    t_sample = np.empty((len(job.statistics), n))
    t_pop = np.full((len(job.statistics), n), np.nan)
    for j, i in enumerate(range(start, stop)):
        c, d = divmod(i, job.draws)
        ds = job.source.generate(c, d, data_rng(job.seed, c, d))
        for s, stat in enumerate(job.statistics):
            t_sample[s, j] = ds.truth(stat, "sample")
            if stat in ds.population:
                t_pop[s, j] = ds.population[stat]
        batch = [np.broadcast_to(v, (job.trials, v.shape[-1])) for v in ds.values]
        for k, label in enumerate(labels):
            estimate[k, j, :] = job.ests[label].estimate(batch, estimator_rng(job.seed, label, c, d))
    return {"estimate": estimate, "truth_sample": t_sample, "truth_population": t_pop}


def evaluate(
    estimators: Sequence[Estimator] | Mapping[str, Estimator],
    source: DatasetSource,
    trials: int = 1,
    seed: int = 0,
    target: str = "population",
    loss: str = "squared",
    chunk_size: int | None = None,
    progress: bool | Callable[[int], None] = False,
    draws: int | None = None,
    client=None,
    checkpoint=None,
) -> xr.Dataset:
    """Run every estimator on every simulated dataset, ``trials`` times each.

    Parameters
    ----------
    estimators
        A sequence (labels from each estimator's ``label``) or a mapping label -> estimator.
    source
        A :class:`~hybridpriv.data.DatasetSource` (its groups must match the estimators').
    trials
        Independent runs of each mechanism per dataset (vectorised).
    seed
        The one seed everything derives from (see the module docstring).
    target
        ``"population"``: score against the generating distribution's value (the papers'
        convention); ``"sample"``: against the simulated dataset's own pooled statistic.
    loss
        ``"squared"`` or ``"absolute"`` error.
    chunk_size
        Datasets generated and evaluated per chunk (one task on a cluster); default: measured
        so a chunk takes about :data:`hybridpriv.chunks.TARGET_SECONDS` of CPU
        (see :func:`hybridpriv.chunks.chunk_size_for`).
    progress
        ``True`` for a progress line on stderr on long runs, or a callable ``f(done)``.
    draws
        Use only the first ``draws`` draws of every chain (default: all).
    client
        A ``dask.distributed.Client``: run the chunks as tasks on its cluster (default: here).
    checkpoint
        A :class:`~hybridpriv.checkpoint.Checkpoint`: save every finished chunk and skip the
        ones it already holds (resuming a killed run).

    Returns
    -------
    xarray.Dataset
        ``estimate`` and ``loss`` with dims ``(estimator, chain, draw, trial)``; ``truth``
        ``(estimator, chain, draw)``; ``truth_sample`` and ``truth_population``
        ``(statistic, chain, draw)``; ``guarantee_epsilon`` ``(estimator, group)`` and
        ``required_epsilon`` ``(group)``; coordinates ``statistic`` and ``guarantee`` (readable)
        per estimator.
    """
    return _evaluate_settings([({}, estimators, source)], {}, trials, seed, target, loss, chunk_size, progress, draws,
                              client, checkpoint)[0]


def _prepare(ests_in, source, trials, seed, target, loss, draws) -> _Job:
    ests = _as_mapping(ests_in)
    if not isinstance(source, DatasetSource):
        raise TypeError(f"source must provide groups, bounds, shape and generate(chain, draw, rng), got {type(source).__name__}")
    for label, est in ests.items():
        if [g.name for g in est.groups] != [g.name for g in source.groups] or [g.size for g in est.groups] != [
            g.size for g in source.groups
        ]:
            raise ValueError(f"estimator {label!r} was built for other groups than the source's")
    chains, n_draws = source.shape
    if draws is not None:
        if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= n_draws:
            raise ValueError(f"draws must be an integer in [1, {n_draws}], got {draws!r}")
        n_draws = int(draws)
    statistics = sorted({e.statistic for e in ests.values()})
    return _Job(ests, source, statistics, int(seed), int(trials), n_draws)


def _check_engine_args(trials, seed, target, loss, progress) -> None:
    if not isinstance(trials, (int, np.integer)) or isinstance(trials, bool) or trials < 1:
        raise ValueError(f"trials must be an integer >= 1, got {trials!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not isinstance(target, str) or target not in ("population", "sample"):
        raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {list(LOSSES)}, got {loss!r}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False or a callable f(done), got {progress!r}")


def _assemble(job: _Job, parts: list[dict[str, np.ndarray]], target: str, loss: str) -> xr.Dataset:
    ests, statistics, trials, n_draws = job.ests, job.statistics, job.trials, job.draws
    chains = job.source.shape[0]
    labels = list(ests)
    estimate = np.concatenate([p["estimate"] for p in parts], axis=1).reshape(len(labels), chains, n_draws, trials)
    t_sample = np.concatenate([p["truth_sample"] for p in parts], axis=1).reshape(len(statistics), chains, n_draws)
    t_pop = np.concatenate([p["truth_population"] for p in parts], axis=1).reshape(len(statistics), chains, n_draws)
    seed, source = job.seed, job.source
    if target == "population" and np.isnan(t_pop).any():
        raise ValueError("the source gives no population value for some statistic; use target='sample'")
    stat_of = [statistics.index(ests[lab].statistic) for lab in labels]
    t_used = (t_pop if target == "population" else t_sample)[stat_of]
    coords = {
        "estimator": labels,
        "chain": np.arange(chains),
        "draw": np.arange(n_draws),
        "trial": np.arange(trials),
        "statistic": statistics,
    }
    out = xr.Dataset(
        {
            "estimate": (("estimator", "chain", "draw", "trial"), estimate),
            "truth": (("estimator", "chain", "draw"), t_used),
            "loss": (("estimator", "chain", "draw", "trial"), LOSSES[loss](estimate - t_used[..., None])),
            "truth_sample": (("statistic", "chain", "draw"), t_sample),
            "truth_population": (("statistic", "chain", "draw"), t_pop),
        },
        coords=coords,
    )
    out = out.assign_coords(
        estimator_statistic=("estimator", [ests[lab].statistic for lab in labels]),
        guarantee=("estimator", [ests[lab].describe_guarantee() for lab in labels]),
    )
    group_names = [g.name for g in source.groups]
    out["guarantee_epsilon"] = (
        ("estimator", "group"),
        np.array([[ests[lab].guarantee[name].epsilon for name in group_names] for lab in labels], dtype=float),
    )
    out["required_epsilon"] = (("group",), np.array([g.epsilon for g in source.groups], dtype=float))
    out = out.assign_coords(group=group_names)
    out["guarantee_epsilon"].attrs["description"] = "epsilon each estimator promises each group (its guarantee attribute)"
    out["required_epsilon"].attrs["description"] = "epsilon each group requires (inf: public)"
    out["loss"].attrs["description"] = f"{loss} error of the estimate against the {target} value"
    out.attrs.update({"seed": int(seed), "trials": int(trials), "target": target, "loss": loss})
    return out


def evaluate_many(
    runs: Iterable[tuple[Mapping[str, object], Sequence[Estimator] | Mapping[str, Estimator], DatasetSource]],
    dim_values: Mapping[str, Sequence[object]],
    trials: int = 1,
    seed: int = 0,
    target: str = "population",
    loss: str = "squared",
    chunk_size: int | None = None,
    progress: bool | Callable[[int], None] = False,
    draws: int | None = None,
    client=None,
    checkpoint=None,
) -> xr.Dataset:
    """Evaluate a grid of settings and stack the results along swept dimensions.

    ``runs`` yields ``(coords, estimators, source)`` with ``coords`` mapping every swept
    dimension name (``n``, ``share``, ...) to its value; results are combined with
    :func:`xarray.combine_nested`-style stacking in the order of ``dim_values``.  The other
    arguments are :func:`evaluate`'s; the chunks of every setting run together (on
    ``client``'s cluster when one is given), each setting with its own chunk size.
    """
    runs_list = list(runs)
    parts = []
    for (coords, _, _), out in zip(
        runs_list,
        _evaluate_settings(runs_list, dim_values, trials, seed, target, loss, chunk_size, progress, draws, client,
                           checkpoint),
    ):
        # guarantees may differ between settings (pdp-opt's threshold does): keep them as variables
        out = out.reset_coords(["guarantee", "estimator_statistic"])
        parts.append(out.expand_dims({k: [coords[k]] for k in dim_values}))
    combined = xr.combine_by_coords(parts, combine_attrs="drop_conflicts")
    return combined.reindex({k: list(v) for k, v in dim_values.items()})  # type: ignore[return-value]


def _evaluate_settings(runs, dim_values, trials, seed, target, loss, chunk_size, progress, draws, client,
                       checkpoint) -> list[xr.Dataset]:
    """One dataset per setting of ``runs``; the chunks of all settings run together."""
    from .chunks import Section, check_chunk_size, check_client, run_sections

    _check_engine_args(trials, seed, target, loss, progress)
    chunk_size = check_chunk_size(chunk_size)
    check_client(client)
    settings = []
    for coords, ests, src in runs:
        job = _prepare(ests, src, trials, seed, target, loss, draws)
        settings.append((coords, job))
    if not settings:
        raise ValueError("runs must yield at least one setting")
    sections = []
    for i, (coords, job) in enumerate(settings):
        engine = {"setting": {k: coords[k] for k in dim_values}, "estimators": list(job.ests),
                  "shape": [job.source.shape[0], job.draws], "trials": job.trials, "seed": job.seed,
                  "groups": [[g.name, g.size, g.epsilon] for g in job.source.groups]}
        sections.append(Section(f"evaluate-{i}", _evaluate_chunk, job, job.source.shape[0] * job.draws, engine))
    total = sum(sec.n_items for sec in sections)
    report = Progress(total) if progress is True else (progress or None)
    results = run_sections(sections, chunk_size, client=client, checkpoint=checkpoint, progress=report)
    return [_assemble(job, res, target, loss) for (_, job), res in zip(settings, results)]


__all__ += ["evaluate_many"]
