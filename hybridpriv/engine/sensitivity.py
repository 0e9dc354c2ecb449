"""How far the data may break the model's assumptions before the recommendation changes.

:func:`sensitivity` evaluates the candidates on the same simulated datasets, each departed from one
:class:`~hybridpriv.core.assumptions.Assumption` by ``delta`` (:data:`~hybridpriv.core.assumptions.SHIFTS`
times its scale, both directions), and decides again at every ``delta``.  :func:`tipping_points` reads off,
per assumption and direction, the smallest departure at which another candidate is best, and
:func:`sensitivity_lines` says it in the data's units: "the recommendation holds unless the private groups'
mean differs from the panel's by more than 2 (2% of the range); beyond that uniform-mean is better".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..core.assumptions import SHIFTS, Assumption
from ..core.params import Parametrized
from .decision import COSTLY

__all__ = ["FLIP_WARNING", "MATTERS", "MAX_REMEMBERED_BYTES", "PerturbedSource", "RememberedSource", "sensitivity",
           "sensitivity_lines", "tipping_points", "warning_notes", "warnings_of"]

#: A recommendation that flips within this share of an assumption's scale is printed as a warning.
FLIP_WARNING = 0.05
#: ... and only when, at some departure within that share, the recommendation's expected loss is more than this
#: much above the best candidate's: a flip between near-equals is a tie, not a danger (the calibration study
#: counts a regret above this as a failure too; the decision's ``p_costly`` uses the same line).
MATTERS = COSTLY


class PerturbedSource(Parametrized):
    """Another source's datasets, each departed from an assumption by ``delta``."""

    def __init__(self, source: Any, assumption: Assumption, delta: float) -> None:
        self.source, self.assumption, self.delta = source, assumption, float(delta)
        self.data_kind = source.data_kind
        self.groups = getattr(source, "groups", None)
        self.bounds = getattr(source, "bounds", None)
        self.strata = getattr(source, "strata", None)

    @property
    def shape(self) -> tuple[int, int]:
        return self.source.shape

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        return self.assumption.perturb(self.source.generate(chain, draw, rng), self.delta)

    def describe_params(self) -> dict[str, Any]:
        return {"source": self.source, "assumption": self.assumption.name, "delta": self.delta}


#: A sensitivity check remembers datasets up to this many bytes (their arrays); beyond, it generates the
#: rest again for every departure, as it did before remembering any.
MAX_REMEMBERED_BYTES = 256 * 2**20


def _array_bytes(obj: Any, depth: int = 0) -> int:
    """Bytes of the NumPy and SciPy sparse arrays ``obj`` holds (in its attributes, tuples, lists and dicts,
    four levels deep): what remembering it costs, near enough."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if hasattr(obj, "indptr") and hasattr(obj, "data"):  # a sparse matrix or array
        return sum(int(getattr(obj, k).nbytes) for k in ("data", "indices", "indptr"))
    if depth >= 4:
        return 0
    if isinstance(obj, dict):
        return sum(_array_bytes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (tuple, list)):
        return sum(_array_bytes(v, depth + 1) for v in obj)
    if hasattr(obj, "__dict__"):
        return sum(_array_bytes(v, depth + 1) for v in vars(obj).values())
    return 0


class RememberedSource(Parametrized):
    """Another source whose datasets are generated once and then handed out again: the departures of one
    sensitivity check all start from the same datasets.  Keyed by ``(chain, draw)`` and the generator's state
    (so a dataset is reused only for the very call that made it); up to :data:`MAX_REMEMBERED_BYTES` of them
    (the others are generated again each time); they stay in this process (not pickled to workers).  The
    departures (``Assumption.perturb``) return new datasets and never change the one they are given."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.data_kind = source.data_kind
        self.groups = getattr(source, "groups", None)
        self.bounds = getattr(source, "bounds", None)
        self.strata = getattr(source, "strata", None)
        self._memo: dict[tuple, Any] = {}
        self._bytes = 0

    @property
    def shape(self) -> tuple[int, int]:
        return self.source.shape

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        key = (int(chain), int(draw), repr(rng.bit_generator.state))
        if key in self._memo:
            return self._memo[key]
        data = self.source.generate(chain, draw, rng)
        size = _array_bytes(data)
        if self._bytes + size <= MAX_REMEMBERED_BYTES:
            self._memo[key] = data
            self._bytes += size
        return data

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_memo": {}, "_bytes": 0}

    def describe_params(self) -> dict[str, Any]:
        return {"source": self.source}


def sensitivity(candidates: Mapping[Any, Any], source: Any, task: Any, assumptions: Sequence[Assumption], *,
                dim: str, trials: int, seed: int, requirements: Any = None, engine: Any = None,
                criterion: str = "loss") -> xr.Dataset:
    """Expected loss of every candidate, and the best, with the datasets departed from each assumption.

    Returns a Dataset with dimensions ``(assumption, shift, dim)``: ``expected_loss`` and ``best`` (the coordinate
    the decision rule picks at that departure, by ``criterion`` as :func:`~hybridpriv.engine.decision.decide`),
    ``delta`` (the departure in data units: ``shift`` times the assumption's scale), and the assumptions' words as
    coordinates."""
    from .decision import decide
    from .evaluate import evaluate
    from .options import as_engine

    engine = as_engine(engine).replace(checkpoint=None)  # recomputed on a resume, never reused
    names = [a.name for a in assumptions]
    if len(set(names)) != len(names):
        raise ValueError(f"assumptions must have distinct names, got {names}")
    coords = list(candidates)
    source = RememberedSource(source)  # every departure starts from the same datasets: generated once
    loss = np.full((len(assumptions), len(SHIFTS), len(coords)), np.nan)
    best = np.empty((len(assumptions), len(SHIFTS)), dtype=object)
    for i, a in enumerate(assumptions):
        for j, shift in enumerate(SHIFTS):
            ev = evaluate(dict(candidates), PerturbedSource(source, a, shift * a.scale), task, trials=trials, seed=seed,
                          dim=dim, requirements=requirements, engine=engine)
            dec = decide(ev, criterion=criterion)
            loss[i, j] = dec["expected_loss"].sel({dim: coords}).values
            best[i, j] = str(dec.attrs["recommended"])
    return xr.Dataset(
        {"expected_loss": (("assumption", "shift", dim), loss),
         "best": (("assumption", "shift"), best.astype(str)),
         "delta": (("assumption", "shift"), np.array([[s * a.scale for s in SHIFTS] for a in assumptions]))},
        coords={"assumption": names, "shift": list(SHIFTS), dim: [str(c) for c in coords],
                "assumes": ("assumption", [a.assumes for a in assumptions]),
                "departure": ("assumption", [a.departure for a in assumptions]),
                "scale": ("assumption", [float(a.scale) for a in assumptions])},
        attrs={"description": "the decision again on the same simulated datasets, each departed from one assumption "
                              "of the model by delta = shift x scale (data units)", "candidate_dim": dim},
    )


def tipping_points(sens: xr.Dataset, recommended: str) -> dict[str, dict[str, Any]]:
    """Per assumption and direction (``"below"``: negative departures, ``"above"``: positive), the smallest
    departure tried at which another candidate is best, and which: ``{"delta", "share", "better", "held"}``
    (``held``: the largest departure tried before it at which the recommendation was still best, 0 if none;
    ``None`` when the recommendation stays best over every departure tried in that direction)."""
    out: dict[str, dict[str, Any]] = {}
    shifts = sens["shift"].values
    for a in sens["assumption"].values:
        row = sens.sel(assumption=a)
        found: dict[str, Any] = {}
        for side, order in (("below", np.argsort(-shifts)), ("above", np.argsort(shifts))):
            idx = [k for k in order if (shifts[k] < 0) == (side == "below")]
            found[side] = None
            held = 0.0
            for k in idx:
                if str(row["best"].values[k]) != str(recommended):
                    found[side] = {"delta": float(row["delta"].values[k]), "share": abs(float(shifts[k])),
                                   "better": str(row["best"].values[k]), "held": held}
                    break
                held = float(row["delta"].values[k])
        out[str(a)] = found
    return out


def warnings_of(sens: xr.Dataset, recommended: str, tips: dict[str, dict[str, Any]] | None = None
                ) -> dict[str, dict[str, Any]]:
    """Per assumption: ``flip`` (the smallest share of its scale at which another candidate is best, ``inf`` if
    none), ``worst`` (the recommendation's largest expected loss over the best's, minus 1, at the departures
    within :data:`FLIP_WARNING`) and ``warns`` (both: a flip within :data:`FLIP_WARNING` and ``worst`` above
    :data:`MATTERS`): the rule :func:`sensitivity_lines` prints and the calibration study counts.  ``tips``: the
    :func:`tipping_points` of ``sens`` when the caller has them already."""
    dim = sens.attrs["candidate_dim"]
    rec = [str(c) for c in sens[dim].values].index(str(recommended))
    near = np.abs(sens["shift"].values) <= FLIP_WARNING + 1e-12
    out = {}
    for a, sides in (tips if tips is not None else tipping_points(sens, recommended)).items():
        flips = [v["share"] for v in sides.values() if v is not None]
        loss = sens["expected_loss"].sel(assumption=a).values[near]  # (departures within the share, candidates)
        worst = float(np.max(loss[:, rec] / np.nanmin(loss, axis=1) - 1)) if loss.size else 0.0
        flip = min(flips) if flips else float("inf")
        out[a] = {"flip": flip, "worst": worst, "warns": flip <= FLIP_WARNING and worst > MATTERS}
    return out


def _nearest(sides: dict[str, Any]) -> dict[str, Any]:
    """The flip (of :func:`tipping_points`' two sides, at least one not ``None``) at the smallest departure."""
    return min((v for v in sides.values() if v is not None), key=lambda v: v["share"])


def warning_notes(sens: xr.Dataset, recommended: str) -> list[str]:
    """The warnings of :func:`sensitivity_lines`, short (the figure prints them under the plot)."""
    tips = tipping_points(sens, recommended)
    out = []
    for a, rule in warnings_of(sens, recommended, tips).items():
        if rule["warns"]:
            assumes = str(sens["assumes"].sel(assumption=a).values)
            out.append(f"warning: the recommendation flips when the data depart from '{assumes}' by "
                       f"{rule['flip']:.0%} of its scale ({_nearest(tips[a])['better']} is then better; up to "
                       f"{rule['worst']:.0%} worse)")
    return out


def _of(scale: float) -> str:
    """`` of 12.5`` after a share of a scale in data units; nothing when the departure is itself a share (scale 1)."""
    return "" if scale == 1 else f" of {scale:.3g}"


def sensitivity_lines(sens: xr.Dataset, recommended: str, units: str = "") -> list[str]:
    """What :func:`tipping_points` found, in words and in the data's units; a ``warning:`` line for every
    assumption whose departure by at most :data:`FLIP_WARNING` of its scale changes the recommendation and makes
    its expected loss more than :data:`MATTERS` above the best candidate's (a smaller gap is reported as a near tie)."""
    lines = [f"sensitivity of the recommendation ({recommended}) to the model's assumptions "
             f"(departures up to ±{max(abs(s) for s in sens['shift'].values):.0%} of each scale):"]
    warn = []
    u = f" {units}" if units else ""
    tips = tipping_points(sens, recommended)
    rule = warnings_of(sens, recommended, tips)
    for a, sides in tips.items():
        row = sens.sel(assumption=a)
        assumes, departure, scale = str(row["assumes"].values), str(row["departure"].values), float(row["scale"].values)
        flips = {s: v for s, v in sides.items() if v is not None}
        if not flips:
            widest = max(abs(float(d)) for d in row["delta"].values)
            lines.append(f"  {a}: assumes {assumes}; it holds for {departure} anywhere within ±{widest:.3g}{u}")
            continue
        parts = []
        for side, v in sorted(flips.items(), key=lambda kv: kv[1]["share"]):
            held = f"it holds at {v['held']:+.3g}{u}, " if v["held"] else ""
            parts.append(f"{held}at {v['delta']:+.3g}{u} ({v['share']:.0%}{_of(scale)}) {v['better']} is better")
        nearest = _nearest(sides)
        lines.append(f"  {a}: assumes {assumes}; with {departure} departing from 0: {'; '.join(parts)}")
        worst = rule[a]["worst"]
        if nearest["share"] <= FLIP_WARNING and not rule[a]["warns"]:
            lines.append(f"    (a near tie: within ±{FLIP_WARNING:.0%}{_of(scale)} the recommendation's expected "
                         f"loss stays within {worst:.0%} of the best's)")
        if rule[a]["warns"]:
            warn.append(f"warning: the recommendation flips when the data depart from '{assumes}' by "
                        f"{abs(nearest['delta']):.3g}{u} or less ({nearest['share']:.0%}{_of(scale)}): if "
                        f"{departure} may be that large, {nearest['better']} is the safer choice (the recommendation's "
                        f"expected loss is then up to {worst:.0%} above the best's; or learn it first, spending some "
                        "budget)")
    return lines + warn
