"""Which of the model's alternatives a recommendation rests on.

A model of public knowledge may be a mixture of alternatives that public knowledge cannot tell apart
(:class:`~hybridpriv.core.assumptions.Branch`: "the private records follow the public ones' law" or not),
one drawn per posterior draw; a family's posterior declares them (``Posterior.branches``).  The decision
averages over them: a recommendation can be good on average and bad under an alternative the model finds
quite likely.  :func:`branch_check` decides again on the evaluated datasets of each alternative alone (no
new evaluation: the datasets are the decision's own), and :func:`branch_lines` says what it found, with a
warning when an alternative holding on at least :data:`BRANCH_WARNING` of the datasets makes another
candidate best and the recommendation more than :data:`~hybridpriv.engine.sensitivity.MATTERS` worse: "if
<the alternative> (25% of the model's datasets), <candidate> is better: the recommendation is then 71%
worse".  The calibration study counts it as a warning, like a sensitivity warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..core.assumptions import Branch
from .sensitivity import MATTERS

__all__ = ["BRANCH_WARNING", "branch_check", "branch_lines", "branch_notes", "branch_warnings"]

#: An alternative on at least this share of the evaluated datasets is likely enough to warn about.
BRANCH_WARNING = 0.1
SIDES = ("holds", "fails")


def branch_check(evaluation: xr.Dataset, branches: Sequence[Branch], draw_index: Any, recommended: Any,
                 criterion: str = "loss") -> xr.Dataset:
    """The decision again within each alternative of each branch, on the evaluation's own datasets.

    ``draw_index``: the posterior draw of each of the evaluation's ``draw`` positions (the evaluation's
    chains are the posterior's).  Returns dims ``(branch, side)`` (``side``: ``"holds"``, ``"fails"``):
    ``share`` (of the evaluated datasets), ``datasets``, ``best`` (the candidate ``criterion`` picks there among
    the eligible ones, ``""`` on no dataset) and ``excess`` (the recommendation's expected loss there over the
    lowest eligible one's, minus 1, as a sensitivity check's ``worst``; NaN on no dataset); the alternatives'
    words as coordinate ``statement``, and each branch's ``advice``."""
    from .decision import CRITERIA, eligibility, regret_ratio

    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    dim = evaluation.attrs.get("candidate_dim", "estimator")
    risk = evaluation["risk"].transpose(dim, "chain", "draw")
    coords = [str(c) for c in risk[dim].values]
    if str(recommended) not in coords:
        raise ValueError(f"recommended must be one of the evaluation's candidates {coords}, got {recommended!r}")
    rec = coords.index(str(recommended))
    meets = eligibility(evaluation)
    losses = risk.values
    value = regret_ratio(risk, meets, dim).transpose(dim, "chain", "draw").values if criterion == "regret" else losses
    pool = meets.values if bool(meets.any()) else np.ones(len(coords), bool)
    index = np.asarray(draw_index, dtype=int)
    if index.shape != (risk.sizes["draw"],):
        raise ValueError(f"draw_index must give a posterior draw for each of the evaluation's {risk.sizes['draw']} "
                         f"draws, got shape {index.shape}")
    total = risk.sizes["chain"] * risk.sizes["draw"]
    share = np.zeros((len(branches), 2))
    count = np.zeros((len(branches), 2), dtype=int)
    excess = np.full((len(branches), 2), np.nan)
    best = np.full((len(branches), 2), "", dtype=object)
    for i, b in enumerate(branches):
        if b.draws.shape[0] != risk.sizes["chain"] or index.max(initial=-1) >= b.draws.shape[1]:
            raise ValueError(f"branch {b.name!r}: its draws {b.draws.shape} do not cover the evaluation's "
                             f"{risk.sizes['chain']} chains and posterior draws up to {index.max(initial=-1)}")
        holds = b.draws[:, index]  # (chain, draw) of the evaluation
        for j, mask in enumerate((holds, ~holds)):
            count[i, j] = int(mask.sum())
            share[i, j] = count[i, j] / total
            if not count[i, j]:
                continue
            best[i, j] = coords[int(np.argmin(np.where(pool, value[:, mask].mean(axis=1), np.inf)))]
            loss = np.where(pool, losses[:, mask].mean(axis=1), np.inf)
            low = float(loss.min())
            mine = float(losses[rec, mask].mean())
            excess[i, j] = mine / low - 1 if low > 0 else (0.0 if mine == 0 else np.inf)  # 0 / 0: a tie
    return xr.Dataset(
        {"share": (("branch", "side"), share), "datasets": (("branch", "side"), count),
         "best": (("branch", "side"), best.astype(str)), "excess": (("branch", "side"), excess)},
        coords={"branch": [b.name for b in branches], "side": list(SIDES),
                "statement": (("branch", "side"), np.array([[b.holds, b.fails] for b in branches], dtype=str)),
                "advice": ("branch", np.array([b.advice for b in branches], dtype=str))},
        attrs={"description": "the decision again on the evaluated datasets of each alternative the model draws",
               "recommended": str(recommended), "criterion": criterion, "candidate_dim": dim},
    )


def branch_warnings(check: xr.Dataset) -> list[tuple[str, str]]:
    """``(branch, side)`` of every alternative that warns: on at least :data:`BRANCH_WARNING` of the datasets,
    another candidate best there, and the recommendation more than :data:`MATTERS` worse."""
    rec = check.attrs["recommended"]
    out = []
    for b in check["branch"].values:
        for s in SIDES:
            row = check.sel(branch=b, side=s)
            if (float(row["share"]) >= BRANCH_WARNING and str(row["best"].values) not in ("", rec)
                    and float(row["excess"]) > MATTERS):
                out.append((str(b), s))
    return out


def _warning(row: xr.Dataset, rec: str) -> str:
    return (f"if {row['statement'].values} ({float(row['share']):.0%} of the model's datasets), "
            f"{row['best'].values} is better: the recommendation ({rec}) is then {float(row['excess']):.0%} worse")


def branch_lines(check: xr.Dataset) -> list[str]:
    """What :func:`branch_check` found, in words; a ``warning:`` line for each alternative that warns."""
    rec = check.attrs["recommended"]
    by = "expected loss" if check.attrs["criterion"] == "loss" else "expected relative regret"
    lines = [f"the recommendation ({rec}) within each alternative the model cannot rule out "
             "(decided again on that alternative's datasets):"]
    for b in check["branch"].values:
        rows = [check.sel(branch=b, side=s) for s in SIDES]
        if all(str(row["best"].values) == rec for row in rows if int(row["datasets"])):  # one line when both agree
            holds = rows[0]
            lines.append(f"  {b}: {rec} is best whether {holds['statement'].values} "
                         f"({float(holds['share']):.0%} of the datasets) or not")
            continue
        for row in rows:
            head = f"  {b}: {row['statement'].values} ({float(row['share']):.0%} of the datasets): "
            excess = float(row["excess"])
            if not int(row["datasets"]):
                lines.append(head + "no dataset")
            elif str(row["best"].values) == rec:
                lines.append(head + f"{rec} is best there too")
            else:
                lines.append(head + f"{row['best'].values} is best there (by {by}); the recommendation's expected "
                             + ("loss there is within 0.5% of the lowest" if excess < 0.005
                                else f"loss there is {excess:.0%} above the lowest"))
    for b, s in branch_warnings(check):
        advice = str(check["advice"].sel(branch=b).values)
        lines.append("warning: " + _warning(check.sel(branch=b, side=s), rec)
                     + "; the average over the alternatives hides it" + (f": {advice}" if advice else ""))
    return lines


def branch_notes(check: xr.Dataset) -> list[str]:
    """The warnings of :func:`branch_lines`, short (the figure prints them under the plot)."""
    rec = check.attrs["recommended"]
    return ["warning: " + _warning(check.sel(branch=b, side=s), rec) for b, s in branch_warnings(check)]
