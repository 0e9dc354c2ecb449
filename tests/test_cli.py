import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr
from hybridpriv.studies import read_study

from hybridpriv.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _bad_spec(tmp_path, body):
    p = tmp_path / "bad.toml"
    p.write_text(textwrap.dedent(body))
    return str(p)


GOOD = """
bounds = [0, 10]
[[groups]]
name = "pub"
size = 20
epsilon = inf
[[groups]]
name = "priv"
size = 50
epsilon = 0.5
"""


@pytest.mark.parametrize(
    "old, new, needle",
    [
        ("epsilon = 0.5", "epsilon = -2", "epsilon must be > 0, got -2"),
        ("epsilon = 0.5", "epsilon = nan", "epsilon must be > 0, got nan"),
        ("size = 50", "size = 0", "groups[1].size must be an integer >= 1, got 0"),
        ("bounds = [0, 10]", "bounds = [5, 5]", "lower < upper, got [5, 5]"),
        ("epsilon = 0.5", 'epsilon = 0.5\n[evaluation]\nestimators = ["magic"]', "unknown estimator 'magic'"),
    ],
)
def test_bad_spec_exits_2_with_one_error_line(tmp_path, capsys, old, new, needle):
    code, out, err = _run(capsys, "select", _bad_spec(tmp_path, GOOD.replace(old, new)), "--out", str(tmp_path))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert "Traceback" not in err


def test_missing_file_and_bad_flags(tmp_path, capsys):
    code, _, err = _run(capsys, "select", str(tmp_path / "none.toml"))
    assert code == 2 and err.startswith("error: spec file not found")
    code, _, err = _run(capsys, "select", "--draws", "0")
    assert code == 2 and err.strip() == "error: --draws must be >= 2, got 0"
    code, _, err = _run(capsys, "study", "run", "no-such-study")
    assert code == 2 and "unknown study 'no-such-study'" in err
    with pytest.raises(SystemExit) as exc:
        main(["select", "--draws", "many"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().startswith("error: argument --draws: invalid int value")


def test_study_list(capsys):
    code, out, _ = _run(capsys, "study", "list")
    assert code == 0 and "ferrando-means" in out and "ferrando-medians" in out


@pytest.mark.slow
def test_study_run_is_reproducible(tmp_path, capsys):
    for sub in ("a", "b"):
        code, out, err = _run(capsys, "study", "run", "ferrando-medians", "--quick", "--out", str(tmp_path / sub), "--seed", "4")
        assert code == 0, err
    a = read_study(tmp_path / "a" / "ferrando-medians.nc")
    b = read_study(tmp_path / "b" / "ferrando-medians.nc")
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert (tmp_path / "a" / "ferrando-medians.png").stat().st_size > 10_000
    assert a.attrs["seed"] == 4 and "git_hash" in a.attrs and "hybridpriv_version" in a.attrs


@pytest.mark.slow
def test_select_builtin_example_writes_results(tmp_path, capsys):
    code, out, err = _run(capsys, "select", "--out", str(tmp_path), "--draws", "40", "--trials", "5", "--seed", "1")
    assert code == 0, err
    assert "recommended:" in out and "weighted" in out
    tree = xr.open_datatree(tmp_path / "selection.nc")
    ds, ev = tree["decision"].to_dataset(), tree["evaluation"].to_dataset()
    assert set(ds.estimator.values) >= {"weighted", "pdp-opt", "public-mean"}
    assert tree.attrs["recommended"] in ds.estimator.values
    assert ev["loss"].dims == ("estimator", "chain", "draw", "trial")
    assert np.isfinite(ds["expected_loss"]).all()
    assert {"mu", "sigma"} <= set(tree["posterior"].data_vars)
    assert (tmp_path / "selection.png").stat().st_size > 10_000
    # how well the family's ranges held on held-out truths, printed and kept (Family.range_coverage)
    from hybridpriv.families import family

    held = family("grouped").range_coverage
    assert "note (ranges): on the calibration study's held-out truths of this kind" in out
    assert list(tree.attrs["range_coverage_held_out"]) == [held[k] for k in sorted(held)]
    assert list(tree.attrs["range_coverage_seeds"]) == sorted(held)
    # and the P(best) note's table (Family.p_best_held): grouped's example reports 0.5-0.7, which held, so no note
    pb = family("grouped").p_best_held
    assert tree.attrs["p_best_held_bins"].split(", ") == list(pb)
    assert list(tree.attrs["p_best_held_came_true"]) == [v[1] for v in pb.values()]
    assert list(tree.attrs["p_best_held_pairs"]) == [v[2] for v in pb.values()]
    assert list(tree.attrs["p_best_held_seeds"]) == list(family("grouped").p_best_seeds)
    assert ("note (P(best))" in out) == bool(tree.attrs["p_best_note"])
    # the same seed gives the same numbers (model fit, simulated datasets and noise)
    code, _, err = _run(capsys, "select", "--out", str(tmp_path / "again"), "--draws", "40", "--trials", "5", "--seed", "1")
    assert code == 0, err
    again = xr.open_datatree(tmp_path / "again" / "selection.nc")
    for group in ("posterior", "evaluation", "decision"):
        xr.testing.assert_identical(tree[group].to_dataset().drop_attrs(), again[group].to_dataset().drop_attrs())


@pytest.mark.slow
def test_select_refuses_an_estimator_of_another_statistic(tmp_path, capsys):
    spec = _bad_spec(tmp_path, GOOD + '\n[evaluation]\nestimators = ["weighted", "pe-median"]\ndraws = 4\n')
    code, _, err = _run(capsys, "select", spec, "--out", str(tmp_path))
    assert code == 2 and "estimator 'pe-median' estimates the median, but statistic = 'mean'" in err


def test_console_script_is_installed():
    proc = subprocess.run([sys.executable, "-m", "hybridpriv.cli", "study", "list"], capture_output=True, text=True)
    assert proc.returncode == 0 and "ferrando-means" in proc.stdout


def test_bad_flags_and_outputs_fail_before_any_work(tmp_path, capsys):
    f = tmp_path / "a-file"
    f.write_text("x")
    for argv, needle in [
        (["select", "--out", str(f)], "--out must be a folder, got the existing file"),
        (["study", "run", "ferrando-means", "--out", str(f)], "--out must be a folder"),
        (["select", "--seed", str(2**70)], "--seed must be an integer in [0, 2**63)"),
        (["select", "--draws", "1"], "--draws must be >= 2, got 1"),
        (["select", "--workers", "0"], "--workers must be >= 1, got 0"),
        (["select", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--workers and --scheduler exclude each other"),
    ]:
        code, _, err = _run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and needle in err, (argv, err)


@pytest.mark.slow
def test_contradictory_knowledge_is_refused(tmp_path, capsys):
    # a released mean a million noise scales outside the bounds cannot have happened
    spec = _bad_spec(tmp_path, GOOD + "[model]\nreleased_means = [{value = 1e9, noise_scale = 1e-3}]\n")
    code, _, err = _run(capsys, "select", spec, "--draws", "4", "--out", str(tmp_path))
    assert code == 2 and "spec: model: released_means[0].value = 1e+09 is impossible" in err
    # knowledge the sampler cannot reconcile (a release at the very edge, no tuning): refused
    body = GOOD + "[model]\ntune = 0\nreleased_means = [{value = 10.04, noise_scale = 0.001}]\n"
    code, _, err = _run(capsys, "select", _bad_spec(tmp_path, body), "--draws", "20", "--trials", "2", "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "did not converge (R-hat of" in err, err


# The user-item example's select (its decision over k, the mixture's draws) is checked in
# tests/release/test_cli.py::test_user_item_select_release_ledger, which releases from it: one select of the example.


@pytest.mark.slow
def test_select_user_item_gives_the_same_numbers_on_two_workers(tmp_path, capsys):
    # the matrices scored on a local cluster of 2 worker processes: the same numbers (dask is in the test
    # extra); a small SPEC (300 users, 30 items), so the comparison does not pay for the example's fit twice
    counts = ", ".join(str(round(150 / j)) for j in range(1, 31))
    spec = tmp_path / "small.toml"
    spec.write_text(f'kind = "user-item"\nn = 300\nepsilon = 1.0\nk = [1, 6]\ncolumn_sums = [{counts}]\n'
                    '[evaluation]\ndraws = 40\n')
    runs = {}
    for name, extra in (("one", ()), ("two", ("--workers", "2"))):
        code, out, err = _run(capsys, "select", str(spec), "--out", str(tmp_path / name), *extra)
        assert code == 0, err
        runs[name] = xr.open_datatree(tmp_path / name / "selection.nc")
    assert "dask: local 2 workers" in out
    one, two = runs["one"], runs["two"]
    assert one.attrs["dask"] == "none" and two.attrs["dask"] == "local 2 workers"
    assert one["evaluation"].to_dataset().sizes["draw"] == 20 and list(one["decision"].to_dataset().k.values) == [1, 2, 3, 4, 5, 6]
    for group in ("posterior", "evaluation", "decision"):
        xr.testing.assert_identical(one[group].to_dataset().drop_attrs(), two[group].to_dataset().drop_attrs())
    assert two.attrs["recommended"] == one.attrs["recommended"]


@pytest.mark.parametrize(
    "body, needle",
    [
        ('kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nn = 3\nepsilon = 1.0\nk = [1, 3]\n',
         "n = 3 is infeasible: an item has column sum 4 > n"),
        ('kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nepsilon = 0\n', "epsilon must be > 0, got 0"),
        ('kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nepsilon = 1\nk = [0, 3]\n', "1 <= low <= high"),
        ('kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nepsilon = 1\nk = [1, 5]\n', "k must be <= m = 4"),
        ('kind = "user-item"\ncolumn_sums = [4, -2, 2, 1]\nepsilon = 1\n', "column_sums[1] must be a whole number >= 0, got -2"),
        ('kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nepsilon = 1\nk = [1, 3]\nn = [10, 20]\n', "n bounds (10, 20) are infeasible"),
        ('kind = "movies"\n', "kind must be one of ['grouped', 'user-item'"),
    ],
)
def test_bad_user_item_specs(tmp_path, capsys, body, needle):
    code, _, err = _run(capsys, "select", _bad_spec(tmp_path, body), "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and needle in err, err


@pytest.mark.slow
def test_select_resumes_from_its_chunks_and_refuses_a_changed_candidate_parameter(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(GOOD + '\n[evaluation]\nestimators = ["weighted", "pdp-opt"]\n')
    args = ["select", str(spec), "--draws", "8", "--trials", "2", "--seed", "3", "--chunk-size", "2"]
    code, _, err = _run(capsys, *args, "--out", str(tmp_path / "a"), "--resume", str(tmp_path / "ck"))
    assert code == 0, err
    chunks = sorted((tmp_path / "ck").rglob("*.npz"))
    assert len(chunks) >= 4
    # the resumed run reads the chunks back (and gives the numbers of a run without --resume)
    code, _, err = _run(capsys, *args, "--out", str(tmp_path / "b"), "--resume", str(tmp_path / "ck"))
    assert code == 0, err
    code, _, err = _run(capsys, *args, "--out", str(tmp_path / "c"))
    assert code == 0, err
    a, b, c = (xr.open_datatree(tmp_path / d / "selection.nc")["evaluation"].to_dataset().drop_attrs() for d in "abc")
    xr.testing.assert_identical(a, b)
    xr.testing.assert_identical(a, c)
    # a candidate parameter changed in the SPEC (the relation every estimator is sized for): refused, named
    spec.write_text(spec.read_text().replace("bounds = [0, 10]", 'bounds = [0, 10]\nrelation = "replace"'))
    code, _, err = _run(capsys, *args, "--out", str(tmp_path / "d"), "--resume", str(tmp_path / "ck"))
    assert code == 2
    assert err.startswith("error:") and "relation" in err and "add-remove" in err and "replace" in err, err


@pytest.mark.slow
def test_select_warns_naming_the_public_statistic_its_model_cannot_reproduce(tmp_path, capsys):
    # 40% of the panel at the upper bound, the rest in [0, 3]: a clamped normal cannot give both
    rng = np.random.default_rng(1)
    panel = np.concatenate([np.full(40, 10.0), rng.uniform(0, 3, 60)]).round(3)
    (tmp_path / "panel.csv").write_text("x\n" + "\n".join(map(str, panel)) + "\n")
    spec = tmp_path / "s.toml"
    text = ('bounds = [0, 10]\n[[groups]]\nname = "panel"\nsize = 100\nepsilon = inf\ndata = "panel.csv"\n'
            '[[groups]]\nname = "priv"\nsize = 500\nepsilon = 1.0\n[evaluation]\nestimators = ["weighted", "public-mean"]\n')
    # the default family (auto) picks the mixture, whose point mass at the bound reproduces the panel
    spec.write_text(text)
    code, out, err = _run(capsys, "select", str(spec), "--out", str(tmp_path / "auto"), "--draws", "6", "--trials", "2")
    assert code == 0, err
    assert "family = auto" in out and "cannot reproduce panel.median" not in out
    assert xr.open_datatree(tmp_path / "auto" / "selection.nc").attrs.get("predictive_checks_flagged", "") == ""
    spec.write_text(text + '[model]\nfamily = "normal"\n')
    code, out, err = _run(capsys, "select", str(spec), "--out", str(tmp_path / "o"), "--draws", "6", "--trials", "2")
    assert code == 0, err
    assert "posterior predictive checks of the public knowledge" in out
    assert "warning: the model of public knowledge cannot reproduce panel.median" in out
    tree = xr.open_datatree(tmp_path / "o" / "selection.nc")
    checks = tree["predictive_checks"].to_dataset()
    assert bool(checks.flagged.sel(statistic="panel.median")) and "panel.median" in tree.attrs["predictive_checks_flagged"]


@pytest.mark.slow
def test_select_on_knowledge_its_model_reproduces_flags_nothing(tmp_path, capsys):
    code, out, err = _run(capsys, "select", "--out", str(tmp_path), "--draws", "6", "--trials", "2")
    assert code == 0, err
    assert "posterior predictive checks" in out and "cannot reproduce" not in out
    checks = xr.open_datatree(tmp_path / "selection.nc")["predictive_checks"].to_dataset()
    assert not checks.flagged.any() and {"panel.mean", "panel.sd", "release_0(default)"} <= set(checks.statistic.values)
