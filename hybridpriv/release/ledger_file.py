"""The ledger file on disk: reading it whole and checking every field, its hash chain, atomic writes.

:func:`read_ledger` refuses anything it cannot vouch for with a :class:`LedgerError` naming the key
(``releases[2].spent``, ``units.users.epsilon``) and the rule: a release without ``spent``, a charge
that is not a table, a unit without a budget, a relation that is not one of
:data:`hybridpriv.core.privacy.NEIGHBOUR_RELATIONS`, a broken hash chain (an entry or a budget changed by
hand).  No reader of the file meets a ``KeyError`` afterwards.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from datetime import datetime, timezone
from hashlib import sha256
from pathlib import Path
from typing import Any

from ..core.privacy import NEIGHBOUR_RELATIONS, TRUST_MODELS, Guarantee

__all__ = ["FORMAT", "VERSION", "LedgerError", "canonical", "chain_hash", "genesis_hash", "guarantee_json",
           "guarantee_of", "now", "pause_hook", "read_ledger", "upgrade_v1", "write_json_atomic"]

FORMAT = "hybridpriv-ledger"
#: The version this hybridpriv writes (it reads 1 and 2; 1 is upgraded when next written).
VERSION = 2


class LedgerError(ValueError):
    """The ledger file is unreadable, damaged, of another format, or does not fit the release."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def canonical(x: Any) -> bytes:
    """The bytes a ledger hash is taken over: sorted keys, no spaces, ASCII."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def genesis_hash(data: dict[str, Any]) -> str:
    """SHA-256 of everything but the releases and the head: what the first entry's ``prev`` is."""
    return sha256(canonical({k: v for k, v in data.items() if k not in ("releases", "head")})).hexdigest()


def chain_hash(entry: dict[str, Any]) -> str:
    """SHA-256 of an entry (its ``prev`` included): the next entry's ``prev``, or the file's ``head``."""
    return sha256(canonical(entry)).hexdigest()


def guarantee_json(g: Guarantee) -> dict[str, Any]:
    return {"epsilon": "inf" if math.isinf(g.epsilon) else g.epsilon, "delta": g.delta, "relation": g.relation,
            "trust": g.trust}


def _number(x: object, where: str, allow_inf: bool = True) -> float:
    if x == "inf" and allow_inf:
        return math.inf
    if isinstance(x, bool) or not isinstance(x, (int, float)) or (isinstance(x, float) and math.isnan(x)):
        raise LedgerError(f"{where} must be a number{' or \"inf\"' if allow_inf else ''}, got {_short(x)}")
    return float(x)


def _short(x: object) -> str:
    s = json.dumps(x, default=str)
    return s if len(s) <= 40 else s[:37] + "..."


def guarantee_of(d: object, where: str, budget: bool = False) -> Guarantee:
    """A charge or budget table as a :class:`Guarantee`, every field checked (``where`` names it)."""
    if not isinstance(d, dict):
        raise LedgerError(f"{where} must be a table {{epsilon, delta, relation, trust}}, got {_short(d)}")
    for key in ("epsilon", "relation", "trust"):
        if key not in d:
            raise LedgerError(f"{where} lacks {key!r}")
    eps = _number(d["epsilon"], f"{where}.epsilon")
    delta = _number(d.get("delta", 0.0), f"{where}.delta", allow_inf=False)
    if eps < 0 or (budget and eps == 0):
        raise LedgerError(f"{where}.epsilon must be {'> 0' if budget else '>= 0'}, got {_short(d['epsilon'])}")
    if not 0 <= delta < 1:
        raise LedgerError(f"{where}.delta must be in [0, 1), got {_short(d.get('delta'))}")
    if d["relation"] not in NEIGHBOUR_RELATIONS:
        raise LedgerError(f"{where}.relation must be one of {list(NEIGHBOUR_RELATIONS)}, got {_short(d['relation'])}")
    if d["trust"] not in TRUST_MODELS:
        raise LedgerError(f"{where}.trust must be one of {list(TRUST_MODELS)}, got {_short(d['trust'])}")
    return Guarantee(eps, delta, d["relation"], d["trust"])


def _string(d: dict[str, Any], key: str, where: str) -> str:
    if key not in d:
        raise LedgerError(f"{where} lacks {key!r}")
    if not isinstance(d[key], str):
        raise LedgerError(f"{where}.{key} must be a string, got {_short(d[key])}")
    return d[key]


def _table(x: object, where: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise LedgerError(f"{where} must be a table, got {_short(x)}")
    return x


def _list(x: object, where: str) -> list[Any]:
    if not isinstance(x, list):
        raise LedgerError(f"{where} must be a list, got {_short(x)}")
    return x


def read_ledger(path: Path) -> tuple[dict[str, Any], int]:
    """The ledger at ``path``, every field checked (and the hash chain for version 2); ``(data, version)``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerError(f"ledger {path} is not a JSON file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LedgerError(f"ledger {path} is not a hybridpriv ledger (format {FORMAT!r})")
    version = data.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise LedgerError(f"ledger {path} has version {_short(version)}; this hybridpriv reads 1 and 2")
    try:
        (_check_v2 if version == 2 else _check_v1)(data)
    except LedgerError as exc:
        raise LedgerError(f"ledger {path} is damaged: {exc}") from None
    return data, int(version)


def _check_units(data: dict[str, Any], v1: bool = False) -> dict[str, Any]:
    units = _table(data.get("units"), "units")
    if not units:
        raise LedgerError("units is empty: a ledger needs a budget per unit")
    for u, b in units.items():
        if v1:
            b = _table(b, f"units.{u}")
            if "epsilon" not in b:
                raise LedgerError(f"units.{u} lacks 'epsilon'")
            eps = _number(b["epsilon"], f"units.{u}.epsilon")
            delta = _number(b.get("delta", 0.0), f"units.{u}.delta", allow_inf=False)
            if eps <= 0 or not 0 <= delta < 1:
                raise LedgerError(f"units.{u}: epsilon must be > 0 and delta in [0, 1), got {_short(b)}")
        else:
            guarantee_of(b, f"units.{u}", budget=True)
    return units


def _check_release(r: object, k: int, units: dict[str, Any], v1: bool) -> dict[str, Any]:
    where = f"releases[{k}]"
    r = _table(r, where)
    _string(r, "label", where)
    spent = _table(r.get("spent") if "spent" in r else _missing(where, "spent"), f"{where}.spent")
    for u, s in spent.items():
        if u not in units:
            raise LedgerError(f"{where}.spent names unit {u!r}, which has no budget (units: {list(units)})")
        g = guarantee_of(s, f"{where}.spent.{u}")
        if not v1:
            b = units[u]
            if (g.relation, g.trust) != (b["relation"], b["trust"]):
                raise LedgerError(f"{where}.spent.{u} is in {g.relation}/{g.trust} terms, the budget in "
                                  f"{b['relation']}/{b['trust']}: a charge must be in its unit's terms")
    if not v1:
        _string(r, "created", where)
        _string(r, "prev", where)
        declared = _table(r.get("declared") if "declared" in r else _missing(where, "declared"), f"{where}.declared")
        for u, d in declared.items():
            guarantee_of(d, f"{where}.declared.{u}")
        for u, f in _table(r.get("data", {}), f"{where}.data").items():
            if not isinstance(f, str):
                raise LedgerError(f"{where}.data.{u} must be a fingerprint string, got {_short(f)}")
        if "events" in r:
            from ..core.events import from_json

            for u, e in _table(r["events"], f"{where}.events").items():
                if u not in spent:
                    raise LedgerError(f"{where}.events names unit {u!r}, which the entry does not charge")
                try:
                    from_json(_table(e, f"{where}.events.{u}"), f"{where}.events.{u}")
                except ValueError as exc:
                    raise LedgerError(str(exc)) from None
    return r


def _missing(where: str, key: str) -> Any:
    raise LedgerError(f"{where} lacks {key!r}")


def _check_v1(data: dict[str, Any]) -> None:
    units = _check_units(data, v1=True)
    for k, r in enumerate(_list(data.get("releases"), "releases")):
        _check_release(r, k, units, v1=True)


def _check_v2(data: dict[str, Any]) -> None:
    for key in ("id", "created", "salt", "head"):
        _string(data, key, "the ledger")
    try:
        if len(bytes.fromhex(data["salt"])) < 16:
            raise ValueError
    except ValueError:
        raise LedgerError("salt must be at least 32 hexadecimal digits") from None
    units = _check_units(data)
    _list(data.get("budget_log", []), "budget_log")
    releases = _list(data.get("releases"), "releases")
    prev = genesis_hash(data)
    for k, r in enumerate(releases):
        _check_release(r, k, units, v1=False)
        if r["prev"] != prev:
            raise LedgerError(f"releases[{k}] does not follow what precedes it (hash chain): "
                              f"{'the budgets or ' if k == 0 else 'an earlier release or '}this entry was changed, "
                              "or an entry was removed, outside hybridpriv")
        prev = chain_hash(r)
    if data["head"] != prev:
        raise LedgerError("its head does not match its last entry (hash chain): the last release was removed, or the "
                          "budgets changed, outside hybridpriv")


def upgrade_v1(data: dict[str, Any], budgets: dict[str, Guarantee], path: Path) -> dict[str, Any]:
    """A version-1 ledger as version 2 (in memory): units take the relation and trust of ``budgets``
    (the SPEC's requirements; add-remove, central for a unit it does not name), and each release is
    charged again in those terms from the promise it recorded (kept as ``declared``)."""
    import secrets

    units = {}
    for u, b in data["units"].items():
        terms = budgets.get(u)
        units[u] = {"epsilon": b["epsilon"], "delta": float(b.get("delta", 0.0)),
                    "relation": terms.relation if terms else "add-remove", "trust": terms.trust if terms else "central"}
    new: dict[str, Any] = {"format": FORMAT, "version": VERSION, "id": secrets.token_hex(16),
                           "created": str(data.get("created", now())), "salt": secrets.token_hex(32), "units": units,
                           "budget_log": [{"upgraded_from": 1, "file": str(path), "at": now()}], "releases": []}
    prev = genesis_hash(new)
    for k, r in enumerate(data["releases"]):
        entry = {key: v for key, v in r.items() if key != "spent"}
        declared, spent = {}, {}
        for u, s in r["spent"].items():
            d = Guarantee(_number(s["epsilon"], "epsilon"), float(s.get("delta", 0.0)), s["relation"], s["trust"])
            declared[u] = guarantee_json(d)
            spent[u] = guarantee_json(d.charge_to(guarantee_of(units[u], f"units.{u}")))
        entry.update({"created": str(r.get("created", "")), "declared": declared, "spent": spent, "data": {},
                      "prev": prev})
        new["releases"].append(entry)
        prev = chain_hash(entry)
    new["head"] = prev
    return new


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
        pause_hook("ledger-tmp-written")
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


def pause_hook(point: str) -> None:
    """Test hook: with ``HYBRIDPRIV_RELEASE_PAUSE_AT=point`` and ``HYBRIDPRIV_RELEASE_PAUSE_MARKER=FILE``
    set, create FILE and sleep (so a test can SIGKILL the job at a known point)."""
    if os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_AT") == point:
        import time

        marker = os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_MARKER")
        if marker:
            Path(marker).write_text(point)
        time.sleep(float(os.environ.get("HYBRIDPRIV_RELEASE_PAUSE_SECONDS", "600")))
