"""The quick avent-kmeans (Figure 6, three cluster layouts) through the engine: structure, the layouts'
centres, a replay of the engine's streams scored by brute force, common random numbers, the robust
claims, the per-layout verdicts recomputed with numpy, and the same numbers on 2 dask workers, in
chunks of one dataset and after a resume (also after SIGKILL, through the CLI)."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr
from hybridpriv.studies import avent_kmeans, read_study

from hybridpriv.core.random import rng
from hybridpriv.engine import Engine
from hybridpriv.engine.checkpoint import Checkpoint
from hybridpriv.families.kmeans.algorithms import HybridKMeans, TrustSplitSource, gaussian_clusters

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture(scope="module")
def ds():
    return avent_kmeans.run(quick=True, seed=0)


def test_structure(ds):
    assert ds["wcss"].dims == ("algorithm", "layout", "c", "tau", "draw")
    assert list(ds.algorithm.values) == ["hybrid", "tcm", "lm", "hybrid-printed", "lm-debiased", "hybrid-debiased", "lloyd"]
    assert list(ds.layout.values) == ["grid", "random-0", "random-1"]
    assert list(ds.c.values) == [0.001, 0.01] and list(ds.tau.values) == [1, 4] and ds.sizes["draw"] == 4
    for name in ("wcss_mean", "wcss_low", "wcss_high", "wcss_q025", "wcss_q975"):
        assert ds[name].dims == ("algorithm", "layout", "c", "tau"), name
    assert ds.wcss_generating.dims == ("layout",) and ds.centres.dims == ("layout", "cluster", "coordinate")
    assert np.isfinite(ds.wcss).all() and (ds.wcss_low <= ds.wcss_mean).all() and (ds.wcss_mean <= ds.wcss_high).all()
    # no algorithm beats the WCSS at the generating centres by more than sampling slack
    assert (ds.wcss >= 0.9 * ds.wcss_generating).all()
    # the declarations travel with the results: Lloyd promises nothing, the hybrid's LM users are local
    assert np.isinf(ds.privacy_epsilon.sel(algorithm="lloyd")).all()
    trust = ds.privacy_trust.sel(algorithm="hybrid")  # one per (c, tau, unit)
    assert (trust.sel(unit="tcm") == "central").all() and (trust.sel(unit="lm") == "local").all()


def test_layouts_are_the_grid_and_separated_random_centres_from_named_streams(ds):
    np.testing.assert_array_equal(ds.centres.sel(layout="grid"), avent_kmeans.CENTRES)
    for i in (0, 1):
        c = ds.centres.sel(layout=f"random-{i}").values
        # rejection sampling replayed: whole sets of 4 uniform centres until every pair is >= 0.2 apart
        gen = rng(0, "study", "avent-kmeans", "layout", i)
        while True:
            cand = 0.1 + 0.8 * gen.random((4, 2))
            if min(np.hypot(*(cand[a] - cand[b])) for a in range(4) for b in range(a + 1, 4)) >= 0.2:
                break
        np.testing.assert_array_equal(c, cand)
    assert not np.allclose(ds.centres.sel(layout="random-0"), ds.centres.sel(layout="random-1"))
    for bad in ("random", "random-x", "hexagon", 3):
        with pytest.raises(ValueError, match="layout must be"):
            avent_kmeans.layout_centres(bad)
    with pytest.raises(ValueError, match="layouts must be distinct"):
        avent_kmeans.run(quick=True, layouts=["grid", "grid"])
    with pytest.raises(ValueError, match="quick and full"):
        avent_kmeans.run(quick=True, full=True)


@pytest.mark.parametrize("layout", ["grid", "random-1"])
def test_a_replayed_dataset_and_release_give_the_engines_wcss(ds, layout):
    # the dataset of draw 2 and the hybrid's release on it, rebuilt from the named streams alone and
    # scored by broadcasting (not the library's nearest-centre search)
    centres_true = ds.centres.sel(layout=layout).values
    keys = ("study", "avent-kmeans", "points") + (() if layout == "grid" else (layout,))
    x = gaussian_clusters(centres_true, 0.028, 1_500, (0.0, 1.0), rng(0, *keys))
    data = TrustSplitSource(x, (0.0, 1.0), 0.001, 4, 4).generate(0, 2, rng(0, "dataset", 0, 2))
    centres = HybridKMeans(4, 7.0, 4, (0.0, 1.0)).release(data, rng(0, "mechanism", "hybrid", 0, 2))[0]
    brute = ((x[:, None, :] - centres[None]) ** 2).sum(-1).min(1).sum()
    assert float(ds.wcss.sel(algorithm="hybrid", layout=layout, c=0.001, tau=4, draw=2)) == pytest.approx(brute, rel=1e-9)
    generating = ((x[:, None, :] - centres_true[None]) ** 2).sum(-1).min(1).sum()
    assert float(ds.wcss_generating.sel(layout=layout)) == pytest.approx(generating, rel=1e-9)


def test_common_random_numbers(ds):
    # every algorithm of a dataset starts from the same public start; the ones that ignore the split
    # (LM on all users, Lloyd) see the same dataset at both c and so give the same numbers
    for a in ("lm", "lm-debiased", "lloyd"):
        xr.testing.assert_equal(ds.wcss.sel(algorithm=a, c=0.001, drop=True), ds.wcss.sel(algorithm=a, c=0.01, drop=True))
    assert not np.array_equal(ds.wcss.sel(algorithm="tcm", c=0.001), ds.wcss.sel(algorithm="tcm", c=0.01))
    # the layouts are different point clouds
    assert not np.array_equal(ds.wcss.sel(algorithm="lloyd", layout="grid"), ds.wcss.sel(algorithm="lloyd", layout="random-0"))


def test_split_free_algorithms_run_once_give_what_running_them_at_every_c_gives(ds, monkeypatch):
    # LM, LM-debiased and Lloyd run at the first c only and are copied to the others (share_split_free):
    # the whole dataset equals a run with every algorithm at every c, bit for bit
    monkeypatch.setattr(avent_kmeans, "SPLIT_FREE", ())
    xr.testing.assert_identical(ds, avent_kmeans.run(quick=True, seed=0))


def test_robust_claims(ds):
    m = ds.wcss_mean
    # the hybrid is never worse than the worse baseline (mean over datasets)
    worst = m.sel(algorithm=["tcm", "lm"]).max("algorithm")
    assert (m.sel(algorithm="hybrid") <= worst).all(), m.values
    # ten times more TCM users help the TCM-only algorithm at every tau
    tcm = m.sel(algorithm="tcm")
    assert (tcm.sel(c=0.01) < tcm.sel(c=0.001)).all(), tcm.values
    # the pseudocode's LM means (no debiasing) get worse with more iterations: each spends
    # epsilon/(tau+1) on randomized response, whose pull towards the other clusters grows
    lm = m.sel(algorithm="lm")
    assert (lm.isel(tau=-1) > lm.isel(tau=0)).all(), lm.values
    # the PWH weight on the TCM branch grows with c
    assert (ds.pwh_weight.sel(c=0.01) > ds.pwh_weight.sel(c=0.001)).all()


def test_two_workers_chunks_of_one_and_a_resume_give_the_same_numbers(ds, tmp_path):
    import distributed  # noqa: F401  (in the test extra: a missing dask fails, never skips)

    from hybridpriv.engine.cluster import local_client

    client = local_client(2)
    try:
        on_cluster = avent_kmeans.run(quick=True, seed=0, engine=Engine(client))
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    xr.testing.assert_identical(ds, on_cluster)
    config = {"study": "avent-kmeans", "quick": True, "seed": 0}
    with Checkpoint(tmp_path, config) as ckpt:
        chunked = avent_kmeans.run(quick=True, seed=0, engine=Engine(checkpoint=ckpt, chunk_size=1))
    xr.testing.assert_identical(ds, chunked)
    files = sorted((tmp_path / "chunks").glob("*.npz"))
    assert len(files) == 12 * 4  # chunk_size is used: one chunk per dataset of each (c, tau) setting
    written = {f: f.stat().st_mtime_ns for f in files}
    with Checkpoint(tmp_path, config) as ckpt:
        resumed = avent_kmeans.run(quick=True, seed=0, engine=Engine(checkpoint=ckpt))  # layout from the manifest
    xr.testing.assert_identical(ds, resumed)
    assert {f: f.stat().st_mtime_ns for f in files} == written  # read back, not recomputed


@pytest.mark.slow
def test_sigkill_then_resume_through_the_cli_equals_an_uninterrupted_run(tmp_path):
    def study(*args):
        return subprocess.Popen([sys.executable, "-m", "hybridpriv.cli", "study", "run", "avent-kmeans", "--quick",
                                 "--seed", "1", *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    killed = study("--out", "killed", "--resume", "ckpt", "--chunk-size", "1")
    chunks = tmp_path / "ckpt" / "chunks"
    deadline = time.monotonic() + 300
    while killed.poll() is None and time.monotonic() < deadline:
        if chunks.exists() and len(list(chunks.glob("*.npz"))) >= 3:
            killed.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.read()[-2000:]
    done_before = len(list(chunks.glob("*.npz")))
    manifest = json.loads((tmp_path / "ckpt" / "manifest.json").read_text())
    assert 3 <= done_before < sum(len(sec["chunks"]) for sec in manifest["sections"].values()) == 48
    for proc in (study("--out", "resumed", "--resume", "ckpt"), study("--out", "whole")):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
    a = read_study(tmp_path / "resumed" / "avent-kmeans.nc")
    b = read_study(tmp_path / "whole" / "avent-kmeans.nc")
    assert a.attrs["resumed_from"]
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_paper_claims_are_computed_from_the_run_per_layout(ds):
    from hybridpriv.studies._claims import VERDICTS

    rows = avent_kmeans.claims(ds)
    assert len(rows) == 2 * ds.layout.size and all(r.verdict in VERDICTS for r in rows)
    for i, layout in enumerate(ds.layout.values):
        approx, regimes = rows[2 * i], rows[2 * i + 1]
        assert f"({layout} layout)" in approx.where and f"({layout} layout)" in regimes.where
        assert approx.ours.startswith(f"{layout}: ") and regimes.ours.startswith(f"{layout}: ")
        # recomputed with plain numpy from the draws of this layout (not from the stored summaries)
        w = {a: ds.wcss.sel(algorithm=a, layout=layout).transpose("c", "tau", "draw").values for a in ("hybrid", "tcm", "lm")}
        m = {a: v.mean(-1) for a, v in w.items()}
        half = {a: 1.959963984540054 * v.std(-1, ddof=1) / np.sqrt(v.shape[-1]) for a, v in w.items()}
        lo, hi = ({a: m[a] - s * half[a] for a in m} for s in (1, -1))
        tb = m["tcm"] <= m["lm"]
        best, blo, bhi = (np.where(tb, d["tcm"], d["lm"]) for d in (m, lo, hi))
        ok = (m["hybrid"] <= 1.1 * best) | ((lo["hybrid"] <= bhi) & (blo <= hi["hybrid"]))
        ratio = m["hybrid"] / best
        assert f"in {ok.sum()} of {ok.size} (c, tau) cells" in approx.ours
        assert f"better baseline {ratio.min():.2f}-{ratio.max():.2f} (" in approx.ours
        for j, c in enumerate(ds.c.values):
            assert f"c = {100 * c:g}%: {ratio[j].min():.2f}-{ratio[j].max():.2f}" in approx.ours
        assert approx.verdict == ("holds" if ok.all() else "partly" if 2 * ok.sum() >= ok.size else "does not hold")
        tcm_sig = (hi["tcm"] < lo["lm"]).any(axis=1)  # per c
        lm_sig = (hi["lm"] < lo["tcm"]).any(axis=1)
        for j, c in enumerate(ds.c.values):
            panel = " and ".join(name for name, sig in (("TCM", tcm_sig[j]), ("LM", lm_sig[j])) if sig)
            assert f"c = {100 * c:g}%: significantly better at some tau: {panel or 'neither'}" in regimes.ours
        distinct = any(tcm_sig[i] and lm_sig[j] for i in range(len(tcm_sig)) for j in range(len(lm_sig)) if i != j)
        assert regimes.verdict == ("holds" if distinct else "does not hold")


def test_claim_verdicts_follow_the_numbers():
    # a synthetic summary where the hybrid is far above the better baseline in one layout and equal in
    # another, and the two regimes appear in one layout only: the verdicts must differ accordingly
    algorithms, layouts, cs, taus = ["hybrid", "tcm", "lm"], ["a", "b"], [0.001, 0.01], [1, 2]
    mean = np.empty((3, 2, 2, 2))
    mean[:, 0] = np.array([[[100.0, 100.0], [100.0, 100.0]], [[100.0, 100.0], [300.0, 300.0]],
                           [[300.0, 300.0], [100.0, 100.0]]])  # layout a: TCM better at c0, LM at c1, hybrid = best
    mean[:, 1] = np.array([[[500.0, 500.0], [500.0, 500.0]], [[100.0, 100.0], [100.0, 100.0]],
                           [[300.0, 300.0], [300.0, 300.0]]])  # layout b: hybrid 5x the better (TCM) everywhere
    coords = {"algorithm": algorithms, "layout": layouts, "c": cs, "tau": taus}
    dims = ("algorithm", "layout", "c", "tau")
    ds = xr.Dataset({"wcss_mean": (dims, mean), "wcss_low": (dims, mean - 10), "wcss_high": (dims, mean + 10)}, coords)
    rows = avent_kmeans.claims(ds)
    assert [r.verdict for r in rows] == ["holds", "holds", "does not hold", "does not hold"]
    assert "hybrid / better baseline 5.00-5.00" in rows[2].ours
    # both regimes in the same panel only: not "one example in one panel, the other in the other"
    mean[:, 0] = np.array([[[100.0, 100.0], [100.0, 100.0]], [[100.0, 300.0], [200.0, 200.0]],
                           [[300.0, 100.0], [200.0, 200.0]]])  # c0: TCM better at tau 1, LM at tau 2; c1: neither
    ds = xr.Dataset({"wcss_mean": (dims, mean), "wcss_low": (dims, mean - 10), "wcss_high": (dims, mean + 10)}, coords)
    assert avent_kmeans.claims(ds)[1].verdict == "does not hold"
