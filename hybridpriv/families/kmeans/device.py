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

As a command, one device (its state in a file) or a batch of simulated devices (``--points FILE`` of
``user,x1,...,xd`` rows, states in ``--state-dir``: a demonstration or a test, each row its own device)::

    python -m hybridpriv.families.kmeans.device report --user u17 --point 0.4 0.7 --epsilon 5 --tau 3 --k 2 --bounds 0 1 --state u17.json
    python -m hybridpriv.families.kmeans.device answer --round OUT/round.json --state u17.json
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

__all__ = ["ANSWER_HEADER", "Device", "REPORT_HEADER", "centres_digest", "main"]

#: The report line's columns (``x1..xd``: one per coordinate).
REPORT_HEADER = "user,{coords},epsilon,tau,k,lower,upper"
#: The answer line's columns.
ANSWER_HEADER = "user,cluster,round,digest"


def centres_digest(centres: Any, round_: int, release: str) -> str:
    """SHA-256 of the published centres, the round and the release they belong to (binds an answer to them)."""
    c = np.asarray(centres, dtype=float)
    return sha256(json.dumps({"centres": [[float(v) for v in row] for row in c], "round": int(round_),
                              "release": str(release)}, sort_keys=True).encode()).hexdigest()


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

        self.user = str(user)
        if not self.user or any(c in self.user for c in ",\n\r"):
            raise ValueError(f"user must be a non-empty identifier without commas or newlines, got {user!r}")
        x = np.asarray(point, dtype=float).ravel()
        if x.size < 1 or not np.isfinite(x).all():
            raise ValueError("point must hold at least one finite coordinate")
        self.epsilon = check_epsilon(epsilon, allow_inf=False)
        self.tau = check_integer(tau, "tau", 1)
        self.k = check_integer(k, "k", 1)
        self.bounds = Bounds.from_pair(bounds)
        self.point = np.clip(x, self.bounds.lower, self.bounds.upper)
        self.reported = bool(state.get("reported", False)) if state else False
        self.answered = [int(r) for r in state.get("answered", [])] if state else []

    @property
    def part(self) -> float:
        """The epsilon of each of the ``tau + 1`` parts."""
        return self.epsilon / (self.tau + 1)

    def to_state(self) -> dict[str, Any]:
        """What the device keeps between rounds (its point stays on the device too)."""
        return {"user": self.user, "point": [float(v) for v in self.point], "epsilon": self.epsilon, "tau": self.tau,
                "k": self.k, "bounds": [self.bounds.lower, self.bounds.upper], "reported": self.reported,
                "answered": self.answered}

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


def _batch(args: argparse.Namespace) -> list[tuple[Device, Path]]:
    """The devices of a ``--points`` file (``user,x1..xd`` rows; a header allowed), states in ``--state-dir``."""
    out = []
    sdir = Path(args.state_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    for _, row in iter_rows(args.points, "--points"):
        try:
            point = [float(c) for c in row[1:]]
        except ValueError:
            continue  # a header line
        path = sdir / f"{row[0].strip()}.json"
        if args.command == "report":
            dev = Device(row[0].strip(), point, args.epsilon, args.tau, args.k, tuple(args.bounds))
            if path.exists() and _load(path).get("reported"):
                raise ValueError(f"device {row[0].strip()!r} has already sent its report ({path})")
        else:
            dev = Device.from_state(_load(path))
        out.append((dev, path))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The command (module docstring); bad input or a refusal: exit 2 and one ``error:`` line."""
    p = argparse.ArgumentParser(prog="python -m hybridpriv.families.kmeans.device",
                                description="An LM user's device in a K-means release: report once, answer each round.")
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
    for s in (rep, ans):
        s.add_argument("--state", help="this device's state file (one device)")
        s.add_argument("--points", help="a CSV of user,x1,...,xd rows: one simulated device per row")
        s.add_argument("--state-dir", help="with --points: one state file per device")
        s.add_argument("--header", action="store_true", help="print the header line first")
    args = p.parse_args(argv)
    try:
        if (args.points is None) == (args.state is None) or (args.points is not None and args.state_dir is None):
            raise ValueError("give --state FILE (one device) or --points FILE with --state-dir DIR (simulated devices)")
        if args.points is not None:
            devices = _batch(args)
        elif args.command == "report":
            if args.user is None or args.point is None:
                raise ValueError("report needs --user and --point")
            if Path(args.state).exists() and _load(Path(args.state)).get("reported"):
                raise ValueError(f"this device has already sent its report ({args.state})")
            devices = [(Device(args.user, args.point, args.epsilon, args.tau, args.k, tuple(args.bounds)), Path(args.state))]
        else:
            devices = [(Device.from_state(_load(Path(args.state))), Path(args.state))]
        published = _load(Path(args.round)) if args.command == "answer" else None
        lines = [dev.report() if published is None else dev.answer(published) for dev, _ in devices]
        for dev, path in devices:
            _save(path, dev.to_state())
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.header:
        print(report_header(devices[0][0].point.size) if args.command == "report" else ANSWER_HEADER)
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
