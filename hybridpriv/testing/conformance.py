"""Does a class follow the Mechanism protocol?  ``check_mechanism``, scikit-learn's ``check_estimator`` in spirit.

An author writing their own candidate (to compare it in a SPEC, see ``docs/custom-mechanisms.md``)
calls :func:`check_mechanism` on an instance, with a dataset of its kind if they have one; it
lists *everything* the class still lacks, not only the first problem:

* the protocol: a :class:`~hybridpriv.core.mechanism.Mechanism` subclass, ``data_kind`` one of
  a registered data kind (:func:`hybridpriv.families.data_kinds`), a non-empty string ``label``, a ``privacy`` dict
  ``unit -> Guarantee`` with positive epsilons;
* parameters: ``get_params()`` returns the constructor's arguments, ``clone()`` rebuilds an equal
  mechanism (the same fingerprint), and it pickles (the engine ships candidates to dask workers);
* with ``data``: ``release(data, rng, trials)`` returns an array with a leading axis of length
  ``trials`` and finite numbers; the same ``rng`` seed gives the same releases and NumPy's global
  random state plays no part (the engine's reproducibility on N workers rests on it); two seeds give
  different releases (a DP mechanism is random);
* with ``audit_samples``: the statistical audit of its declaration
  (:func:`hybridpriv.testing.audit_estimator`) on ``data`` passes.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np

__all__ = ["MechanismCheckError", "check_mechanism", "mechanism_problems"]


class MechanismCheckError(AssertionError):
    """Raised by :func:`check_mechanism`; ``problems`` lists what the mechanism lacks."""

    def __init__(self, name: str, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"{name} does not follow the Mechanism protocol:\n" + "\n".join(f"- {p}" for p in problems))


def _protocol_problems(mech: Any) -> list[str]:
    from ..core.mechanism import Mechanism
    from ..core.privacy import Guarantee
    from ..families import data_kinds

    out = []
    if not isinstance(mech, Mechanism):
        out.append(f"it is a {type(mech).__name__}, not a subclass of hybridpriv.core.mechanism.Mechanism "
                   "(subclass it: it records the constructor's arguments and gives clone/fingerprint)")
        for name in ("release", "privacy", "data_kind", "label"):
            if not hasattr(mech, name):
                out.append(f"it has no {name!r}")
        return out
    if getattr(mech, "data_kind", None) not in data_kinds():
        out.append(f"data_kind must be one of {list(data_kinds())} (the registered data kinds), got "
                   f"{getattr(mech, 'data_kind', None)!r}")
    label = getattr(mech, "label", None)
    if not isinstance(label, str) or not label or label in ("mechanism", "estimator"):  # the base classes' defaults
        out.append(f"label must be a non-empty string naming it in results (set the class attribute), got {label!r}")
    try:
        privacy = mech.privacy
    except Exception as exc:
        return [*out, f"privacy raised {type(exc).__name__}: {exc}"]
    if not isinstance(privacy, dict) or not privacy:
        out.append(f"privacy must be a non-empty dict unit -> hybridpriv.core.privacy.Guarantee, got {privacy!r}")
    else:
        for unit, g in privacy.items():
            if not isinstance(unit, str):
                out.append(f"privacy's units must be strings (group names or 'users'), got {unit!r}")
            if not isinstance(g, Guarantee):
                out.append(f"privacy[{unit!r}] must be a hybridpriv.core.privacy.Guarantee, got {g!r}")
            elif not g.epsilon > 0:
                out.append(f"privacy[{unit!r}].epsilon must be > 0, got {g.epsilon!r}")
        out += event_problems(mech, privacy)
    return out


def event_problems(mech: Any, privacy: dict[str, Any] | None = None) -> list[str]:
    """Whether the mechanism's privacy events (:attr:`~hybridpriv.core.mechanism.Mechanism.privacy_events`)
    describe its declaration: one event per declared unit, and each event's epsilon at the declared delta
    at most the declared epsilon (relative slack 1e-6: the PLD's pessimistic discretisation)."""
    from ..core import events

    privacy = mech.privacy if privacy is None else privacy
    try:
        evs = mech.privacy_events
    except Exception as exc:
        return [f"privacy_events raised {type(exc).__name__}: {exc}"]
    if not isinstance(evs, dict) or set(evs) != set(privacy):
        return [f"privacy_events must name the units of privacy ({sorted(privacy)}), got {evs!r}"[:300]]
    out = []
    for unit, g in privacy.items():
        try:
            eps = events.epsilon(evs[unit], g.delta, g.relation)
        except (ValueError, TypeError) as exc:
            out.append(f"privacy_events[{unit!r}] cannot be read: {exc}")
            continue
        if eps > g.epsilon * (1 + 1e-6) + 1e-12:
            out.append(f"privacy_events[{unit!r}] gives epsilon {eps:.6g} at delta {g.delta:g}, above the declared "
                       f"{g.epsilon:g}: the declaration understates what the noise allows")
    return out


def _params_problems(mech: Any) -> list[str]:
    from ..core.params import fingerprint

    out = []
    try:
        params = mech.get_params()
        twin = mech.clone()
    except Exception as exc:
        return [f"get_params()/clone() failed ({type(exc).__name__}: {exc}): keep the constructor's arguments as "
                "its parameters (no *args)"]
    if type(twin) is not type(mech) or twin.get_params().keys() != params.keys():
        out.append("clone() does not rebuild the same mechanism from get_params()")
    try:
        if fingerprint(twin) != fingerprint(mech):
            out.append("clone() gives a different fingerprint: the constructor changes its arguments or keeps "
                       "state that is not a parameter")
    except Exception as exc:
        out.append(f"its parameters cannot be fingerprinted ({type(exc).__name__}: {exc})")
    try:
        back = pickle.loads(pickle.dumps(mech))
        if fingerprint(back) != fingerprint(mech):
            out.append("a pickled copy has a different fingerprint")
    except Exception as exc:
        out.append(f"it does not pickle ({type(exc).__name__}: {exc}); dask workers receive candidates pickled")
    return out


def _release(mech: Any, data: Any, seed: int, trials: int) -> np.ndarray:
    return np.asarray(mech.release(data, np.random.default_rng(seed), trials), dtype=float)


def _release_problems(mech: Any, data: Any, seed: int) -> list[str]:
    try:
        one = _release(mech, data, seed, 1)
        many = _release(mech, data, seed, 4)
    except Exception as exc:
        return [f"release(data, rng, trials) raised {type(exc).__name__}: {exc}"]
    out = []
    for trials, r in ((1, one), (4, many)):
        if r.ndim == 0 or r.shape[0] != trials:
            out.append(f"release(data, rng, trials={trials}) must have a leading axis of length {trials}, "
                       f"got shape {r.shape}")
        elif not np.isfinite(r).all():
            out.append(f"release(data, rng, trials={trials}) returned non-finite values")
    if out:
        return out
    state = np.random.get_state()
    try:
        np.random.seed(12345)
        again = _release(mech, data, seed, 4)
        np.random.seed(54321)
        other_global = _release(mech, data, seed, 4)
    finally:
        np.random.set_state(state)
    if not (np.array_equal(again, many) and np.array_equal(other_global, many)):
        out.append("release is not a function of its rng: the same seed gave different releases (does it use "
                   "NumPy's global random state or another generator?)")
    if np.array_equal(_release(mech, data, seed + 1, 4), many):
        out.append("release gave the same values under two seeds: a DP release must be random")
    return out


def mechanism_problems(mechanism: Any, data: Any = None, seed: int = 0, audit_samples: int | None = None,
                       confidence: float = 0.99) -> list[str]:
    """What ``mechanism`` still lacks (an empty list if nothing): see the module docstring."""
    if data is None and audit_samples is not None:
        raise ValueError("audit_samples needs data: the audit runs the mechanism on neighbours of data")
    if audit_samples is not None and (isinstance(audit_samples, bool) or not isinstance(audit_samples, int)
                                      or audit_samples < 200):
        raise ValueError(f"audit_samples must be an integer >= 200 or None, got {audit_samples!r}")
    out = _protocol_problems(mechanism)
    if out:
        return out  # not a Mechanism: the rest cannot be asked
    out += _params_problems(mechanism)
    if data is not None:
        out += _release_problems(mechanism, data, seed)
    if data is not None and audit_samples is not None and not out:
        from .pairs import audit_estimator

        for unit, report in audit_estimator(mechanism, data, samples=audit_samples, confidence=confidence,
                                            seed=seed).items():
            if report.verdict != "pass":
                g = mechanism.privacy[unit]
                out.append(f"the audit of unit {unit!r} found epsilon >= {report.epsilon_lower_bound:.3g} "
                           f"(claimed {g.epsilon:g}{'' if math.isclose(g.delta, 0) else f', delta {g.delta:g}'}) "
                           f"on event {report.event}")
    return out


def check_mechanism(mechanism: Any, data: Any = None, seed: int = 0, audit_samples: int | None = None,
                    confidence: float = 0.99) -> None:
    """Raise :class:`MechanismCheckError` listing everything ``mechanism`` lacks; return ``None`` if nothing.

    Parameters
    ----------
    mechanism
        An instance of the class to check.
    data
        A dataset of its ``data_kind`` (grouped: one array per group; user-item: a users x items
        matrix; ...): with it the releases are checked too.
    seed
        Seed of the checks' random numbers.
    audit_samples
        With ``data``: also audit the privacy declaration with this many releases per dataset
        (e.g. 50,000; :func:`hybridpriv.testing.audit_estimator`).
    confidence
        The audit's confidence.

    Examples
    --------
    >>> from hybridpriv.estimators import WeightedMean
    >>> from hybridpriv.core.privacy import Group
    >>> import numpy as np
    >>> groups = [Group("private", 100, 1.0), Group("public", 50, float("inf"))]
    >>> check_mechanism(WeightedMean(groups, (0, 1), sigma2=0.1), [np.full(100, 0.5), np.full(50, 0.5)])
    """
    problems = mechanism_problems(mechanism, data, seed, audit_samples, confidence)
    if problems:
        raise MechanismCheckError(type(mechanism).__name__, problems)
