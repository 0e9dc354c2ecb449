"""The persistent ledger: budgets in their own terms, refusals before spending, the lock, atomic writes,
symbolic and hard links, the hash chain, damaged files, version 1, SIGKILL (issue 23, items 1-3, 8, 11)."""

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
from hybridpriv.core.privacy import Guarantee
from hybridpriv.release.ledger import Ledger, LedgerError, format_ledger, ledger_for_data

AR = "add-remove"
BUDGETS = {"panel": Guarantee(math.inf), "opt-in": Guarantee(1.0), "strict": Guarantee(0.1, 1e-6)}


def test_created_with_budgets_and_survives(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked(BUDGETS) as state:
        state.record({"opt-in": Guarantee(0.6), "strict": Guarantee(0.05)}, "first", kind="grouped")
    data = json.loads(path.read_text())
    assert data["version"] == 2 and len(data["salt"]) == 64 and data["head"]
    assert data["units"]["panel"] == {"epsilon": "inf", "delta": 0.0, "relation": AR, "trust": "central"}  # no Infinity
    assert data["units"]["opt-in"] == {"epsilon": 1.0, "delta": 0.0, "relation": AR, "trust": "central"}
    # a second open (another run) sees the first release and refuses to overspend
    with Ledger(path).locked({"opt-in": Guarantee(100.0)}) as state:  # budgets of an existing file are ignored
        assert state.budgets["opt-in"] == Guarantee(1.0)
        state.record({"opt-in": Guarantee(0.4)}, "second")
        with pytest.raises(BudgetExceededError, match="'opt-in'.*ledger"):
            state.check({"opt-in": Guarantee(0.01)}, "third")
    assert [r["label"] for r in json.loads(path.read_text())["releases"]] == ["first", "second"]
    assert Ledger(path).read().accountant().spent_epsilon()["opt-in"] == pytest.approx(1.0)


def test_a_charge_is_converted_to_the_relation_of_the_units_budget(tmp_path):
    """Item 1: a replace-one budget of 1 and a mechanism declaring add/remove 0.5 (which implies replace-one
    1.0): one release fits, the second is refused; the entry keeps the declared and the charged promise."""
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": Guarantee(1.0, relation="replace")}) as state:
        entry = state.record({"users": Guarantee(0.5, relation=AR)}, "half")
        with pytest.raises(BudgetExceededError, match=r"epsilon=2.*'users'.*declared epsilon=0.5 \(add-remove\), "
                                                      r"charged epsilon=1 \(replace\)"):
            state.check({"users": Guarantee(0.5, relation=AR)}, "half again")
    assert entry["declared"]["users"] == {"epsilon": 0.5, "delta": 0.0, "relation": AR, "trust": "central"}
    assert entry["spent"]["users"] == {"epsilon": 1.0, "delta": 0.0, "relation": "replace", "trust": "central"}
    # an add/remove budget cannot be charged a replace-one promise (it does not bound add/remove), nor a
    # local-trust budget a central one (it says nothing about the curator): both cost inf
    with Ledger(tmp_path / "b.json").locked({"u": Guarantee(5.0), "l": Guarantee(5.0, trust="local")}) as state:
        with pytest.raises(BudgetExceededError, match="'u'"):
            state.check({"u": Guarantee(0.1, relation="replace")}, "x")
        with pytest.raises(BudgetExceededError, match="'l'"):
            state.check({"l": Guarantee(0.1)}, "y")
        state.record({"l": Guarantee(0.5, trust="local"), "u": Guarantee(0.5, trust="local")}, "z")  # local: fine
        assert state.totals()["u"].basic_epsilon == 0.5


def test_charge_to_by_brute_force_over_every_pair_of_terms():
    """``charge_to`` against a table derived by hand (group privacy for two changes; a central promise says
    nothing to a local unit; local implies central)."""
    e, d = 0.3, 1e-6
    expect = {  # (declared relation, trust) -> (unit relation, trust) -> (epsilon, delta)
        (AR, "central"): {(AR, "central"): (e, d), ("replace", "central"): (2 * e, (1 + math.exp(e)) * d),
                          (AR, "local"): (math.inf, 0.0), ("replace", "local"): (math.inf, 0.0)},
        (AR, "local"): {(AR, "central"): (e, d), ("replace", "central"): (2 * e, (1 + math.exp(e)) * d),
                        (AR, "local"): (e, d), ("replace", "local"): (2 * e, (1 + math.exp(e)) * d)},
        ("replace", "central"): {(AR, "central"): (math.inf, 0.0), ("replace", "central"): (e, d),
                                 (AR, "local"): (math.inf, 0.0), ("replace", "local"): (math.inf, 0.0)},
        ("replace", "local"): {(AR, "central"): (math.inf, 0.0), ("replace", "central"): (e, d),
                               (AR, "local"): (math.inf, 0.0), ("replace", "local"): (e, d)},
    }
    for (rel, trust), row in expect.items():
        for (urel, utrust), (ee, dd) in row.items():
            c = Guarantee(e, d, rel, trust).charge_to(Guarantee(1.0, 0.01, urel, utrust))
            assert (c.relation, c.trust) == (urel, utrust)
            assert c.epsilon == pytest.approx(ee) and c.delta == pytest.approx(dd), (rel, trust, urel, utrust)
    # a perfect promise (never reads the unit) costs nothing anywhere
    for urel in (AR, "replace"):
        for utrust in ("central", "local"):
            assert Guarantee(0.0).charge_to(Guarantee(1.0, 0, urel, utrust)).epsilon == 0.0


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
        with Ledger(tmp_path / "z.json").locked({"opt-in": Guarantee(0.0)}):
            pass


def _made(tmp_path: Path, releases: int = 1) -> Path:
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": Guarantee(2.0), "panel": Guarantee(math.inf)}) as state:
        for k in range(releases):
            state.record({"users": Guarantee(0.5)}, f"r{k}")
    return path


#: Item 8: damaged files, each as (change to the JSON data, what the refusal names).
DAMAGES = [
    (lambda d: d["releases"][0].pop("spent"), r"releases\[0\] lacks 'spent'"),
    (lambda d: d["releases"][0].__setitem__("spent", [1, 2]), r"releases\[0\].spent must be a table"),
    (lambda d: d["releases"][0]["spent"].__setitem__("ghost", d["releases"][0]["spent"]["users"]),
     r"releases\[0\].spent names unit 'ghost'"),
    (lambda d: d["units"]["users"].pop("epsilon"), r"units.users lacks 'epsilon'"),
    (lambda d: d.__setitem__("units", [1]), r"units must be a table"),
    (lambda d: d.__setitem__("units", {}), r"units is empty"),
    (lambda d: d.__setitem__("releases", {"a": 1}), r"releases must be a list"),
    (lambda d: d["units"]["users"].__setitem__("epsilon", -1), r"units.users.epsilon must be > 0"),
    (lambda d: d["units"]["users"].__setitem__("epsilon", "lots"), r"units.users.epsilon must be a number"),
    (lambda d: d["units"]["users"].__setitem__("relation", "swap"), r"units.users.relation must be one of"),
    (lambda d: d["releases"][0]["spent"]["users"].__setitem__("epsilon", None), r"spent.users.epsilon must be a number"),
    (lambda d: d["releases"][0]["spent"]["users"].__setitem__("delta", 2), r"spent.users.delta must be in \[0, 1\)"),
    (lambda d: d["releases"][0].pop("label"), r"releases\[0\] lacks 'label'"),
    (lambda d: d["releases"][0].__setitem__("declared", "x"), r"releases\[0\].declared must be a table"),
    (lambda d: d["releases"].__setitem__(0, "x"), r"releases\[0\] must be a table"),
    (lambda d: d.pop("salt"), r"lacks 'salt'"),
    (lambda d: d.__setitem__("salt", "zz"), r"salt must be"),
    (lambda d: d.__setitem__("version", True), r"version true"),
    # hand edits of well-formed content break the hash chain (item 3)
    (lambda d: d["releases"].pop(0), r"releases\[0\] does not follow|head does not match"),
    (lambda d: d["releases"].pop(), r"head does not match its last entry"),
    (lambda d: d["units"]["users"].__setitem__("epsilon", 100.0), r"releases\[0\] does not follow .*budgets"),
    (lambda d: d["releases"][0]["spent"]["users"].__setitem__("epsilon", 0.0), r"releases\[1\] does not follow"),
]


@pytest.mark.parametrize("damage,match", DAMAGES, ids=[m for _, m in DAMAGES])
def test_damaged_files_are_refused_naming_the_key(tmp_path, damage, match, capsys):
    from hybridpriv.cli import main

    path = _made(tmp_path, releases=2)
    data = json.loads(path.read_text())
    damage(data)
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerError, match=match):
        Ledger(path).read()
    # from the command line: exit 2, one error line, no traceback, for --show and for a release
    assert main(["release", "--ledger", str(path), "--show"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and err.count("\n") == 1 and "damaged" in err


def test_symbolic_links_share_the_real_file_and_its_lock(tmp_path):
    """Item 2: through a link and the real name, a budget of 2 takes two releases of 1, not three."""
    real = tmp_path / "real" / "ledger.json"
    real.parent.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with Ledger(link).locked({"users": Guarantee(2.0)}) as state:
        state.record({"users": Guarantee(1.0)}, "one")
    assert link.is_symlink() and real.is_file()
    assert Ledger(link).lock_path == real.with_name("ledger.json.lock")
    with Ledger(real).locked() as state:
        state.record({"users": Guarantee(1.0)}, "two")
    with Ledger(link).locked() as state:
        with pytest.raises(BudgetExceededError):
            state.check({"users": Guarantee(1.0)}, "three")
    assert link.is_symlink() and len(json.loads(real.read_text())["releases"]) == 2
    assert format_ledger(Ledger(link).read()) == format_ledger(Ledger(real).read())


def test_a_ledger_with_hard_links_is_refused(tmp_path):
    path = _made(tmp_path)
    os.link(path, tmp_path / "second-name.json")
    with pytest.raises(LedgerError, match="2 hard links"):
        with Ledger(tmp_path / "second-name.json").locked():
            pass


def test_budgets_are_checked_against_the_specs(tmp_path):
    path = tmp_path / "ledger.json"
    spec = {"users": Guarantee(1.0, relation="replace")}
    with Ledger(path).locked({"users": Guarantee(3.0, relation="replace")}) as state:
        with pytest.raises(LedgerError, match=r"above the SPEC's.*--allow-budget-above-spec"):
            state.check_budgets(spec)
        raised = state.check_budgets(spec, allow_above=True)
        assert raised[0]["unit"] == "users" and raised[0]["allowed_by"] == "--allow-budget-above-spec"
        assert state.check_budgets({"users": Guarantee(5.0, relation="replace")}) == []
        with pytest.raises(LedgerError, match="replace neighbours.*add-remove"):
            state.check_budgets({"users": Guarantee(3.0)})
        with pytest.raises(LedgerError, match="no budget for unit 'other'"):
            state.check_budgets({"other": Guarantee(1.0)})


def test_fingerprints_tie_the_ledger_to_its_data(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"a": Guarantee(5.0), "b": Guarantee(5.0)}) as state:
        fp = state.fingerprints({"a": b"records of a", "b": b"records of b"})
        assert state.check_data(fp) == []
        state.record({"a": Guarantee(1.0), "b": Guarantee(1.0)}, "first", data=fp)
        same = state.fingerprints({"a": b"records of a", "b": b"records of b"})
        assert same == fp and state.check_data(same) == []
        other = state.fingerprints({"a": b"records of a", "b": b"other records"})
        with pytest.raises(LedgerError, match=r"unit\(s\) \['b'\] differ.*--data-changed") as info:
            state.check_data(other)
        assert other["b"] not in str(info.value) and fp["b"] not in str(info.value)
        assert state.check_data(other, allow_changed=True) == ["b"]
    salt = json.loads(path.read_text())["salt"]
    with Ledger(tmp_path / "other.json").locked({"a": Guarantee(5.0)}) as state2:
        assert json.loads((tmp_path / "other.json").read_text())["salt"] != salt
        assert state2.fingerprints({"a": b"records of a"})["a"] != fp["a"]  # salted: not linkable across ledgers


def test_a_data_folder_keeps_to_its_ledger(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    # default: the ledger lives with the data
    target, pointer = ledger_for_data(data, None)
    assert target == (data / "hybridpriv-ledger.json").resolve() and pointer is None
    # a ledger elsewhere is noted in the folder; then another one is refused, and a missing one too
    elsewhere = tmp_path / "ledgers" / "l.json"
    target, pointer = ledger_for_data(data, elsewhere)
    assert target == elsewhere.resolve() and pointer == data / ".hybridpriv-ledger"
    pointer.write_text(json.dumps({"ledger": str(target)}))
    for given in (None, elsewhere):  # noted, but deleted: refused, not recreated with a fresh budget
        with pytest.raises(LedgerError, match="missing: restore it"):
            ledger_for_data(data, given)
    with Ledger(elsewhere).locked({"users": Guarantee(1.0)}):
        pass
    assert ledger_for_data(data, None) == (target, None)  # followed by default, noted already
    with pytest.raises(LedgerError, match="charged to the ledger .*a second ledger"):
        ledger_for_data(data, tmp_path / "fresh.json")
    pointer.unlink()
    (data / "hybridpriv-ledger.json").write_text("{}")
    with pytest.raises(LedgerError, match="have their own ledger"):
        ledger_for_data(data, tmp_path / "fresh.json")


def _v1(tmp_path: Path) -> Path:
    """A ledger as version 1 wrote it: two releases declared add/remove 0.5, budget 1 (no relation)."""
    path = tmp_path / "v1.json"
    entry = {"created": "2026-11-01T00:00:00+00:00", "label": "half", "kind": "grouped",
             "spent": {"users": {"epsilon": 0.5, "delta": 0.0, "relation": AR, "trust": "central"}}}
    path.write_text(json.dumps({"format": "hybridpriv-ledger", "version": 1, "created": "2026-11-01T00:00:00+00:00",
                                "units": {"users": {"epsilon": 1.0, "delta": 0.0}},
                                "releases": [{**entry, "id": "1-a"}, {**entry, "id": "2-b"}]}))
    return path


def test_a_version_1_ledger_is_charged_again_in_its_units_terms(tmp_path, capsys):
    """Item 11: upgraded with the SPEC's replace-one relation, the two releases cost 2 of 1: --show says
    OVERSPENT (not "left inf") and exits 2 with one error line; no release is accepted."""
    from hybridpriv.cli import main

    path = _v1(tmp_path)
    with Ledger(path).locked({"users": Guarantee(1.0, relation="replace")}) as state:
        assert state.upgraded and state.overspent() == {"users": (2.0, 1.0)}
        with pytest.raises(LedgerError, match="already overspent"):
            state.check({"users": Guarantee(1e-6, relation="replace")}, "tiny")
        text = format_ledger(state)
    users = next(line for line in text.splitlines() if line.startswith("users"))
    assert users.endswith("-1  OVERSPENT") and "inf" not in users.split("|")[-1]
    assert main(["release", "--ledger", str(path), "--show"]) == 0  # as add/remove (its own terms): 1 of 1
    capsys.readouterr()
    # the same ledger with a replace-one unit: rewrite it with the relation recorded (an upgrade + a record
    # would be refused), so --show sees the overspending in the unit's own terms
    with Ledger(path).locked({"users": Guarantee(1.0, relation="replace")}) as state:
        from hybridpriv.release.ledger_file import write_json_atomic

        write_json_atomic(path, state.data)
    assert main(["release", "--ledger", str(path), "--show"]) == 2
    out, err = capsys.readouterr()
    assert "OVERSPENT" in out and err.startswith("error: ") and err.count("\n") == 1 and "overspent" in err


def test_totals_and_format(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": Guarantee(10.0)}) as state:
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
from hybridpriv.core.privacy import Guarantee
from hybridpriv.release.ledger import Ledger
try:
    with Ledger(sys.argv[1]).locked({"users": Guarantee(1.0)}) as state:
        state.check({"users": Guarantee(1.0)}, "last")
        time.sleep(1.0)  # both processes would pass the check without the lock
        state.record({"users": Guarantee(1.0)}, "last")
    print("spent")
except BudgetExceededError:
    print("refused")
"""


def test_concurrent_runs_cannot_both_spend_the_last_budget(tmp_path):
    """Two processes, one through a symbolic link: they share the real file's lock."""
    path = tmp_path / "ledger.json"
    link = tmp_path / "link.json"
    link.symlink_to(path)
    procs = [subprocess.Popen([sys.executable, "-c", SPEND_LAST, str(p)], stdout=subprocess.PIPE, text=True)
             for p in (path, link)]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]  # hang guard only
    assert sorted(outs) == ["refused", "spent"]
    assert len(json.loads(path.read_text())["releases"]) == 1 and link.is_symlink()


KILLED = """
import sys
from hybridpriv.core.privacy import Guarantee
from hybridpriv.release.ledger import Ledger
with Ledger(sys.argv[1]).locked() as state:
    state.record({"users": Guarantee(0.5)}, "killed")
"""


def test_sigkill_while_writing_leaves_the_old_ledger_and_frees_the_lock(tmp_path):
    path = tmp_path / "ledger.json"
    with Ledger(path).locked({"users": Guarantee(1.0)}) as state:
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
