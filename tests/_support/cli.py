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
