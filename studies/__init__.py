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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

from ..engine.options import Engine, as_engine

__all__ = ["STUDIES", "Study", "read_study", "run_all", "run_study", "scale_in_all", "study_argv"]


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
    full: bool = False,
    engine: Engine | None = None,
    kinds: Sequence[str] | None = None,
) -> tuple[Path, Path]:
    """Run study ``name`` and write ``out/name.nc`` and ``out/name.png``; return both paths.

    ``name.nc`` is a DataTree, one layout for every study: the provenance, the study's name and its
    claims (where it checks a paper's) as attributes of the root, the study's numbers in the group
    ``results`` (:func:`read_study` reads it back as one Dataset).

    ``full``: the paper's full scale, for studies that have one (``zeber-user-item``).
    ``kinds``: the kinds to run, for a study that runs several (``calibration``; ``--kinds``): part of the run's
    configuration (a checkpoint of other kinds is refused) and of its provenance.
    ``engine``: how the chunks run (:class:`~hybridpriv.engine.options.Engine`): its ``client``'s
    cluster, its ``checkpoint`` folder keeping every finished chunk (created if new; rerunning with it
    skips them; refused if it holds a run of another configuration: study, scale, seed), its
    ``chunk_size`` (default: measured, about 0.2 s of work each), its ``progress``.
    """
    from ..engine.checkpoint import Checkpoint
    from ..engine.cluster import describe_client
    from ..report import provenance, result_tree, write_result

    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(STUDIES)}")
    module = STUDIES[name].module
    if full and "full" not in module.run.__code__.co_varnames:
        raise ValueError(f"study {name!r} has no --full scale")
    options = {}
    if kinds is not None:
        if "kinds" not in module.run.__code__.co_varnames:
            raise ValueError(f"study {name!r} has no --kinds (only a study that runs several kinds: calibration)")
        options["kinds"] = list(module.check_kinds(kinds))
    started = time.perf_counter()
    run_config = {"study": name, "quick": bool(quick), "full": bool(full), "seed": int(seed), **options}
    engine = as_engine(engine)
    checkpoint = Checkpoint(engine.checkpoint, run_config) if engine.checkpoint is not None else None
    try:
        if full:
            options["full"] = True
        ds = module.run(quick=quick, seed=seed, engine=engine.replace(checkpoint=checkpoint), **options)
    finally:
        if checkpoint is not None:
            checkpoint.close()
    ds.attrs.update(provenance({**run_config, **ds.attrs.pop("config", {})}, seed, started,
                               dask=describe_client(engine.client)))
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
    results = ds.copy()
    results.attrs = {}
    nc = write_result(out / f"{name}.nc", result_tree({"results": results}, ds.attrs))
    png = out / f"{name}.png"
    module.plot(ds, png)
    return nc, png


def read_study(path: str | Path):
    """A study's ``name.nc`` (:func:`run_study`) as one ``xarray.Dataset``: the ``results`` group, loaded, with the
    root's attributes (provenance, study, claims).  A file of another layout is refused, naming it."""
    import xarray as xr

    path = Path(path)
    tree = xr.open_datatree(path, engine="h5netcdf")
    try:
        if "results" not in tree.children:
            raise ValueError(f"{path} is not a study's output (no 'results' group; groups: {sorted(tree.children)})")
        return tree["results"].to_dataset().load().assign_attrs(dict(tree.attrs))
    finally:
        tree.close()


def run_all(quick: bool = False, full: bool = False, seed: int = 0, out: str | Path = "out",
            engine: Engine | None = None, log=print, jobs: int = 1, scheduler: str | None = None
            ) -> list[dict[str, object]]:
    """Run every registered study; write ``out/timings.csv`` and ``out/reproduction.md``; return the rows.

    ``full``: each study at its paper's full scale where it has one (the others at their default
    scale; :func:`scale_in_all`).  ``engine``: as :func:`run_study`'s, its checkpoint folder holding one
    sub-folder per study.  ``jobs``: 1 runs the studies in turn in this
    process (their chunks on the engine's cluster if it has a client); N > 1 runs N studies at once, each in
    its own process, longest first (:mod:`._jobs`; their logs in ``out/logs``; ``scheduler``: the
    address every study's engine connects to, if any).  Either way a study's numbers are those of
    ``study run NAME`` with the same seed.  Each row: the study, its scale, wall time and CPU time
    (s), and the peak resident memory (MiB) of its process and of the processes it waited for (with
    ``jobs`` = 1: of this process and its finished children so far; dask workers are children with
    ``--workers``, not with ``--scheduler``).  The ``all`` row: the wall time of the whole run, the
    CPU time summed, and the peak memory (with ``jobs`` > 1: the largest sum of the peaks of studies
    that ran at the same time, an upper bound).
    """
    import csv
    import resource

    engine = as_engine(engine)
    resume = engine.checkpoint
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if jobs > 1 and engine.client is not None:
        raise ValueError("jobs > 1 runs each study in its own process; give those processes a scheduler address, "
                         "not a client")
    out = Path(out)
    names = list(STUDIES)

    def scale_of(name: str) -> str:
        return scale_in_all(name, quick, full)

    rows: list[dict[str, object]] = []
    started_all = time.perf_counter()
    if jobs == 1:
        def cpu() -> float:
            return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                        resource.getrusage(resource.RUSAGE_CHILDREN)))

        for name in names:
            scale = scale_of(name)
            started, cpu0 = time.perf_counter(), cpu()
            run_study(name, quick=quick, seed=seed, out=out, full=scale == "full",
                      engine=engine.replace(checkpoint=None if resume is None else Path(resume) / name))
            peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                       resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
            rows.append({"study": name, "scale": scale, "seconds": round(time.perf_counter() - started, 1),
                         "cpu_seconds": round(cpu() - cpu0, 1), "peak_rss_mib": round(peak)})
            log(f"{name:<20} {scale:<8} {rows[-1]['seconds']:>8.1f} s  cpu {rows[-1]['cpu_seconds']:>8.1f} s  "
                f"peak {rows[-1]['peak_rss_mib']} MiB")
        peak_all = max(int(r["peak_rss_mib"]) for r in rows)  # type: ignore[call-overload]
    else:
        from ._jobs import Job, concurrent_peak_mib, order, run_jobs

        kind = "quick" if quick else ("full" if full else "default")
        todo = []
        for name in order(names, kind):
            scale = scale_of(name)
            argv = study_argv(name, scale, seed, out, resume, engine.chunk_size, scheduler)
            todo.append(Job(name, argv, out / "logs" / f"{name}.log"))
        finished = {j.name: j for j in run_jobs(todo, jobs, log=log)}
        for name in names:
            j = finished[name]
            rows.append({"study": name, "scale": scale_of(name), "seconds": round(j.seconds, 1),
                         "cpu_seconds": round(j.cpu_seconds, 1), "peak_rss_mib": round(j.peak_rss_mib)})
        peak_all = round(concurrent_peak_mib(list(finished.values())))
    rows.append({"study": "all", "scale": "quick" if quick else ("full" if full else "default"),
                 "seconds": round(time.perf_counter() - started_all, 1),
                 "cpu_seconds": round(sum(float(r["cpu_seconds"]) for r in rows), 1),  # type: ignore[arg-type]
                 "peak_rss_mib": peak_all})
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "timings.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _write_reproduction(out, rows)
    return rows


def study_argv(name: str, scale: str, seed: int, out: str | Path, resume: str | Path | None = None,
               chunk_size: int | None = None, scheduler: str | None = None) -> list[str]:
    """The ``hybridpriv`` arguments that run study ``name`` alone as :func:`run_all` would run it."""
    argv = ["study", "run", name, "--out", str(out), "--seed", str(seed), "--quiet"]
    argv += {"quick": ["--quick"], "full": ["--full"], "default": []}[scale]
    argv += [] if resume is None else ["--resume", str(Path(resume) / name)]
    argv += [] if chunk_size is None else ["--chunk-size", str(chunk_size)]
    return argv + ([] if scheduler is None else ["--scheduler", scheduler])


def scale_in_all(name: str, quick: bool, full: bool) -> str:
    """The scale ``study run all [--quick | --full]`` runs study ``name`` at.

    ``--full`` means the paper's scale where a study has a larger one than its default.  A study
    module may set ``SCALE_IN_ALL`` to run at that scale in ``all`` whatever is asked (``calibration``:
    it reproduces no paper, and its default scale alone takes about an hour on one core).
    """
    module = STUDIES[name].module
    if hasattr(module, "SCALE_IN_ALL"):
        return str(module.SCALE_IN_ALL)
    has_full = "full" in module.run.__code__.co_varnames
    return "quick" if quick else ("full" if full and has_full else "default")


def _write_reproduction(out: Path, rows: list[dict[str, object]]) -> None:
    """``out/reproduction.md``: every paper's claims table, from the ``.nc`` files just written."""
    from ._claims import from_attr, markdown

    papers: dict[str, list] = {}
    runs: dict[str, dict[str, str]] = {}
    for row in rows[:-1]:
        name = str(row["study"])
        module = STUDIES[name].module
        if not hasattr(module, "claims"):
            continue
        claims = from_attr(read_study(out / f"{name}.nc").attrs["claims"])
        papers.setdefault(module.PAPER, []).extend((name, c) for c in claims)
        runs.setdefault(module.PAPER, {})[name] = f"{row['scale']} scale, {row['seconds']} s"
    parts = ["# Reproduction: every paper's claims beside our numbers", "",
             "Regenerated by `hybridpriv study run all` from the studies' outputs in this folder.", ""]
    parts += [markdown(paper, claims, runs[paper]) for paper, claims in papers.items()]
    (out / "reproduction.md").write_text("\n".join(parts))
