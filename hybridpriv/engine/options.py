"""How the engine runs, as one value: :class:`Engine` (where the chunks run, where they are kept, how large
they are, how progress is shown).  None of it changes a number: the same seed gives the same results
with every :class:`Engine` (:mod:`hybridpriv.core.random`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Engine", "as_engine"]


@dataclass(frozen=True)
class Engine:
    """The engine's settings, passed once (``evaluate(..., engine=Engine(client=c))``).

    Parameters
    ----------
    client
        A ``dask.distributed.Client``: the chunks run as tasks on its cluster (default: in this process).
    checkpoint
        A :class:`~hybridpriv.engine.checkpoint.Checkpoint` or a folder: every finished chunk is kept there
        and a rerun skips the chunks it holds (a folder of another configuration is refused, naming what
        changed).  ``select`` and the studies open their own checkpoint in the folder.
    chunk_size
        Datasets per chunk (default ``None``: measured, :mod:`hybridpriv.engine.chunks`).
    progress
        ``True`` for one progress line per phase on stderr (:mod:`hybridpriv.engine.progress`), or a callable
        ``f(done)``.
    """

    client: Any = None
    checkpoint: Any = None
    chunk_size: int | None = None
    progress: bool | Callable[[int], None] = False

    def __post_init__(self) -> None:
        from .checkpoint import Checkpoint
        from .chunks import check_chunk_size, check_client

        check_client(self.client)
        object.__setattr__(self, "chunk_size", check_chunk_size(self.chunk_size))
        if not (isinstance(self.progress, bool) or callable(self.progress)):
            raise TypeError(f"progress must be True, False or a callable f(done), got {self.progress!r}")
        if self.checkpoint is not None and not isinstance(self.checkpoint, (Checkpoint, str, Path)):
            raise TypeError(f"checkpoint must be a Checkpoint, a folder path or None, got "
                            f"{type(self.checkpoint).__name__}")

    def replace(self, **changes: Any) -> Engine:
        """This engine with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def as_engine(engine: object) -> Engine:
    """``engine`` itself, or the default :class:`Engine` for ``None``; anything else is refused."""
    if engine is None:
        return Engine()
    if not isinstance(engine, Engine):
        raise TypeError(f"engine must be a hybridpriv.engine.Engine or None, got {type(engine).__name__}")
    return engine
