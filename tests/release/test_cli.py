"""`hybridpriv select` -> `hybridpriv release` -> ledger, from the command line, on the built-in examples."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from hybridpriv.cli import main
from _support.cli import fresh_data, grouped_example_with_private_data

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

EXAMPLES = Path(str(resources.files("hybridpriv") / "examples"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    """The grouped example selected with few draws, and its real private records as per-group CSVs."""
    d = grouped_example_with_private_data(tmp_path_factory.mktemp("grouped"))
    assert main(["select", str(d / "grouped.toml"), "--draws", "4", "--trials", "2", "--out", str(d / "sel"),
                 "--quiet"]) == 0
    return d


def test_grouped_select_release_ledger(grouped, tmp_path, capsys):
    spec, sel, ledger = grouped / "grouped.toml", grouped / "sel" / "selection.nc", tmp_path / "ledger.json"
    data = fresh_data(grouped, tmp_path)
    code, out, err = run(capsys, "release", spec, "--data", data, "--selection", sel,
                         "--ledger", ledger, "--out", tmp_path / "r1")
    assert code == 0, err
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    import xarray as xr

    recommended = xr.open_datatree(sel).attrs["recommended"]
    assert rec["candidate"]["label"] == recommended and rec["decision"]["recommended"] == recommended
    assert rec["decision"]["chosen_by"] == "recommended by the selection"
    assert 0 <= rec["released"] <= 99  # a mean of hours (noise of this size stays in range)
    assert rec["guarantee"]["strict"]["epsilon"] <= 0.05 + 1e-12 and rec["guarantee"]["strict"]["relation"] == "add-remove"
    entries = json.loads(ledger.read_text())["releases"]
    assert len(entries) == 1 and entries[0]["id"] == rec["release_id"]
    # the second release is beyond the budget: refused before reading the data, nothing written
    before = ledger.read_bytes()
    code, out, err = run(capsys, "release", spec, "--data", data, "--selection", sel,
                         "--ledger", ledger, "--out", tmp_path / "r2")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ")
    assert "over its budget" in err and "group '" in err
    assert ledger.read_bytes() == before and not (tmp_path / "r2" / "release.json").exists()
    code, out, err = run(capsys, "release", "--ledger", ledger, "--show")
    assert code == 0 and "1 release(s)" in out and "PLD" in out and recommended in out


def test_a_public_only_estimator_is_released_and_charged_nothing(grouped, tmp_path, capsys):
    """A built-in that never reads the private groups promises them epsilon 0 (the audit matrix tests it);
    the instance check refuses 0 only from plugins."""
    data = fresh_data(grouped, tmp_path)
    code, _, err = run(capsys, "release", grouped / "grouped.toml", "--data", data, "--selection",
                       grouped / "sel" / "selection.nc", "--candidate", "public-mean", "--out", tmp_path / "r")
    assert code == 0, err
    entry = json.loads((data / "hybridpriv-ledger.json").read_text())["releases"][0]
    assert {u: s["epsilon"] for u, s in entry["spent"].items()} == {"panel": "inf", "opt-in": 0.0, "default": 0.0,
                                                                     "strict": 0.0}


def test_mismatched_spec_and_data_are_refused(grouped, tmp_path, capsys):
    spec = tmp_path / "other.toml"
    spec.write_text((grouped / "grouped.toml").read_text().replace("epsilon = 0.05", "epsilon = 0.1"))
    shutil.copy(grouped / "panel.csv", tmp_path / "panel.csv")
    ledger = tmp_path / "ledger.json"
    code, _, err = run(capsys, "release", spec, "--data", fresh_data(grouped, tmp_path, "good"), "--selection",
                       grouped / "sel" / "selection.nc", "--ledger", ledger, "--out", tmp_path / "r")
    assert code == 2 and "groups[3]" in err and "epsilon" in err and "another SPEC" in err
    assert not ledger.exists()
    bad = fresh_data(grouped, tmp_path, "bad")
    (bad / "strict.csv").write_text((bad / "strict.csv").read_text() + "40\n")
    code, _, err = run(capsys, "release", grouped / "grouped.toml", "--data", bad, "--selection",
                       grouped / "sel" / "selection.nc", "--ledger", ledger, "--out", tmp_path / "r")
    assert code == 2 and "group 'strict'" in err and "size = 109" in err
    assert "110" not in err  # the file's own count is private: never quoted
    assert json.loads(ledger.read_text())["releases"] == []  # nothing spent


def test_killing_a_release_halfway_leaves_the_ledger_consistent(grouped, tmp_path, capsys):
    ledger, marker = tmp_path / "ledger.json", tmp_path / "paused"
    data = fresh_data(grouped, tmp_path)
    argv = [sys.executable, "-m", "hybridpriv.cli", "release", str(grouped / "grouped.toml"), "--data",
            str(data), "--selection", str(grouped / "sel" / "selection.nc"), "--ledger", str(ledger),
            "--out", str(tmp_path / "r1"), "--quiet"]
    env = {**os.environ, "HYBRIDPRIV_RELEASE_PAUSE_AT": "computed", "HYBRIDPRIV_RELEASE_PAUSE_MARKER": str(marker)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # hang guard only
        while not marker.exists():
            assert proc.poll() is None, "the release ended before the pause point"
            assert time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)  # the values are computed, nothing is recorded or written yet
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert json.loads(ledger.read_text())["releases"] == []
    assert not (tmp_path / "r1" / "release.json").exists()
    # nothing was spent and the lock died with the job: the release can be made
    code, _, err = run(capsys, "release", grouped / "grouped.toml", "--data", data, "--selection",
                       grouped / "sel" / "selection.nc", "--ledger", ledger, "--out", tmp_path / "r1", "--quiet")
    assert code == 0, err
    assert len(json.loads(ledger.read_text())["releases"]) == 1


def favorite_sites_matrix(directory: Path, seed: int = 0) -> np.ndarray:
    """A synthetic users x items matrix with favorite-sites' column sums and n = 2000 users, as pairs.

    Item j's c_j reports go to consecutive users (mod n) of a random order, so no user gets an item twice
    (c_j <= n) and every user gets at least one (sum c = 6222 >= n)."""
    from hybridpriv.spec import builtin_example_path, load_spec

    c = np.asarray(load_spec(builtin_example_path("favorite-sites")).column_sums)
    n = 2000
    items = np.repeat(np.arange(c.size), c)
    users = np.random.default_rng(seed).permutation(n)[np.arange(items.size) % n]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "matrix.csv").write_text("user,item\n" + "".join(f"u{u},{j}\n" for u, j in zip(users, items)))
    return c


def test_user_item_release_of_a_named_candidate(tmp_path, capsys):
    c = favorite_sites_matrix(tmp_path / "data")
    spec, ledger = EXAMPLES / "favorite-sites.toml", tmp_path / "ledger.json"
    code, out, err = run(capsys, "release", spec, "--data", tmp_path / "data", "--candidate", "3",
                         "--ledger", ledger, "--out", tmp_path / "r1")
    assert code == 0, err
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    released = np.asarray(rec["released"])
    assert released.shape == (100,) and rec["candidate"]["label"] == "k=3"
    assert rec["guarantee"] == {"users": {"epsilon": 1.0, "delta": 0.0, "relation": "add-remove", "trust": "central"}}
    assert np.mean(released) < np.mean(c)  # k = 3 drops reports of users with more items
    code, _, err = run(capsys, "release", spec, "--data", tmp_path / "data", "--candidate", "k=1",
                       "--ledger", ledger, "--out", tmp_path / "r2")
    assert code == 2 and "'users'" in err and "over its budget" in err


def test_bad_command_lines(tmp_path, capsys):
    spec = EXAMPLES / "favorite-sites.toml"
    for argv, match in [
        (["release", spec, "--data", tmp_path, "--ledger", tmp_path / "l.json"], "--selection FILE.nc or --candidate"),
        (["release", spec, "--candidate", "3", "--ledger", tmp_path / "l.json"], "--data"),
        (["release", spec, "--data", tmp_path, "--candidate", "99", "--ledger", tmp_path / "l.json"], "unknown candidate '99'"),
        (["release", spec, "--data", tmp_path, "--candidate", "3", "--ledger", tmp_path / "l.json", "--budget", "users=-1"],
         "--budget epsilon of unit 'users'"),
        (["release", "--ledger", tmp_path / "none.json", "--show"], "does not exist"),
        (["release", EXAMPLES / "faithful.toml", "--data", tmp_path, "--candidate", "x", "--ledger", tmp_path / "l.json"],
         "unknown candidate 'x'; known: hybrid-T1"),
    ]:
        code, _, err = run(capsys, *argv)
        assert code == 2 and match in err and err.count("\n") == 1, (argv, err)


@pytest.mark.slow
def test_user_item_select_release_ledger(tmp_path, capsys):
    """favorite-sites end to end: select (few draws; its decision over k and the mixture's draws), release its
    recommendation, refuse the second."""
    import xarray as xr

    from hybridpriv.families.user_item.spec import MIN_DRAWS_PER_CHAIN, MIXTURE_COMPONENTS

    favorite_sites_matrix(tmp_path / "data")
    spec, ledger = EXAMPLES / "favorite-sites.toml", tmp_path / "ledger.json"
    code, out, err = run(capsys, "select", "--example", "favorite-sites", "--draws", "100", "--out", tmp_path / "sel")
    assert code == 0, err
    tree = xr.open_datatree(tmp_path / "sel" / "selection.nc")
    assert {"posterior", "evaluation", "decision"} <= set(tree.children)
    ds, ev = tree["decision"].to_dataset(), tree["evaluation"].to_dataset()
    assert list(ds.k.values) == list(range(1, 31))
    assert ds["expected_loss"].dims == ("k",) and ev["risk"].dims == ("k", "chain", "draw")
    assert int(tree.attrs["recommended"]) == int(ds.k[int(ds.expected_loss.argmin("k"))].item())
    assert ds["recommended"].dtype.kind == "i" and f"recommended: k = {int(tree.attrs['recommended'])} " in out
    assert bool(ev.exact.all()) and ev.attrs["task"] == "ItemCounts(loss='squared')"
    post = tree["posterior"].to_dataset()  # as PyMC wrote it: the row-sum draws
    # 100 datasets over 2 chains: the floor of draws, in each of the mixture's components (pooled one after another)
    assert "h" in post and post.sizes["draw"] == MIXTURE_COMPONENTS * MIN_DRAWS_PER_CHAIN
    assert sorted(np.unique(post["items_component"].values)) == list(range(MIXTURE_COMPONENTS))
    assert "log_f_items" not in post
    # the power law matched to the known mean; the capped one at 6 x 3.11 items per user
    assert re.match(r"mixture, equal weights: the draws of power law [0-9.]+, dispersion 1, dispersion 4, power law "
                    "[0-9.]+ to 19 one after another", post.attrs["items_prior"])
    assert ev.sizes["chain"] * ev.sizes["draw"] == 100  # the datasets are spread over the draws
    assert float(ds.p_best.sum()) == pytest.approx(1.0)
    assert (tmp_path / "sel" / "selection.png").stat().st_size > 10_000
    assert tree.attrs["dask"] == "none" and "matrix_chain_rhat" in tree.attrs
    args = ["release", spec, "--data", tmp_path / "data", "--selection", tmp_path / "sel" / "selection.nc",
            "--ledger", ledger]
    code, out, err = run(capsys, *args, "--out", tmp_path / "r1")
    assert code == 0, err
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert rec["decision"]["candidate_dim"] == "k" and rec["candidate"]["coordinate"] == rec["decision"]["recommended"]
    code, _, err = run(capsys, *args, "--out", tmp_path / "r2")
    assert code == 2 and "over its budget" in err
    code, out, _ = run(capsys, "release", "--ledger", ledger, "--show")
    assert code == 0 and "users" in out and "1 release(s)" in out
