"""The study registry lists studies without importing them (``study list`` answers at once)."""

import subprocess
import sys

import pytest

from hybridpriv.studies import STUDIES


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


def test_study_run_all_runs_each_study_and_writes_a_timing_table(tmp_path, capsys, monkeypatch):
    import csv

    import hybridpriv.studies as studies
    from hybridpriv.cli import main

    # two quick studies stand in for the eleven (each study's --quick run has its own test)
    monkeypatch.setattr(studies, "STUDIES", {k: studies.STUDIES[k] for k in ("avent-kvh", "avent-amplification")})
    assert main(["study", "run", "all", "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(open(tmp_path / "timings.csv")))
    assert [r["study"] for r in rows] == ["avent-kvh", "avent-amplification", "all"]
    assert all(r["scale"] == "quick" for r in rows) and float(rows[-1]["seconds"]) > 0
    assert float(rows[-1]["seconds"]) == pytest.approx(sum(float(r["seconds"]) for r in rows[:-1]), abs=0.2)
    assert (tmp_path / "avent-kvh.nc").exists() and (tmp_path / "avent-amplification.png").exists()
    assert "all 2 studies in" in out
    # the paper claims the studies check, regenerated from this run's numbers, one table per paper
    report = (tmp_path / "reproduction.md").read_text()
    assert "### Avent, Dubey, Korolova" in report and "`avent-kvh` (quick scale," in report
    assert "| Cor. 4.4, Fig. 1 |" in report and "**holds**" in report
    assert (tmp_path / "avent-kvh.claims.md").read_text().count("| Cor. 4.4") == 1


def test_claims_round_trip_and_refuse_an_unknown_verdict():
    from hybridpriv.studies._claims import Claim, from_attr, markdown, to_attr

    c = [Claim("Fig. 1", "a | b", "1", "2", "holds"), Claim("Sec. 2", "c", "-", "3", "partly")]
    assert from_attr(to_attr(c)) == c
    text = markdown("Paper", [("s", x) for x in c], {"s": "quick scale, 1.0 s"})
    assert "a \\| b" in text and text.count("\n| ") == 3 and "`s` (quick scale, 1.0 s)" in text
    with pytest.raises(ValueError, match="verdict must be one of"):
        Claim("x", "y", "z", "w", "confirmed")
