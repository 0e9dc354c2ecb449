"""What an LM user's device runs in a K-means release: one noisy report, then one answer per round.

An LM user trusts only their own device (Avent et al., Algorithm 1).  The device spends the user's
``epsilon`` in ``tau + 1`` equal parts and never more:

* **line 4, once**: the report ``x + Lap^d(b_L)``, ``b_L = m d (tau + 1) / epsilon`` (``x`` clipped into
  the box, ``m`` its width, ``d`` the dimension): ``epsilon / (tau + 1)``-local DP;
* **line 7, once per round** ``t = 1..tau``: the cluster whose published centre (the curator's
  ``OUT/round.json``) is nearest to ``x``, by K-ary randomized response at ``epsilon / (tau + 1)``.

Both draw from OpenDP (``make_laplace`` on the report, ``make_randomized_response`` on the cluster: exact
samplers over a cryptographically secure generator).  A :class:`Device` remembers what it has sent
(``--state FILE`` on the command line) and **refuses** a second report, a second answer to a round, a
round beyond ``tau``, or a round published for other parameters than those of its report: a curator
cannot make a device spend more than ``epsilon`` by asking again.

As functions::

    dev = Device("u17", [0.4, 0.7], epsilon=5.0, tau=3, k=2, bounds=(0.0, 1.0))
    line = dev.report()                          # user,x1,...,xd,epsilon,tau,k,lower,upper
    answer = dev.answer(json.load(open("OUT/round.json")))   # user,cluster,round,digest

**A two-stage plan** (``select`` judged it; :mod:`hybridpriv.families.kmeans.plan`) asks each device one thing
before the K-means release: its **cell**, the pilot start's centre nearest to ``x``, by K-ary randomized response at
``share x epsilon`` (:func:`cell_report`, against the probe's ``OUT/probe/round.json``).  The device is given the
user's whole ``budget`` and the cell's ``epsilon`` the user agreed to (a round asking for another is refused), keeps
the cell's epsilon in its state, and refuses a second cell or a K-means report whose ``epsilon`` would take it over
that budget (the plan's second stage reports at ``(1 - share) x epsilon``).

As a command, one device (its state in a file) or a batch of simulated devices (``--points FILE`` of
``user,x1,...,xd`` rows, states in ``--state-dir``: a demonstration or a test, each row its own device)::

    python -m hybridpriv.families.kmeans.device report --user u17 --point 0.4 0.7 --epsilon 5 --tau 3 --k 2 --bounds 0 1 --state u17.json
    python -m hybridpriv.families.kmeans.device answer --round OUT/round.json --state u17.json

and in a two-stage plan, first (the K-means report then at the rest of the budget)::

    python -m hybridpriv.families.kmeans.device cell --round OUT/probe/round.json --budget 5 --epsilon 0.5 --user u17 --point 0.4 0.7 --state u17.json
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Mapping, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

import numpy as np

from ...core.io import iter_rows

__all__ = ["ANSWER_HEADER", "CELL_HEADER", "Device", "REPORT_HEADER", "cell_report", "cells_digest", "centres_digest",
           "main"]

#: The report line's columns (``x1..xd``: one per coordinate).
REPORT_HEADER = "user,{coords},epsilon,tau,k,lower,upper"
#: The answer line's columns.
ANSWER_HEADER = "user,cluster,round,digest"
#: The cell line's columns (a two-stage plan's probe).
CELL_HEADER = "user,cell,digest"
#: The probe round's format (``OUT/probe/round.json``).
CELLS_FORMAT = "hybridpriv-kmeans-cells"


def centres_digest(centres: Any, round_: int, release: str) -> str:
    """SHA-256 of the published centres, the round and the release they belong to (binds an answer to them)."""
    c = np.asarray(centres, dtype=float)
    return sha256(json.dumps({"centres": [[float(v) for v in row] for row in c], "round": int(round_),
                              "release": str(release)}, sort_keys=True).encode()).hexdigest()


def cells_digest(published: Mapping[str, Any]) -> str:
    """SHA-256 of everything a probe round (``OUT/probe/round.json``) publishes but its digest: the release, the
    round, the centres, the epsilon, ``k`` and the box (binds a cell to all of them)."""
    keys = ("format", "release", "round", "centres", "epsilon", "k", "bounds")
    body = {k: published.get(k) for k in keys}
    body["centres"] = [[float(v) for v in row] for row in np.asarray(body["centres"], dtype=float)]
    body["epsilon"], body["bounds"] = float(body["epsilon"]), [float(b) for b in body["bounds"]]
    body["round"], body["k"] = int(body["round"]), int(body["k"])
    return sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _check_user(user: Any) -> str:
    """A device's user identifier: non-empty, no comma or newline (it is a CSV cell)."""
    text = str(user)
    if not text or any(c in text for c in ",\n\r"):
        raise ValueError(f"user must be a non-empty identifier without commas or newlines, got {user!r}")
    return text


def _check_point(point: Sequence[float]) -> np.ndarray:
    """A device's point: at least one finite coordinate, flattened."""
    x = np.asarray(point, dtype=float).ravel()
    if x.size < 1 or not np.isfinite(x).all():
        raise ValueError("point must hold at least one finite coordinate")
    return x


def report_header(d: int) -> str:
    return REPORT_HEADER.format(coords=",".join(f"x{j + 1}" for j in range(d)))


class Device:
    """One LM user's device (see the module docstring).

    Parameters
    ----------
    user
        The user's identifier in the release (no comma or newline).
    point
        The user's point (``d`` coordinates; clipped into the box).
    epsilon, tau, k, bounds
        The user's total budget, the iterations, the clusters and the box ``(lower, upper)`` of every
        coordinate: those the K-means candidate was published with.
    state
        What the device sent before (:meth:`to_state`), or ``None`` for a fresh device.
    """

    def __init__(self, user: str, point: Sequence[float], epsilon: float, tau: int, k: int,
                 bounds: tuple[float, float], state: Mapping[str, Any] | None = None) -> None:
        from ...core.privacy import Bounds, check_epsilon, check_integer

        self.user = _check_user(user)
        x = _check_point(point)
        self.epsilon = check_epsilon(epsilon, allow_inf=False)
        self.tau = check_integer(tau, "tau", 1)
        self.k = check_integer(k, "k", 1)
        self.bounds = Bounds.from_pair(bounds)
        self.point = np.clip(x, self.bounds.lower, self.bounds.upper)
        self.reported = bool(state.get("reported", False)) if state else False
        self.answered = [int(r) for r in state.get("answered", [])] if state else []
        #: A two-stage plan's cell report (``{"release", "digest", "epsilon"}``) and the budget it was sent under.
        self.cell = dict(state["cell"]) if state and state.get("cell") else None
        self.budget = float(state["budget"]) if self.cell else self.epsilon

    @property
    def part(self) -> float:
        """The epsilon of each of the ``tau + 1`` parts."""
        return self.epsilon / (self.tau + 1)

    def to_state(self) -> dict[str, Any]:
        """What the device keeps between rounds (its point stays on the device too)."""
        out = {"user": self.user, "point": [float(v) for v in self.point], "epsilon": self.epsilon, "tau": self.tau,
               "k": self.k, "bounds": [self.bounds.lower, self.bounds.upper], "reported": self.reported,
               "answered": self.answered}
        return {**out, "cell": self.cell, "budget": self.budget} if self.cell else out

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Device:
        try:
            return cls(state["user"], state["point"], state["epsilon"], state["tau"], state["k"],
                       tuple(state["bounds"]), state)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the device state lacks or mangles {exc}") from None

    def report(self) -> str:
        """Line 4: the report line ``user,x1..xd,epsilon,tau,k,lower,upper`` (once per device)."""
        from ...release.noise import OpenDPGenerator

        if self.reported:
            raise ValueError(f"device {self.user!r} has already sent its report (line 4): it sends one")
        if self.cell and self.epsilon + float(self.cell["epsilon"]) > self.budget * (1 + 1e-9):
            raise ValueError(f"device {self.user!r} spent epsilon {float(self.cell['epsilon']):g} on its cell (a "
                             f"two-stage plan's probe) of its budget {self.budget:g}; a K-means report at epsilon "
                             f"{self.epsilon:g} would exceed it: it does not report")
        b_l = self.bounds.width * self.point.size / self.part  # m d (tau + 1) / epsilon
        noisy = np.atleast_1d(OpenDPGenerator().laplace(self.point, b_l))
        self.reported = True
        coords = ",".join(repr(float(v)) for v in noisy)
        return f"{self.user},{coords},{self.epsilon!r},{self.tau},{self.k},{self.bounds.lower!r},{self.bounds.upper!r}"

    def answer(self, published: Mapping[str, Any]) -> str:
        """Line 7 of round ``published["round"]``: ``user,cluster,round,digest`` (once per round, ``tau`` rounds)."""
        from .algorithms.algorithm import nearest_centre

        if not self.reported:
            raise ValueError(f"device {self.user!r} has not sent its report (line 4) yet: report first")
        try:
            t, centres = int(published["round"]), np.asarray(published["centres"], dtype=float)
            params = (float(published["epsilon"]), int(published["tau"]), int(published["k"]),
                      tuple(float(b) for b in published["bounds"]))
            release, digest = str(published["release"]), str(published["digest"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"the published round lacks or mangles {exc}") from None
        mine = (self.epsilon, self.tau, self.k, (self.bounds.lower, self.bounds.upper))
        if not (math.isclose(params[0], mine[0]) and params[1:3] == mine[1:3]
                and all(math.isclose(a, b) for a, b in zip(params[3], mine[3]))):
            raise ValueError(f"round {t} was published for epsilon {params[0]:g}, tau {params[1]}, k {params[2]}, bounds "
                             f"{list(params[3])}; this device reported with epsilon {mine[0]:g}, tau {mine[1]}, k {mine[2]}, "
                             f"bounds {list(mine[3])}: it does not answer")
        if not 1 <= t <= self.tau:
            raise ValueError(f"round {t} is outside 1..tau = {self.tau}: the device answers tau rounds")
        if t in self.answered:
            raise ValueError(f"device {self.user!r} has already answered round {t}: it answers each round once")
        if centres.shape != (self.k, self.point.size) or not np.isfinite(centres).all():
            raise ValueError(f"round {t}'s centres must be {self.k} finite points of {self.point.size} coordinates")
        if centres_digest(centres, t, release) != digest:
            raise ValueError(f"round {t}'s digest does not match its centres: the round file was changed")
        nearest = int(nearest_centre(self.point[None], centres)[0][0])
        cluster = nearest if self.k == 1 else int(_rr(self.k, self.part)(nearest))
        self.answered.append(t)
        return f"{self.user},{cluster},{t},{digest}"


def cell_report(user: str, point: Sequence[float], published: Mapping[str, Any], budget: float, epsilon: float,
                state: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """A two-stage plan's probe on one LM device: the cell line ``user,cell,digest`` (the pilot start's centre
    nearest to ``point``, clipped into the published box, by K-ary randomized response at ``epsilon``) and the
    device's state after it.  ``published``: the probe's ``OUT/probe/round.json``; ``budget``: the user's whole
    epsilon, which the cell and a later K-means report share; ``epsilon``: what the user agreed to spend on the
    cell (``plan_share x`` the SPEC's epsilon): a round that asks for another is refused, so the curator cannot
    make the device spend more than it charges; ``state``: what the device sent before (``None``: fresh).  Also
    refused: a second cell, a cell after the K-means report, an epsilon above the budget, and a round whose digest
    does not match what it publishes."""
    from ...core.privacy import Bounds, check_epsilon
    from .algorithms.algorithm import nearest_centre

    user = _check_user(user)
    budget = check_epsilon(budget, allow_inf=False)
    mine = check_epsilon(epsilon, allow_inf=False)
    try:
        if published.get("format") != CELLS_FORMAT:
            raise ValueError(f"'format' is {published.get('format')!r}, not {CELLS_FORMAT!r}")
        centres, asked = np.asarray(published["centres"], dtype=float), float(published["epsilon"])
        k, bounds = int(published["k"]), Bounds.from_pair(tuple(float(b) for b in published["bounds"]))
        release, digest = str(published["release"]), str(published["digest"])
        expected = cells_digest(published)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"the published probe round lacks or mangles {exc}") from None
    if state and state.get("user", user) != user:
        raise ValueError(f"the device state is {state.get('user')!r}'s, not {user!r}'s")
    if state and (state.get("cell") or state.get("reported")):
        raise ValueError(f"device {user!r} has already sent its "
                         + ("cell (a two-stage plan's probe): it sends one" if state.get("cell") else
                            "K-means report: the cell comes first, before the report"))
    if not math.isclose(asked, mine, rel_tol=1e-9):
        raise ValueError(f"the probe asks for epsilon {asked:g}; this device agreed to {mine:g} for its cell: it "
                         "does not answer")
    if mine > budget * (1 + 1e-9):
        raise ValueError(f"the probe's epsilon {mine:g} is above this device's budget {budget:g}: it does not answer")
    x = _check_point(point)
    if k < 2 or centres.ndim != 2 or centres.shape[0] != k or not np.isfinite(centres).all():
        raise ValueError(f"the probe's centres must be k = {k} >= 2 finite points")
    if centres.shape[1] != x.size:
        raise ValueError(f"the probe's centres have {centres.shape[1]} coordinates; this device's point has {x.size}")
    if expected != digest:
        raise ValueError("the probe round's digest does not match what it publishes (centres, epsilon, k, box): the "
                         "round file was changed")
    x = np.clip(x, bounds.lower, bounds.upper)
    cell = int(_rr(k, mine)(int(nearest_centre(x[None], centres)[0][0])))
    after = {"user": user, "point": [float(v) for v in x], "bounds": [bounds.lower, bounds.upper], "budget": budget,
             "cell": {"release": release, "digest": digest, "epsilon": mine}}
    return f"{user},{cell},{digest}", after


@functools.lru_cache(maxsize=64)
def _rr(k: int, epsilon: float):
    """OpenDP's K-ary randomized response over clusters ``0..k-1``: the true one with ``e^eps / (k - 1 + e^eps)``."""
    from ...noise import rr_probabilities
    from ...release.noise import _opendp

    dp = _opendp()
    q = rr_probabilities(epsilon, k)[0]
    meas = dp.m.make_randomized_response(categories=list(range(k)), prob=q)
    if meas.map(1) > epsilon * (1 + 1e-9):  # OpenDP's privacy map checks the declared part
        raise ValueError(f"randomized response at epsilon {epsilon:g} over {k} clusters: OpenDP's privacy map gives "
                         f"{meas.map(1):g}")
    return meas


# -- the command ---------------------------------------------------------------------------------------
def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def _save(path: Path, state: Mapping[str, Any]) -> None:
    from ...release.ledger_file import write_json_atomic

    write_json_atomic(path, state)


def _existing(path: Path, user: str) -> dict[str, Any] | None:
    """A device's state file before its K-means report: ``None`` if absent; refused if it has reported already or
    belongs to another user; a state with only a cell (a two-stage plan's probe) is returned, to be carried on."""
    if not path.exists():
        return None
    state = _load(path)
    if state.get("reported"):
        raise ValueError(f"device {user!r} has already sent its report ({path})")
    if state.get("user") != user:
        raise ValueError(f"the state {path} is device {state.get('user')!r}'s, not {user!r}'s")
    return state if state.get("cell") else None


def _report_device(user: str, point: Sequence[float] | None, args: argparse.Namespace, path: Path) -> Device:
    """A device about to report: fresh, or carrying its cell (its point is then the one it answered the cell with)."""
    state = _existing(path, user)
    if state is None and point is None:
        raise ValueError("report needs --user and --point")
    return Device(user, state["point"] if state else point, args.epsilon, args.tau, args.k, tuple(args.bounds), state)


def _users(args: argparse.Namespace) -> list[tuple[str, list[float] | None, Path]]:
    """``(user, point, state file)`` of each device the command speaks for: the ``--points`` rows (states in
    ``--state-dir``) or the one ``--user``/``--point``/``--state``."""
    if args.points is None:
        point = getattr(args, "point", None)
        return [(getattr(args, "user", None), None if point is None else list(point), Path(args.state))]
    sdir = Path(args.state_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    out, seen = [], set()
    for number, (line, row) in enumerate(iter_rows(args.points, "--points")):
        user = row[0].strip()
        try:
            point = [float(c) for c in row[1:]]
        except ValueError:
            if number == 0:
                continue  # the header line: the first row, or none
            raise ValueError(f"--points line {line}: a coordinate is not a number (rule: user,x1,...,xd)") from None
        if not user or user in (".", "..") or any(c in user for c in "/\\"):
            raise ValueError(f"--points line {line}: the user {user!r} cannot name a state file (rule: no path "
                             "separators)")
        if user in seen:  # one device per user: a second row would spend the same user's budget again
            raise ValueError(f"--points line {line}: user {user!r} appears twice (rule: one device per user)")
        seen.add(user)
        out.append((user, point, sdir / f"{user}.json"))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The command (module docstring); bad input or a refusal: exit 2 and one ``error:`` line."""
    p = argparse.ArgumentParser(prog="python -m hybridpriv.families.kmeans.device",
                                description="An LM user's device in a K-means release: report once, answer each "
                                            "round (in a two-stage plan: its cell first).")
    sub = p.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="line 4: the noisy point, once")
    rep.add_argument("--user")
    rep.add_argument("--point", type=float, nargs="+")
    rep.add_argument("--epsilon", type=float, required=True)
    rep.add_argument("--tau", type=int, required=True)
    rep.add_argument("--k", type=int, required=True)
    rep.add_argument("--bounds", type=float, nargs=2, required=True, metavar=("LOWER", "UPPER"))
    ans = sub.add_parser("answer", help="line 7: the randomized nearest cluster of one published round")
    ans.add_argument("--round", required=True, help="the curator's OUT/round.json")
    cel = sub.add_parser("cell", help="a two-stage plan's probe: the randomized nearest centre of the pilot start, "
                                      "once, before the report")
    cel.add_argument("--round", required=True, help="the curator's OUT/probe/round.json")
    cel.add_argument("--budget", type=float, required=True, help="the user's whole epsilon (the cell and the "
                                                                 "K-means report share it)")
    cel.add_argument("--epsilon", type=float, required=True, help="what the user agreed to spend on the cell "
                                                                  "(plan_share x the SPEC's epsilon)")
    cel.add_argument("--user")
    cel.add_argument("--point", type=float, nargs="+")
    for s in (rep, ans, cel):
        s.add_argument("--state", help="this device's state file (one device)")
        s.add_argument("--points", help="a CSV of user,x1,...,xd rows: one simulated device per row")
        s.add_argument("--state-dir", help="with --points: one state file per device")
        s.add_argument("--header", action="store_true", help="print the header line first")
    args = p.parse_args(argv)
    try:
        if (args.points is None) == (args.state is None) or (args.points is not None and args.state_dir is None):
            raise ValueError("give --state FILE (one device) or --points FILE with --state-dir DIR (simulated devices)")
        published = _load(Path(args.round)) if args.command != "report" else None
        done: list[tuple[str, dict[str, Any], Path]] = []
        for user, point, path in _users(args):
            if args.command == "answer":
                state = _load(path)
                if not state.get("reported"):
                    raise ValueError(f"device {state.get('user', user or '')!r} has not sent its K-means report yet "
                                     f"({path}): report first")
                dev = Device.from_state(state)
                done.append((dev.answer(published), dev.to_state(), path))
                continue
            if user is None or (point is None and args.command == "cell"):
                raise ValueError(f"{args.command} needs --user and --point")
            if args.command == "cell":
                done.append((*cell_report(user, point, published, args.budget, args.epsilon,
                                          _load(path) if path.exists() else None), path))
                continue
            dev = _report_device(user, point, args, path)
            done.append((dev.report(), dev.to_state(), path))
        for _, state, path in done:
            _save(path, state)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.header and done:
        d = len(done[0][1]["point"])
        print({"report": report_header(d), "answer": ANSWER_HEADER, "cell": CELL_HEADER}[args.command])
    for line, _, _ in done:
        print(line)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
