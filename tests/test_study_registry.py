"""The study registry lists studies without importing them (``study list`` answers at once)."""

import subprocess
import sys
from pathlib import Path

import pytest
from hybridpriv.studies import STUDIES, read_study

from hybridpriv.engine import Engine


def test_study_list_imports_no_study_module_and_no_pymc():
    code = ("import sys; from hybridpriv.cli import main; main(['study', 'list']); "
            "print(sorted(m for m in sys.modules if m.startswith('hybridpriv.studies.') or m in ('pymc', 'pytensor')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True).stdout
    lines = out.strip().splitlines()
    assert len(lines) == len(STUDIES) + 1 and lines[0].startswith("ferrando-means")
    assert lines[-1] == "[]", lines[-1]


def test_every_registered_study_module_has_a_description_and_the_runner():
    from hybridpriv.studies import STUDIES

    for name, study in STUDIES.items():
        assert study.description and len(study.description) < 200, name
        assert callable(study.module.run) and callable(study.module.plot), name
        assert study.module.DESCRIPTION == study.description


def _two_quick_studies(monkeypatch):
    import hybridpriv.studies as studies

    # two quick studies stand in for the thirteen (each study's --quick run has its own test)
    monkeypatch.setattr(studies, "STUDIES", {k: studies.STUDIES[k] for k in ("avent-kvh", "avent-amplification")})


@pytest.mark.slow
def test_study_run_all_runs_each_study_and_writes_a_timing_table(tmp_path, capsys, monkeypatch):
    import csv

    import xarray as xr

    from hybridpriv.cli import main

    _two_quick_studies(monkeypatch)
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["study", "run", "all", "--quick", "--jobs", "1", "--out", str(one), "--quiet"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(open(one / "timings.csv")))
    assert [r["study"] for r in rows] == ["avent-kvh", "avent-amplification", "all"]
    assert all(r["scale"] == "quick" for r in rows) and float(rows[-1]["seconds"]) > 0
    # in turn: the whole run's wall time is the studies' (plus the reproduction table)
    assert float(rows[-1]["seconds"]) == pytest.approx(sum(float(r["seconds"]) for r in rows[:-1]), abs=1.0)
    assert all(float(r["cpu_seconds"]) > 0 for r in rows)
    assert (one / "avent-kvh.nc").exists() and (one / "avent-amplification.png").exists()
    assert "all 2 studies in" in out and "1 at a time" in out
    # the paper claims the studies check, regenerated from this run's numbers, one table per paper
    report = (one / "reproduction.md").read_text()
    assert "### Avent, Dubey, Korolova" in report and "`avent-kvh` (quick scale," in report
    assert "| Cor. 4.4, Fig. 1 |" in report and "**holds**" in report
    assert (one / "avent-kvh.claims.md").read_text().count("| Cor. 4.4") == 1

    # two at a time, each study in its own process: the same numbers, a log per study, the same tables
    assert main(["study", "run", "all", "--quick", "--jobs", "2", "--out", str(two), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "2 at a time" in out and "avent-kvh            finished" in out
    rows2 = list(csv.DictReader(open(two / "timings.csv")))
    assert [r["study"] for r in rows2] == ["avent-kvh", "avent-amplification", "all"]
    assert all(float(r["cpu_seconds"]) > 0 and float(r["peak_rss_mib"]) > 50 for r in rows2)
    assert "wrote" in (two / "logs" / "avent-kvh.log").read_text()
    for name in ("avent-kvh", "avent-amplification"):
        with read_study(one / f"{name}.nc") as a, read_study(two / f"{name}.nc") as b:
            xr.testing.assert_equal(a, b)
            assert a.attrs["claims"] == b.attrs["claims"] and a.attrs["seed"] == b.attrs["seed"]
    assert (two / "reproduction.md").read_text().count("| Cor. 4.4") == report.count("| Cor. 4.4")


def test_study_jobs_report_a_failed_study_with_its_log_and_start_no_more(tmp_path):
    from hybridpriv.studies._jobs import Job, concurrent_peak_mib, run_jobs

    bad = Job("bad", ["study", "run", "no-such-study", "--out", str(tmp_path)], tmp_path / "logs" / "bad.log")
    later = Job("later", ["study", "list"], tmp_path / "logs" / "later.log")
    with pytest.raises(RuntimeError, match=r"study bad failed \(exit 2\); its log: .*bad.log; not started: later"):
        run_jobs([bad, later], 1, log=lambda line: None)
    assert "unknown study 'no-such-study'" in (tmp_path / "logs" / "bad.log").read_text()
    with pytest.raises(ValueError, match="jobs must be >= 1, got 0"):
        run_jobs([later], 0)
    # the memory bound: the largest sum of peaks of studies running at one moment
    jobs = [Job(n, [], tmp_path, peak_rss_mib=p, window=w)
            for n, p, w in (("a", 100, (0, 10)), ("b", 50, (1, 3)), ("c", 70, (3, 12)), ("d", 500, (12, 13)))]
    assert concurrent_peak_mib(jobs) == 500 and concurrent_peak_mib(jobs[:3]) == 170


@pytest.mark.parametrize("argv, message", [
    (["study", "run", "avent-kvh", "--jobs", "2"], "--jobs runs several studies at once; it needs the study name all"),
    (["study", "run", "all", "--jobs", "2", "--workers", "2"], "--jobs 2 with --workers would start a local cluster"),
    (["study", "run", "all", "--jobs", "0"], "--jobs must be >= 1, got 0"),
])
def test_study_jobs_refuse_bad_combinations(argv, message, capsys):
    from hybridpriv.cli import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_run_all_refuses_a_client_with_several_jobs():
    from hybridpriv.studies import run_all

    with pytest.raises(ValueError, match="jobs > 1 runs each study in its own process"):
        run_all(jobs=2, engine=Engine(type("Client", (), {"__module__": "distributed.client"})()))
    with pytest.raises(ValueError, match="jobs must be >= 1, got 0"):
        run_all(jobs=0)


def test_claims_round_trip_and_refuse_an_unknown_verdict():
    from hybridpriv.studies._claims import Claim, from_attr, markdown, to_attr

    c = [Claim("Fig. 1", "a | b", "1", "2", "holds"), Claim("Sec. 2", "c", "-", "3", "partly")]
    assert from_attr(to_attr(c)) == c
    text = markdown("Paper", [("s", x) for x in c], {"s": "quick scale, 1.0 s"})
    assert "a \\| b" in text and text.count("\n| ") == 3 and "`s` (quick scale, 1.0 s)" in text
    with pytest.raises(ValueError, match="verdict must be one of"):
        Claim("x", "y", "z", "w", "confirmed")


def test_the_scale_each_study_runs_at_in_all():
    from hybridpriv.studies import scale_in_all

    assert [scale_in_all("wang-subset", q, f) for q, f in ((True, False), (False, False), (False, True))] == [
        "quick", "default", "full"]
    # no larger paper scale: --full runs the default, which is the paper's
    assert scale_in_all("avent-kvh", False, True) == "default"
    # calibration reproduces no paper and takes an hour at its default scale: quick in every `all`
    assert {scale_in_all("calibration", q, f) for q, f in ((True, False), (False, False), (False, True))} == {"quick"}


def test_study_jobs_hold_each_study_to_one_thread_unless_told_otherwise():
    from hybridpriv.studies._jobs import one_thread_env

    env = one_thread_env({"OMP_NUM_THREADS": "", "OPENBLAS_NUM_THREADS": "4", "PATH": "/bin"})
    assert env["OMP_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "1" and env["NUMBA_NUM_THREADS"] == "1"
    assert env["OPENBLAS_NUM_THREADS"] == "4" and env["PATH"] == "/bin"


def test_each_study_process_gets_the_run_s_options():
    from hybridpriv.studies import study_argv

    from hybridpriv.cli import _build_parser

    argv = study_argv("avent-kvh", "full", 7, "o", resume="r", chunk_size=3, scheduler="tcp://h:1")
    args = _build_parser().parse_args(argv)
    assert (args.name, args.full, args.quick, args.seed, args.out) == ("avent-kvh", True, False, 7, "o")
    assert (args.resume, args.chunk_size, args.scheduler, args.quiet) == (str(Path("r") / "avent-kvh"), 3, "tcp://h:1",
                                                                           True)
    plain = _build_parser().parse_args(study_argv("wang-subset", "default", 0, "o"))
    assert not plain.full and not plain.quick and plain.resume is None and plain.scheduler is None


def test_every_study_writes_one_datatree_layout(tmp_path):
    import xarray as xr

    from hybridpriv.report import write_result
    from hybridpriv.studies import read_study, run_study

    nc, _ = run_study("avent-amplification", quick=True, out=tmp_path)
    tree = xr.open_datatree(nc)
    assert set(tree.children) == {"results"} and not tree["results"].attrs
    assert tree.attrs["study"] == "avent-amplification" and "claims" in tree.attrs and "git_hash" in tree.attrs
    ds = read_study(nc)
    assert ds.attrs == tree.attrs and set(ds.data_vars) == set(tree["results"].data_vars) and ds.data_vars
    other = write_result(tmp_path / "selection.nc", {"decision": xr.Dataset({"x": ("k", [1.0])})})
    with pytest.raises(ValueError, match=r"is not a study's output \(no 'results' group; groups: \['decision'\]\)"):
        read_study(other)
