"""Reproduced studies (installed as ``hybridpriv.studies``), registered for the CLI.

Each study module defines ``DESCRIPTION``, ``run(quick, seed, progress) -> xarray.Dataset``
and ``plot(ds, path)``.  :func:`run_study` writes ``OUT/NAME.nc`` and ``OUT/NAME.png``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from . import ferrando_means, ferrando_medians, zeber_user_item

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
}


def run_study(
    name: str, quick: bool = False, seed: int = 0, out: str | Path = "out", progress: bool = False, full: bool = False
) -> tuple[Path, Path]:
    """Run study ``name`` and write ``out/name.nc`` and ``out/name.png``; return both paths.

    ``full``: the paper's full scale, for studies that have one (``zeber-user-item``).
    """
    from hybridpriv.report import provenance, write_netcdf

    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(STUDIES)}")
    module = STUDIES[name].module
    started = time.perf_counter()
    if full:
        if "full" not in module.run.__code__.co_varnames:
            raise ValueError(f"study {name!r} has no --full scale")
        ds = module.run(quick=quick, seed=seed, progress=progress, full=True)
    else:
        ds = module.run(quick=quick, seed=seed, progress=progress)
    ds.attrs.update(provenance({"study": name, "quick": quick, "full": full, **ds.attrs.pop("config", {})}, seed, started))
    ds.attrs["study"] = name
    out = Path(out)
    nc = write_netcdf(ds, out / f"{name}.nc")
    png = out / f"{name}.png"
    module.plot(ds, png)
    return nc, png
