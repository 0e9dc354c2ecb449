"""A persistent per-unit privacy ledger: a JSON file of budgets and releases, safe to share between runs.

File format (``"format": "hybridpriv-ledger"``, ``"version": 2``; the content is checked in full by
:mod:`hybridpriv.release.ledger_file` whenever it is read)::

    {"format": "hybridpriv-ledger", "version": 2, "id": "...", "created": "...", "salt": "<64 hex>",
     "units": {"opt-in": {"epsilon": 1.0, "delta": 0.0, "relation": "replace", "trust": "central"},
               "panel": {"epsilon": "inf", "delta": 0.0, "relation": "replace", "trust": "central"}},
     "budget_log": [],
     "releases": [{"id": "...", "created": "...", "label": "weighted", "kind": "grouped", ...,
                   "declared": {"opt-in": {"epsilon": 0.5, "delta": 0.0, "relation": "add-remove", ...}},
                   "spent": {"opt-in": {"epsilon": 1.0, "delta": 0.0, "relation": "replace", ...}},
                   "data": {"opt-in": "<fingerprint>"}, "prev": "<sha256>"}],
     "head": "<sha256>"}

**Budgets carry their relation and trust model** (the SPEC's requirement of each unit), and every
release is charged what it costs the unit in *those* terms
(:meth:`hybridpriv.core.privacy.Guarantee.charge_to`): a mechanism declaring add/remove epsilon 0.5 costs
a replace-one budget 1.0.  The entry keeps both the ``declared`` promise and the ``spent`` charge.
Spending is checked by basic composition (:class:`hybridpriv.accounting.Accountant`: sums of the
charged epsilons and deltas), valid for any sequence of releases; :meth:`LedgerState.totals` adds
the RDP and PLD totals.

**Tied to its data**: ``salt`` is drawn when the file is created; each entry records, per unit, an
HMAC-SHA256 under that salt of the private data it spent on (:meth:`LedgerState.fingerprints`), so a
release on other data is noticed.  **Hand edits are noticed**: each entry's ``prev`` is the SHA-256
of the previous entry (of the budgets for the first) and ``head`` that of the last, so a deleted or
changed entry or budget breaks the chain and the file is refused.  This protects against mistakes,
not against someone who can rewrite the file (they can recompute the hashes): see the threat model
in ``docs/limitations.md``.

Concurrency and crashes: the path is resolved (symbolic links followed) before anything else, so
every name of the file shares one lock and one file; every read-check-write holds an exclusive
:func:`fcntl.flock` on ``REAL_FILE.lock`` (beside the real file), and the file is only ever
replaced whole (a temporary file in the same folder, ``fsync``-ed, then :func:`os.replace`-d).  A
file with several hard links is refused (a replace would split it).  A release job holds the lock
from the budget check to the ledger entry, so two runs cannot both spend the last budget.  A killed
job leaves either the old file or the new one, and the kernel releases its lock.

A ledger of version 1 (budgets without relations, charges as declared) is upgraded when it is next
written: each unit takes the relation and trust of the SPEC's requirement, and each recorded release
is charged again in those terms from the promise it recorded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import math
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

from ..accounting import Accountant, BudgetExceededError
from ..core.privacy import Guarantee
from .composition import DEFAULT_TARGET_DELTA, Totals, compose
from .ledger_file import (
    FORMAT,
    VERSION,
    LedgerError,
    canonical,
    chain_hash,
    genesis_hash,
    guarantee_json,
    guarantee_of,
    now,
    pause_hook,
    read_ledger,
    upgrade_v1,
    write_json_atomic,
)

__all__ = ["DEFAULT_NAME", "FORMAT", "Ledger", "LedgerError", "LedgerState", "POINTER_NAME", "VERSION",
           "format_ledger", "ledger_for_data", "write_json_atomic"]

#: The ledger's file name in the data folder it protects (the default place of a ledger).
DEFAULT_NAME = "hybridpriv-ledger.json"
#: The file in a data folder that names its ledger when that ledger lives elsewhere (``--ledger``).
POINTER_NAME = ".hybridpriv-ledger"

# kept for the callers of the earlier names
_now = now
_pause_hook = pause_hook


class LedgerState:
    """The ledger's content while its lock is held (see :meth:`Ledger.locked`)."""

    def __init__(self, ledger: Ledger, data: dict[str, Any], upgraded: bool = False) -> None:
        self.ledger = ledger
        self.data = data
        #: True when the file is of version 1 and was upgraded in memory (written at the next record).
        self.upgraded = upgraded

    # -- what the file says -----------------------------------------------------------
    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def budgets(self) -> dict[str, Guarantee]:
        """``{unit: budget}``: each unit's budget as a :class:`~hybridpriv.core.privacy.Guarantee` (its relation
        and trust are those every charge is converted to)."""
        return {u: guarantee_of(b, f"units.{u}") for u, b in self.data["units"].items()}

    @property
    def releases(self) -> list[dict[str, Any]]:
        return list(self.data["releases"])

    def accountant(self) -> Accountant:
        """An :class:`~hybridpriv.accounting.Accountant` holding every recorded charge."""
        acc = Accountant({u: (g.epsilon, g.delta) for u, g in self.budgets.items()})
        for k, r in enumerate(self.data["releases"]):
            spent = {u: guarantee_of(s, f"releases[{k}].spent.{u}") for u, s in r["spent"].items()}
            try:
                acc.spend({u: g.epsilon for u, g in spent.items()}, {u: g.delta for u, g in spent.items()},
                          label=str(r.get("label", "")))
            except (BudgetExceededError, ValueError) as exc:
                raise LedgerError(f"ledger {self.ledger.path}: recorded release {k} ({r.get('label')!r}) does not "
                                  f"fit the budgets: {exc}") from None
        return acc

    def overspent(self) -> dict[str, tuple[float, float]]:
        """Units whose recorded charges exceed their budget: ``{unit: (spent epsilon, budget epsilon)}``
        (delta overspending is reported with epsilon's numbers when only delta is over)."""
        out = {}
        budgets = self.budgets
        for u, t in self.totals().items():
            b = budgets[u]
            if t.basic_epsilon > b.epsilon * (1 + 1e-9) or t.basic_delta > b.delta * (1 + 1e-9) + 0.0:
                out[u] = (t.basic_epsilon, b.epsilon)
        return out

    # -- charges ----------------------------------------------------------------------
    def charges(self, privacy: Mapping[str, Guarantee]) -> dict[str, tuple[Guarantee, Guarantee]]:
        """``{unit: (declared, charged)}`` for the units of ``privacy`` this ledger charges: every unit it
        tracks (public ones included) and every unit promised a finite epsilon (which must then be
        tracked).  ``charged`` is the declaration converted to the unit's budget relation and trust."""
        budgets = self.budgets
        units = {u: g for u, g in privacy.items() if u in budgets or math.isfinite(g.epsilon)}
        unknown = [u for u in units if u not in budgets]
        if unknown:
            raise LedgerError(f"ledger {self.ledger.path} has no budget for unit(s) {unknown} of this release; "
                              f"its units: {list(budgets)}")
        return {u: (g, g.charge_to(budgets[u])) for u, g in units.items()}

    def check(self, privacy: Mapping[str, Guarantee], label: str) -> None:
        """Raise :class:`~hybridpriv.accounting.BudgetExceededError` if a release promising ``privacy``
        would take any unit over its budget, its charge converted to the unit's relation (nothing is
        recorded)."""
        charges = self.charges(privacy)
        over = self.overspent()
        if over:
            u, (spent, budget) = next(iter(over.items()))
            raise LedgerError(f"ledger {self.ledger.path}: unit {u!r} has already overspent its budget "
                              f"(epsilon {spent:g} of {budget:g}); no further release")
        acc = self.accountant()
        try:
            acc.spend({u: c.epsilon for u, (_, c) in charges.items()}, {u: c.delta for u, (_, c) in charges.items()},
                      label=label)
        except BudgetExceededError as exc:
            converted = [f"{u}: declared {d}, charged {c}" for u, (d, c) in charges.items()
                         if (d.relation, d.trust) != (c.relation, c.trust)]
            note = f" (charges converted to the budgets' terms: {'; '.join(converted)})" if converted else ""
            raise BudgetExceededError(f"{exc}{note}; ledger {self.ledger.path}") from None

    def check_all(self, releases: Sequence[tuple[Mapping[str, Guarantee], str]]) -> None:
        """:meth:`check` for releases made one after the other (a two-stage plan's): their charges, converted to
        each unit's relation, summed (basic composition, what the ledger charges pure releases) must fit every
        unit's budget now (nothing is recorded)."""
        eps: dict[str, float] = {}
        delta: dict[str, float] = {}
        for privacy, _ in releases:
            for u, (_, c) in self.charges(privacy).items():
                eps[u] = eps.get(u, 0.0) + c.epsilon
                delta[u] = delta.get(u, 0.0) + c.delta
        label = " then ".join(lab for _, lab in releases)
        try:
            self.accountant().spend(eps, delta, label=label)
        except BudgetExceededError as exc:
            raise BudgetExceededError(f"{exc} (the whole plan: {label}); ledger {self.ledger.path}") from None

    def check_budgets(self, spec_budgets: Mapping[str, Guarantee], allow_above: bool = False) -> list[dict[str, Any]]:
        """Compare the ledger's budgets with those a SPEC gives its units (its requirements).

        Refused (:class:`LedgerError`): a SPEC unit the ledger has no budget for, or one whose budget
        is for another relation or trust model; a budget *above* the SPEC's unless ``allow_above``
        (``--allow-budget-above-spec``).  Returns the allowed raises, to be logged in the entry.
        """
        budgets = self.budgets
        raised = []
        for u, want in spec_budgets.items():
            have = budgets.get(u)
            if have is None:
                raise LedgerError(f"ledger {self.ledger.path} has no budget for unit {u!r} of this SPEC (its units: "
                                  f"{list(budgets)}): it was made for other data or another SPEC")
            if (have.relation, have.trust) != (want.relation, want.trust):
                raise LedgerError(f"unit {u!r}: the ledger's budget is for {have.relation} neighbours and {have.trust} "
                                  f"trust, the SPEC's requirement for {want.relation} and {want.trust}: charges could "
                                  f"not be compared; use a ledger made for this SPEC")
            if _above(have, want):
                if not allow_above:
                    raise LedgerError(
                        f"unit {u!r}: the ledger's budget ({have}) is above the SPEC's ({want}); pass "
                        "--allow-budget-above-spec to release against it anyway (the release records it)")
                raised.append({"unit": u, "budget": guarantee_json(have), "spec": guarantee_json(want),
                               "allowed_by": "--allow-budget-above-spec"})
        return raised

    # -- the data ---------------------------------------------------------------------
    def fingerprints(self, data_bytes: Mapping[str, bytes]) -> dict[str, str]:
        """``{unit: HMAC-SHA256(salt, bytes)}``: salted fingerprints of the private data of each unit."""
        key = bytes.fromhex(self.data["salt"])
        return {u: hmac.new(key, b, sha256).hexdigest() for u, b in data_bytes.items()}

    def check_data(self, fingerprints: Mapping[str, str], allow_changed: bool = False) -> list[str]:
        """Refuse a release on data other than those earlier releases of this ledger spent on.

        A unit whose fingerprint differs from the one its latest recorded release noted is refused
        (:class:`LedgerError`, naming the unit, never a value) unless ``allow_changed``
        (``--data-changed``: the same people's records, corrected); returns the units that changed.
        """
        last: dict[str, str] = {}
        for r in self.data["releases"]:
            last.update(r.get("data") or {})
        changed = [u for u, f in fingerprints.items() if u in last and last[u] != f]
        if changed and not allow_changed:
            raise LedgerError(
                f"the private data of unit(s) {changed} differ from those this ledger's earlier releases spent on "
                f"(salted fingerprint): a ledger protects one dataset; if these are the same people's records, "
                f"corrected, pass --data-changed (it is recorded); if not, use their own ledger")
        return changed

    # -- writing ----------------------------------------------------------------------
    def record(self, privacy: Mapping[str, Guarantee], label: str, data: Mapping[str, str] | None = None,
               events: Mapping[str, Any] | None = None, **info: Any) -> dict[str, Any]:
        """Check and append a release entry (declared and charged guarantee per unit, the data's
        fingerprints, ``info``), and write the file atomically; returns the entry.  ``events``: the
        mechanism's privacy events (:attr:`~hybridpriv.core.mechanism.Mechanism.privacy_events`), kept
        per unit in the budget's terms (:func:`hybridpriv.core.events.charge_to`) for tight totals."""
        from ..core import events as ev

        self.check(privacy, label)
        charges = self.charges(privacy)
        releases = self.data["releases"]
        prev = chain_hash(releases[-1]) if releases else genesis_hash(self.data)
        entry = {"id": f"{len(releases) + 1}-{os.urandom(4).hex()}", "created": now(), "label": label, **info,
                 "declared": {u: guarantee_json(d) for u, (d, _) in charges.items()},
                 "spent": {u: guarantee_json(c) for u, (_, c) in charges.items()},
                 "data": dict(data or {}), "prev": prev}
        if events is not None:
            budgets = self.budgets
            entry["events"] = {u: ev.to_json(ev.charge_to(events[u], d, budgets[u]))
                               for u, (d, _) in charges.items() if u in events}
        entry = _plain(entry)
        new = {**self.data, "releases": [*releases, entry], "head": chain_hash(entry)}
        write_json_atomic(self.ledger.path, new)
        self.data, self.upgraded = new, False
        return entry

    def progress(self, release: str, round_: int, total: int, state: str, label: str) -> dict[str, Any]:
        """Append a round of a release made in rounds (:mod:`hybridpriv.release.rounds`): no charge (the release's
        entry charged every round when it began), the round's number and the SHA-256 of the state it left, so
        that a round state restored from an older copy (a round computed twice: fresh noise on the same data)
        is refused.  Returns the entry."""
        if not any(r.get("id") == release for r in self.data["releases"]):
            raise LedgerError(f"ledger {self.ledger.path} has no release {release!r} to record a round of")
        releases = self.data["releases"]
        entry = _plain({"id": f"{len(releases) + 1}-{os.urandom(4).hex()}", "created": now(),
                        "label": f"{label}: round {round_} of {total}", "kind": "round", "release": release,
                        "round": int(round_), "state": state, "declared": {}, "spent": {}, "data": {},
                        "prev": chain_hash(releases[-1])})
        new = {**self.data, "releases": [*releases, entry], "head": chain_hash(entry)}
        write_json_atomic(self.ledger.path, new)
        self.data = new
        return entry

    def rounds_done(self, release: str) -> tuple[int, str] | None:
        """``(round, state digest)`` of the last recorded round of ``release`` (round 0: its start, recorded in
        the release's entry), or ``None`` when the ledger has no such release made in rounds."""
        last = None
        for r in self.data["releases"]:
            if r.get("id") == release and isinstance(r.get("rounds"), dict):
                last = (0, str(r["rounds"].get("start")))
            elif r.get("kind") == "round" and r.get("release") == release and last is not None:
                last = (int(r.get("round", -1)), str(r.get("state")))
        return last

    def totals(self, target_delta: float = DEFAULT_TARGET_DELTA) -> dict[str, Totals]:
        """Per unit: basic, RDP and PLD totals of its recorded charges (:func:`compose`)."""
        from ..core import events as ev

        parts: dict[str, list[Guarantee]] = {u: [] for u in self.data["units"]}
        evs: dict[str, list[Any]] = {u: [] for u in self.data["units"]}
        for k, r in enumerate(self.data["releases"]):
            for u, s in r["spent"].items():
                g = guarantee_of(s, f"releases[{k}].spent.{u}")
                parts[u].append(g)
                e = (r.get("events") or {}).get(u)
                try:
                    evs[u].append(ev.epsilon_delta(g.epsilon, g.delta) if e is None
                                  else ev.from_json(e, f"releases[{k}].events.{u}"))
                except ValueError as exc:
                    raise LedgerError(f"ledger {self.ledger.path}: {exc}") from None
        return {u: compose(p, target_delta, events=evs[u]) for u, p in parts.items()}


def _above(have: Guarantee, want: Guarantee) -> bool:
    return have.epsilon > want.epsilon * (1 + 1e-9) or have.delta > want.delta * (1 + 1e-9)


def _plain(x: Any) -> Any:
    """JSON-safe data (infinite numbers as ``"inf"``), as the file will hold it."""
    import json

    return json.loads(json.dumps(x, default=str))


class Ledger:
    """A ledger file (see the module docstring).

    Parameters
    ----------
    path
        The JSON file; symbolic links are resolved first, and the lock is the real file's name
        + ``".lock"``, beside it.
    """

    def __init__(self, path: str | Path) -> None:
        given = Path(path)
        self.path = given.resolve()
        if self.path.exists() and self.path.is_dir():
            raise LedgerError(f"--ledger must be a file, got the folder {str(given)!r}")
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def _check_links(self) -> None:
        if self.path.exists() and os.stat(self.path).st_nlink > 1:
            raise LedgerError(f"ledger {self.path} has {os.stat(self.path).st_nlink} hard links: replacing it on "
                              "write would split it into two ledgers; keep one name (a symbolic link is fine)")

    @contextlib.contextmanager
    def locked(self, budgets: Mapping[str, Guarantee] | None = None, log=None,
               budget_log: list[dict[str, Any]] | None = None) -> Iterator[LedgerState]:
        """Hold the ledger's lock and yield its state; a missing file is created with ``budgets``.

        ``budgets`` (``{unit: Guarantee}``: epsilon, delta, relation, trust) is required to create the
        file; for an existing file they only give the relation and trust of its units when it is of
        version 1 (budgets are fixed at creation).  ``budget_log`` (creation only): budgets set above
        the SPEC's, and by what.  Blocks while another process holds the lock (``log`` is told once).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if log is not None:
                    log(f"waiting for the ledger lock {self.lock_path} (another release is running) ...")
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._check_links()
            if self.path.exists():
                data, version = read_ledger(self.path)
                upgraded = version == 1
                if upgraded:
                    data = upgrade_v1(data, budgets or {}, self.path)
                yield LedgerState(self, data, upgraded)
            else:
                if budgets is None:
                    raise LedgerError(f"ledger {self.path} does not exist (give a SPEC to create it with its budgets)")
                yield LedgerState(self, self._create(budgets, budget_log or []))
        finally:
            os.close(fd)  # releases the flock

    def _create(self, budgets: Mapping[str, Guarantee], budget_log: list[dict[str, Any]]) -> dict[str, Any]:
        if not isinstance(budgets, Mapping) or not budgets:
            raise LedgerError("a ledger needs at least one unit's budget")
        for u, g in budgets.items():
            if not isinstance(g, Guarantee):
                raise TypeError(f"budget of unit {u!r} must be a Guarantee, got {g!r}")
            if g.epsilon <= 0:
                raise ValueError(f"budget epsilon of unit {u!r} must be > 0, got {g.epsilon!r}")
        data: dict[str, Any] = {"format": FORMAT, "version": VERSION, "id": secrets.token_hex(16), "created": now(),
                                "salt": secrets.token_hex(32),
                                "units": {u: guarantee_json(g) for u, g in budgets.items()},
                                "budget_log": _plain(list(budget_log)), "releases": []}
        data["head"] = genesis_hash(data)
        write_json_atomic(self.path, data)
        return data

    def read(self) -> LedgerState:
        """A snapshot of the ledger (taken under the lock; a version-1 file is shown upgraded in memory,
        its units taken as add/remove, central)."""
        with self.locked() as state:
            return LedgerState(self, dict(state.data), state.upgraded)


def ledger_for_data(data_dir: str | Path, ledger: str | Path | None) -> tuple[Path, Path | None]:
    """The ledger a release on the data in ``data_dir`` must use, and the pointer file to write.

    Without ``ledger``: the one the folder's pointer file names, else ``DATA/hybridpriv-ledger.json``.
    With ``ledger``: it, unless the folder already has its own ledger or names another one (refused:
    a second ledger would give the same data a fresh budget), or names this one but it is missing
    (refused: deleted?).  Returns ``(ledger path, pointer to write or None)``.
    """
    import json

    d = Path(data_dir)
    own = (d / DEFAULT_NAME).resolve()
    pointer = d / POINTER_NAME
    named: Path | None = None
    if pointer.is_file():
        try:
            named = Path(json.loads(pointer.read_text(encoding="utf-8"))["ledger"]).resolve()
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise LedgerError(f"{pointer} (the data folder's note of its ledger) is damaged; restore it or delete "
                              "it knowingly") from None
    if named is not None and own.exists() and named != own:
        raise LedgerError(f"the data in {d} have their own ledger {own} and also name the ledger {named} (in "
                          f"{pointer}): two ledgers for one dataset; keep one")
    if ledger is None:
        target = named if named is not None else own
    else:
        target = Path(ledger).resolve()
        if own.exists() and target != own:
            raise LedgerError(f"the data in {d} have their own ledger {own}; a second ledger ({target}) would give "
                              "them a fresh budget: use that one (omit --ledger)")
        if named is not None and target != named:
            raise LedgerError(f"the data in {d} are charged to the ledger {named} (noted in {pointer}); a second "
                              f"ledger ({target}) would give them a fresh budget: use --ledger {named}")
    if named is not None and target == named and not named.exists():
        raise LedgerError(f"the data in {d} are charged to the ledger {named} (noted in {pointer}), which is "
                          "missing: restore it (a new ledger would give these data a fresh budget)")
    write_pointer = pointer if (target != own and named is None) else None
    return target, write_pointer


def format_ledger(state: LedgerState, target_delta: float = DEFAULT_TARGET_DELTA) -> str:
    """The ledger as text: per unit the budget and its terms, the totals three ways, what is left; then
    the releases (declared -> charged where they differ)."""
    def f(x: float | None) -> str:
        if x is None:
            return "n/a"
        return ("inf" if x > 0 else "-inf") if math.isinf(x) else f"{x:.4g}"

    totals = state.totals(target_delta)
    budgets = state.budgets
    over = state.overspent()
    rounds = [r for r in state.data["releases"] if r.get("kind") == "round"]
    lines = [f"ledger {state.ledger.path}: {len(state.data['releases']) - len(rounds)} release(s)"
             + (f" and {len(rounds)} round(s) of releases made in rounds (charged when they began)" if rounds else "")
             + (" (version 1 file: shown upgraded; its units taken as add-remove, central)" if state.upgraded else ""),
             f"{'unit':<12} {'budget eps':>10} {'delta':>8} {'relation':>10} | {'basic eps':>10} {'delta':>8} | "
             f"{'RDP eps':>8} {'PLD eps':>8} (at delta={target_delta:g}) | {'left (basic)':>12}"]
    for u, b in budgets.items():
        t = totals[u]
        left = b.epsilon - t.basic_epsilon if math.isfinite(b.epsilon) else math.inf
        flag = "  OVERSPENT" if u in over else ""
        rel = b.relation + (",local" if b.trust == "local" else "")
        lines.append(f"{u:<12} {f(b.epsilon):>10} {b.delta:>8.2g} {rel:>10} | {f(t.basic_epsilon):>10} "
                     f"{t.basic_delta:>8.2g} | {f(t.rdp_epsilon):>8} {f(t.pld_epsilon):>8} {'':>17} | "
                     f"{f(left):>12}{flag}")
    for r in state.data["releases"]:
        if r.get("kind") == "round":
            lines.append(f"  {r['created']}  {r['label']} (release {r.get('release')}; no charge)")
            continue
        parts = []
        for u, s in r["spent"].items():
            d = (r.get("declared") or {}).get(u)
            shown = f"{u} {s['epsilon']}"
            if d is not None and (d.get("relation"), d.get("epsilon")) != (s.get("relation"), s.get("epsilon")):
                shown += f" (declared {d['epsilon']} {d['relation']})"
            parts.append(shown)
        lines.append(f"  {r['created']}  {r['label']:<18} {r.get('kind', '')}: {', '.join(parts)}")
    for entry in state.data.get("budget_log") or []:
        lines.append(f"  budget of {entry.get('unit')!r} set above the SPEC's by {entry.get('allowed_by')}")
    lines.append("Budgets are checked by basic composition (valid for any releases) of each release's charge in the "
                 "unit's own relation; RDP and PLD (dp-accounting) are tighter totals of the same releases at the "
                 "target delta.")
    return "\n".join(lines)


# the canonical form is part of the file format (its hashes); re-exported for tests
_canonical = canonical
