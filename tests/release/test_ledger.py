"""The persistent ledger: budgets, refusals before spending, the lock, atomic writes, SIGKILL."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hybridpriv.accounting import BudgetExceededError
from hybridpriv.privacy import Guarantee
from hybridpriv.release.ledger import Ledger, LedgerError, format_ledger

BUDGETS = {"panel": (math.inf, 0.0), "opt-in": (1.0, 0.0), "strict": (0.1, 1e-6)}


def test_created_with_budgets_and_survives(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked(BUDGETS) as state:
        state.record({"opt-in": Guarantee(0.6), "strict": Guarantee(0.05)}, "first", kind="grouped")
    data = json.loads(path.read_text())
    assert data["units"]["panel"] == {"epsilon": "inf", "delta": 0.0}  # plain JSON, no Infinity
    assert data["units"]["opt-in"] == {"epsilon": 1.0, "delta": 0.0}
    # a second open (another run) sees the first release and refuses to overspend
    with Ledger(path).locked({"opt-in": (100.0, 0.0)}) as state:  # budgets of an existing file are ignored
        assert state.budgets["opt-in"] == (1.0, 0.0)
        state.record({"opt-in": Guarantee(0.4)}, "second")
        with pytest.raises(BudgetExceededError, match="'opt-in'.*ledger"):
            state.check({"opt-in": Guarantee(0.01)}, "third")
    assert [r["label"] for r in json.loads(path.read_text())["releases"]] == ["first", "second"]
    assert Ledger(path).read().accountant().spent_epsilon()["opt-in"] == pytest.approx(1.0)


def test_refused_release_writes_nothing(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked(BUDGETS) as state:
        before = path.read_bytes()
        with pytest.raises(BudgetExceededError, match="'strict'"):
            state.record({"strict": Guarantee(0.2)}, "too much")
        with pytest.raises(BudgetExceededError, match="delta"):
            state.record({"strict": Guarantee(0.01, 1e-5)}, "too much delta")
    assert path.read_bytes() == before


def test_unknown_unit_and_public_units(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked(BUDGETS) as state:
        with pytest.raises(LedgerError, match=r"no budget for unit\(s\) \['users'\]"):
            state.check({"users": Guarantee(1.0)}, "x")
        # a public promise to a unit the ledger does not track is not charged
        entry = state.record({"opt-in": Guarantee(0.1), "elsewhere": Guarantee(math.inf)}, "ok")
    assert set(entry["spent"]) == {"opt-in"}


def test_bad_files(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(LedgerError, match="not a JSON"):
        Ledger(tmp_path / "x.json").read()
    (tmp_path / "y.json").write_text('{"format": "other"}')
    with pytest.raises(LedgerError, match="not a hybridpriv ledger"):
        Ledger(tmp_path / "y.json").read()
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(tmp_path / "missing.json").read()
    with pytest.raises(LedgerError, match="folder"):
        Ledger(tmp_path)
    with pytest.raises(ValueError, match="'opt-in'"):
        with Ledger(tmp_path / "z.json").locked({"opt-in": (-1.0, 0.0)}):
            pass


def test_totals_and_format(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": (10.0, 0.0)}) as state:
        for _ in range(20):
            state.record({"users": Guarantee(0.1)}, "k=3", kind="user-item")
        totals = state.totals(1e-6)["users"]
    assert totals.basic_epsilon == pytest.approx(2.0)
    assert totals.pld_epsilon < totals.basic_epsilon
    text = format_ledger(Ledger(path).read(), 1e-6)
    assert "20 release(s)" in text and "RDP" in text and "PLD" in text
    assert f"{totals.pld_epsilon:.4g}" in text and "8" in text.splitlines()[2]  # 10 - 2 left


SPEND_LAST = """
import sys, time
from hybridpriv.accounting import BudgetExceededError
from hybridpriv.privacy import Guarantee
from hybridpriv.release.ledger import Ledger
try:
    with Ledger(sys.argv[1]).locked({"users": (1.0, 0.0)}) as state:
        state.check({"users": Guarantee(1.0)}, "last")
        time.sleep(1.0)  # both processes would pass the check without the lock
        state.record({"users": Guarantee(1.0)}, "last")
    print("spent")
except BudgetExceededError:
    print("refused")
"""


def test_concurrent_runs_cannot_both_spend_the_last_budget(tmp_path):
    path = str(tmp_path / "ledger.json")
    procs = [subprocess.Popen([sys.executable, "-c", SPEND_LAST, path], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]  # hang guard only
    assert sorted(outs) == ["refused", "spent"]
    assert len(json.loads(Path(path).read_text())["releases"]) == 1


KILLED = """
import sys
from hybridpriv.privacy import Guarantee
from hybridpriv.release.ledger import Ledger
with Ledger(sys.argv[1]).locked() as state:
    state.record({"users": Guarantee(0.5)}, "killed")
"""


def test_sigkill_while_writing_leaves_the_old_ledger_and_frees_the_lock(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": (1.0, 0.0)}) as state:
        state.record({"users": Guarantee(0.5)}, "before")
    before = path.read_bytes()
    marker = tmp_path / "paused"
    env = {**os.environ, "HYBRIDPRIV_RELEASE_PAUSE_AT": "ledger-tmp-written",
           "HYBRIDPRIV_RELEASE_PAUSE_MARKER": str(marker)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], env=env)
    try:
        deadline = time.monotonic() + 300  # hang guard only
        while not marker.exists():
            assert proc.poll() is None, "the job ended before reaching the pause point"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [p.name for p in tmp_path.glob(".ledger.json.*.tmp")]  # the new version was half-way
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert path.read_bytes() == before
    # the kernel dropped the dead job's lock: the budget it did not spend is still there
    with Ledger(path).locked() as state:
        state.record({"users": Guarantee(0.5)}, "after")
    assert [r["label"] for r in json.loads(path.read_text())["releases"]] == ["before", "after"]
