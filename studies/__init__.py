"""Reproduced studies (installed as ``hybridpriv.studies``), registered for the CLI.

Each study module defines ``DESCRIPTION``, ``run(quick, seed, progress, **engine) -> xarray.Dataset``
(``engine``: ``client``, ``checkpoint``, ``chunk_size``, passed to the evaluation engine) and
``plot(ds, path)``.  :func:`run_study` writes ``OUT/NAME.nc`` and ``OUT/NAME.png``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from . import (
    avent_amplification,
    avent_bayes,
    avent_kmeans,
    avent_kvh,
    avent_pwh,
    avent_salaries,
    avent_skew,
    ferrando_means,
    ferrando_medians,
    wang_subset,
    zeber_user_item,
)

__all__ = ["STUDIES", "Study", "run_study"]


@dataclass(frozen=True)
class Study:
    name: str
    module: ModuleType

    @property
    def description(self) -> str:
        return self.module.DESCRIPTION


STUDIES: dict[str, Study] = {
    "ferrando-means": Study("ferrando-means", ferrando_means),
    "ferrando-medians": Study("ferrando-medians", ferrando_medians),
    "zeber-user-item": Study("zeber-user-item", zeber_user_item),
    "avent-kvh": Study("avent-kvh", avent_kvh),
    "avent-salaries": Study("avent-salaries", avent_salaries),
    "avent-pwh": Study("avent-pwh", avent_pwh),
    "avent-skew": Study("avent-skew", avent_skew),
    "avent-kmeans": Study("avent-kmeans", avent_kmeans),
    "avent-amplification": Study("avent-amplification", avent_amplification),
    "avent-bayes": Study("avent-bayes", avent_bayes),
    "wang-subset": Study("wang-subset", wang_subset),
}


def run_study(
    name: str,
    quick: bool = False,
    seed: int = 0,
    out: str | Path = "out",
    progress: bool = False,
    full: bool = False,
    client=None,
    resume: str | Path | None = None,
    chunk_size: int | None = None,
) -> tuple[Path, Path]:
    """Run study ``name`` and write ``out/name.nc`` and ``out/name.png``; return both paths.

    ``full``: the paper's full scale, for studies that have one (``zeber-user-item``).
    ``client``: a ``dask.distributed.Client`` whose cluster runs the chunks.
    ``resume``: a folder keeping every finished chunk (created if new); rerunning with it skips
    them.  It is refused if it holds a run of another configuration (study, scale, seed).
    ``chunk_size``: items per chunk (default: measured, about 0.2 s of work each).
    """
    from hybridpriv.checkpoint import Checkpoint
    from hybridpriv.cluster import describe_client
    from hybridpriv.report import provenance, write_netcdf

    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(STUDIES)}")
    module = STUDIES[name].module
    if full and "full" not in module.run.__code__.co_varnames:
        raise ValueError(f"study {name!r} has no --full scale")
    started = time.perf_counter()
    run_config = {"study": name, "quick": bool(quick), "full": bool(full), "seed": int(seed)}
    checkpoint = Checkpoint(resume, run_config) if resume is not None else None
    engine = {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size}
    try:
        if full:
            ds = module.run(quick=quick, seed=seed, progress=progress, full=True, **engine)
        else:
            ds = module.run(quick=quick, seed=seed, progress=progress, **engine)
    finally:
        if checkpoint is not None:
            checkpoint.close()
    ds.attrs.update(provenance({**run_config, **ds.attrs.pop("config", {})}, seed, started,
                               dask=describe_client(client)))
    ds.attrs["study"] = name
    if checkpoint is not None:
        ds.attrs["resumed_from"] = str(checkpoint.folder)
    out = Path(out)
    nc = write_netcdf(ds, out / f"{name}.nc")
    png = out / f"{name}.png"
    module.plot(ds, png)
    return nc, png
