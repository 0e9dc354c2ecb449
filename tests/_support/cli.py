"""Running the CLI from tests: in process (with capsys) or as a fresh interpreter."""

import subprocess
import sys

from hybridpriv.cli import main


def run_cli(capsys, *argv):
    """``hybridpriv ARGV`` in this process: ``(exit code, stdout, stderr)``."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def select_example_in_a_fresh_process(example, out, draws, trials, *extra):
    """``hybridpriv select --example EXAMPLE`` in a new interpreter (quiet); its stdout.  Fails on a
    non-zero exit, showing stderr; the time limit is only a hang guard."""
    cmd = [sys.executable, "-m", "hybridpriv.cli", "select", "--example", example, "--out", str(out),
           "--draws", str(draws), "--trials", str(trials), "--quiet", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def same_numbers_in_a_fresh_process_and_on_two_workers(cli, table, tmp_path):
    """``cli(out, *extra)`` (a fresh-interpreter run) into ``tmp_path/a``, and again on a local cluster of
    2 worker processes into ``tmp_path/two``: the same ``table(stdout)`` and the same posterior,
    evaluation and decision (dask is in the test extra: a missing dask fails, never skips).  Returns the
    first run's stdout and its decision dataset."""
    import distributed  # noqa: F401
    import xarray as xr

    one, two = cli(tmp_path / "a"), cli(tmp_path / "two", "--workers", "2")
    assert "dask: local 2 workers" in two and table(two) == table(one)
    trees = [xr.open_datatree(tmp_path / d / "selection.nc") for d in ("a", "two")]
    for group in ("posterior", "evaluation", "decision"):
        xr.testing.assert_identical(trees[0][group].to_dataset().drop_attrs(), trees[1][group].to_dataset().drop_attrs())
    assert (tmp_path / "a" / "selection.png").stat().st_size > 10_000
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["selection.nc", "selection.png"]
    return one, trees[0]["decision"].to_dataset()


def grouped_example_with_private_data(d):
    """Folder ``d`` with the built-in grouped example (``grouped.toml``, ``panel.csv``) and its real private
    records as per-group CSVs in ``d/data`` (what a release reads)."""
    import csv
    import shutil
    from importlib import resources
    from pathlib import Path

    examples = Path(str(resources.files("hybridpriv") / "examples"))
    shutil.copy(examples / "grouped.toml", d / "grouped.toml")
    shutil.copy(examples / "panel.csv", d / "panel.csv")
    data = d / "data"
    data.mkdir()
    rows = list(csv.DictReader((examples / "acs12-hours.csv").open()))
    for group in ("opt-in", "default", "strict"):
        (data / f"{group}.csv").write_text("hours\n" + "".join(f"{r['hours']}\n" for r in rows if r["group"] == group))
    return d


def fresh_data(example, tmp_path, name: str = "data"):
    """A copy of ``example/data``'s private records (CSV files only: no ledger, no note of one) in
    ``tmp_path/name``, as another dataset."""
    import shutil

    d = tmp_path / name
    d.mkdir()
    for f in (example / "data").glob("*.csv"):
        shutil.copy(f, d / f.name)
    return d
