"""The ``hybridpriv`` command.

``hybridpriv select [SPEC.toml | --example NAME] [--out DIR] [--draws N] [--trials T] [--seed S] [--chance-warning P] [--workers N | --scheduler ADDRESS]``
    Fit the PyMC model of what is public, simulate datasets from its posterior, evaluate every
    candidate mechanism on them and recommend one (any SPEC kind; ``hybridpriv spec`` lists them).
    Writes ``DIR/selection.nc`` (one DataTree: the posterior as PyMC wrote it, the evaluation, the
    decision) and ``DIR/selection.png``.
``hybridpriv audit [SPEC.toml | --example NAME] [--candidate NAME ...] [--samples N] [--seed S]``
    Audit the privacy declaration of a SPEC's candidates (built-in or your own); exit 1 on a violation.
``hybridpriv spec [KIND]``
    Print a commented template of a SPEC kind (without KIND: the kinds).
``hybridpriv study list`` / ``hybridpriv study run NAME [--quick|--full] [--out DIR] [--seed S] [--kinds K,...]``
``    [--workers N | --scheduler ADDRESS] [--resume DIR] [--chunk-size N]``
    Reproduce a paper's experiment, optionally on a dask cluster and resumable.

Bad input exits with status 2 and one line ``error: ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, no usage dump
        self.exit(2, f"error: {message}\n")


def _kinds_help() -> str:
    from .families import registry
    from .spec import examples

    kinds = "; ".join(f"{name}: {f.summary}" for name, f in registry().items())
    return f"SPEC kinds -- {kinds}. Built-in examples: {', '.join(examples())}. `hybridpriv spec KIND` prints a template."


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hybridpriv", description="Differential privacy for groups that need different protection.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    s = sub.add_parser("select", help="choose a mechanism from what is public, spending no privacy budget",
                       description="Choose a mechanism from what is public, spending no privacy budget. " + _kinds_help())
    s.add_argument("spec", nargs="?", help="SPEC.toml (default: the built-in example given by --example)")
    from .families import DEFAULT_EXAMPLE

    s.add_argument("--example", help=f"a built-in example instead of a SPEC (default: {DEFAULT_EXAMPLE})")
    s.add_argument("--out", default="out/select", help="output folder (default: out/select)")
    s.add_argument("--draws", type=int, help="simulated datasets; overrides the SPEC")
    s.add_argument("--trials", type=int, help="mechanism runs per dataset; overrides the SPEC")
    s.add_argument("--seed", type=int, help="seed of everything; overrides the SPEC")
    s.add_argument("--chance-warning", type=float, metavar="P",
                   help="warn when the recommendation is more than 25%% worse than the best on at least this share of "
                        "the model's datasets (default 0.25); overrides the SPEC's evaluation.chance_warning")
    _cluster_options(s, "evaluate the datasets")
    _resume_options(s)
    _quiet_option(s)
    a = sub.add_parser("audit", help="audit the privacy declarations of a SPEC's candidates (exit 1 on a violation)",
                       description="Audit every candidate of a SPEC (or those --candidate names), built-in or named by "
                                   "[[mechanisms]], with the statistical audit of hybridpriv.testing.")
    a.add_argument("spec", nargs="?", help="SPEC.toml (default: the built-in example given by --example)")
    a.add_argument("--example", help="a built-in example instead of a SPEC")
    a.add_argument("--candidate", action="append", default=[], help="audit this candidate (label); repeat")
    a.add_argument("--selection", help="a select run's selection.nc: audit the candidates it evaluated (by default its "
                                       "recommendation), built from its posterior, not a new fit")
    a.add_argument("--samples", type=int, default=20_000, help="releases per dataset (default 20,000)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--record", metavar="FILE", help="write the results as an audit record (JSON) that `hybridpriv "
                                                    "release --audit-record FILE` accepts for the same candidates")
    _quiet_option(a)
    t = sub.add_parser("spec", help="print a commented template of a SPEC kind")
    t.add_argument("kind", nargs="?", help="the SPEC kind (without it: list the kinds)")
    t.add_argument("--with-data", metavar="DIR", help="write DIR/KIND.toml and the small real data files it names, "
                                                       "so that `hybridpriv select DIR/KIND.toml` runs as printed")
    st = sub.add_parser("study", help="reproduce a paper's experiment")
    stsub = st.add_subparsers(dest="study_command", parser_class=_Parser)
    stsub.add_parser("list", help="list the registered studies")
    r = stsub.add_parser("run", help="run a study")
    r.add_argument("name", help="a study of `study list`, or all (every study, --jobs at a time, with a timing table)")
    r.add_argument("--quick", action="store_true",
                   help="small settings (seconds for most studies; calibration about 3 minutes, all about 4 on 2 cores)")
    r.add_argument("--full", action="store_true", help="the paper's full scale, where a study has one")
    r.add_argument("--out", default="out", help="output folder (default: out)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--kinds", metavar="KIND[,KIND...]",
                   help="calibration: run these kinds' truths only (each truth's numbers as in the whole study)")
    r.add_argument("--jobs", type=int, help="with all: run N studies at once, each in its own process, longest first "
                                            "(default: the usable cores, or 1 with --workers/--scheduler)")
    _cluster_options(r, "run the chunks")
    _resume_options(r)
    _quiet_option(r)
    from .release.cli import add_parser as add_release_parser  # hybridpriv release (brief K)

    add_release_parser(sub)
    return p


def _quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bars (results and errors are still printed)")


def _resume_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resume", metavar="DIR", help="keep finished chunks in DIR; rerun with it to continue a killed run")
    p.add_argument("--chunk-size", type=int, help="datasets per chunk/task (default: measured; 0.1-1 s of CPU work each)")


def _check_resume(args: argparse.Namespace) -> None:
    _positive(args.chunk_size, "chunk-size")
    if args.resume is not None and Path(args.resume).exists() and not Path(args.resume).is_dir():
        raise ValueError(f"--resume must be a folder, got the existing file {args.resume!r}")


def _cluster_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--workers", type=int, help=f"{what} on a local dask cluster of N processes (1 thread each)")
    p.add_argument("--scheduler", help=f"{what} on the running dask scheduler at ADDRESS (tcp://HOST:PORT)")


def _check_cluster_args(args: argparse.Namespace) -> None:
    _positive(args.workers, "workers")
    if args.workers is not None and args.scheduler is not None:
        raise ValueError("--workers and --scheduler exclude each other")


@contextlib.contextmanager
def _client(args: argparse.Namespace) -> Iterator[object]:
    """The dask client of ``--workers N`` (a local cluster, closed at the end) or ``--scheduler
    ADDRESS``; ``None`` without either (everything in this process)."""
    if args.workers is None and args.scheduler is None:
        yield None
        return
    from .engine.cluster import describe_client, local_client, scheduler_client

    client = local_client(args.workers) if args.workers is not None else scheduler_client(args.scheduler)
    cluster = client.cluster if args.workers is not None else None
    try:
        print(f"dask: {describe_client(client)}", flush=True)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _positive(value: int | None, name: str, minimum: int = 1) -> None:
    if value is not None and value < minimum:
        raise ValueError(f"--{name} must be >= {minimum}, got {value}")


def _check_seed(seed: int | None) -> None:
    from .core.validation import check_seed

    if seed is not None:
        check_seed(seed, "--seed")


def _check_out(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out must be a folder, got the existing file {out!r}")
    return path


def _select(args: argparse.Namespace) -> int:
    from .engine import Engine
    from .engine.cluster import describe_client
    from .report import save_figure, write_result
    from .spec import OVERRIDABLE, builtin_example_path, load_spec
    from .workflow import run_selection

    started = time.perf_counter()
    _positive(args.draws, "draws", minimum=2)
    _positive(args.trials, "trials")
    _check_seed(args.seed)
    _check_cluster_args(args)
    _check_resume(args)
    out = _check_out(args.out)
    if args.spec is not None and args.example is not None:
        raise ValueError("give a SPEC file or --example, not both")
    spec = load_spec(args.spec or builtin_example_path(args.example))
    _print_imports(spec)
    overrides = {k: getattr(args, k) for k in OVERRIDABLE if getattr(args, k) is not None}
    run_spec = _with_overrides(spec, overrides)
    problem = run_spec.problem()  # the model is built and validated here: bad knowledge fails before sampling
    print(f"hybridpriv select ({spec.kind}): {problem.description or spec.source}")
    for line in problem.header:
        print(f"  {line}")
    _quiet_libraries()
    with _client(args) as client, warnings.catch_warnings():
        # the predictive checks' and the family fallback's warnings are printed as lines of the log already
        warnings.filterwarnings("ignore", message="the model of public knowledge cannot reproduce")
        warnings.filterwarnings("ignore", message="family = auto: ")
        warnings.filterwarnings("ignore", message="the recommendation flips when")  # printed after the table
        warnings.filterwarnings("ignore", message="if .* of the model's datasets")  # so are the branches' warnings
        warnings.filterwarnings("ignore", message=r"warning \(premise: ")  # printed with the recommendation
        engine = Engine(client=client, checkpoint=args.resume, chunk_size=args.chunk_size, progress=True)
        result = run_selection(problem, engine, log=lambda line: print(line, flush=True))
        dask = describe_client(client)
    decision = result.decision
    config = {**spec.config(), "overrides": overrides}
    nc = write_result(out / "selection.nc", result.to_datatree(config, started, dask))
    png = save_figure(result.figure(), out / "selection.png")
    print()
    print(result.table())
    print()
    for line in result.sensitivity_lines():
        print(line)
    if result.sensitivity is not None:
        print()
    for line in result.branch_lines():
        print(line)
    if result.branches is not None:
        print()
    for line in result.plan_lines():
        print(line)
    if result.plan is not None:
        print()
    if result.summary is not None:
        from .engine.decision import format_summary

        print(format_summary(result.summary))
        print()
    plan_first = ([f"the two-stage plan above is recommended over choosing now: hybridpriv release carries it out; "
                   f"to release {decision.attrs['recommended']} now instead, name it (--candidate)"]
                  if result.plan is not None and int(result.plan.attrs["pays"]) else [])
    _advice(decision, [result.range_line(), result.p_best_line()], more=[*plan_first, *result.premise_lines()])
    print(f"wrote {nc} and {png} in {time.perf_counter() - started:.1f}s")
    return 0


def _print_imports(spec) -> None:
    """A SPEC is trusted input: say which code it makes hybridpriv import, before importing it.  (And say when an
    older SPEC format was read under today's names.)"""
    if spec.upgraded:
        print(f"note: {spec.source} is a format-1 SPEC, read as format 2 ({'; '.join(spec.upgraded)}); "
              "`format = 2` with the new names is the current form (`hybridpriv spec KIND` prints it)", flush=True)
    imports = spec.imports()
    if imports:
        print(f"this SPEC imports code (a SPEC is trusted input: it runs what it names): {', '.join(imports)}", flush=True)


def _with_overrides(spec, overrides: dict):
    """The SPEC with the command line's --draws/--trials/--seed/--chance-warning, checked as if the file said so."""
    from .spec import SpecError

    try:
        return spec.with_overrides(overrides)
    except SpecError as exc:
        given = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in overrides.items())
        raise ValueError(f"{given}: {exc}") from None


def _advice(decision, notes: Sequence[str] = (), more: Sequence[str] = ()) -> None:
    """The recommendation and what the table implies: its chance of a costly miss, near-ties, ineligible candidates, a
    choice at the edge; ``more``: more warnings to print with those (``Selection.premise_lines``); ``notes``: how
    well the family's ranges and P(best) held on held-out truths (``Selection.range_line``, ``Selection.p_best_line``;
    empty ones are skipped)."""
    from .engine.decision import chance_line, free_line

    dim = decision.attrs["candidate_dim"]
    best = decision.attrs["recommended"]
    by_regret = decision.attrs.get("criterion") == "regret"
    rule = "  by expected relative regret" if by_regret else ""
    print(f"recommended: {dim} = {best}  (P(best) = {float(decision.p_best.sel({dim: best})):.2f}){rule}")
    for line in (chance_line(decision), free_line(decision), *more):
        if line:
            print(f"  {line}")
    meets = decision["meets_requirements"]
    coords = list(decision[dim].values)
    gap, err = (("regret_difference", "regret_difference_mcse") if by_regret else ("difference", "difference_mcse"))
    close = [str(c) for c in coords if c != best and bool(meets.sel({dim: c}))
             and float(decision[gap].sel({dim: c})) < 2 * float(decision[err].sel({dim: c}))]
    if close:
        print(f"  within 2 Monte Carlo s.e. of it: {', '.join(close)} (more --draws would separate them, or they are equivalent)")
    failing = [str(c) for c in coords if not bool(meets.sel({dim: c}))]
    if failing:
        print(f"  not eligible (they protect some unit less than it requires; see privacy_* and required_* in the "
              f"evaluation): {', '.join(failing)}")
    values = decision[dim].values
    if values.dtype.kind in "iuf" and values.size > 2 and best in (values.min(), values.max()):
        print(f"  note: {dim} = {best} is at the edge of the range searched; widen the range in the SPEC")
    for note in notes:
        if note:
            print(f"  {note}")


def _audit(args: argparse.Namespace) -> int:
    from .auditing import MAX_AUDIT_SAMPLES, audit_problem, format_audit, write_record
    from .engine.progress import enabled
    from .spec import builtin_example_path, load_spec

    _positive(args.samples, "samples", minimum=200)
    if args.samples > MAX_AUDIT_SAMPLES:
        raise ValueError(f"--samples must be <= {MAX_AUDIT_SAMPLES:,}, got {args.samples}")
    _check_seed(args.seed)
    if args.spec is not None and args.example is not None:
        raise ValueError("give a SPEC file or --example, not both")
    if args.record is not None and Path(args.record).is_dir():
        raise ValueError(f"--record must be a file, got the folder {args.record!r}")
    spec = load_spec(args.spec or builtin_example_path(args.example))
    _print_imports(spec)
    problem = spec.problem()
    print(f"hybridpriv audit ({spec.kind}): {problem.description or spec.source}")
    _quiet_libraries()
    log = (lambda line: print(line, flush=True)) if enabled() else None
    posterior, names = None, args.candidate or None
    if args.selection is not None:
        from .workflow import read_selection

        posterior, _, attrs = read_selection(args.selection, spec, problem)
        names = names or [str(attrs["recommended"])]
        print(f"auditing {', '.join(names)} as the selection {args.selection} evaluated it (its posterior, no new fit)")
    result = audit_problem(problem, names, samples=args.samples, seed=args.seed, log=log, posterior=posterior)
    for line in format_audit(result):
        print(line)
    if args.record is not None:
        print(f"wrote the audit record {write_record(args.record, result)}")
    return 1 if bool(result.violation.any()) else 0


def _spec(args: argparse.Namespace) -> int:
    from .families import family, registry
    from .spec import template

    if args.kind is None:
        for name, fam in registry().items():
            print(f"{name:<14} {fam.summary}")
        print("\n`hybridpriv spec KIND` prints a commented template; save it, fill it in, run `hybridpriv select FILE`.")
        return 0
    text = template(args.kind)
    files = family(args.kind).template_files()
    if args.with_data is None:
        print(text, end="")
        if files:
            print(f"# this template names {', '.join(sorted(files))}: `hybridpriv spec {args.kind} --with-data DIR` "
                  "writes it beside the template (small real data)")
        return 0
    out = Path(args.with_data)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--with-data must be a folder, got the existing file {args.with_data!r}")
    written = [out / f"{args.kind}.toml", *(out / name for name in sorted(files))]
    taken = [str(p) for p in written if p.exists()]
    if taken:
        raise ValueError(f"--with-data {args.with_data!r} already holds {taken[0]}; choose another folder")
    out.mkdir(parents=True, exist_ok=True)
    written[0].write_text(text)
    for name, content in files.items():
        (out / name).write_text(content)
    print(f"wrote {', '.join(str(p) for p in written)}; run: hybridpriv select {written[0]}")
    return 0


def _study(args: argparse.Namespace) -> int:
    from .engine import Engine
    from .studies import STUDIES, run_all, run_study

    if args.study_command == "list":
        for name, study in STUDIES.items():
            print(f"{name:<20} {study.description}")
        return 0
    if args.study_command == "run":
        _check_seed(args.seed)
        _check_out(args.out)
        if args.name not in STUDIES and args.name != "all":
            raise ValueError(f"unknown study {args.name!r}; known: {', '.join(STUDIES)}, or all")
        started = time.perf_counter()
        if args.quick and args.full:
            raise ValueError("--quick and --full exclude each other")
        kinds = None
        if args.kinds is not None:  # a study that runs several kinds takes it (checked before any cluster starts)
            if args.name == "all":
                raise ValueError("--kinds is an option of one study (calibration), not of all")
            module = STUDIES[args.name].module
            if "kinds" not in module.run.__code__.co_varnames:
                raise ValueError(f"study {args.name!r} has no --kinds (only a study that runs several kinds: calibration)")
            kinds = module.check_kinds([k.strip() for k in args.kinds.split(",")], what="--kinds")
        _check_cluster_args(args)
        _check_resume(args)
        jobs = _study_jobs(args)
        if args.name != "all" or jobs == 1:  # studies run here (with jobs > 1 each process quiets its own)
            _quiet_libraries()
        if args.name == "all":
            if jobs > 1:
                rows = run_all(quick=args.quick, full=args.full, seed=args.seed, out=args.out, jobs=jobs,
                               engine=Engine(checkpoint=args.resume, chunk_size=args.chunk_size),
                               scheduler=args.scheduler)
            else:
                with _client(args) as client:
                    rows = run_all(quick=args.quick, full=args.full, seed=args.seed, out=args.out,
                                   engine=Engine(client, args.resume, args.chunk_size, progress=True))
            print(f"all {len(rows) - 1} studies in {rows[-1]['seconds']} s ({jobs} at a time; "
                  f"{rows[-1]['cpu_seconds']} CPU s), peak {rows[-1]['peak_rss_mib']} MiB; "
                  f"wrote {Path(args.out) / 'timings.csv'}")
            return 0
        with _client(args) as client:
            nc, png = run_study(args.name, quick=args.quick, seed=args.seed, out=args.out, full=args.full,
                                engine=Engine(client, args.resume, args.chunk_size, progress=True), kinds=kinds)
        print(f"wrote {nc} and {png} in {time.perf_counter() - started:.1f}s")
        return 0
    raise ValueError("study needs a subcommand: list or run NAME")


def _study_jobs(args: argparse.Namespace) -> int:
    """``--jobs``: only with ``all``; by default the usable cores (1 with a cluster option)."""
    _positive(args.jobs, "jobs")
    if args.jobs is not None and args.name != "all":
        raise ValueError(f"--jobs runs several studies at once; it needs the study name all, got {args.name!r}")
    if args.jobs is not None and args.jobs > 1 and args.workers is not None:
        raise ValueError(f"--jobs {args.jobs} with --workers would start a local cluster per study; "
                         "use --jobs 1 with --workers, or --scheduler ADDRESS shared by every study")
    if args.jobs is not None:
        return args.jobs
    if args.workers is not None or args.scheduler is not None:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _quiet_libraries() -> None:
    """PyMC's sampler chatter goes to the log; the CLI prints its own diagnostics."""
    import logging

    from .core.model import sampler_loggers

    for logger in sampler_loggers():
        logger.setLevel(logging.CRITICAL)


def _fail(exc: BaseException, prefix: str = "") -> int:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        msg = f"{exc.strerror}: {exc.filename}"
    print(f"error: {prefix}{msg}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybridpriv`` command; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    from .engine.progress import quiet

    try:
        with quiet(getattr(args, "quiet", False)):
            return _dispatch(parser, args)
    except (ValueError, TypeError, OSError) as exc:
        return _fail(exc)
    except MemoryError:  # a size guard missed a case: still one line, status 2
        print("error: out of memory (the problem is larger than this machine holds; make it smaller)", file=sys.stderr)
        return 2
    except Exception as exc:  # PyMC's SamplingError and the like: still one line, status 2
        if type(exc).__module__.split(".")[0] in ("pymc", "pytensor"):
            return _fail(exc, prefix="the model of public knowledge could not be sampled: ")
        raise
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "select":
        return _select(args)
    if args.command == "spec":
        return _spec(args)
    if args.command == "audit":
        return _audit(args)
    if args.command == "study":
        return _study(args)
    if args.command == "release":
        from .release.cli import main as release_main

        return release_main(args)
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
