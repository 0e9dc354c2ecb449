"""K-means' two-stage plan carried out by ``release``: the LM devices' cells (``device cell``), the probe's one
round (:mod:`hybridpriv.families.kmeans.plan_rounds`), then the refit's choice released in rounds on the same
ledger, over several commands."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from _support.kmeans_devices import faithful_release_folder, run_devices

from hybridpriv.families.kmeans.algorithms import PointCloud, nearest_centre
from hybridpriv.families.kmeans.device import Device, cell_report, cells_digest
from hybridpriv.families.kmeans.device import main as device_main
from hybridpriv.families.kmeans.plan import CellCountsProbe
from hybridpriv.families.kmeans.plan_rounds import CellCountsRounds
from hybridpriv.noise import rr_probabilities
from hybridpriv.release.data import PrivateDataError
from hybridpriv.release.noise import OpenDPGenerator

CENTRES = [[0.2, 0.3], [0.7, 0.7], [0.5, 0.1]]


def _probe_round(centres=CENTRES, epsilon=0.5, release="p", bounds=(0.0, 1.0)):
    out = {"format": "hybridpriv-kmeans-cells", "release": release, "round": 1, "centres": centres,
           "epsilon": epsilon, "k": len(centres), "bounds": list(bounds)}
    return {**out, "digest": cells_digest(out)}


# -- the device ------------------------------------------------------------------------------------------------
def test_the_device_cell_is_k_ary_randomized_response_of_the_nearest_pilot_centre():
    """4,000 fresh devices at a point nearest centre 1: the share reporting 1 is e^eps / (k - 1 + e^eps) within 4
    standard errors (at eps 0.5, k 3: 0.452, s.e. 0.0079: a 5% bias, 0.023, is 2.9 s.e.), the others split evenly."""
    published = _probe_round()
    cells = np.array([int(cell_report(f"u{i}", [0.72, 0.66], published, 5.0, 0.5)[0].split(",")[1]) for i in range(4000)])
    p, q = rr_probabilities(0.5, 3)
    se = math.sqrt(p * (1 - p) / cells.size)
    assert abs((cells == 1).mean() - p) < 4 * se
    for other in (0, 2):
        assert abs((cells == other).mean() - q) < 4 * math.sqrt(q * (1 - q) / cells.size)


def test_the_device_spends_its_cell_and_report_from_one_budget_and_refuses_more():
    published = _probe_round(epsilon=0.5)
    line, state = cell_report("u1", [0.4, 1.7], published, 5.0, 0.5)  # clipped into the box
    user, cell, digest = line.split(",")
    assert user == "u1" and cell in {"0", "1", "2"} and digest == published["digest"]
    assert state["point"] == [0.4, 1.0] and state["cell"]["epsilon"] == 0.5 and state["budget"] == 5.0
    with pytest.raises(ValueError, match="already sent its cell"):
        cell_report("u1", [0.4, 0.7], published, 5.0, 0.5, state)
    # the K-means report at the rest of the budget is sent; above it, refused before any noise
    with pytest.raises(ValueError, match=r"spent epsilon 0.5 on its cell .* budget 5; a K-means report at epsilon 5 "
                                         "would exceed it"):
        Device("u1", state["point"], 5.0, 2, 3, (0.0, 1.0), state).report()
    dev = Device("u1", state["point"], 4.5, 2, 3, (0.0, 1.0), state)
    dev.report()
    assert dev.to_state()["cell"] == state["cell"] and dev.to_state()["reported"]
    with pytest.raises(ValueError, match="already sent its cell"):
        cell_report("u1", [0.4, 0.7], published, 5.0, 0.5, dev.to_state())
    plain = Device("u3", [0.4, 0.7], 5.0, 2, 3, (0.0, 1.0))
    plain.report()  # a K-means report without a plan spent the budget: no cell after it
    with pytest.raises(ValueError, match="cell comes first"):
        cell_report("u3", [0.4, 0.7], published, 5.0, 0.5, plain.to_state())
    with pytest.raises(ValueError, match="the device state is 'u1''s, not 'u9''s"):  # another device's file
        cell_report("u9", [0.4, 0.7], published, 5.0, 0.5, {"user": "u1"})
    # the curator cannot choose what the device spends: a round asking for more than the user agreed is refused
    with pytest.raises(ValueError, match="asks for epsilon 4; this device agreed to 0.5 for its cell"):
        cell_report("u2", [0.4, 0.7], _probe_round(epsilon=4.0), 5.0, 0.5)
    with pytest.raises(ValueError, match="epsilon 6 is above this device's budget 5"):
        cell_report("u2", [0.4, 0.7], _probe_round(epsilon=6.0), 5.0, 6.0)
    # the digest binds everything the round publishes: centres, epsilon, k and box
    for change in ({"centres": [[0.2, 0.3], [0.7, 0.8], [0.5, 0.1]]}, {"epsilon": 4.0}, {"bounds": [0.0, 0.5]}):
        with pytest.raises(ValueError, match="digest does not match what it publishes"):
            cell_report("u2", [0.4, 0.7], {**published, **change}, 5.0, published.get("epsilon") if
                        "epsilon" not in change else change["epsilon"])
    with pytest.raises(ValueError, match="'format' is 'hybridpriv-kmeans-round'"):
        cell_report("u2", [0.4, 0.7], {**published, "format": "hybridpriv-kmeans-round"}, 5.0, 0.5)
    with pytest.raises(ValueError, match="centres have 2 coordinates; this device's point has 3"):
        cell_report("u2", [0.4, 0.7, 0.1], published, 5.0, 0.5)


def test_the_device_command_answers_cells_then_reports_at_the_rest(tmp_path, capsys):
    round_file = tmp_path / "round.json"
    round_file.write_text(json.dumps(_probe_round(epsilon=1.0)))
    points = tmp_path / "points.csv"
    points.write_text("user,x,y\nu1,0.1,0.2\nu2,0.8,0.9\n")
    states = tmp_path / "states"
    argv = ["cell", "--round", str(round_file), "--budget", "5", "--epsilon", "1", "--points", str(points),
            "--state-dir", str(states)]
    assert device_main([*argv, "--header"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "user,cell,digest" and [x.split(",")[0] for x in lines[1:]] == ["u1", "u2"]
    assert device_main(argv) == 2 and "already sent its cell" in capsys.readouterr().err
    report = ["report", "--points", str(points), "--state-dir", str(states), "--tau", "2", "--k", "3", "--bounds",
              "0", "1"]
    assert device_main([*report, "--epsilon", "4.5"]) == 2  # 1 + 4.5 > 5: refused, nothing saved
    assert "would exceed it" in capsys.readouterr().err
    assert device_main([*report, "--epsilon", "4"]) == 0
    assert [x.split(",")[0] for x in capsys.readouterr().out.splitlines()] == ["u1", "u2"]
    state = json.loads((states / "u2.json").read_text())
    assert state["reported"] and state["cell"]["epsilon"] == 1.0 and state["point"] == [0.8, 0.9]
    # one device, its state in a file: the report carries the cell on without --point
    one = tmp_path / "u9.json"
    assert device_main(["answer", "--round", str(round_file), "--state", str(one)]) == 2  # no state yet
    capsys.readouterr()
    assert device_main(["cell", "--round", str(round_file), "--budget", "2", "--epsilon", "1", "--user", "u9",
                        "--point", "0.5", "0.5", "--state", str(one)]) == 0
    assert device_main(["answer", "--round", str(round_file), "--state", str(one)]) == 2
    assert "has not sent its K-means report yet" in capsys.readouterr().err
    assert device_main(["report", "--user", "u9", "--state", str(one), "--epsilon", "1", "--tau", "1", "--k", "3",
                        "--bounds", "0", "1"]) == 0
    assert device_main(["report", "--user", "u9", "--state", str(one), "--epsilon", "1", "--tau", "1", "--k", "3",
                        "--bounds", "0", "1"]) == 2
    assert "already sent its report" in capsys.readouterr().err
    # a batch names each user once, as a file name: a second row of a user would spend its budget again
    for rows, match in (("user,x,y\nu1,0.1,0.2\nu1,0.3,0.4\n", "line 3: user 'u1' appears twice"),
                        ("user,x,y\n../up,0.1,0.2\n", "cannot name a state file"),
                        ("user,x,y\nu5,0.1,zero\n", "line 2: a coordinate is not a number")):
        points.write_text(rows)
        assert device_main([*argv[:-2], "--state-dir", str(tmp_path / "other")]) == 2
        assert match in capsys.readouterr().err
    assert not (tmp_path / "up.json").exists() and not list((tmp_path / "other").glob("*.json"))


# -- the curator's round ---------------------------------------------------------------------------------------
class _Spec:
    def __init__(self):
        self.values = type("V", (), {"bounds": (0.0, 1.0)})()


def _rounds(n_tcm=6, n_lm=5, epsilon=2.0, share=0.25):
    return CellCountsRounds(CellCountsProbe(CENTRES, n_tcm, n_lm, epsilon, share), _Spec())


def test_the_probe_round_releases_the_simulations_counts(tmp_path):
    """2,000 releases of the probe's round, each with fresh device cells: the TCM counts' mean and sd (Laplace of
    scale 1 / (share eps) about the exact counts) and the LM counts' mean (unbiased for the exact counts, within 4
    s.e. of rr_count_sd) and sd (within 10%), the LM counts summing to n_lm."""
    from hybridpriv.families.kmeans.cells import rr_count_sd

    proto = _rounds()
    rng = np.random.default_rng(0)
    x_tcm, x_lm = rng.random((6, 2)), rng.random((5, 2))
    (tmp_path / "tcm.csv").write_text("x,y\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in x_tcm))
    data = proto.load(tmp_path)
    state0 = proto.begin(rng)
    published = proto.published(state0, 1, "rel")
    assert proto.answers(tmp_path, data, published) is None  # the cells are not in yet
    lines = [cell_report(f"d{i}", x, published, 2.0, 0.5)[0] for i, x in enumerate(x_lm)]
    (tmp_path / "lm-cells.csv").write_text("user,cell,digest\n" + "\n".join(lines) + "\n")
    assert len(proto.answers(tmp_path, data, published)["lm"]) == 5
    exact_tcm = np.bincount(nearest_centre(x_tcm, np.array(CENTRES))[0], minlength=3)
    exact_lm = np.bincount(nearest_centre(x_lm, np.array(CENTRES))[0], minlength=3)
    gen, reps = OpenDPGenerator(), 2000
    draws = []
    for _ in range(reps):
        cells = np.array([int(cell_report(f"d{i}", x, published, 2.0, 0.5)[0].split(",")[1])
                          for i, x in enumerate(x_lm)])
        draws.append(proto.result(proto.step(state0, data, {"lm": cells}, gen)))
    draws = np.array(draws)
    assert np.allclose(draws[:, 3:].sum(axis=1), 5.0)
    laplace_sd = math.sqrt(2) * 2  # b = 1 / 0.5
    assert np.all(np.abs(draws[:, :3].mean(axis=0) - exact_tcm) < 4 * laplace_sd / math.sqrt(reps))
    # the TCM counts' spread from 20,000 releases (the LM cells fixed: they do not touch the TCM noise): the sample
    # sd of Laplace draws (kurtosis 6) has a relative s.e. of sqrt(5 / (4 n)) = 0.0079, so 4.5 s.e. = 0.036 sees a
    # 5% error in the scale (2,000 releases, 0.025 s.e., could not: a 6% bound failed about one run in twenty)
    tcm = np.array([proto.result(proto.step(state0, data, {"lm": cells}, gen))[:3] for _ in range(20_000)])
    assert np.all(np.abs(tcm.std(axis=0) / laplace_sd - 1) < 4.5 * math.sqrt(5 / (4 * len(tcm))))
    assert np.all(np.abs(tcm.mean(axis=0) - exact_tcm) < 4.5 * laplace_sd / math.sqrt(len(tcm)))
    sd = rr_count_sd(exact_lm, 5, 0.5, 3)
    assert np.all(np.abs(draws[:, 3:].mean(axis=0) - exact_lm) < 4 * sd / math.sqrt(reps))
    assert np.all(np.abs(draws[:, 3:].std(axis=0) / sd - 1) < 0.1)
    cloud = PointCloud(np.r_[x_tcm, x_lm], np.arange(11) < 6, (0.0, 1.0), np.array(CENTRES))
    assert np.array_equal(proto.probe.exact(cloud), np.r_[exact_tcm, exact_lm])


def test_the_probe_round_debiases_the_lm_cells_as_a_hand_computation(tmp_path):
    """k = 3, epsilon 0.5 (share 0.25 of 2): five answers 0, 0, 1, 2, 0; each debiased count is (o - n q) / (p - q)
    with p = e^eps / (e^eps + 2), q = 1 / (e^eps + 2), written out here rather than taken from the code."""
    proto = _rounds(n_tcm=2, n_lm=5)
    (tmp_path / "tcm.csv").write_text("0.1,0.2\n0.3,0.4\n")
    data = proto.load(tmp_path)
    state = proto.step(proto.begin(None), data, {"lm": np.array([0, 0, 1, 2, 0])}, OpenDPGenerator())
    e = math.exp(0.5)
    p, q = e / (e + 2), 1 / (e + 2)
    hand = [(3 - 5 * q) / (p - q), (1 - 5 * q) / (p - q), (1 - 5 * q) / (p - q)]
    assert proto.result(state)[3:] == pytest.approx(hand, rel=1e-12)


def test_the_probe_round_refuses_bad_answers_naming_the_row_and_rule(tmp_path):
    proto = _rounds(n_tcm=2, n_lm=2)
    (tmp_path / "tcm.csv").write_text("0.1,0.2\n0.3,0.4\n")
    data = proto.load(tmp_path)
    published = proto.published(proto.begin(None), 1, "rel")
    d = published["digest"]

    def refused(text: str, match: str) -> None:
        (tmp_path / "lm-cells.csv").write_text(text)
        with pytest.raises(PrivateDataError, match=match) as info:
            proto.answers(tmp_path, data, published)
        assert "alice" not in str(info.value) and "77" not in str(info.value)  # never a user or a cell

    refused(f"alice,0,{d}\nalice,1,{d}\n", r"group 'lm': data row 2 of lm-cells.csv names a user twice \(rule: one")
    refused(f"alice,0,{d}\nb,77,{d}\n", r"data row 2 of lm-cells.csv: the cell is not one of 0..2 \(rule: a cell")
    refused(f"alice,0,{d}\nb,1,other\n", r"data row 2 of lm-cells.csv answers other centres .* \(rule: a cell carries")
    refused(f"alice,0,{d}\n", r"does not hold the group's public size of cells")
    refused("alice,0\n", r"data row 1 of lm-cells.csv is not a cell line \(rule: user,cell,digest\)")
    # the header line is dropped first, and only there: a user named "user" later is a user, a header later a row
    refused(f"alice,0,{d}\nuser,cell,digest\n", r"data row 2 of lm-cells.csv answers other centres")
    (tmp_path / "lm-cells.csv").write_text(f"user,cell,digest\nalice,0,{d}\nuser,1,{d}\n")
    assert proto.answers(tmp_path, data, published)["lm"].tolist() == [0, 1]
    (tmp_path / "tcm.csv").write_text("0.1,0.2\n")
    with pytest.raises(PrivateDataError, match="group 'tcm': tcm.csv does not hold the group's public size"):
        proto.load(tmp_path)


# -- the command: select -> release --plan over several runs ----------------------------------------------------
@pytest.mark.slow
def test_release_carries_out_the_kmeans_plan_with_the_devices_on_one_ledger(tmp_path, capsys):
    from hybridpriv.cli import main

    spec, data, points = faithful_release_folder(tmp_path)
    # the hybrid candidates only (any choice then reads the LM devices, so their reports are part of the plan)
    text = spec.read_text().replace("iterations = [1, 2, 3, 5]", "iterations = [1, 2]")
    spec.write_text(text.replace("[evaluation]\n", '[evaluation]\ncandidates = ["hybrid"]\n'))
    sel, out, states = tmp_path / "sel", tmp_path / "r", str(tmp_path / "devices")
    assert main(["select", str(spec), "--draws", "20", "--trials", "2", "--out", str(sel), "--quiet"]) == 0
    argv = ["release", str(spec), "--data", str(data), "--selection", str(sel / "selection.nc"), "--plan",
            "--out", str(out)]
    capsys.readouterr()
    assert main(argv) == 0  # the probe begins: charged, its round published
    assert "release of probe:cell-counts in progress: waiting for the devices' answers to round 1 of 1" in (
        capsys.readouterr().out)
    ledger = json.loads((data / "hybridpriv-ledger.json").read_text())
    assert [r["label"] for r in ledger["releases"]] == ["probe:cell-counts"]
    assert ledger["releases"][0]["spent"]["lm"]["epsilon"] == pytest.approx(0.5)  # 10% of 5
    (data / "lm-cells.csv").write_text(run_devices(capsys, "cell", "--round", str(out / "probe" / "round.json"),
                                                "--budget", "5", "--epsilon", "0.5", "--points", str(points),
                                                "--state-dir", states, "--header"))
    assert main(argv) == 0  # the probe released, the model fitted again, a candidate chosen
    said = capsys.readouterr().out
    probe = json.loads((out / "probe" / "release.json").read_text())
    assert len(probe["released"]) == 4 and sum(probe["released"][2:]) == pytest.approx(len(points.read_text()
                                                                                             .splitlines()) - 1)
    choice = json.loads((out / "probe" / "choice.json").read_text())
    assert choice["probe_release_id"] == probe["release_id"]
    # the choice reads the LM devices: they report at the rest of their budget, then answer its rounds
    assert choice["chosen"] in {"hybrid-T1", "hybrid-T2"}
    assert "waiting for lm-reports.csv in the data folder: the report of each device of group 'lm'" in said
    tau = int(choice["chosen"][-1])
    assert f"--epsilon 4.5 --tau {tau} --k 2" in said
    assert f"two-stage plan: the probe is released and {choice['chosen']} chosen" in said, said
    report = ["report", "--points", str(points), "--state-dir", states, "--tau", str(tau), "--k", "2",
              "--bounds", "0", "1", "--header"]
    capsys.readouterr()
    assert device_main([*report, "--epsilon", "5"]) == 2  # the cell's 0.5 is spent: 5 more is refused
    reports = run_devices(capsys, *report, "--epsilon", "4.5")
    assert (out / "probe" / "spec-given-release.json").is_file()
    # the LM users who report must be those the probe counted
    first_user = reports.splitlines()[1].split(",")[0]
    (data / "lm-reports.csv").write_text(reports.replace(f"{first_user},", "stranger,", 1))
    assert main(argv) == 2
    assert "the users of lm-reports.csv are not those of lm-cells.csv" in capsys.readouterr().err
    (data / "lm-reports.csv").write_text(reports)
    # a kept choice that does not match the probe's release, or is damaged, is refused, not reused
    kept = (out / "probe" / "choice.json").read_text()
    for bad, match in ((kept.replace(probe["release_id"], "another"), "holds the choice made given another"),
                       ("[]", "choice.json (the plan's kept choice) is damaged")):
        (out / "probe" / "choice.json").write_text(bad)
        assert main(argv) == 2 and match in capsys.readouterr().err
    (out / "probe" / "choice.json").write_text(kept)
    # the same plan pointed at a copy of the data with a fresh ledger: refused (its probe was charged elsewhere)
    copy = tmp_path / "copy"
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns("hybridpriv-ledger.json"))
    assert main([*argv[:3], str(copy), *argv[4:]]) == 2
    assert "was charged to another ledger" in capsys.readouterr().err
    for t in range(1, tau + 1):
        assert main(argv) == 0
        assert f"waiting for the devices' answers to round {t} of {tau}" in capsys.readouterr().out
        (data / f"lm-round-{t}.csv").write_text(run_devices(capsys, "answer", "--points", str(points), "--state-dir",
                                                         states, "--round", str(out / "round.json")))
    assert main(argv) == 0
    rec = json.loads((out / "release.json").read_text())
    assert rec["candidate"]["coordinate"] == choice["chosen"] and rec["rounds"]["total"] == tau
    assert rec["decision"]["plan"]["probe_release_id"] == probe["release_id"]
    assert rec["decision"]["plan"]["chosen"] == choice["chosen"]
    ledger = json.loads((data / "hybridpriv-ledger.json").read_text())
    charges = [r["spent"] for r in ledger["releases"] if r.get("spent")]  # the rounds' entries charge nothing
    assert len(charges) == 2
    spent = {u: sum(c[u]["epsilon"] for c in charges) for u in ("tcm", "lm")}
    assert spent == pytest.approx({"tcm": 5.0, "lm": 5.0})  # the probe's 0.5 and the rest: the budget, no more
    # the plan is done: the same command is refused (the folder holds a release)
    assert main(argv) == 2 and "already holds a release" in capsys.readouterr().err
