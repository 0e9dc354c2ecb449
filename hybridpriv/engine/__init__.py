"""The engine: evaluate candidates on simulated datasets (:mod:`~hybridpriv.engine.evaluate`), decide between
them (:mod:`~hybridpriv.engine.decision`), in chunks (:mod:`~hybridpriv.engine.chunks`) that resume from a
checkpoint (:mod:`~hybridpriv.engine.checkpoint`), on one process or a dask cluster
(:mod:`~hybridpriv.engine.cluster`), with Monte Carlo errors (:mod:`~hybridpriv.engine.stats`) and progress
(:mod:`~hybridpriv.engine.progress`).  No module here names a family."""

from .options import Engine, as_engine

__all__ = ["Engine", "as_engine"]
