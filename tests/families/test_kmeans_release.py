"""K-means can be released (issue 24): in rounds, the local users' devices answering every iteration, every round
charged when the release begins (composed), the state bound to the ledger round by round."""

from __future__ import annotations

import json
import math

from types import SimpleNamespace

import numpy as np
import pytest
from _support.kmeans_devices import faithful_release_folder, run_devices
from scipy import stats

from hybridpriv.families.kmeans.algorithms import HybridKMeans, PointCloud
from hybridpriv.families.kmeans.algorithms.algorithm import noise_scales
from hybridpriv.families.kmeans.device import Device, centres_digest
from hybridpriv.families.kmeans.rounds import KMeansRounds
from hybridpriv.noise import rr_probabilities
from hybridpriv.release.noise import OpenDPGenerator



def _published(centres, t=1, release="r", epsilon=5.0, tau=2, k=2, bounds=(0.0, 1.0)):
    return {"round": t, "centres": centres, "digest": centres_digest(centres, t, release), "release": release,
            "epsilon": epsilon, "tau": tau, "k": k, "bounds": list(bounds)}


@pytest.mark.slow
def test_the_device_report_is_laplace_of_scale_m_d_tau_plus_one_over_epsilon():
    """20,000 devices at one point: each coordinate's report is Laplace(x, b_L) (KS; mean and variance within 5 s.e.)."""
    eps, tau = 3.0, 2
    b_l = noise_scales(eps, tau, 1.0, 2)[1]
    assert b_l == pytest.approx(1.0 * 2 * 3 / 3.0)
    r = np.array([[float(v) for v in Device(f"u{i}", [0.25, 0.5], eps, tau, 2, (0, 1)).report().split(",")[1:3]]
                  for i in range(20_000)])
    for j, x in enumerate((0.25, 0.5)):
        assert stats.kstest(r[:, j], "laplace", args=(x, b_l)).pvalue > 1e-4
        assert abs(r[:, j].mean() - x) < 5 * math.sqrt(2) * b_l / math.sqrt(20_000)
        assert abs(r[:, j].var() / (2 * b_l**2) - 1) < 5 * math.sqrt(5 / 20_000)


@pytest.mark.slow
def test_the_device_answer_is_k_ary_randomized_response_at_epsilon_over_tau_plus_one():
    """20,000 answers over k = 3 clusters: the nearest with q = e^e'/(k - 1 + e^e'), each other with r (chi-square)."""
    eps, tau, k = 2.0, 3, 3
    centres = [[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]]
    counts = np.zeros(k)
    for i in range(20_000):
        dev = Device(f"u{i}", [0.45, 0.55], eps, tau, k, (0, 1))
        dev.report()
        counts[int(dev.answer(_published(centres, epsilon=eps, tau=tau, k=k)).split(",")[1])] += 1
    q, r = rr_probabilities(eps / (tau + 1), k)
    expected = 20_000 * np.array([r, q, r])
    assert stats.chisquare(counts, expected).pvalue > 1e-4
    assert abs(counts[1] / 20_000 - q) < 5 * math.sqrt(q * (1 - q) / 20_000)


def test_a_device_spends_its_epsilon_once():
    dev = Device("u1", [0.2, 0.3], 5.0, 2, 2, (0, 1))
    with pytest.raises(ValueError, match="has not sent its report"):
        dev.answer(_published([[0.1, 0.1], [0.9, 0.9]]))
    dev.report()
    with pytest.raises(ValueError, match="already sent its report"):
        dev.report()
    dev.answer(_published([[0.1, 0.1], [0.9, 0.9]]))
    with pytest.raises(ValueError, match="already answered round 1"):
        dev.answer(_published([[0.2, 0.1], [0.9, 0.9]]))
    with pytest.raises(ValueError, match="outside 1..tau = 2"):
        dev.answer(_published([[0.1, 0.1], [0.9, 0.9]], t=3))
    with pytest.raises(ValueError, match="published for epsilon 9"):
        dev.answer(_published([[0.1, 0.1], [0.9, 0.9]], t=2, epsilon=9.0))
    bad = _published([[0.1, 0.1], [0.9, 0.9]], t=2)
    bad["centres"] = [[0.1, 0.1], [0.8, 0.9]]
    with pytest.raises(ValueError, match="digest does not match"):
        dev.answer(bad)
    # the state survives a restart of the device
    again = Device.from_state(json.loads(json.dumps(dev.to_state())))
    with pytest.raises(ValueError, match="already answered round 1"):
        again.answer(_published([[0.1, 0.1], [0.9, 0.9]]))


class _Spec:
    """The part of a kmeans SPEC the rounds read."""

    def __init__(self, n, c, pilot, k=2, start="pilot"):
        self.n, self.c = n, c
        self.values = SimpleNamespace(model=SimpleNamespace(start=start, pilot=np.asarray(pilot, float)), k=k)


def _brute_force_step(c, x_tcm, reports, labels, k, b_t, tau, u_counts, u_sums):
    """Lines 6-15 written out (box [0, 1]): TCM noisy counts and sums, LM means of reports by answer, PWH weights
    with the mean's noise variance."""
    d2 = ((x_tcm[:, None, :] - c[None]) ** 2).sum(-1)
    near = d2.argmin(1)
    n_t = np.array([np.sum(near == j) for j in range(k)], float) + b_t * u_counts
    s_t = np.array([x_tcm[near == j].sum(0) for j in range(k)]) + b_t * u_sums
    n_l = np.array([np.sum(labels == j) for j in range(k)], float)
    s_l = np.array([reports[labels == j].sum(0) if np.any(labels == j) else np.zeros(2) for j in range(k)])
    out = c.copy()
    for j in range(k):
        ok_t, ok_l = n_t[j] >= 1, n_l[j] >= 1
        mu_t = np.clip(s_t[j] / n_t[j], 0, 1) if ok_t else c[j]
        mu_l = np.clip(s_l[j] / n_l[j], 0, 1) if ok_l else c[j]
        bt, bl = (2 + 1) * tau / 1.0, 2 * (tau + 1) / 1.0  # epsilon-free scales, m = 1, d = 2
        w = 2 * bl**2 / (2 * bl**2 + max(n_l[j], 1) * 2 * bt**2 / max(n_t[j], 1) ** 2)
        w = w if ok_t and ok_l else (1.0 if ok_t else 0.0)
        if ok_t or ok_l:
            out[j] = np.clip(w * mu_t + (1 - w) * mu_l, 0, 1)
    return out


def test_a_round_computes_lines_6_to_15_from_the_devices_answers():
    """One round of the curator's side against the lines written out, with the same Laplace draws."""
    rng = np.random.default_rng(3)
    x_tcm, reports = rng.uniform(0, 1, (12, 2)), rng.uniform(-1, 2, (20, 2))
    labels = rng.integers(0, 2, 20)
    mech = HybridKMeans(2, 4.0, 3, (0, 1))
    rounds = KMeansRounds(mech, _Spec(32, 12 / 32, [[0.2, 0.2], [0.8, 0.8]]))
    c = np.array([[0.3, 0.2], [0.7, 0.8]])
    data = {"points": {"tcm": x_tcm}, "reports": {"lm": reports}, "users": {"lm": [f"u{i}" for i in range(20)]}}
    got = rounds.step({"centres": c.tolist(), "history": []}, data, {"lm": labels}, np.random.default_rng(9))
    draws = np.random.default_rng(9)
    u_counts, u_sums = draws.laplace(0, 1, 2), draws.laplace(0, 1, (2, 2))
    b_t = noise_scales(4.0, 3, 1.0, 2)[0]
    want = _brute_force_step(c, x_tcm, reports, labels, 2, b_t, 3, u_counts, u_sums)
    np.testing.assert_allclose(got["centres"], want, rtol=1e-12, atol=1e-12)


def _release_in_process(mech, spec, x_tcm, x_lm, rng):
    """One release through the rounds with in-process devices and OpenDP noise: the final centres."""
    rounds = KMeansRounds(mech, spec)
    devices = [Device(f"u{i}", p, mech.epsilon, mech.tau, mech.k, (0, 1)) for i, p in enumerate(x_lm)]
    rep = np.array([[float(v) for v in d.report().split(",")[1:3]] for d in devices])
    data = {"points": {"tcm": x_tcm}, "reports": {"lm": rep}, "users": {"lm": [d.user for d in devices]}}
    state = rounds.begin(rng)
    for t in range(1, rounds.total + 1):
        pub = rounds.published(state, t, "r")
        answers = {"lm": np.array([int(d.answer(pub).split(",")[1]) for d in devices])}
        state = rounds.step(state, data, answers, rng)
    return rounds.result(state)


@pytest.mark.slow
def test_the_release_in_rounds_has_the_law_of_the_simulation():
    """600 releases with devices and OpenDP noise against 600 simulated runs (run_kmeans): every final coordinate
    agrees in law (two-sample KS, p > 1e-3), hybrid, tau = 2, 10 TCM and 10 LM users."""
    rng = np.random.default_rng(5)
    x_tcm = np.clip(np.r_[rng.normal(0.25, 0.05, (5, 2)), rng.normal(0.75, 0.05, (5, 2))], 0, 1)
    x_lm = np.clip(np.r_[rng.normal(0.25, 0.05, (5, 2)), rng.normal(0.75, 0.05, (5, 2))], 0, 1)
    pilot = [[0.2, 0.3], [0.3, 0.2], [0.8, 0.7], [0.7, 0.8]]
    spec = _Spec(20, 0.5, pilot)
    mech = HybridKMeans(2, 8.0, 2, (0, 1))
    start = KMeansRounds(mech, spec).begin(rng)["centres"]
    cloud = PointCloud(np.r_[x_tcm, x_lm], np.arange(20) < 10, (0, 1), np.asarray(start))
    sim = mech.release(cloud, np.random.default_rng(6), trials=600).reshape(600, -1)
    gen = OpenDPGenerator()
    rel = np.array([_release_in_process(mech, spec, x_tcm, x_lm, gen).ravel() for _ in range(600)])
    for j in range(4):
        assert stats.ks_2samp(sim[:, j], rel[:, j]).pvalue > 1e-3, j


# -- the command: select -> release (in rounds) -> a second release refused ---------------------------------
@pytest.mark.slow
def test_select_release_in_rounds_and_a_second_release_refused(tmp_path, capsys):
    from hybridpriv.cli import main

    spec, data, points = faithful_release_folder(tmp_path)
    assert main(["select", str(spec), "--draws", "20", "--trials", "2", "--out", str(tmp_path / "sel"), "--quiet"]) == 0
    states = str(tmp_path / "devices")
    (data / "lm-reports.csv").write_text(run_devices(capsys, "report", "--points", str(points), "--state-dir", states,
                                                  "--epsilon", "5", "--tau", "2", "--k", "2", "--bounds", "0", "1",
                                                  "--header"))
    argv = ["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "sel" / "selection.nc"),
            "--candidate", "hybrid-T2", "--out", str(tmp_path / "r1")]
    capsys.readouterr()
    assert main(argv) == 0
    assert "waiting for the devices' answers to round 1 of 2" in capsys.readouterr().out
    ledger = json.loads((data / "hybridpriv-ledger.json").read_text())
    assert ledger["releases"][0]["spent"]["lm"]["epsilon"] == pytest.approx(5.0)  # every round charged at once
    assert len(ledger["releases"][0]["plan"]) == 1 + 2 * 3  # line 4, then lines 9, 10, 7 per iteration
    for t in (1, 2):
        (data / f"lm-round-{t}.csv").write_text(run_devices(capsys, "answer", "--points", str(points), "--state-dir",
                                                         states, "--round", str(tmp_path / "r1" / "round.json")))
        assert main(argv) == 0
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert rec["released_shape"] == [2, 2] and all(0 <= v <= 1 for v in rec["released"])
    assert len(rec["rounds"]["history"]) == 3 and rec["charged"]["tcm"]["epsilon"] == pytest.approx(5.0)
    assert "OpenDP" in rec["randomness"]["laplace"]["drawn_by"]
    # a second release of anything is over budget; so is the TCM-only candidate, which needs no device
    capsys.readouterr()
    assert main([*argv[:-3], "tcm-T1", "--out", str(tmp_path / "r2")]) == 2
    assert "over its budget" in capsys.readouterr().err


@pytest.mark.slow
def test_a_release_in_rounds_refuses_a_restored_state_stale_answers_and_changed_data(tmp_path, capsys):
    from hybridpriv.cli import main

    spec, data, points = faithful_release_folder(tmp_path)
    assert main(["select", str(spec), "--draws", "20", "--trials", "2", "--out", str(tmp_path / "sel"), "--quiet"]) == 0
    states = str(tmp_path / "devices")
    (data / "lm-reports.csv").write_text(run_devices(capsys, "report", "--points", str(points), "--state-dir", states,
                                                  "--epsilon", "5", "--tau", "3", "--k", "2", "--bounds", "0", "1"))
    out = tmp_path / "r1"
    argv = ["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "sel" / "selection.nc"),
            "--candidate", "hybrid-T3", "--out", str(out)]
    assert main(argv) == 0
    old_round = (out / "round.json").read_text()
    (data / "lm-round-1.csv").write_text(run_devices(capsys, "answer", "--points", str(points), "--state-dir", states,
                                                  "--round", str(out / "round.json")))
    saved = (out / "rounds.json").read_text()
    assert main(argv) == 0  # round 1 done, waiting for round 2
    after_round_1 = (out / "rounds.json").read_text()
    assert json.loads(old_round)["round"] == 1 and json.loads(after_round_1)["round"] == 1
    # answers to round 1's centres given as round 2's are refused, naming the row and the rule
    (data / "lm-round-2.csv").write_text((data / "lm-round-1.csv").read_text().replace(",1,", ",2,"))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "data row 1 of lm-round-2.csv answers other centres than those published for round 2" in err
    # the round state restored from before round 1: refused (round 1 would be computed twice)
    (data / "lm-round-2.csv").unlink()
    (out / "rounds.json").write_text(saved)
    assert main(argv) == 2
    assert "not the ledger's last recorded round" in capsys.readouterr().err
    # the TCM points changed half-way: refused
    (out / "rounds.json").write_text(after_round_1)
    tcm = (data / "tcm.csv").read_text()
    (data / "tcm.csv").write_text(tcm.replace("\n0.", "\n0.0", 1))
    assert main(argv) == 2
    assert "differ from those release" in capsys.readouterr().err
    # the state deleted: the same command would begin a new release, charged again: over budget
    (data / "tcm.csv").write_text(tcm)
    (out / "rounds.json").unlink()
    assert main(argv) == 2
    assert "over its budget" in capsys.readouterr().err


@pytest.mark.slow
def test_the_public_start_is_released_reading_no_data_and_charging_nothing(tmp_path, capsys):
    """Issue 25 (K-means): the public start alone is a candidate; released, it is the pilot's start, reads no file
    and is charged epsilon 0, so a later release of an iterated candidate still has the whole budget."""
    from hybridpriv.cli import main
    from hybridpriv.families.kmeans.model import pilot_start
    from hybridpriv.spec import load_spec

    spec, data, _ = faithful_release_folder(tmp_path)
    assert main(["select", str(spec), "--draws", "20", "--trials", "2", "--out", str(tmp_path / "sel"), "--quiet"]) == 0
    empty = tmp_path / "nothing"
    empty.mkdir()
    argv = ["release", str(spec), "--data", str(empty), "--selection", str(tmp_path / "sel" / "selection.nc"),
            "--candidate", "public-start", "--out", str(tmp_path / "r0"), "--ledger", str(tmp_path / "ledger.json")]
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    rec = json.loads((tmp_path / "r0" / "release.json").read_text())
    v = load_spec(spec).values
    np.testing.assert_allclose(np.reshape(rec["released"], (2, 2)), pilot_start(v.model.pilot, v.k))
    assert rec["charged"]["tcm"]["epsilon"] == 0.0 and rec["charged"]["lm"]["epsilon"] == 0.0
    # the whole budget is left: the TCM-only candidate (no device) is released against the same ledger
    capsys.readouterr()
    assert main(["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "sel" / "selection.nc"),
                 "--candidate", "tcm-T1", "--out", str(tmp_path / "r1"), "--ledger", str(tmp_path / "ledger.json")]) == 0, \
        capsys.readouterr().err
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    labels = [r["label"] for r in ledger["releases"]]
    assert labels[:2] == ["public-start", "tcm"], labels
    assert ledger["releases"][0]["spent"]["tcm"]["epsilon"] == 0.0
    assert ledger["releases"][1]["spent"]["tcm"]["epsilon"] == pytest.approx(5.0)  # the whole budget was left
    # before this change the TCM-only candidate (which never reads the LM users) was refused here as promising
    # them "nothing", while the selection counted it eligible
