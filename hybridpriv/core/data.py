"""Datasets and the sources that generate them.

A *source* is anything the evaluation engine can ask for the dataset of one ``(chain, draw)``
index: a known distribution (a family's, e.g. ``IIDSource`` of grouped records), a fixed real dataset
(:class:`FixedSource`), evenly spaced draws of another source (:class:`ThinnedSource`), or the posterior predictive of a PyMC model of public knowledge (every fitted model in
:mod:`hybridpriv.models` is one).  The engine owns the seeds: it hands
:meth:`DatasetSource.generate` a numpy ``Generator`` on the stream ``("dataset", chain, draw)``
(:mod:`hybridpriv.core.random`), so a dataset does not depend on chunking or on which worker made it.

Every dataset has a *kind* (:func:`data_kind_of`; the registered kinds: :func:`hybridpriv.families.data_kinds`), and every mechanism says which kind it reads.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .params import Parametrized

__all__ = ["DatasetSource", "FixedSource", "ThinnedSource", "check_source", "data_kind_of", "strata_of"]


def data_kind_of(data: object) -> str:
    """The kind of ``data``: its ``data_kind`` attribute, else the registered data kind that recognises it
    (a SciPy sparse matrix is a users x items matrix)."""
    kind = getattr(data, "data_kind", None)
    if kind is None:
        from ..families import data_kinds

        for name, dk in data_kinds().items():
            if dk.recognises(data):
                return name
        raise TypeError(f"cannot tell the data kind of {type(data).__name__}; give it a data_kind attribute")
    return kind


@runtime_checkable
class DatasetSource(Protocol):
    """What the evaluation engine needs from a source of datasets.

    ``shape`` is the index space ``(chains, draws)``; ``generate(chain, draw, rng)`` returns the
    dataset at that index using only ``rng`` for randomness (and the same dataset for the same
    index and generator state).  Sources should also offer ``get_params()`` or
    ``describe_params()`` (what :func:`hybridpriv.core.params.describe` records in results and
    checkpoints).  Grouped sources also carry ``groups`` and ``bounds``.  A source whose draws come in
    strata (a mixture's components fitted apart and laid one after another along ``draw``) says so with
    ``strata`` (:func:`strata_of`), so that Monte Carlo errors are computed within strata.
    """

    @property
    def shape(self) -> tuple[int, int]:
        """``(chains, draws)``: the index space of available datasets."""
        ...

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        """The dataset at ``(chain, draw)``, using only ``rng`` for randomness."""
        ...


def check_source(source: object) -> None:
    """Raise ``TypeError`` unless ``source`` has ``shape`` and ``generate`` (the protocol)."""
    if not isinstance(source, DatasetSource):
        raise TypeError(f"source must provide shape and generate(chain, draw, rng), got {type(source).__name__}")


def _check_draws(draws: object) -> int:
    if not isinstance(draws, Integral) or isinstance(draws, bool) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    return int(draws)


def strata_of(source: object) -> np.ndarray | None:
    """The stratum of every ``(chain, draw)`` of ``source``: its ``strata`` attribute (integers shaped like
    ``source.shape``), or ``None`` when it has none.

    Strata are parts of a source's draws made apart, each with its own law (a mixture's components, each fitted
    by its own sampler and laid one after another along ``draw``): the evaluation carries them as the
    coordinate ``stratum`` and :func:`hybridpriv.engine.stats.mcse_mean` computes the Monte Carlo error within
    each (a block of draws from another component is not autocorrelation).
    """
    strata = getattr(source, "strata", None)
    if strata is None:
        return None
    out = np.asarray(strata)
    shape = tuple(getattr(source, "shape", ()))
    if out.shape != shape or out.dtype.kind not in "iu":
        raise ValueError(f"{type(source).__name__}.strata must be integers shaped like its (chains, draws) {shape}, "
                         f"got dtype {out.dtype} and shape {out.shape}")
    return out


class FixedSource(Parametrized):
    """One fixed dataset (e.g. real records) offered ``draws`` times.

    The engine's Monte Carlo then varies only the mechanisms' noise: the evaluation is the
    risk *given this dataset*.  ``data`` is any dataset a mechanism reads (its kind is
    :func:`data_kind_of` ``(data)``).  ``groups``: the privacy groups of grouped records (so that
    the engine knows the units' requirements); default: ``data.groups`` if it has them.
    """

    def __init__(self, data: Any, draws: int = 1, groups: Any = None) -> None:
        self.data = data
        self.data_kind = data_kind_of(data)
        self.draws = _check_draws(draws)
        self.groups = list(groups) if groups is not None else getattr(data, "groups", None)

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.draws)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        return self.data


class ThinnedSource(Parametrized):
    """Evenly spaced draws of another source, every chain kept.

    Posterior sampling is cheap and evaluation is not: fit a long chain (for well-mixed
    diagnostics), then evaluate on ``draws`` datasets per chain spread evenly over it.
    """

    def __init__(self, source: DatasetSource, draws: int) -> None:
        check_source(source)
        chains, total = source.shape
        if not isinstance(draws, (int, np.integer)) or isinstance(draws, bool) or not 1 <= draws <= total:
            raise ValueError(f"draws must be an integer in [1, {total}], got {draws!r}")
        self.source = source
        self.groups = getattr(source, "groups", None)
        self.bounds = getattr(source, "bounds", None)
        self.data_kind = source.data_kind
        self.index = np.unique(np.linspace(0, total - 1, draws).round().astype(int))
        self._chains = chains
        strata = strata_of(source)
        #: The stratum of every kept draw (:func:`strata_of`), ``None`` if the source has none.
        self.strata = None if strata is None else strata[:, self.index]

    @property
    def shape(self) -> tuple[int, int]:
        return (self._chains, int(self.index.size))

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        return self.source.generate(chain, int(self.index[draw]), rng)
