"""The study registry lists studies without importing them (``study list`` answers at once)."""

import subprocess
import sys


def test_study_list_imports_no_study_module_and_no_pymc():
    code = ("import sys; from hybridpriv.cli import main; main(['study', 'list']); "
            "print(sorted(m for m in sys.modules if m.startswith('hybridpriv.studies.') or m in ('pymc', 'pytensor')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 12 and lines[0].startswith("ferrando-means")
    assert lines[-1] == "[]", lines[-1]


def test_every_registered_study_module_has_a_description_and_the_runner():
    from hybridpriv.studies import STUDIES

    for name, study in STUDIES.items():
        assert study.description and len(study.description) < 200, name
        assert callable(study.module.run) and callable(study.module.plot), name
        assert study.module.DESCRIPTION == study.description
