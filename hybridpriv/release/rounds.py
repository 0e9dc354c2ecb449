"""Releases made in rounds: a family whose candidate needs its users' devices between steps.

A family's :meth:`~hybridpriv.core.family.Family.release_rounds` returns, for such a candidate, a
protocol object (``total`` rounds; ``load`` / ``data_bytes`` of the private data needed before round 1;
``begin`` the public round-0 state; ``published`` what the devices read to answer round ``t``;
``answers`` their answers, or ``None`` while they are not all in; ``step`` one round; ``result`` the
released values; ``needs_devices``; optionally ``answer_files(t)``, the data files round ``t``'s answers arrive
in, default ``<unit>-round-<t>.csv``, and ``waiting_for(directory)``, what the devices must send before round 1
and is not there yet, in words (``""``: all there), which a two-stage plan's second stage asks before it begins).
``hybridpriv release`` then runs as many rounds as the answers in the data folder allow and stops, publishing
``OUT/round.json`` for the devices; the same command, run again once their answers are in, goes on.  The K-means
family is the one that needs it today (:mod:`hybridpriv.families.kmeans.rounds`).

The ledger: the release's **whole charge** (every round, composed) is recorded when it begins, before
the data are read, so a release abandoned half-way has spent what it could have spent.  Each round
then appends an entry charging nothing but recording the round and the SHA-256 of the state it left
(:meth:`~hybridpriv.release.ledger.LedgerState.progress`); ``OUT/rounds.json`` keeps the state.  A
state that does not match the ledger's last round (an older copy restored: a round would be computed
twice, with fresh noise on the same data) is refused, as are other data than those the release began
on (their salted fingerprints), another SPEC or candidate, and another ledger.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from typing import Any

from .data import PrivateDataError
from .ledger_file import LedgerError, canonical, write_json_atomic

__all__ = ["ROUND_FILE", "ROUNDS_FILE", "RoundsDoc", "advance", "begin_doc", "check_resume", "state_digest"]

#: The release's round state (in the output folder).
ROUNDS_FILE = "rounds.json"
#: What the devices read to answer the next round (in the output folder; public).
ROUND_FILE = "round.json"

RoundsDoc = dict


def state_digest(state: Any) -> str:
    """SHA-256 of a round state's canonical JSON."""
    return sha256(canonical(state)).hexdigest()


def begin_doc(entry: dict[str, Any], ledger_id: str, label: str, params: str, state0: Any,
              total: int) -> RoundsDoc:
    """The round state of a release that has just begun (its entry recorded, round 0 = the public start)."""
    return {"format": "hybridpriv-rounds", "release_id": entry["id"], "ledger_id": ledger_id, "candidate": label,
            "params": params, "total": int(total), "round": 0, "state": state0, "randomness": {}}


def read_doc(out: Path) -> RoundsDoc:
    """``OUT/rounds.json``, refused (naming the file) if damaged."""
    path = out / ROUNDS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != "hybridpriv-rounds":
            raise ValueError
        for key in ("release_id", "ledger_id", "candidate", "params", "total", "round", "state"):
            doc[key]  # noqa: B018 (presence)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise LedgerError(f"{path} (the state of a release made in rounds) is damaged; the release cannot go on "
                          "(its budget was charged when it began)") from None
    return doc


def check_resume(doc: RoundsDoc, ledger_state: Any, label: str, params: str) -> None:
    """Refuse to go on with ``doc`` unless it is this candidate's, on this ledger, and its round and state are the
    ledger's last recorded round of the release."""
    if doc["candidate"] != label or doc["params"] != params:
        raise ValueError(f"the release in progress in this --out folder is of candidate {doc['candidate']!r}, not "
                         f"{label!r} as the SPEC and selection now give; finish it with the same SPEC and selection, "
                         "or choose another --out")
    if doc["ledger_id"] != ledger_state.id:
        raise LedgerError(f"the release in progress was charged to another ledger (id {doc['ledger_id']}), not "
                          f"{ledger_state.ledger.path} (id {ledger_state.id})")
    done = ledger_state.rounds_done(doc["release_id"])
    if done is None:
        raise LedgerError(f"ledger {ledger_state.ledger.path} has no release {doc['release_id']!r} made in rounds: "
                          "the round state belongs elsewhere")
    if done != (int(doc["round"]), state_digest(doc["state"])):
        raise LedgerError(f"the round state in {ROUNDS_FILE} (round {doc['round']}) is not the ledger's last recorded "
                          f"round of release {doc['release_id']} (round {done[0]}): it was restored from an older copy "
                          "or changed; going on would compute a round twice. Start a new release (charged again)")


def advance(proto: Any, doc: RoundsDoc, data: Any, data_dir: str | Path, out: Path, ledger_state: Any, rng: Any,
            log: Callable[[str], None]) -> RoundsDoc:
    """Run the rounds whose answers are in; returns the round state (``round == total``: done).  Each round is
    recorded in the ledger, then written to ``OUT/rounds.json``; while waiting, ``OUT/round.json`` is published."""
    label = doc["candidate"]
    while doc["round"] < doc["total"]:
        t = doc["round"] + 1
        published = proto.published(doc["state"], t, doc["release_id"])
        answers = proto.answers(data_dir, data, published) if proto.needs_devices else {}
        if answers is None:
            write_json_atomic(out / ROUND_FILE, published)
            files = proto.answer_files(t) if hasattr(proto, "answer_files") else [f"{u}-round-{t}.csv" for u in proto.local]
            log(f"round {t} of {doc['total']}: published {out / ROUND_FILE} for the devices; once their answers are in "
                f"the data folder ({', '.join(files)}), run the same command again")
            break
        try:
            state = proto.step(doc["state"], data, answers, rng)
        except PrivateDataError:
            raise
        except Exception as exc:  # the message may quote private values: withheld
            raise ValueError(f"candidate {label!r} failed in round {t} on the private data ({type(exc).__name__}); its "
                             "message is withheld, as it may quote private values") from None
        ledger_state.progress(doc["release_id"], t, doc["total"], state_digest(state), label)
        calls = Counter(doc.get("randomness") or {})
        calls.update({k: v["calls"] for k, v in rng.provenance().items()})
        rng.calls.clear()
        doc = {**doc, "round": t, "state": state, "randomness": dict(calls)}
        write_json_atomic(out / ROUNDS_FILE, doc)
        log(f"round {t} of {doc['total']} done")
    return doc


__all__ += ["read_doc"]
