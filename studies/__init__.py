"""Reproduced studies (installed as ``hybridpriv.studies``), registered for the CLI.

Each study module defines ``DESCRIPTION``, ``run(quick, seed, progress, **engine) -> xarray.Dataset``
(``engine``: ``client``, ``checkpoint``, ``chunk_size``, passed to the evaluation engine) and
``plot(ds, path)``.  :func:`run_study` writes ``OUT/NAME.nc`` and ``OUT/NAME.png``.
"""

from __future__ import annotations

if __name__ != "hybridpriv.studies":  # the import guard: one copy of every class
    raise ImportError(
        f"import this package as hybridpriv.studies, not {__name__!r}: `studies/` is installed inside "
        "hybridpriv, and importing it from a checkout by its folder name would load a second copy "
        "of every class (isinstance checks against hybridpriv.studies would then fail)"
    )

import ast
import importlib
import importlib.util
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

__all__ = ["STUDIES", "Study", "run_all", "run_study"]


@dataclass(frozen=True)
class Study:
    """A registered study; its module is imported only when it runs (``study list`` stays fast)."""

    name: str
    module_name: str

    @cached_property
    def module(self) -> ModuleType:
        return importlib.import_module(f"{__name__}.{self.module_name}")

    @property
    def description(self) -> str:
        """The module's ``DESCRIPTION``, read from its source without importing it."""
        spec = importlib.util.find_spec(f"{__name__}.{self.module_name}")
        tree = ast.parse(Path(spec.origin).read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DESCRIPTION" for t in node.targets):
                return str(ast.literal_eval(node.value))
        return self.module.DESCRIPTION


STUDIES: dict[str, Study] = {
    name: Study(name, name.replace("-", "_"))
    for name in (
        "ferrando-means", "ferrando-medians", "zeber-user-item", "avent-kvh", "avent-salaries", "avent-pwh",
        "avent-skew", "avent-kmeans", "avent-amplification", "avent-bayes", "wang-subset", "wang-rescaling",
        "calibration",
    )
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
    if hasattr(module, "claims"):  # the paper's claims, checked on this run's numbers
        from ._claims import markdown, to_attr

        claims = module.claims(ds)
        ds.attrs["claims"] = to_attr(claims)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.claims.md").write_text(markdown(module.PAPER, [(name, c) for c in claims]))
    nc = write_netcdf(ds, out / f"{name}.nc")
    png = out / f"{name}.png"
    module.plot(ds, png)
    return nc, png


def run_all(quick: bool = False, full: bool = False, seed: int = 0, out: str | Path = "out", progress: bool = False,
            client=None, resume: str | Path | None = None, chunk_size: int | None = None,
            log=print) -> list[dict[str, object]]:
    """Run every registered study in turn; write ``out/timings.csv`` and return its rows.

    ``full``: each study at its paper's full scale where it has one (the others at their default
    scale, which is already the paper's).  ``resume``: one sub-folder per study.  Each row: the
    study, the scale it ran at, its wall time (s) and the peak resident memory of this process
    and of its finished child processes so far (MiB; dask workers are children with
    ``--workers``, not with ``--scheduler``).
    """
    import csv
    import resource

    rows: list[dict[str, object]] = []
    out = Path(out)
    for name in STUDIES:
        has_full = "full" in STUDIES[name].module.run.__code__.co_varnames
        scale = "quick" if quick else ("full" if full and has_full else "default")
        started = time.perf_counter()
        run_study(name, quick=quick, seed=seed, out=out, progress=progress, full=scale == "full", client=client,
                  resume=None if resume is None else Path(resume) / name, chunk_size=chunk_size)
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        rows.append({"study": name, "scale": scale, "seconds": round(time.perf_counter() - started, 1),
                     "peak_rss_mib": round(peak)})
        log(f"{name:<20} {scale:<8} {rows[-1]['seconds']:>8.1f} s  peak {rows[-1]['peak_rss_mib']} MiB")
    total = round(sum(float(r["seconds"]) for r in rows), 1)  # type: ignore[arg-type]
    rows.append({"study": "all", "scale": "quick" if quick else ("full" if full else "default"), "seconds": total,
                 "peak_rss_mib": max(int(r["peak_rss_mib"]) for r in rows)})  # type: ignore[call-overload]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "timings.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _write_reproduction(out, rows)
    return rows


def _write_reproduction(out: Path, rows: list[dict[str, object]]) -> None:
    """``out/reproduction.md``: every paper's claims table, from the ``.nc`` files just written."""
    import xarray as xr

    from ._claims import from_attr, markdown

    papers: dict[str, list] = {}
    runs: dict[str, dict[str, str]] = {}
    for row in rows[:-1]:
        name = str(row["study"])
        module = STUDIES[name].module
        if not hasattr(module, "claims"):
            continue
        with xr.open_dataset(out / f"{name}.nc") as ds:
            claims = from_attr(ds.attrs["claims"])
        papers.setdefault(module.PAPER, []).extend((name, c) for c in claims)
        runs.setdefault(module.PAPER, {})[name] = f"{row['scale']} scale, {row['seconds']} s"
    parts = ["# Reproduction: every paper's claims beside our numbers", "",
             "Regenerated by `hybridpriv study run all` from the studies' outputs in this folder.", ""]
    parts += [markdown(paper, claims, runs[paper]) for paper, claims in papers.items()]
    (out / "reproduction.md").write_text("\n".join(parts))
