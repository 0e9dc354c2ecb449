"""Paper claims, checked by the studies that reproduce them, as tables a reader can regenerate.

A study module may define ``PAPER`` (the paper's short title) and ``claims(ds) -> list[Claim]``:
each claim quotes the paper, states its number and ours (computed from the study's output, so the
table is regenerated whenever the study runs) and gives a verdict.  :func:`hybridpriv.studies.run_study`
stores them in the ``.nc`` (attribute ``claims``, JSON) and writes ``OUT/NAME.claims.md``;
:func:`hybridpriv.studies.run_all` writes ``OUT/reproduction.md``: one table per paper, with the
scale and run time of every study behind it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

__all__ = ["Claim", "VERDICTS", "from_attr", "markdown", "to_attr"]

#: The verdicts a claim can get.
VERDICTS = ("holds", "partly", "does not hold", "not comparable")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and what the study finds.

    Parameters
    ----------
    where
        Where the paper makes it ("Fig. 4", "Corollary 4.4", "slide 12").
    claim
        The claim, quoted or closely paraphrased.
    paper
        The paper's number (or "-" when it gives none).
    ours
        Our number, from the study's output.
    verdict
        One of :data:`VERDICTS`.
    """

    where: str
    claim: str
    paper: str
    ours: str
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def to_attr(claims: Sequence[Claim]) -> str:
    """The claims as a JSON string (a netCDF attribute)."""
    return json.dumps([asdict(c) for c in claims])


def from_attr(text: str) -> list[Claim]:
    """The claims of :func:`to_attr`'s string."""
    return [Claim(**row) for row in json.loads(text)]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(paper: str, rows: Sequence[tuple[str, Claim]], runs: Mapping[str, str] | None = None) -> str:
    """A markdown table of ``paper``'s claims: ``rows`` of ``(study, claim)``; ``runs``: study -> scale and time."""
    lines = [f"### {paper}", ""]
    if runs:
        lines += ["Studies: " + "; ".join(f"`{s}` ({text})" for s, text in runs.items()), ""]
    lines += ["| where | the paper says | paper | ours | verdict | study |", "|---|---|---|---|---|---|"]
    for study, c in rows:
        lines.append(f"| {_cell(c.where)} | {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.ours)} | "
                     f"**{c.verdict}** | `{study}` |")
    return "\n".join(lines) + "\n"
