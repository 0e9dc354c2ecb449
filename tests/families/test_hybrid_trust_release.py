"""Hybrid trust can be released (issue 24): the curator's TCM values plus the LM users' reports, drawn on their
devices by the shipped randomiser; the estimators average the reports without noising them again."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group
from hybridpriv.families.hybrid_trust.data import HybridReports
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, LMOnly, TCMOnly
from hybridpriv.families.hybrid_trust.randomize import local_report, local_scale
from hybridpriv.families.hybrid_trust.randomize import main as randomize

GROUPS = [Group("tcm", 60, 1.0), Group("lm", 200, 0.5, trust="local")]
EXAMPLES = Path(str(resources.files("hybridpriv") / "examples"))


def test_the_device_randomiser_draws_laplace_of_width_over_epsilon():
    """40,000 reports of one value: mean and variance within 5 s.e. of x and 2 b^2, KS against Laplace(x, b)."""
    b = local_scale(0.5, (0, 100))
    assert b == 200.0
    r = local_report(np.full(40_000, 30.0), 0.5, (0, 100))
    assert abs(r.mean() - 30.0) < 5 * math.sqrt(2) * b / 200 and abs(r.var() / (2 * b * b) - 1) < 5 * math.sqrt(5 / 40_000)
    assert stats.kstest(r, "laplace", args=(30.0, b)).pvalue > 1e-5
    assert local_report(-5.0, 1.0, (0, 10)) != -5.0  # clipped into the bounds, then noised


def test_releasing_from_reports_has_the_law_of_the_simulation():
    """Reports x + Laplace(width/eps) averaged by the estimator agree in law with the estimator's own local noise."""
    rng = np.random.default_rng(0)
    tcm, lm = rng.uniform(0, 100, 60), rng.uniform(0, 100, 200)
    for mech in (LMOnly(GROUPS, (0, 100)), Hybrid(GROUPS, (0, 100), 0.3), FullLM(GROUPS, (0, 100)), TCMOnly(GROUPS, (0, 100))):
        sim = mech.release([tcm, lm], np.random.default_rng(1), 4000)
        rel = np.array([mech.release(HybridReports(tcm, lm + rng.laplace(0, 100 / 0.5, 200)), rng)[0]
                        for _ in range(4000)])
        assert stats.ks_2samp(sim, rel).pvalue > 1e-4, mech.label
    with pytest.raises(ValueError, match="must number 60 and 200"):
        LMOnly(GROUPS, (0, 100)).release(HybridReports(tcm, lm[:10]), rng)


def test_the_command_writes_report_lines(tmp_path, capsys):
    (tmp_path / "v.txt").write_text("10\n20\n")
    assert randomize(["--epsilon", "1", "--bounds", "0", "100", "--values", str(tmp_path / "v.txt"), "--header"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "report,epsilon,delta,noise,lower,upper" and len(lines) == 3
    assert lines[1].endswith(",1.0,0.0,laplace,0.0,100.0") and math.isfinite(float(lines[1].split(",")[0]))
    assert randomize(["--epsilon", "-1", "--bounds", "0", "1", "3"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def _salaries(tmp_path):
    """The salaries example selected (20 draws, 2 trials) and its private data: the union's junior faculty's values,
    the professors' device reports (the randomiser as a command)."""
    import csv

    from hybridpriv.cli import main

    for f in EXAMPLES.glob("salaries*"):
        shutil.copy(f, tmp_path / f.name)
    assert main(["select", str(tmp_path / "salaries.toml"), "--draws", "20", "--trials", "2", "--out",
                 str(tmp_path / "sel"), "--quiet"]) == 0
    rows = list(csv.DictReader((tmp_path / "salaries.csv").open()))
    data = tmp_path / "data"
    data.mkdir()
    (data / "junior.csv").write_text("".join(f"{r['salary_k']}\n" for r in rows
                                             if r["group"] == "junior" and r["role"] == "private"))
    values = tmp_path / "prof.txt"
    values.write_text("".join(f"{r['salary_k']}\n" for r in rows if r["group"] == "professors" and r["role"] == "private"))
    out = subprocess.run([sys.executable, "-m", "hybridpriv.families.hybrid_trust.randomize", "--epsilon", "1", "--bounds",
                          "0", "250", "--values", str(values), "--header"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (data / "professors-reports.csv").write_text(out.stdout)
    return data


@pytest.mark.slow
def test_select_release_and_a_second_release_refused(tmp_path, capsys):
    """The salaries example: the union's junior faculty's values, the professors' device reports."""
    from hybridpriv.cli import main

    data = _salaries(tmp_path)
    capsys.readouterr()
    argv = ["release", str(tmp_path / "salaries.toml"), "--data", str(data), "--selection",
            str(tmp_path / "sel" / "selection.nc")]
    assert main([*argv, "--out", str(tmp_path / "r1")]) == 0
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert rec["charged"]["professors"]["trust"] == "local" and 0 < rec["released"] < 250
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "r2")]) == 2
    assert "over its budget" in capsys.readouterr().err
    # reports drawn at another epsilon are refused, naming the row and the rule
    bad = tmp_path / "bad"
    shutil.copytree(data, bad, ignore=shutil.ignore_patterns("hybridpriv-ledger*", ".hybridpriv*"))
    text = (bad / "professors-reports.csv").read_text().splitlines()
    text[5] = text[5].replace(",1.0,0.0,", ",2.0,0.0,")
    (bad / "professors-reports.csv").write_text("\n".join(text) + "\n")
    assert main([*argv[:3], str(bad), *argv[4:], "--out", str(tmp_path / "r3")]) == 2
    err = capsys.readouterr().err
    assert "data row 5 of professors-reports.csv was randomised with other parameters" in err


@pytest.mark.slow
def test_the_two_stage_plan_is_released_on_one_ledger(tmp_path, capsys):
    """release --plan: the junior faculty's mean first (10% of their epsilon, the professors not read), then the
    estimator it chooses at the rest; the ledger charges the juniors 1.0 in all and the professors their whole 1.0
    once."""
    from hybridpriv.cli import main

    data = _salaries(tmp_path)
    capsys.readouterr()
    assert main(["release", str(tmp_path / "salaries.toml"), "--data", str(data), "--selection",
                 str(tmp_path / "sel" / "selection.nc"), "--plan", "--out", str(tmp_path / "r")]) == 0
    probe = json.loads((tmp_path / "r" / "probe" / "release.json").read_text())
    assert probe["charged"]["junior"]["epsilon"] == pytest.approx(0.1)
    assert probe["charged"]["professors"]["epsilon"] == 0.0
    second = json.loads((tmp_path / "r" / "release.json").read_text())
    plan = second["decision"]["plan"]
    assert plan["probe_release_id"] == probe["release_id"] and len(plan["probe_released"]) == 1
    assert second["charged"]["junior"]["epsilon"] == pytest.approx(0.9)
    assert second["charged"]["professors"]["epsilon"] == pytest.approx(1.0)
    assert 0 < second["released"] < 250
