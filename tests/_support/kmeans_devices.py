"""The faithful example split for a K-means release with devices (the first 58 non-pilot rows trust the curator,
the others report through simulated devices), and the device command run in-process."""

from __future__ import annotations

import csv
import shutil
from importlib import resources
from pathlib import Path

EXAMPLES = Path(str(resources.files("hybridpriv") / "examples"))


def faithful_release_folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``(SPEC, data folder holding tcm.csv, the LM users' points as user,x,y)`` in ``tmp_path``."""
    for f in EXAMPLES.glob("faithful*"):
        shutil.copy(f, tmp_path / f.name)
    rows = [r for r in csv.DictReader((tmp_path / "faithful.csv").open()) if r["role"] != "pilot"]
    data = tmp_path / "data"
    data.mkdir()
    (data / "tcm.csv").write_text("x,y\n" + "".join(f"{r['x']},{r['y']}\n" for r in rows[:58]))
    points = tmp_path / "lm-points.csv"
    points.write_text("user,x,y\n" + "".join(f"u{r['source_row']},{r['x']},{r['y']}\n" for r in rows[58:]))
    return tmp_path / "faithful.toml", data, points


def run_devices(capsys, *argv: str) -> str:
    """``python -m hybridpriv.families.kmeans.device ARGV`` in-process: its output (it must exit 0)."""
    from hybridpriv.families.kmeans.device import main

    capsys.readouterr()
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out
