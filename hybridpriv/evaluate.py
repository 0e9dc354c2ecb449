"""The Monte Carlo engine: estimators x simulated datasets x trials -> ``xarray.Dataset``.

Seeding: one integer ``seed`` makes everything.  The dataset at ``(chain, draw)`` uses a
generator keyed ``SeedSequence(seed, spawn_key=(0, chain, draw))`` and estimator ``e`` on it
uses ``SeedSequence(seed, spawn_key=(1, crc32(label), chain, draw))``.  Keys do not depend on
chunking, on the order of evaluation, or on which other estimators run, so the same seed
gives the same numbers however the work is split.

Streaming: datasets are generated chunk by chunk and dropped once every estimator has run
on them; memory holds one chunk of datasets plus the (estimator, chain, draw, trial) result.
"""

from __future__ import annotations

import sys
import time
import zlib
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


def evaluate(
    estimators: Sequence[Estimator] | Mapping[str, Estimator],
    source: DatasetSource,
    trials: int = 1,
    seed: int = 0,
    target: str = "population",
    loss: str = "squared",
    chunk_size: int = 64,
    progress: bool | Callable[[int], None] = False,
    draws: int | None = None,
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
        Datasets generated and evaluated per chunk.
    progress
        ``True`` for a progress line on stderr on long runs, or a callable ``f(done)``.
    draws
        Use only the first ``draws`` draws of every chain (default: all).

    Returns
    -------
    xarray.Dataset
        ``estimate`` and ``loss`` with dims ``(estimator, chain, draw, trial)``; ``truth``
        ``(estimator, chain, draw)``; ``truth_sample`` and ``truth_population``
        ``(statistic, chain, draw)``; ``guarantee_epsilon`` ``(estimator, group)`` and
        ``required_epsilon`` ``(group)``; coordinates ``statistic`` and ``guarantee`` (readable)
        per estimator.
    """
    ests = _as_mapping(estimators)
    if not isinstance(source, DatasetSource):
        raise TypeError(f"source must provide groups, bounds, shape and generate(chain, draw, rng), got {type(source).__name__}")
    for label, est in ests.items():
        if [g.name for g in est.groups] != [g.name for g in source.groups] or [g.size for g in est.groups] != [
            g.size for g in source.groups
        ]:
            raise ValueError(f"estimator {label!r} was built for other groups than the source's")
    if not isinstance(trials, (int, np.integer)) or isinstance(trials, bool) or trials < 1:
        raise ValueError(f"trials must be an integer >= 1, got {trials!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not isinstance(target, str) or target not in ("population", "sample"):
        raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {list(LOSSES)}, got {loss!r}")
    if not isinstance(chunk_size, (int, np.integer)) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False or a callable f(done), got {progress!r}")
    chains, n_draws = source.shape
    if draws is not None:
        if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= n_draws:
            raise ValueError(f"draws must be an integer in [1, {n_draws}], got {draws!r}")
        n_draws = int(draws)
    chunk_size = int(chunk_size)

    labels = list(ests)
    statistics = sorted({e.statistic for e in ests.values()})
    estimate = np.empty((len(labels), chains, n_draws, trials))
    t_sample = np.empty((len(statistics), chains, n_draws))
    t_pop = np.full((len(statistics), chains, n_draws), np.nan)
    index = [(c, d) for c in range(chains) for d in range(n_draws)]
    report = Progress(len(index)) if progress is True else (progress or None)

    for start in range(0, len(index), chunk_size):
        for c, d in index[start : start + chunk_size]:
            ds = source.generate(c, d, data_rng(int(seed), c, d))
            for s, stat in enumerate(statistics):
                t_sample[s, c, d] = ds.truth(stat, "sample")
                if stat in ds.population:
                    t_pop[s, c, d] = ds.population[stat]
            batch = [np.broadcast_to(v, (trials, v.shape[-1])) for v in ds.values]
            for k, label in enumerate(labels):
                estimate[k, c, d, :] = ests[label].estimate(batch, estimator_rng(int(seed), label, c, d))
        if report:
            report(min(start + chunk_size, len(index)))

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
    **kwargs: object,
) -> xr.Dataset:
    """Evaluate a grid of settings and stack the results along swept dimensions.

    ``runs`` yields ``(coords, estimators, source)`` with ``coords`` mapping every swept
    dimension name (``n``, ``share``, ...) to its value; results are combined with
    :func:`xarray.combine_nested`-style stacking in the order of ``dim_values``.
    """
    parts = []
    for coords, ests, src in runs:
        res = evaluate(ests, src, **kwargs)  # type: ignore[arg-type]
        # guarantees may differ between settings (pdp-opt's threshold does): keep them as variables
        res = res.reset_coords(["guarantee", "estimator_statistic"])
        parts.append(res.expand_dims({k: [coords[k]] for k in dim_values}))
    if not parts:
        raise ValueError("runs must yield at least one setting")
    combined = xr.combine_by_coords(parts, combine_attrs="drop_conflicts")
    return combined.reindex({k: list(v) for k, v in dim_values.items()})  # type: ignore[return-value]


__all__ += ["evaluate_many"]
