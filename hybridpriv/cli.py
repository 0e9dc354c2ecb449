"""The ``hybridpriv`` command.

``hybridpriv select [SPEC.toml] [--out DIR] [--draws N] [--trials T] [--seed S] [--workers N | --scheduler ADDRESS]``
    Fit the PyMC model of what is public, simulate datasets from its posterior, evaluate
    every candidate estimator on them and recommend one.  No SPEC: the built-in example.
    ``--workers`` / ``--scheduler``: evaluate (or score the user-item matrices) on a dask
    cluster, with the same numbers as in one process.
``hybridpriv study list`` / ``hybridpriv study run NAME [--quick|--full] [--out DIR] [--seed S]``
``    [--workers N | --scheduler ADDRESS] [--resume DIR] [--chunk-size N]``
    Reproduce a paper's experiment, optionally on a dask cluster (a local one of N processes,
    or a running scheduler) and resumable from the finished chunks kept in DIR.

Bad input exits with status 2 and one line ``error: ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, no usage dump
        self.exit(2, f"error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hybridpriv", description="Differential privacy for groups that need different protection.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    s = sub.add_parser("select", help="choose a mechanism from what is public, spending no privacy budget")
    s.add_argument("spec", nargs="?", help="SPEC.toml (default: the built-in example given by --example)")
    s.add_argument("--example", default="grouped",
                   help="built-in example when no SPEC is given: grouped (default) or favorite-sites")
    s.add_argument("--out", default="out/select", help="output folder (default: out/select)")
    s.add_argument("--draws", type=int, help="simulated datasets (posterior draws); overrides the SPEC")
    s.add_argument("--trials", type=int, help="mechanism runs per dataset; overrides the SPEC")
    s.add_argument("--seed", type=int, help="seed of everything; overrides the SPEC")
    _cluster_options(s, "evaluate the datasets (or score the matrices)")
    st = sub.add_parser("study", help="reproduce a paper's experiment")
    stsub = st.add_subparsers(dest="study_command", parser_class=_Parser)
    stsub.add_parser("list", help="list the registered studies")
    r = stsub.add_parser("run", help="run a study")
    r.add_argument("name")
    r.add_argument("--quick", action="store_true", help="small settings (under a minute)")
    r.add_argument("--full", action="store_true", help="the paper's full scale, where a study has one")
    r.add_argument("--out", default="out", help="output folder (default: out)")
    r.add_argument("--seed", type=int, default=0)
    _cluster_options(r, "run the chunks")
    r.add_argument("--resume", metavar="DIR", help="keep finished chunks in DIR; rerun with it to continue a killed run")
    r.add_argument("--chunk-size", type=int, help="datasets per chunk/task (default: measured; 0.1-1 s of CPU work each)")
    return p


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
    from .cluster import describe_client, local_client, scheduler_client

    client = local_client(args.workers) if args.workers is not None else scheduler_client(args.scheduler)
    cluster = client.cluster if args.workers is not None else None
    try:
        print(f"dask: {describe_client(client)}", flush=True)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


#: A fitted model with a larger R-hat is refused: its simulated datasets would not reflect
#: the public knowledge.
RHAT_FAIL = 1.1


def _positive(value: int | None, name: str, minimum: int = 1) -> None:
    if value is not None and value < minimum:
        raise ValueError(f"--{name} must be >= {minimum}, got {value}")


def _check_seed(seed: int | None) -> None:
    if seed is not None and not 0 <= seed < 2**63:
        raise ValueError(f"--seed must be in [0, 2**63), got {seed}")


def _check_out(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out must be a folder, got the existing file {out!r}")
    return path


def _select(args: argparse.Namespace) -> int:
    import xarray as xr

    from .evaluate import evaluate
    from .report import plot_decision, provenance, save_figure, write_netcdf
    from .tasks import Statistic
    from .select import decide, format_table
    from .spec import UserItemSpec, builtin_example_path, load_spec
    from .workflow import candidates_for, datasets_for, fit_model

    started = time.perf_counter()
    _positive(args.draws, "draws", minimum=2)
    _positive(args.trials, "trials")
    _check_seed(args.seed)
    _check_cluster_args(args)
    out = _check_out(args.out)
    spec = load_spec(args.spec or builtin_example_path(args.example))
    for key in ("draws", "trials", "seed"):
        if getattr(args, key) is not None:
            setattr(spec, key, getattr(args, key))
    if isinstance(spec, UserItemSpec):
        return _select_user_item(spec, out, started, args)
    candidates_for(spec, 1.0, mean_square=0.0)  # every candidate can be built: fail before sampling
    print(f"hybridpriv select: {spec.description or spec.source}")
    for g in spec.groups:
        kind = "public" if g.is_public else f"epsilon={g.epsilon:g}"
        known = " (records known)" if g.name in spec.public_data else ""
        print(f"  group {g.name:<10} n={g.size:<7} {kind}{known}")
    print(f"fitting the model of public knowledge ({spec.chains} chains, {spec.draws} datasets) ...", flush=True)
    _quiet_libraries()
    posterior = fit_model(spec)
    diag = posterior.summary()
    divergences = int(posterior.idata["sample_stats"]["diverging"].sum())
    print(f"  posterior: {', '.join(f'{k} = {r["mean"]:.4g} ± {r["sd"]:.2g}' for k, r in diag.iterrows())}")
    print(f"  diagnostics: max R-hat {diag.r_hat.max():.3f}, min bulk ESS {diag.ess_bulk.min():.0f}, "
          f"{divergences} divergences"
          + ("   WARNING: R-hat > 1.01, raise model.tune" if diag.r_hat.max() > 1.01 else ""))
    if diag.r_hat.max() > RHAT_FAIL:
        raise ValueError(
            f"the model of public knowledge did not converge (max R-hat {diag.r_hat.max():.2f} > {RHAT_FAIL}): "
            "the knowledge may be contradictory (check model.released_means and model.known_variance "
            "against the public records and bounds), or model.tune is too small"
        )
    sigma2 = posterior.variance_posterior_mean
    print(f"  posterior mean of the records' variance: {sigma2:.4g} (plugged into the weights)")
    candidates = candidates_for(spec, posterior)
    source = datasets_for(spec, posterior)
    n_sets = source.shape[0] * source.shape[1]
    print(f"evaluating {len(candidates)} estimators x {n_sets} datasets x {spec.trials} trials ...", flush=True)
    from .cluster import describe_client

    with _client(args) as client:
        ev = evaluate(candidates, source, Statistic(spec.target, spec.loss), trials=spec.trials, seed=spec.seed,
                      requirements=spec.relation, progress=True, client=client)
        dask = describe_client(client)
    decision = decide(ev)
    decision = xr.merge([decision, ev.drop_vars("risk")], compat="override", combine_attrs="override")
    decision.attrs.update(provenance(spec.config(), spec.seed, started, dask=dask))
    decision.attrs["recommended"] = str(decision["recommended"].item())
    nc = write_netcdf(decision, out / "selection.nc")
    png = save_figure(plot_decision(decision, title=f"{spec.statistic} release: expected {spec.loss} error"),
                      out / "selection.png")
    print()
    print(format_table(decision))
    print()
    best = decision.attrs["recommended"]
    print(f"recommended: {best}  (P(best) = {float(decision.p_best.sel(estimator=best)):.2f})")
    meets = decision["meets_requirements"]
    close = [str(e) for e in decision.estimator.values
             if e != best and bool(meets.sel(estimator=e))
             and float(decision.difference.sel(estimator=e)) < 2 * float(decision.difference_mcse.sel(estimator=e))]
    if close:
        print(f"  within 2 Monte Carlo s.e. of it: {', '.join(close)} (more --draws would separate them, or they are equivalent)")
    failing = [str(e) for e in decision.estimator.values if not bool(meets.sel(estimator=e))]
    if failing:
        print(f"  not eligible (they protect some group less than its epsilon asks; see privacy_epsilon and required_epsilon): {', '.join(failing)}")
    print(f"wrote {nc} and {png} in {time.perf_counter() - started:.1f}s")
    return 0


def _select_user_item(spec, out: Path, started: float, args: argparse.Namespace) -> int:
    """Choose k for contribution-bounded item counts (Zeber & Lopatka)."""
    import math
    import warnings

    import arviz_stats
    import numpy as np

    from .models import UserItemModel
    from .report import provenance, write_netcdf
    from .select import format_table
    from .useritem import decide_k, plot_k, posterior_risks

    print(f"hybridpriv select: {spec.description or spec.source}")
    model = UserItemModel(spec.column_sums, spec.n, trades_per_row=spec.trades_per_row)
    lo, hi = model.n_range
    print(f"  m = {model.m} items, {model.total} reports, n = {lo if lo == hi else f'{lo}..{hi}'} users, "
          f"epsilon = {spec.epsilon:g}, k = {spec.ks[0]}..{spec.ks[-1]}, loss = {spec.loss}")
    _quiet_libraries()
    per_chain = math.ceil(spec.draws / spec.chains)
    print(f"sampling {spec.chains * per_chain} matrices ({spec.chains} chains; "
          f"{model.trades_per_row} x n Curveball trades each) ...", flush=True)
    idata = model.sample(draws=per_chain, chains=spec.chains, seed=spec.seed, cores=min(2, spec.chains))
    summary_vars = ["share_one_item", "max_items"] + ([] if model.n_known else ["n", "mean_items"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        diag = arviz_stats.summary(idata, var_names=summary_vars, round_to="none")
    for name, row in diag.iterrows():
        print(f"  {name:<15} {row['mean']:.4g} ± {row['sd']:.2g}   R-hat {row['r_hat']:.3f}  ESS {row['ess_bulk']:.0f}")
    if diag.r_hat.max() > RHAT_FAIL:
        print(f"  WARNING: the row-sum chain has not mixed (max R-hat {diag.r_hat.max():.2f} > {RHAT_FAIL}); "
              "raise evaluation.draws before trusting the choice")
    # level 3 mixing: Curveball chains from different realizations of one posterior draw's margins
    from .models import _useritem_kernels as kern

    h0 = idata["posterior"]["h"].values[0, -1]
    r0 = np.repeat(np.arange(model.m, 0, -1), h0[::-1])
    ip, ix = kern.realize_greedy(r0, model._c_sorted)
    mix = kern.mixing_check(ip, ix, model.trades_per_row * r0.size, np.random.default_rng(spec.seed), chains=4,
                            samples=100)
    print(f"  matrix chain: {model.trades_per_row} x n trades between kept matrices; R-hat over 4 chains from "
          f"different realizations {mix['rhat']:.3f} (ESS {mix['ess']:.0f} of 400)")
    from .cluster import describe_client

    with _client(args) as client:
        risk = posterior_risks(model, idata, spec.ks, spec.epsilon, spec.loss, spec.trials, spec.seed, client=client,
                               progress=True)
        dask = describe_client(client)
    idata["posterior"]["risk"] = risk.transpose("chain", "draw", "k")
    out.mkdir(parents=True, exist_ok=True)
    idata.to_netcdf(out / "posterior.nc", engine="h5netcdf")
    decision = decide_k(risk)
    decision["risk_by_matrix"] = risk
    decision.attrs.update(provenance(spec.config(), spec.seed, started, dask=dask))
    decision.attrs["row_sum_max_rhat"] = float(diag.r_hat.max())
    decision.attrs["row_sum_min_ess"] = float(diag.ess_bulk.min())
    decision.attrs["matrix_chain_rhat"] = float(mix["rhat"])
    nc = write_netcdf(decision, out / "selection.nc")
    png = plot_k(decision, out / "selection.png",
                 title=f"Choosing k: {spec.loss} error, epsilon = {spec.epsilon:g} (numbers: P(best k))")
    print()
    print(format_table(decision))
    print()
    best = decision.attrs["recommended"]
    print(f"recommended: k = {best}  (P(best) = {float(decision.p_best.sel(k=best)):.2f})")
    if best in (spec.ks[0], spec.ks[-1]) and len(spec.ks) > 1:
        print(f"  note: k = {best} is at the edge of the range searched; widen k in the SPEC")
    print(f"wrote {nc}, {png} and {out / 'posterior.nc'} (the PyMC draws with per-k risks) "
          f"in {time.perf_counter() - started:.1f}s")
    return 0


def _study(args: argparse.Namespace) -> int:
    from .studies import STUDIES, run_study

    if args.study_command == "list":
        for name, study in STUDIES.items():
            print(f"{name:<20} {study.description}")
        return 0
    if args.study_command == "run":
        _check_seed(args.seed)
        _check_out(args.out)
        if args.name not in STUDIES:
            raise ValueError(f"unknown study {args.name!r}; known: {', '.join(STUDIES)}")
        started = time.perf_counter()
        if args.quick and args.full:
            raise ValueError("--quick and --full exclude each other")
        _check_cluster_args(args)
        _positive(args.chunk_size, "chunk-size")
        if args.resume is not None and Path(args.resume).exists() and not Path(args.resume).is_dir():
            raise ValueError(f"--resume must be a folder, got the existing file {args.resume!r}")
        _quiet_libraries()
        with _client(args) as client:
            nc, png = run_study(args.name, quick=args.quick, seed=args.seed, out=args.out, progress=True,
                                full=args.full, client=client, resume=args.resume, chunk_size=args.chunk_size)
        print(f"wrote {nc} and {png} in {time.perf_counter() - started:.1f}s")
        return 0
    raise ValueError("study needs a subcommand: list or run NAME")


def _quiet_libraries() -> None:
    """PyMC's sampler chatter goes to the log; the CLI prints its own diagnostics."""
    import logging

    import pymc  # noqa: F401  (pymc sets its logger level on import; override it afterwards)

    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in ("pymc", "pytensor")]
    for name in ["pymc", "pytensor", *names]:
        logging.getLogger(name).setLevel(logging.CRITICAL)


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
    try:
        if args.command == "select":
            return _select(args)
        if args.command == "study":
            return _study(args)
        parser.print_help()
        return 0
    except (ValueError, TypeError, OSError) as exc:
        return _fail(exc)
    except Exception as exc:  # PyMC's SamplingError and the like: still one line, status 2
        if type(exc).__module__.split(".")[0] in ("pymc", "pytensor"):
            return _fail(exc, prefix="the model of public knowledge could not be sampled: ")
        raise
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

