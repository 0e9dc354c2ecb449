"""The ``hybridpriv release`` sub-command (wired into :mod:`hybridpriv.cli` by :func:`add_parser` / :func:`main`).

``hybridpriv release SPEC --data DIR [--selection FILE.nc | --candidate NAME] [--ledger FILE] --out DIR``
    Apply the recommended (or named) candidate to the private data in DIR, charge it to the data's
    ledger (by default ``DIR/hybridpriv-ledger.json``; created with the SPEC's budgets, or
    ``--budget UNIT=EPS[:DELTA]`` at most the SPEC's unless ``--allow-budget-above-spec``), write
    ``OUT/release.json``.  A candidate released in rounds (K-means: its users' devices answer every
    iteration) stops after each round it can compute, publishing ``OUT/round.json``; the same command
    goes on once the answers are in the data folder.
``hybridpriv release (--ledger FILE | --data DIR) --show [--target-delta D]``
    Print the ledger: budgets, totals by basic composition, RDP and PLD, and the releases; exit 2
    with an ``error:`` line if a unit has overspent.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

__all__ = ["add_parser", "main", "parse_budget"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``release`` sub-command to ``subparsers`` (of the ``hybridpriv`` parser)."""
    r = subparsers.add_parser(
        "release", help="apply the chosen mechanism to private data and charge a persistent ledger",
        description="Apply the recommended (--selection) or a named (--candidate) mechanism to the private data "
                    "in --data, charging the budget ledger --ledger before the data are read; or print a "
                    "ledger (--show).")
    r.add_argument("spec", nargs="?", help="the SPEC.toml the selection was made for (any kind)")
    r.add_argument("--data", help="folder of private data, as the SPEC's kind reads it (docs/release.md, 'Private "
                                  "data files'; `hybridpriv spec KIND` names them)")
    r.add_argument("--selection", help="a select run's selection.nc (release its recommendation)")
    r.add_argument("--candidate", help="release this candidate (a label or coordinate, e.g. weighted or 3)")
    r.add_argument("--plan", action="store_true",
                   help="carry out the selection's two-stage plan (its probe, then the candidate the probe's release "
                        "chooses) even where select found that it does not pay")
    r.add_argument("--ledger", help="the budget ledger (JSON; default: the one in or noted by the --data folder, "
                                    "DATA/hybridpriv-ledger.json; created with the SPEC's budgets)")
    r.add_argument("--budget", action="append", default=[], metavar="UNIT=EPS[:DELTA]",
                   help="budget of a unit when the ledger is created (default: the SPEC's epsilon/delta; above it "
                        "only with --allow-budget-above-spec); repeat")
    r.add_argument("--allow-budget-above-spec", action="store_true",
                   help="allow a ledger budget above the SPEC's (at creation with --budget, or an existing ledger's); "
                        "recorded in the ledger")
    r.add_argument("--data-changed", action="store_true",
                   help="release although the private data differ from those the ledger's earlier releases spent on "
                        "(the same people's records, corrected); recorded in the ledger")
    r.add_argument("--audit-record", metavar="FILE",
                   help="an audit record written by `hybridpriv audit --record` that may vouch for a plugin mechanism "
                        "(otherwise a plugin is audited before its release)")
    r.add_argument("--out", default="out/release", help="output folder for release.json (default: out/release)")
    r.add_argument("--show", action="store_true", help="print the ledger and exit")
    r.add_argument("--target-delta", type=float, default=None,
                   help="delta at which the RDP and PLD totals are read (default 1e-6)")
    r.add_argument("--quiet", action="store_true", help="print only the result line")
    return r


def parse_budget(text: str) -> tuple[str, tuple[float, float]]:
    """``"unit=eps[:delta]"`` as ``(unit, (eps, delta))`` (``eps`` may be ``inf``)."""
    unit, sep, value = text.partition("=")
    if not sep or not unit.strip():
        raise ValueError(f"--budget must be UNIT=EPS[:DELTA], got {text!r}")
    eps_s, _, delta_s = value.partition(":")
    try:
        eps = float(eps_s)
        delta = float(delta_s) if delta_s else 0.0
    except ValueError:
        raise ValueError(f"--budget must be UNIT=EPS[:DELTA] with numbers, got {text!r}") from None
    if math.isnan(eps) or eps <= 0:
        raise ValueError(f"--budget epsilon of unit {unit.strip()!r} must be > 0, got {eps_s!r}")
    if not 0 <= delta < 1:
        raise ValueError(f"--budget delta of unit {unit.strip()!r} must be in [0, 1), got {delta_s!r}")
    return unit.strip(), (eps, delta)


def _show(args: argparse.Namespace, target: float) -> int:
    """``--show``: the ledger as text; exit 2 with one ``error:`` line when a unit has overspent."""
    import sys

    from .ledger import Ledger, format_ledger, ledger_for_data

    if args.ledger is None and args.data is None:
        raise ValueError("--show needs --ledger FILE or --data DIR (whose ledger to show)")
    path = args.ledger if args.ledger is not None else ledger_for_data(args.data, None)[0]
    ledger = Ledger(path)
    if not ledger.path.exists():
        raise ValueError(f"ledger {str(path)!r} does not exist")
    state = ledger.read()
    print(format_ledger(state, target))
    over = state.overspent()
    if over:
        unit, (spent, budget) = next(iter(over.items()))
        print(f"error: ledger {ledger.path}: unit {unit!r} has overspent its budget (epsilon {spent:g} of {budget:g})"
              + (f" and {len(over) - 1} other unit(s)" if len(over) > 1 else ""), file=sys.stderr)
        return 2
    return 0


def main(args: argparse.Namespace) -> int:
    """Run ``hybridpriv release`` for parsed ``args``; returns the exit status (errors raise ``ValueError``)."""
    from .composition import DEFAULT_TARGET_DELTA

    target = DEFAULT_TARGET_DELTA if args.target_delta is None else args.target_delta
    if not 0 < target < 1:
        raise ValueError(f"--target-delta must be in (0, 1), got {args.target_delta!r}")
    if args.show:
        return _show(args, target)
    if args.spec is None:
        raise ValueError("release needs a SPEC (or --show to print the ledger)")
    if args.data is None:
        raise ValueError("release needs --data DIR (the private data)")
    if args.selection is None and args.candidate is None:
        raise ValueError("give --selection FILE.nc or --candidate NAME")
    budgets = dict(parse_budget(b) for b in args.budget) or None
    from .run import run_release

    say = (lambda _line: None) if args.quiet else (lambda line: print(line, flush=True))
    result = run_release(args.spec, args.data, args.ledger, args.out, selection=args.selection,
                         candidate=args.candidate, plan=args.plan, budgets=budgets,
                         allow_budget_above_spec=args.allow_budget_above_spec, data_changed=args.data_changed,
                         audit_record=args.audit_record, target_delta=target, log=say)
    rec = result.record
    if result.waiting == 0:  # a two-stage plan's second candidate, chosen now, needs its devices' reports first
        print(f"two-stage plan: the probe is released and {rec['candidate']['label']} chosen; waiting for "
              f"{rec['needs']}; published nothing")
        return 0
    if result.waiting is not None:
        print(f"release of {rec['candidate']['label']} in progress: waiting for the devices' answers to round "
              f"{result.waiting} of {rec['rounds']}; published {result.output}")
        return 0
    shown = rec["released"] if isinstance(rec["released"], float) else f"{len(rec['released'])} values"
    if not args.quiet:
        for unit, t in rec["ledger"]["totals_after"].items():
            print(f"  {unit}: spent epsilon {t['basic_epsilon']} (basic), RDP {t['rdp_epsilon']}, PLD "
                  f"{t['pld_epsilon']} at delta={t['target_delta']:g}")
    print(f"released {rec['candidate']['label']}: {shown}; wrote {result.output}")
    return 0
