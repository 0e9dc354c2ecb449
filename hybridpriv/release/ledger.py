"""A persistent per-unit privacy ledger: a JSON file of budgets and releases, safe to share between runs.

File format (``"format": "hybridpriv-ledger"``, ``"version": 1``)::

    {"format": "hybridpriv-ledger", "version": 1, "created": "...",
     "units": {"opt-in": {"epsilon": 1.0, "delta": 0.0}, "panel": {"epsilon": "inf", "delta": 0.0}},
     "releases": [{"id": "...", "created": "...", "label": "weighted", "kind": "grouped",
                   "spec": "grouped.toml", "output": "out/release.json",
                   "spent": {"opt-in": {"epsilon": 1.0, "delta": 0.0, "relation": "add-remove",
                                        "trust": "central"}, ...}}]}

Budgets are fixed when the file is created.  Spending is checked by basic composition
(:class:`hybridpriv.accounting.Accountant`: the sum of the epsilons and of the deltas), which is
valid for any sequence of releases; :meth:`LedgerState.totals` adds the RDP and PLD totals.

Concurrency and crashes: every read-check-write happens while holding an exclusive
:func:`fcntl.flock` on ``FILE.lock`` (a separate file, so replacing ``FILE`` does not drop the
lock), and ``FILE`` is only ever replaced whole (written to a temporary file in the same folder,
``fsync``-ed, then :func:`os.replace`-d).  A release job holds the lock from the budget check to
the ledger entry, so two runs cannot both spend the last budget: the second waits, then sees the
first one's entry and is refused.  A killed job leaves either the old file or the new one, and the
kernel releases its lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..accounting import Accountant, BudgetExceededError
from ..privacy import Guarantee
from .composition import DEFAULT_TARGET_DELTA, Totals, compose

__all__ = ["FORMAT", "Ledger", "LedgerError", "LedgerState", "format_ledger"]

FORMAT = "hybridpriv-ledger"


class LedgerError(ValueError):
    """The ledger file is unreadable, of another format, or does not fit the release."""


def _num(x: float) -> object:
    return "inf" if math.isinf(x) else float(x)


def _unnum(x: object, where: str) -> float:
    if x == "inf":
        return math.inf
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise LedgerError(f"{where} must be a number or \"inf\", got {x!r}")
    return float(x)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` whole or not at all (temporary file, fsync, rename)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        _pause_hook("ledger-tmp-written")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _pause_hook(point: str) -> None:
    """Test hook: with ``HYBRIDPRIV_RELEASE_PAUSE_AT=point`` and ``HYBRIDPRIV_RELEASE_PAUSE_MARKER=FILE``
    set, create FILE and sleep (so a test can SIGKILL the job at a known point)."""
    if os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_AT") == point:
        import time

        marker = os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_MARKER")
        if marker:
            Path(marker).write_text(point)
        time.sleep(float(os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_SECONDS", "600")))


class LedgerState:
    """The ledger's content while its lock is held (see :meth:`Ledger.locked`)."""

    def __init__(self, ledger: Ledger, data: dict[str, Any]) -> None:
        self.ledger = ledger
        self.data = data

    @property
    def budgets(self) -> dict[str, tuple[float, float]]:
        """``{unit: (epsilon, delta)}``."""
        return {u: (_unnum(b["epsilon"], f"units.{u}.epsilon"), float(b.get("delta", 0.0)))
                for u, b in self.data["units"].items()}

    @property
    def releases(self) -> list[dict[str, Any]]:
        return list(self.data["releases"])

    def accountant(self) -> Accountant:
        """An :class:`~hybridpriv.accounting.Accountant` holding every recorded release."""
        acc = Accountant(self.budgets)
        for k, r in enumerate(self.data["releases"]):
            spent = {u: (_unnum(s["epsilon"], f"releases[{k}].spent.{u}.epsilon"), float(s["delta"]))
                     for u, s in r["spent"].items()}
            try:
                acc.spend({u: e for u, (e, _) in spent.items()}, {u: d for u, (_, d) in spent.items()},
                          label=str(r.get("label", "")))
            except (BudgetExceededError, ValueError) as exc:
                raise LedgerError(f"ledger {self.ledger.path}: recorded release {k} ({r.get('label')!r}) does not "
                                  f"fit the budgets: {exc}") from None
        return acc

    def charged_units(self, privacy: Mapping[str, Guarantee]) -> dict[str, Guarantee]:
        """The units of ``privacy`` this ledger charges: every unit it tracks (public ones included) and
        every unit promised a finite epsilon (which must then be tracked)."""
        units = {u: g for u, g in privacy.items() if u in self.data["units"] or math.isfinite(g.epsilon)}
        unknown = [u for u in units if u not in self.data["units"]]
        if unknown:
            raise LedgerError(f"ledger {self.ledger.path} has no budget for unit(s) {unknown} of this release; "
                              f"its units: {list(self.data['units'])}")
        return units

    def check(self, privacy: Mapping[str, Guarantee], label: str) -> None:
        """Raise :class:`~hybridpriv.accounting.BudgetExceededError` if a release promising ``privacy``
        would take any unit over its budget (nothing is recorded)."""
        units = self.charged_units(privacy)
        acc = self.accountant()
        try:
            acc.spend_guarantee(units, label=label)
        except BudgetExceededError as exc:
            raise BudgetExceededError(f"{exc}; ledger {self.ledger.path}") from None

    def record(self, privacy: Mapping[str, Guarantee], label: str, **info: Any) -> dict[str, Any]:
        """Check and append a release entry, and write the file atomically; returns the entry."""
        self.check(privacy, label)
        entry = {"id": f"{len(self.data['releases']) + 1}-{os.urandom(4).hex()}", "created": _now(), "label": label,
                 **info,
                 "spent": {u: {"epsilon": _num(g.epsilon), "delta": g.delta, "relation": g.relation, "trust": g.trust}
                           for u, g in self.charged_units(privacy).items()}}
        data = {**self.data, "releases": [*self.data["releases"], entry]}
        write_json_atomic(self.ledger.path, data)
        self.data = data
        return entry

    def totals(self, target_delta: float = DEFAULT_TARGET_DELTA) -> dict[str, Totals]:
        """Per unit: basic, RDP and PLD totals of its recorded releases (:func:`compose`)."""
        parts: dict[str, list[Guarantee]] = {u: [] for u in self.data["units"]}
        for r in self.data["releases"]:
            for u, s in r["spent"].items():
                parts[u].append(Guarantee(_unnum(s["epsilon"], "spent epsilon"), float(s["delta"])))
        return {u: compose(p, target_delta) for u, p in parts.items()}


class Ledger:
    """A ledger file (see the module docstring).

    Parameters
    ----------
    path
        The JSON file; its lock is ``path`` + ``".lock"``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise LedgerError(f"--ledger must be a file, got the folder {str(self.path)!r}")
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LedgerError(f"ledger {self.path} is not a JSON file: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise LedgerError(f"ledger {self.path} is not a hybridpriv ledger (format {FORMAT!r})")
        if data.get("version") != 1:
            raise LedgerError(f"ledger {self.path} has version {data.get('version')!r}; this hybridpriv reads 1")
        if not isinstance(data.get("units"), dict) or not isinstance(data.get("releases"), list):
            raise LedgerError(f"ledger {self.path} lacks its units or releases")
        return data

    @contextlib.contextmanager
    def locked(self, budgets: Mapping[str, tuple[float, float]] | None = None,
               log=None) -> Iterator[LedgerState]:
        """Hold the ledger's lock and yield its state; a missing file is created with ``budgets``.

        ``budgets`` (``{unit: (epsilon, delta)}``) is required to create the file; for an existing
        file they are ignored (budgets are fixed at creation).  Blocks while another process holds
        the lock (``log`` is told once).
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
            if self.path.exists():
                data = self._read()
            else:
                if budgets is None:
                    raise LedgerError(f"ledger {self.path} does not exist (give a SPEC to create it with its budgets)")
                acc = Accountant(dict(budgets))  # validates the budgets
                data = {"format": FORMAT, "version": 1, "created": _now(),
                        "units": {u: {"epsilon": _num(e), "delta": d} for u, (e, d) in acc.budgets.items()},
                        "releases": []}
                write_json_atomic(self.path, data)
            yield LedgerState(self, data)
        finally:
            os.close(fd)  # releases the flock

    def read(self) -> LedgerState:
        """A snapshot of the ledger (taken under the lock)."""
        with self.locked() as state:
            return LedgerState(self, dict(state.data))


def format_ledger(state: LedgerState, target_delta: float = DEFAULT_TARGET_DELTA) -> str:
    """The ledger as text: per unit the budget, the totals three ways, what is left; then the releases."""
    def f(x: float | None) -> str:
        return "n/a" if x is None else ("inf" if math.isinf(x) else f"{x:.4g}")

    totals = state.totals(target_delta)
    budgets = state.budgets
    lines = [f"ledger {state.ledger.path}: {len(state.data['releases'])} release(s)",
             f"{'unit':<12} {'budget eps':>10} {'delta':>8} | {'basic eps':>10} {'delta':>8} | "
             f"{'RDP eps':>8} {'PLD eps':>8} (at delta={target_delta:g}) | {'left (basic)':>12}"]
    for u, (be, bd) in budgets.items():
        t = totals[u]
        left = be - t.basic_epsilon if math.isfinite(be) else math.inf
        lines.append(f"{u:<12} {f(be):>10} {bd:>8.2g} | {f(t.basic_epsilon):>10} {t.basic_delta:>8.2g} | "
                     f"{f(t.rdp_epsilon):>8} {f(t.pld_epsilon):>8} {'':>17} | {f(left):>12}")
    for r in state.data["releases"]:
        spent = ", ".join(f"{u} {s['epsilon']}" for u, s in r["spent"].items())
        lines.append(f"  {r['created']}  {r['label']:<18} {r.get('kind', '')}: {spent}")
    lines.append("Budgets are checked by basic composition (valid for any releases); RDP and PLD (dp-accounting) are "
                 "tighter totals of the same releases at the target delta.")
    return "\n".join(lines)
