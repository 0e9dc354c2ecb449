"""The one progress renderer: silent for short phases and under --quiet, a bar with an ETA otherwise."""

import io
import re

import pytest

from hybridpriv.cli import main
from hybridpriv.engine.progress import Phase, enabled, phase, quiet


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_phase_draws_a_bar_with_counts_and_an_eta_on_a_terminal():
    out = _Terminal()
    with phase("evaluating", total=10, unit="datasets", after=0.0, stream=out) as update:
        for k in range(10):
            update(k + 1)
    text = out.getvalue()
    assert "evaluating" in text and "10/10" in text and "datasets" in text and "ETA" in text


def test_redirected_to_a_file_a_phase_writes_one_line():
    """Issue 24, item 8: redirected progress was bar frames; now one line per phase, no control characters."""
    out = io.StringIO()
    with phase("evaluating", total=10, unit="datasets", after=0.0, stream=out) as update:
        for k in range(10):
            update(k + 1)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.startswith("evaluating: 10/10 datasets in ") and "\x1b" not in text


def test_a_phase_without_a_count_says_only_how_long_it_took():
    # "choosing the data family (PSIS-LOO): 0 in 9.7 s" read as if nothing had been done
    out = io.StringIO()
    with phase("choosing the data family", total=None, after=0.0, stream=out):
        pass
    assert re.fullmatch(r"choosing the data family: done in \d+\.\d s\n", out.getvalue()), out.getvalue()


def test_a_short_phase_and_a_quiet_run_draw_nothing():
    out = io.StringIO()
    with phase("short", total=3, after=3600.0, stream=out) as update:
        update(3)
    assert out.getvalue() == ""
    with quiet():
        assert not enabled()
        with phase("silenced", total=3, after=0.0, stream=out) as update:
            update(3)
    assert out.getvalue() == "" and enabled()


def test_bad_totals_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"total must be an integer >= 0 or None, got -1"):
        Phase("x", total=-1)


@pytest.mark.slow
def test_quiet_select_prints_no_progress_but_the_same_table(tmp_path, capsys):
    args = ["select", "--draws", "6", "--trials", "2", "--seed", "2"]
    assert main([*args, "--out", str(tmp_path / "a"), "--quiet"]) == 0
    quiet_run = capsys.readouterr()
    assert "ETA" not in quiet_run.err and "recommended:" in quiet_run.out
