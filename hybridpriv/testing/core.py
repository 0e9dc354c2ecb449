"""The audit: test a mechanism's claimed (epsilon, delta) on neighbouring datasets.

The audit follows the black-box testers of Ding et al. (StatDP, 2018), Bichsel et al.
(DP-Sniper, 2021) and Google's stochastic tester: run the mechanism many times on two
neighbouring datasets ``D`` and ``D'``, search for an output event ``S`` on which the two
output distributions differ most, and bound the privacy loss on ``S`` from below with exact
confidence intervals on held-out samples.  A mechanism that is ``(epsilon, delta)``-DP
satisfies ``P[M(D) in S] <= e^epsilon P[M(D') in S] + delta`` for every ``S``, so

    epsilon_lower_bound = log((p_lower(D) - delta) / p_upper(D'))

is a lower confidence bound on the mechanism's true epsilon; when it exceeds the claim the
claim is false, with probability of a false alarm at most ``1 - confidence``.

Method (:func:`audit`):

1. For each pair, draw ``samples`` outputs on ``D`` and on ``D'`` (independent streams
   spawned from ``numpy.random.SeedSequence(seed)``); split each in halves.
2. On the first half (selection), build a grid of empirical quantiles of the pooled outputs
   and consider every event ``{x <= t}``, ``{x > t}``, ``{t1 < x <= t2}`` and its complement
   for grid points ``t``, ``t1 < t2`` (the grid also holds each dataset's smallest and
   largest output, so a difference in support is an event).  For each direction
   (``D vs D'``: the event is more likely under ``D``; ``D' vs D``) choose the event with
   the largest lower bound of step 3 computed on the selection half, with Wilson score
   bounds at a level simultaneous over all candidate events.  Ranking by that bound, not by
   the raw ratio of frequencies, is the smoothing: an empty cell, or a rare event whose
   ratio is large by luck, does not win.
3. On the held-out half, bound ``P[M(D) in S]`` from below and ``P[M(D') in S]`` from above
   with one-sided Clopper-Pearson intervals and report ``log((p_lo - delta)/p_hi)``
   (0 when ``p_lo <= delta``).
4. Bonferroni: with ``P`` pairs there are ``2P`` tests (pair x direction) of two one-sided
   intervals each, every interval at level ``(1 - confidence) / (4P)``; the probability
   that *any* reported bound exceeds the true privacy loss of its event is at most
   ``1 - confidence``.  The event is chosen on data independent of the held-out half, so
   the search over events costs nothing.

The audit is one-sided evidence.  A violation is a proof (at the stated confidence) that the
claim is false for those datasets; a pass only says that *these* neighbouring datasets and
*this* event family found nothing with *this* sample budget.  Its power depends on choosing
datasets on which the mechanism leaks most (see ``docs/audit.md``).

Neighbouring pairs for the built-in data kinds are built by :mod:`hybridpriv.testing.pairs`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
import dataclasses
from dataclasses import asdict, dataclass
from numbers import Integral, Real

import numpy as np

from .intervals import (
    _cumulative_counts,
    _describe_event,
    _draw,
    _event_counts,
    _log_ratio_bound,
    _quantile_grid,
)

__all__ = [
    "AuditReport",
    "DIRECTIONS",
    "MIN_SAMPLES",
    "NeighbouringPair",
    "assert_passes",
    "audit",
]

#: Smallest sample budget per dataset (the held-out half must hold at least 100 outputs).
MIN_SAMPLES = 200

DIRECTIONS = ("D vs D'", "D' vs D")


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditReport:
    """The result of :func:`audit`: the strongest evidence found against the claim.

    Attributes
    ----------
    epsilon_lower_bound
        The largest lower confidence bound on the privacy loss over pairs and directions
        (``>= 0``); simultaneously valid for all of them at level ``confidence``.
    epsilon, delta
        The claim audited.
    verdict
        ``"violation"`` when ``epsilon_lower_bound > epsilon`` (the claim is false, with
        probability of a false alarm at most ``1 - confidence``), else ``"pass"``.
    event
        The output event that gave ``epsilon_lower_bound``, readable (``"x > 0.93"``,
        ``"-0.2 < x <= 1.5"``, ...); ``x`` is the (reduced) mechanism output.
    direction
        ``"D vs D'"``: the event is more likely on the pair's first dataset, whose
        probability is bounded from below; ``"D' vs D"``: the reverse.
    pair, pair_label
        Index (0-based, in the order given) and label of the pair that gave the bound.
    samples, held_out
        Outputs drawn per dataset, and how many of them (the second half) the bound uses.
    counts
        Held-out outputs in ``event`` on ``D`` and on ``D'`` (pair order, whatever the direction).
    probability_bounds
        ``(p_lower, p_upper)``: the Clopper-Pearson lower bound of the event's probability
        on the favoured dataset and the upper bound on the other.
    confidence
        Overall confidence level (after the Bonferroni split over pairs and directions).
    pair_labels
        Labels of all pairs audited.
    bounds
        Per pair, the lower bounds ``(D vs D', D' vs D)``.
    """

    epsilon_lower_bound: float
    epsilon: float
    delta: float
    verdict: str
    event: str
    direction: str
    pair: int
    pair_label: str
    samples: int
    held_out: int
    counts: tuple[int, int]
    probability_bounds: tuple[float, float]
    confidence: float
    pair_labels: tuple[str, ...]
    bounds: tuple[tuple[float, float], ...]

    @property
    def passed(self) -> bool:
        """True when no violation was found."""
        return self.verdict == "pass"

    def __str__(self) -> str:
        claim = f"epsilon={self.epsilon:g}" + (f", delta={self.delta:g}" if self.delta else "")
        return (
            f"{self.verdict}: epsilon >= {self.epsilon_lower_bound:.4g} at {self.confidence:.4g} confidence "
            f"(claim {claim}); event {self.event} ({self.direction}, pair {self.pair}: {self.pair_label}); "
            f"held-out counts {self.counts[0]} / {self.counts[1]} of {self.held_out}"
        )

    def to_dict(self) -> dict:
        """The report as a plain dictionary (tuples become lists), e.g. for JSON."""
        out = asdict(self)
        out["counts"] = list(self.counts)
        out["probability_bounds"] = list(self.probability_bounds)
        out["pair_labels"] = list(self.pair_labels)
        out["bounds"] = [list(b) for b in self.bounds]
        return out

    def to_xarray(self):
        """The per-pair lower bounds as an :class:`xarray.Dataset` (dims ``pair``, ``direction``).

        The summary fields are attributes (``verdict``, ``event``, ``epsilon``, ...).
        """
        import xarray as xr

        ds = xr.Dataset(
            {"epsilon_lower_bound": (("pair", "direction"), np.array(self.bounds, dtype=float))},
            coords={"pair": np.arange(len(self.bounds)), "pair_label": ("pair", list(self.pair_labels)),
                    "direction": list(DIRECTIONS)},
        )
        ds.attrs.update(
            {
                "epsilon": self.epsilon,
                "delta": self.delta,
                "verdict": self.verdict,
                "max_epsilon_lower_bound": self.epsilon_lower_bound,
                "event": self.event,
                "event_direction": self.direction,
                "event_pair": self.pair,
                "samples": self.samples,
                "held_out": self.held_out,
                "counts": list(self.counts),
                "confidence": self.confidence,
            }
        )
        return ds


def assert_passes(reports: AuditReport | Mapping[str, AuditReport]) -> None:
    """Raise ``AssertionError`` listing every violation in ``reports`` (one report or a dict).

    For users' own test suites::

        assert_passes(audit_estimator(MyEstimator(groups, bounds), data))
    """
    items = reports.items() if isinstance(reports, Mapping) else [("mechanism", reports)]
    bad = []
    for name, rep in items:
        if not isinstance(rep, AuditReport):
            raise TypeError(f"reports must be an AuditReport or a mapping of them, got {type(rep).__name__}")
        if not rep.passed:
            bad.append(f"{name}: {rep}")
    if bad:
        raise AssertionError("privacy audit found violations:\n  " + "\n  ".join(bad))


# --------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------
def _real(x: object) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _check_claim(epsilon: object, delta: object) -> tuple[float, float]:
    if not _real(epsilon):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}")
    eps = float(epsilon)  # type: ignore[arg-type]
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"epsilon must be >= 0 (0: the output must not depend on the change), got {epsilon!r}")
    if math.isinf(eps):
        raise ValueError("epsilon must be finite: epsilon = inf promises nothing, so there is nothing to audit")
    if not _real(delta):
        raise TypeError(f"delta must be a real number, got {delta!r}")
    d = float(delta)  # type: ignore[arg-type]
    if not (0.0 <= d < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return eps, d


def _check_common(samples: object, confidence: object, seed: object, grid: object, batch: object) -> np.random.SeedSequence:
    if not _int(samples):
        raise TypeError(f"samples must be an integer, got {samples!r}")
    if samples < MIN_SAMPLES:  # type: ignore[operator]
        raise ValueError(f"samples must be >= {MIN_SAMPLES} (outputs per dataset; half are held out), got {samples!r}")
    if not _real(confidence):
        raise TypeError(f"confidence must be a real number, got {confidence!r}")
    if not (0.0 < float(confidence) < 1.0):  # type: ignore[arg-type]
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not _int(grid):
        raise TypeError(f"grid must be an integer, got {grid!r}")
    if grid < 2:  # type: ignore[operator]
        raise ValueError(f"grid must be >= 2 (quantile cells of the output), got {grid!r}")
    if not _int(batch):
        raise TypeError(f"batch must be an integer, got {batch!r}")
    if batch < 1:  # type: ignore[operator]
        raise ValueError(f"batch must be >= 1, got {batch!r}")
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if not _int(seed) or seed < 0:  # type: ignore[operator]
        raise TypeError(f"seed must be an integer >= 0 or a numpy.random.SeedSequence, got {seed!r}")
    return np.random.SeedSequence(int(seed))  # type: ignore[arg-type]


@dataclass(frozen=True)
class NeighbouringPair:
    """Two neighbouring datasets and a readable label.

    Attributes
    ----------
    first, second
        ``D`` and ``D'``, passed unchanged to the mechanism.
    label
        What changes between them.
    conservative
        True when the pair changes less than the declared relation allows (a pass is then
        weaker evidence), e.g. add/remove with bounds that exclude 0.
    statistic
        Reduction of this pair's outputs to one number (overrides :func:`audit`'s ``statistic``),
        e.g. the coordinate of a vector release that this change moves.
    """

    first: object
    second: object
    label: str = ""
    conservative: bool = False
    statistic: Callable[[np.ndarray], np.ndarray] | None = None


def _as_pair(item: object, label: str) -> NeighbouringPair:
    if isinstance(item, NeighbouringPair):
        return item if item.label else dataclasses.replace(item, label=label)
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
        raise TypeError(f"pairs must hold (D, D') pairs of two datasets; {label} is {type(item).__name__!s}"
                        + (f" of length {len(item)}" if isinstance(item, Sequence) else ""))
    return NeighbouringPair(item[0], item[1], label)


def _collect_pairs(pairs: object) -> list[NeighbouringPair]:
    """One pair (a tuple ``(D, D')`` or a :class:`NeighbouringPair`), a mapping label -> pair, or an iterable of pairs."""
    if isinstance(pairs, NeighbouringPair):
        out = [_as_pair(pairs, "pair 0")]
    elif isinstance(pairs, tuple):
        if len(pairs) != 2:
            raise ValueError(
                f"pairs given as a tuple must be one pair (D, D') of length 2, got length {len(pairs)}; "
                "pass several pairs as a list"
            )
        out = [NeighbouringPair(pairs[0], pairs[1], "pair 0")]
    elif isinstance(pairs, Mapping):
        out = [_as_pair(v, str(k)) for k, v in pairs.items()]
    elif isinstance(pairs, Iterable) and not isinstance(pairs, (str, bytes, np.ndarray)):
        out = [_as_pair(p, f"pair {i}") for i, p in enumerate(pairs)]
    else:
        raise TypeError(f"pairs must be a pair (D, D'), a list or generator of pairs, or a mapping, got {type(pairs).__name__}")
    if not out:
        raise ValueError("pairs must hold at least one (D, D') pair, got none")
    return out


# --------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------
def audit(
    mechanism: Callable[[object, np.random.Generator, int], np.ndarray],
    pairs: object,
    epsilon: float,
    delta: float = 0.0,
    samples: int = 100_000,
    confidence: float = 0.99,
    seed: int | np.random.SeedSequence = 0,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    grid: int = 100,
    batch: int = 25_000,
) -> AuditReport:
    """Audit a mechanism's claim of ``(epsilon, delta)``-DP on neighbouring datasets.

    Parameters
    ----------
    mechanism
        ``mechanism(data, rng, size)`` returns ``size`` independent outputs on dataset
        ``data`` as an array of shape ``(size,)`` (numbers), or of shape ``(size, ...)``
        reduced to ``(size,)`` by ``statistic``; ``rng`` is a :class:`numpy.random.Generator`,
        its only source of randomness.  Vectorise over ``size``: it is called with up to
        ``batch`` outputs at a time.
    pairs
        The neighbouring datasets: one pair as a tuple ``(D, D')`` (or a
        :class:`NeighbouringPair`); several as a list or generator of pairs; or a mapping
        ``label -> pair``.  Each dataset is passed to ``mechanism`` unchanged.
    epsilon, delta
        The claim: ``P[M(D) in S] <= e^epsilon P[M(D') in S] + delta`` for every event ``S``
        and both orders of every pair.  ``epsilon = 0`` claims the output does not depend on
        the change.
    samples
        Outputs drawn per dataset (>= 200); half select the event, half bound it.
    confidence
        Probability that no reported bound exceeds the true privacy loss; the false-alarm
        probability of a correct mechanism is at most ``1 - confidence`` (Bonferroni over
        pairs and both directions).
    seed
        Integer or :class:`numpy.random.SeedSequence`; every pair and dataset gets its own
        spawned stream, so results are reproducible.
    statistic
        Optional reduction of each output to one number, ``statistic(outputs) -> (size,)``
        (e.g. one coordinate of a vector release; post-processing, so it never creates a
        violation, but a poor choice costs power).
    grid
        Number of quantile cells of the pooled selection outputs (events are unions of
        contiguous cells and their complements); the tails get extra points.
    batch
        Largest ``size`` passed to ``mechanism`` in one call (bounds memory).

    Returns
    -------
    AuditReport
        The largest lower bound over pairs and directions, its event and the verdict.

    Examples
    --------
    Laplace noise of scale ``1/epsilon`` on a count is ``epsilon``-DP; half that scale is not:

    >>> import numpy as np
    >>> def count(d, rng, size):
    ...     return d + rng.laplace(0.0, 0.5, size)   # scale 1/2: really 2-DP
    >>> audit(count, (0.0, 1.0), epsilon=1.0, samples=20_000).verdict
    'violation'
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(data, rng, size), got {type(mechanism).__name__}")
    eps, dlt = _check_claim(epsilon, delta)
    root = _check_common(samples, confidence, seed, grid, batch)
    if statistic is not None and not callable(statistic):
        raise TypeError(f"statistic must be callable or None, got {type(statistic).__name__}")
    plist = _collect_pairs(pairs)
    n_tests = 2 * len(plist)
    alpha = (1.0 - float(confidence)) / (2 * n_tests)  # per one-sided interval
    n_sel = samples // 2
    n_hold = samples - n_sel

    best: dict | None = None
    all_bounds = []
    for i, (pair, ss) in enumerate(zip(plist, root.spawn(len(plist)))):
        s_first, s_second = ss.spawn(2)
        stat = statistic if pair.statistic is None else pair.statistic
        x = [
            _draw(mechanism, pair.first, np.random.default_rng(s_first), samples, stat, batch, f"D of {pair.label}"),
            _draw(mechanism, pair.second, np.random.default_rng(s_second), samples, stat, batch, f"D' of {pair.label}"),
        ]
        sel = [np.sort(v[:n_sel]) for v in x]
        hold = [np.sort(v[n_sel:]) for v in x]
        g = _quantile_grid(sel[0], sel[1], grid)
        kk = g.size + 2
        jj, ii = np.triu_indices(kk, k=1)  # bins (g_j, g_i], j < i
        sel_counts = [_event_counts(_cumulative_counts(s, g), jj, ii, n_sel) for s in sel]
        hold_counts = [_event_counts(_cumulative_counts(h, g), jj, ii, n_hold) for h in hold]
        pair_bounds = []
        for d, (num, den) in enumerate(((0, 1), (1, 0))):
            # rank events by a bound valid simultaneously for all candidates (level alpha / #events):
            # a small event whose selection-half ratio is large by luck does not win
            n_events = sel_counts[num].size
            lb_sel, _, _ = _log_ratio_bound(sel_counts[num], sel_counts[den], n_sel, dlt, alpha / n_events, exact=False)
            e = int(np.argmax(lb_sel))
            k_num, k_den = hold_counts[num][e], hold_counts[den][e]
            lb, p_lo, p_hi = _log_ratio_bound(np.array([k_num]), np.array([k_den]), n_hold, dlt, alpha)
            value = max(0.0, float(lb[0]))
            pair_bounds.append(value)
            if best is None or value > best["value"]:
                m = jj.size
                best = {
                    "value": value,
                    "event": _describe_event(g, int(jj[e % m]), int(ii[e % m]), e >= m),
                    "direction": DIRECTIONS[d],
                    "pair": i,
                    "label": pair.label,
                    "counts": (int(hold_counts[0][e]), int(hold_counts[1][e])),
                    "pb": (float(p_lo[0]), float(p_hi[0])),
                }
        all_bounds.append(tuple(pair_bounds))
    assert best is not None
    return AuditReport(
        epsilon_lower_bound=best["value"],
        epsilon=eps,
        delta=dlt,
        verdict="violation" if best["value"] > eps else "pass",
        event=best["event"],
        direction=best["direction"],
        pair=best["pair"],
        pair_label=best["label"],
        samples=int(samples),
        held_out=n_hold,
        counts=best["counts"],
        probability_bounds=best["pb"],
        confidence=float(confidence),
        pair_labels=tuple(p.label for p in plist),
        bounds=tuple(all_bounds),
    )
