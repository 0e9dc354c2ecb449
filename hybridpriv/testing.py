"""Statistical privacy audits: test a mechanism's claimed (epsilon, delta) on neighbouring datasets.

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

Personalised guarantees (:func:`audit_estimator`): an estimator promises
``Guarantee(epsilon_i, delta_i, relation)`` to group ``i``; each group with a finite epsilon
is audited on the pair that changes one of its records as much as its relation allows
(:func:`neighbouring_pair`).  Public groups (``epsilon = inf``) promise nothing and are
skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from numbers import Integral, Real

import numpy as np
from scipy import special

__all__ = [
    "AuditReport",
    "NeighbouringPair",
    "assert_passes",
    "audit",
    "audit_estimator",
    "estimator_mechanism",
    "neighbouring_pair",
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
    """

    first: object
    second: object
    label: str = ""
    conservative: bool = False


def _as_pair(item: object, label: str) -> NeighbouringPair:
    if isinstance(item, NeighbouringPair):
        return item if item.label else NeighbouringPair(item.first, item.second, label, item.conservative)
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
# the statistics
# --------------------------------------------------------------------------------------
def _cp_lower(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound of a binomial probability (level ``1 - alpha``)."""
    k = np.asarray(k)
    with np.errstate(all="ignore"):
        lo = special.betaincinv(np.maximum(k, 1), n - k + 1, alpha)
    return np.where(k > 0, lo, 0.0)


def _cp_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound of a binomial probability (level ``1 - alpha``)."""
    k = np.asarray(k)
    with np.errstate(all="ignore"):
        hi = special.betaincinv(k + 1, np.maximum(n - k, 1), 1.0 - alpha)
    return np.where(k < n, hi, 1.0)


def _wilson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Wilson score bounds (closed form): a fast stand-in for Clopper-Pearson when selecting events."""
    z = special.ndtri(1.0 - alpha)
    p = np.asarray(k, dtype=float) / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    return np.maximum((centre - half) / denom, 0.0), np.minimum((centre + half) / denom, 1.0)


def _log_ratio_bound(k_num: np.ndarray, k_den: np.ndarray, n: int, delta: float, alpha: float, exact: bool = True):
    """``log((p_lo(k_num) - delta) / p_hi(k_den))`` (``-inf`` when ``p_lo <= delta``), and the two bounds.

    ``exact``: Clopper-Pearson bounds (the reported, valid bound); otherwise Wilson score
    bounds, used only to rank candidate events on the selection half.
    """
    if exact:
        p_lo = _cp_lower(k_num, n, alpha)
        p_hi = _cp_upper(k_den, n, alpha)
    else:
        p_lo = _wilson(k_num, n, alpha)[0]
        p_hi = _wilson(k_den, n, alpha)[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300)) - np.log(p_hi), -np.inf)
    return lb, p_lo, p_hi


_TAIL_LEVELS = np.array([1e-3, 2e-3, 5e-3, 1e-2, 2e-2])


def _quantile_grid(sorted_first: np.ndarray, sorted_second: np.ndarray, grid: int) -> np.ndarray:
    """Candidate thresholds: observed values (no interpolation) at quantiles of the pooled outputs.

    ``grid`` equally spaced levels of the pooled outputs, refined in the tails, plus the
    smallest and largest output of each dataset, so that an output range reached on one
    dataset only (a difference in support) is an event.
    """
    pooled = np.concatenate([sorted_first, sorted_second])
    levels = np.linspace(0.0, 1.0, grid + 1)[1:-1]
    tails = _TAIL_LEVELS[_TAIL_LEVELS * pooled.size >= 5]
    levels = np.unique(np.concatenate([levels, tails, 1.0 - tails]))
    qs = np.quantile(pooled, levels, method="inverted_cdf")
    ends = [sorted_first[0], sorted_first[-1], sorted_second[0], sorted_second[-1]]
    return np.unique(np.concatenate([qs, ends]))


def _cumulative_counts(sorted_x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``c[j] = #{x <= g_j}`` for the extended grid ``g_0 = -inf < grid < g_{K+1} = +inf`` (``c[0] = 0``, ``c[-1] = n``)."""
    inner = np.searchsorted(sorted_x, grid, side="right")
    return np.concatenate([[0], inner, [sorted_x.size]])


def _event_counts(c: np.ndarray, j: np.ndarray, k: np.ndarray, n: int) -> np.ndarray:
    """Counts of every event: bins ``(g_j, g_k]`` then their complements."""
    b = c[k] - c[j]
    return np.concatenate([b, n - b])


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _describe_event(grid: np.ndarray, j: int, k: int, complement: bool) -> str:
    ext = np.concatenate([[-np.inf], grid, [np.inf]])
    lo, hi = ext[j], ext[k]
    last = ext.size - 1
    if not complement:
        if j == 0 and k == last:
            return "any output"
        if j == 0:
            return f"x <= {_fmt(hi)}"
        if k == last:
            return f"x > {_fmt(lo)}"
        return f"{_fmt(lo)} < x <= {_fmt(hi)}"
    if j == 0 and k == last:
        return "no output"
    if j == 0:
        return f"x > {_fmt(hi)}"
    if k == last:
        return f"x <= {_fmt(lo)}"
    return f"x <= {_fmt(lo)} or x > {_fmt(hi)}"


def _draw(mechanism: Callable, data: object, rng: np.random.Generator, samples: int, statistic, batch: int, which: str) -> np.ndarray:
    out = np.empty(samples)
    start = 0
    while start < samples:
        size = min(batch, samples - start)
        x = mechanism(data, rng, size)
        x = np.asarray(x)
        if statistic is not None:
            x = np.asarray(statistic(x))
            what = "statistic(mechanism output)"
        else:
            what = "mechanism"
        if x.shape != (size,):
            hint = "" if statistic is not None or x.ndim < 2 else "; reduce vector outputs to one number each with statistic="
            raise ValueError(f"{what} must return shape ({size},) when asked for size={size} outputs on {which}, got {x.shape}{hint}")
        if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
            raise TypeError(f"{what} must return numbers, got dtype {x.dtype} on {which}")
        x = x.astype(float)
        if np.isnan(x).any():
            raise ValueError(f"{what} returned NaN on {which} ({int(np.isnan(x).sum())} of {size} outputs)")
        out[start : start + size] = x
        start += size
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
        x = [
            _draw(mechanism, pair.first, np.random.default_rng(s_first), samples, statistic, batch, f"D of {pair.label}"),
            _draw(mechanism, pair.second, np.random.default_rng(s_second), samples, statistic, batch, f"D' of {pair.label}"),
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


# --------------------------------------------------------------------------------------
# personalised guarantees of estimators
# --------------------------------------------------------------------------------------
def _check_estimator(estimator: object) -> dict:
    guarantee = getattr(estimator, "privacy", None)
    if not isinstance(guarantee, Mapping) or not hasattr(estimator, "groups") or not hasattr(estimator, "bounds"):
        raise TypeError(
            "estimator must be a hybridpriv Estimator (groups, bounds and a privacy dict by group name), "
            f"got {type(estimator).__name__}; audit other mechanisms with audit()"
        )
    return dict(guarantee)


def _base_data(estimator, data: object) -> list[np.ndarray]:
    from .privacy import check_group_data

    arrays, batched = check_group_data(data, estimator.groups, estimator.bounds, clamp=False)
    if batched:
        raise ValueError("data must be one base dataset (one 1-D array per group), got arrays with a trial axis")
    return [np.array(a[0], dtype=float) for a in arrays]


def neighbouring_pair(estimator, data: object, group: str, record: int = 0) -> NeighbouringPair:
    """The neighbouring datasets that change one record of ``group`` as much as its relation allows.

    Parameters
    ----------
    estimator
        A :class:`hybridpriv.estimators.Estimator` (its ``bounds`` and ``guarantee[group]``
        are used).
    data
        The base dataset: one 1-D array per group (sequence in group order or mapping by
        name), inside the bounds.
    group
        Name of the group whose record changes.
    record
        Index of the record of ``group`` that changes (its base value is overwritten).

    Returns
    -------
    NeighbouringPair
        ``first`` and ``second`` are lists of 1-D arrays (the base data with the record set
        to two values), by relation of ``estimator.privacy[group]``:

        * ``"replace"``: the lower bound vs the upper bound.
        * ``"add-remove"`` (group sizes fixed): 0 vs the bound of largest magnitude when
          ``0`` lies in the bounds -- a record at 0 adds nothing to a sum, so this is the
          add/remove change of every sum-based release.  When 0 lies outside the bounds
          the lower vs the upper bound, marked ``conservative`` (a smaller change than
          add/remove allows).
    """
    guarantee = _check_estimator(estimator)
    if group not in guarantee:
        raise ValueError(f"group must be one of {list(guarantee)}, got {group!r}")
    names = [g.name for g in estimator.groups]
    base = _base_data(estimator, data)
    idx = names.index(group)
    if not _int(record) or not (0 <= record < base[idx].size):
        raise ValueError(f"record must be an index in [0, {base[idx].size}) of group {group!r}, got {record!r}")
    a, b = estimator.bounds.lower, estimator.bounds.upper
    relation = guarantee[group].relation
    conservative = False
    if relation == "replace":
        v0, v1 = a, b
        how = "replace: lower vs upper bound"
    elif relation == "add-remove":
        if a <= 0.0 <= b:
            v0, v1 = 0.0, (b if abs(b) >= abs(a) else a)
            how = "add-remove with sizes fixed: 0 (adds nothing to a sum) vs the bound of largest magnitude"
        else:
            v0, v1 = a, b
            conservative = True
            how = "add-remove, but 0 is outside the bounds: lower vs upper bound (conservative)"
    else:
        raise ValueError(f"guarantee of group {group!r} has unknown relation {relation!r}")
    first = [x.copy() for x in base]
    second = [x.copy() for x in base]
    first[idx][record] = v0
    second[idx][record] = v1
    label = f"record {record} of group {group!r}: {v0:g} vs {v1:g} ({how})"
    return NeighbouringPair(first, second, label, conservative)


def estimator_mechanism(estimator) -> Callable[[object, np.random.Generator, int], np.ndarray]:
    """``mechanism(data, rng, size)`` for :func:`audit`: ``size`` estimates on one base dataset.

    The dataset (one 1-D array per group) is broadcast over a trial axis of length ``size``
    without copying, and ``estimator.estimate`` runs once, vectorised.
    """
    _check_estimator(estimator)

    def mechanism(data, rng, size):
        arrays = [np.broadcast_to(np.asarray(x, dtype=float), (size, np.size(x))) for x in data]
        return np.asarray(estimator.estimate(arrays, rng))

    return mechanism


def audit_estimator(
    estimator,
    data: object,
    samples: int = 50_000,
    confidence: float = 0.99,
    seed: int | np.random.SeedSequence = 0,
    groups: Sequence[str] | None = None,
    grid: int = 100,
    batch: int = 25_000,
) -> dict[str, AuditReport]:
    """Audit an estimator's personalised guarantee, group by group.

    For every group with a finite promised epsilon (public groups, ``epsilon = inf``, promise
    nothing and are skipped) the pair of :func:`neighbouring_pair` -- one record of that
    group changed as much as the group's declared relation allows -- is audited against
    that group's ``(epsilon, delta)``; the group with the smallest epsilon is always among them.

    Parameters
    ----------
    estimator
        A :class:`hybridpriv.estimators.Estimator`.
    data
        Base dataset: one 1-D array per group (sequence in group order or mapping by name),
        inside the bounds.  Power depends on it: datasets that make the estimator leak most
        (e.g. other records at 0, so that nothing else adds randomness) find violations first.
    samples, confidence, grid, batch
        As for :func:`audit`.  ``confidence`` is for the whole estimator: each of the ``G``
        audited groups is audited at ``1 - (1 - confidence)/G``.
    seed
        Integer or :class:`numpy.random.SeedSequence`; each group gets a spawned stream.
    groups
        Names of the groups to audit (default: every group with a finite epsilon).

    Returns
    -------
    dict
        Group name -> :class:`AuditReport`, in group order.
    """
    guarantee = _check_estimator(estimator)
    root = _check_common(samples, confidence, seed, grid, batch)
    if groups is None:
        names = [n for n, g in guarantee.items() if math.isfinite(g.epsilon)]
    else:
        if isinstance(groups, str) or not isinstance(groups, Iterable):
            raise TypeError(f"groups must be a sequence of group names or None, got {groups!r}")
        names = list(groups)
        for n in names:
            if n not in guarantee:
                raise ValueError(f"groups must name groups of the estimator {list(guarantee)}, got {n!r}")
            if not math.isfinite(guarantee[n].epsilon):
                raise ValueError(f"groups: group {n!r} is public (epsilon = inf) and promises nothing to audit")
        if len(set(names)) != len(names):
            raise ValueError(f"groups must not repeat a name, got {names}")
    if not names:
        raise ValueError("estimator promises no group a finite epsilon: nothing to audit")
    base = _base_data(estimator, data)
    level = 1.0 - (1.0 - float(confidence)) / len(names)
    mech = estimator_mechanism(estimator)
    reports = {}
    for name, ss in zip(names, root.spawn(len(names))):
        pair = neighbouring_pair(estimator, base, name)
        g = guarantee[name]
        reports[name] = audit(
            mech, pair, g.epsilon, g.delta, samples=samples, confidence=level, seed=ss, grid=grid, batch=batch
        )
    return reports
