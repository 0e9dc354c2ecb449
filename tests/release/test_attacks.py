"""Issue 23's attacks, replayed with the toolkit's own commands: each must now end with exit 2 and one
``error:`` line before anything is spent or published (or, for item 6, a truthful record).

One grouped SPEC with replace-one neighbours and epsilon 1, and four plugins (``[[mechanisms]]``):
``half-ar`` declares add/remove 0.5 (which implies replace-one 1: rightly eligible, charged 1),
``leaky`` declares epsilon 1 but adds Laplace(1e-9) noise, ``zero`` declares epsilon 0 once built with
the fitted model, ``uni`` builds Laplace noise from ``rng.uniform``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hybridpriv.cli import main

pytestmark = pytest.mark.slow  # a select run, then releases with audits (about 40 s in all on 2 cores)

PLUGINS = textwrap.dedent('''
    import numpy as np
    from hybridpriv.estimators import Estimator
    from hybridpriv.core.privacy import Guarantee


    class _Mean(Estimator):
        def __init__(self, groups, bounds):
            super().__init__(groups, bounds)

        def _mean(self, stats):
            return stats.sums.sum(axis=1) / self.sizes.sum()


    class HalfAR(_Mean):
        """Laplace mean, add/remove 0.5-DP (noise for add/remove sensitivity at epsilon 0.5, doubled)."""
        label = "half-ar"

        @property
        def privacy(self):
            return {g.name: Guarantee(g.epsilon / 2, 0.0, "add-remove") for g in self.groups}

        def _release(self, stats, rng, trials):
            b = 2 * self.bounds.sum_sensitivity("add-remove") / self.sizes.sum() / 0.5
            return self._mean(stats) + rng.laplace(0.0, b, size=trials)


    class Leaky(_Mean):
        label = "leaky"

        @property
        def privacy(self):
            return {g.name: Guarantee(g.epsilon, 0.0, "replace") for g in self.groups}

        def _release(self, stats, rng, trials):
            return self._mean(stats) + rng.laplace(0.0, 1e-9, size=trials)


    class Zero(_Mean):
        label = "zero"

        def __init__(self, groups, bounds, posterior=None):
            super().__init__(groups, bounds)
            self.posterior = posterior

        @property
        def privacy(self):
            return {g.name: Guarantee(0.0 if self.posterior is not None else 1.0, 0.0, "replace") for g in self.groups}

        def _release(self, stats, rng, trials):
            return self._mean(stats) + rng.laplace(0.0, 1.0, size=trials)


    class Uni(_Mean):
        label = "uni"

        @property
        def privacy(self):
            return {g.name: Guarantee(g.epsilon, 0.0, "replace") for g in self.groups}

        def _release(self, stats, rng, trials):
            b = self.bounds.width / self.sizes.sum()
            u = rng.uniform(-0.5, 0.5, size=trials)
            return self._mean(stats) - b * np.sign(u) * np.log1p(-2 * np.abs(u))
''')

SPEC = textwrap.dedent('''
    description = "issue 23 attacks"
    bounds = [0, 10]
    relation = "replace"
    [[groups]]
    name = "users"
    size = 200
    epsilon = 1.0
    [model]
    family = "normal"
    family_options = { mu = [5.0, 3.0], sigma_scale = 5.0 }
    [evaluation]
    draws = 4
    trials = 2
    estimators = ["weighted"]
    [[mechanisms]]
    class = "attack_plugins:HalfAR"
    [[mechanisms]]
    class = "attack_plugins:Leaky"
    [[mechanisms]]
    class = "attack_plugins:Zero"
    [[mechanisms]]
    class = "attack_plugins:Uni"
''')

SECRET = 7.65432  # a private record: no refusal may quote it


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    d = tmp_path_factory.mktemp("attack")
    (d / "attack_plugins.py").write_text(PLUGINS)
    (d / "spec.toml").write_text(SPEC)
    assert main(["select", str(d / "spec.toml"), "--out", str(d / "sel"), "--quiet"]) == 0
    return d


def records(d: Path, name: str = "data", tweak=None) -> Path:
    x = np.random.default_rng(1).uniform(0, 10, 200).round(3)
    x[5] = SECRET
    lines = [f"{v}" for v in x]
    if tweak is not None:
        lines = tweak(lines)
    folder = d / name
    folder.mkdir()
    (folder / "users.csv").write_text("v\n" + "\n".join(lines) + "\n")
    return folder


def release(capsys, setting, data, candidate, *extra):
    code = main(["release", str(setting / "spec.toml"), "--data", str(data), "--selection",
                 str(setting / "sel" / "selection.nc"), "--candidate", candidate, *map(str, extra)])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_select_marks_unaudited_plugins_and_prints_the_imports(setting, capsys, tmp_path):
    assert main(["select", str(setting / "spec.toml"), "--out", str(tmp_path / "s"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "this SPEC imports code" in out and f"attack_plugins ({setting / 'attack_plugins.py'})" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    for plugin in ("half-ar", "leaky", "zero", "uni"):
        assert "[plugin, unaudited]" in rows[plugin]
    assert "[plugin, unaudited]" not in rows["weighted"]


def test_item1_a_charge_in_another_relation_is_converted(setting, capsys, tmp_path):
    data = records(tmp_path)
    code, out, err = release(capsys, setting, data, "half-ar", "--out", tmp_path / "r1")
    assert code == 0, err
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert rec["guarantee"]["users"]["relation"] == "add-remove" and rec["charged"]["users"] == {
        "epsilon": 1.0, "delta": 0.0, "relation": "replace", "trust": "central"}
    assert rec["audit"]["source"] == "audited before this release"
    code, _, err = release(capsys, setting, data, "half-ar", "--out", tmp_path / "r2")
    assert code == 2 and "over its budget" in one_error(err) and not (tmp_path / "r2" / "release.json").exists()


def test_item2_a_ledger_through_a_symbolic_link_does_not_fork(setting, capsys, tmp_path):
    data = records(tmp_path)
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "real" / "ledger.json")
    budget = ["--budget", "users=2", "--allow-budget-above-spec", "--ledger"]  # the issue's: 2 of epsilon 1
    real = tmp_path / "real" / "ledger.json"
    assert release(capsys, setting, data, "weighted", *budget, link, "--out", tmp_path / "r1")[0] == 0
    assert release(capsys, setting, data, "weighted", *budget, real, "--out", tmp_path / "r2")[0] == 0
    code, _, err = release(capsys, setting, data, "weighted", *budget, link, "--out", tmp_path / "r3")
    assert code == 2 and "over its budget" in one_error(err)
    assert main(["release", "--ledger", str(link), "--show"]) == 0
    assert "2 release(s)" in capsys.readouterr().out
    assert link.is_symlink() and (tmp_path / "real" / "ledger.json.lock").exists()
    assert not (tmp_path / "link.json.lock").exists()


def test_item3_a_ledger_is_tied_to_its_data_and_its_specs_budgets(setting, capsys, tmp_path):
    data = records(tmp_path)
    code, _, err = release(capsys, setting, data, "weighted", "--budget", "users=inf", "--out", tmp_path / "r0")
    assert code == 2 and "--allow-budget-above-spec" in one_error(err) and not (data / "hybridpriv-ledger.json").exists()
    assert release(capsys, setting, data, "weighted", "--out", tmp_path / "r1")[0] == 0
    ledger = data / "hybridpriv-ledger.json"
    entry = json.loads(ledger.read_text())["releases"][0]
    assert len(entry["data"]["users"]) == 64  # the salted fingerprint of the data it spent on
    # a new name: refused (the data folder has its ledger)
    code, _, err = release(capsys, setting, data, "weighted", "--ledger", tmp_path / "new.json", "--out", tmp_path / "r2")
    assert code == 2 and "their own ledger" in one_error(err)
    # a hand edit (the budget raised): refused
    raw = json.loads(ledger.read_text())
    raw["units"]["users"]["epsilon"] = 100.0
    ledger.write_text(json.dumps(raw))
    code, _, err = release(capsys, setting, data, "weighted", "--out", tmp_path / "r3")
    assert code == 2 and "hash chain" in one_error(err)
    # a ledger elsewhere is noted in the data folder: deleting it does not give a fresh budget
    other = records(tmp_path, "other")
    assert release(capsys, setting, other, "weighted", "--ledger", tmp_path / "l" / "x.json", "--out",
                   tmp_path / "r4")[0] == 0
    (tmp_path / "l" / "x.json").unlink()
    code, _, err = release(capsys, setting, other, "weighted", "--ledger", tmp_path / "l" / "x.json", "--out",
                           tmp_path / "r5")
    assert code == 2 and "missing: restore it" in one_error(err)


def test_item3_a_release_on_other_data_is_noticed(setting, capsys, tmp_path):
    data = records(tmp_path)
    ledger = ["--ledger", tmp_path / "l.json", "--budget", "users=2", "--allow-budget-above-spec"]
    code, out, err = release(capsys, setting, data, "weighted", *ledger, "--out", tmp_path / "r1")
    assert code == 0, err
    assert json.loads((tmp_path / "l.json").read_text())["budget_log"][0]["allowed_by"] == "--allow-budget-above-spec"
    text = (data / "users.csv").read_text()
    (data / "users.csv").write_text(text.replace(f"{SECRET}", "7.5"))
    code, _, err = release(capsys, setting, data, "weighted", *ledger, "--out", tmp_path / "r2")
    assert code == 2 and "differ from those this ledger's earlier releases spent on" in one_error(err)
    assert "7.5" not in err and f"{SECRET}" not in err
    code, _, err = release(capsys, setting, data, "weighted", *ledger, "--data-changed", "--out", tmp_path / "r3")
    assert code == 0, err
    entry = json.loads((tmp_path / "l.json").read_text())["releases"][-1]
    assert entry["data_changed"] == {"units": ["users"], "allowed_by": "--data-changed"}
    assert entry["budget_above_spec"][0]["unit"] == "users"


def test_item4_a_plugin_that_fails_its_audit_is_not_released(setting, capsys, tmp_path):
    data = records(tmp_path)
    code, out, err = release(capsys, setting, data, "leaky", "--out", tmp_path / "r1")
    assert code == 2 and "failed its privacy audit" in one_error(err) and "claim of 1" in err
    assert not (data / "hybridpriv-ledger.json").exists() and not (tmp_path / "r1" / "release.json").exists()


def test_item4_an_audit_record_vouches_only_for_what_it_audited(setting, capsys, tmp_path):
    rec = tmp_path / "audit.json"
    code = main(["audit", str(setting / "spec.toml"), "--candidate", "half-ar", "--candidate", "leaky",
                 "--record", str(rec), "--quiet"])
    capsys.readouterr()
    assert code == 1 and rec.exists()  # leaky is a violation
    data = records(tmp_path)
    code, out, err = release(capsys, setting, data, "half-ar", "--audit-record", rec, "--out", tmp_path / "r1")
    assert code == 0, err
    assert "auditing the plugin" not in out  # the record vouched for it
    assert json.loads((tmp_path / "r1" / "release.json").read_text())["audit"]["source"].startswith("audit record")
    code, _, err = release(capsys, setting, records(tmp_path, "d2"), "leaky", "--audit-record", rec,
                           "--out", tmp_path / "r2")
    assert code == 2 and "failed its privacy audit on unit 'users'" in one_error(err)
    # a record of other code (its hash differs) does not vouch: the plugin is audited again
    raw = json.loads(rec.read_text())
    for entry in raw["audits"]:
        entry["binding"]["code_sha256"] = "0" * 64
    rec.write_text(json.dumps(raw))
    code, out, err = release(capsys, setting, records(tmp_path, "d3"), "half-ar", "--audit-record", rec,
                             "--out", tmp_path / "r3")
    assert code == 0, err
    assert "has no audit of 'half-ar' as it is now" in out and "auditing the plugin 'half-ar'" in out


def test_item5_a_declaration_checked_on_the_instance_released(setting, capsys, tmp_path):
    code, _, err = release(capsys, setting, records(tmp_path), "zero", "--out", tmp_path / "r1")
    assert code == 2 and "epsilon must be > 0, got 0.0" in one_error(err)


def test_item6_release_json_says_what_drew_the_noise(setting, capsys, tmp_path):
    assert release(capsys, setting, records(tmp_path), "uni", "--out", tmp_path / "r1")[0] == 0
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert set(rec["randomness"]) == {"uniform"} and "not OpenDP" in rec["randomness"]["uniform"]["drawn_by"]
    assert "ChaCha20" in rec["randomness"]["uniform"]["drawn_by"] and "noise" not in rec
    assert release(capsys, setting, records(tmp_path, "d2"), "weighted", "--out", tmp_path / "r2")[0] == 0
    rec = json.loads((tmp_path / "r2" / "release.json").read_text())
    assert set(rec["randomness"]) == {"laplace"} and rec["randomness"]["laplace"]["drawn_by"].startswith("OpenDP")


def test_item7_refusals_of_private_data_quote_no_value(setting, capsys, tmp_path):
    cases = {
        "outside": (lambda lines: lines[:10] + ["12.5"] + lines[11:], "data row 6 of users.csv"),
        "size": (lambda lines: lines + ["9.99"], "does not hold the SPEC's size = 200"),
        "text": (lambda lines: lines[:3] + ["secret-abc"] + lines[4:], "data row 4"),
    }
    for name, (tweak, says) in cases.items():
        data = records(tmp_path, name, tweak)
        if name == "outside":
            (data / "users.csv").write_text((data / "users.csv").read_text().replace(f"{SECRET}", "11.25"))
            says = "data row 6 of users.csv (the first such) lies outside the bounds"
        code, _, err = release(capsys, setting, data, "weighted", "--out", tmp_path / f"r-{name}")
        assert code == 2 and says in one_error(err), err
        for secret in ("11.25", "12.5", "201", "secret-abc", f"{SECRET}", "first:"):
            assert secret not in err, (secret, err)
        assert json.loads((data / "hybridpriv-ledger.json").read_text())["releases"] == []  # nothing spent


def test_item9_oversized_runs_are_refused_before_any_work(setting, capsys, tmp_path):
    import time

    start = time.process_time()
    for argv in (["select", str(setting / "spec.toml"), "--trials", str(10**12), "--out", str(tmp_path / "s")],
                 ["select", str(setting / "spec.toml"), "--draws", str(10**6), "--trials", str(10**6),
                  "--out", str(tmp_path / "s")],
                 ["audit", str(setting / "spec.toml"), "--samples", str(10**12)]):
        assert main(argv) == 2, argv
        _, err = capsys.readouterr()
        assert "trials" in one_error(err) or "samples" in err
    assert time.process_time() - start < 60  # hang guard only: nothing was fitted or allocated
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("damage", ["no spent", "spent a list", "unknown unit", "unit without epsilon", "units a list"])
def test_item8_a_damaged_ledger_ends_a_release_with_one_line(setting, capsys, tmp_path, damage):
    data = records(tmp_path)
    ledger = ["--ledger", tmp_path / "l.json", "--budget", "users=2", "--allow-budget-above-spec"]
    assert release(capsys, setting, data, "weighted", *ledger, "--out", tmp_path / "r1")[0] == 0
    raw = json.loads((tmp_path / "l.json").read_text())
    entry = raw["releases"][0]
    if damage == "no spent":
        del entry["spent"]
    elif damage == "spent a list":
        entry["spent"] = [1]
    elif damage == "unknown unit":
        entry["spent"]["ghost"] = entry["spent"]["users"]
    elif damage == "unit without epsilon":
        del raw["units"]["users"]["epsilon"]
    else:
        raw["units"] = [raw["units"]]
    (tmp_path / "l.json").write_text(json.dumps(raw))
    code, _, err = release(capsys, setting, data, "weighted", *ledger, "--out", tmp_path / "r2")
    assert code == 2 and "is damaged" in one_error(err)
