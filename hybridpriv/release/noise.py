"""Vetted noise for releases: an rng-like adapter whose Laplace and Gaussian draws come from OpenDP.

Simulation keeps NumPy's fast samplers.  A release hands the chosen mechanism an
:class:`OpenDPGenerator` instead of a :class:`numpy.random.Generator`: it *is* a NumPy generator
(so the mechanisms' ``check_rng`` accepts it and their code is unchanged), but the noise methods the
grouped and user-item mechanisms call (:meth:`~OpenDPGenerator.laplace`,
:meth:`~OpenDPGenerator.normal`, :meth:`~OpenDPGenerator.standard_normal`) are answered by OpenDP's
measurements (``make_laplace`` / ``make_gaussian`` on float vectors: exact discrete samplers driven by
a cryptographically secure generator, the result rounded to a lattice, not an inverse-CDF transform
of a floating-point uniform).  Noise methods the adapter cannot answer with OpenDP (``gumbel``, used
by the exponential-mechanism medians; ``exponential``, ``logistic``, ...) raise
:class:`UnsupportedNoiseError`, so such a candidate is refused for release with a clear message,
never released with NumPy noise by accident.

Other randomness (:data:`NUMPY_METHODS`: ``random``, ``integers``, ``uniform``, ``choice``, ...: which
records a sampling mechanism keeps, which items a user keeps) comes from NumPy's transforms over the
operating system's entropy (:mod:`secrets`) through ChaCha20 (``randomgen.ChaCha``, a cryptographically
secure generator), not from the SPEC's seed: a release must not be reproducible by whoever knows the
seed, and nobody who sees some of its numbers can predict the others.  Every call is counted by method (:attr:`OpenDPGenerator.calls`)
and :meth:`OpenDPGenerator.provenance` says, method by method, what drew it, so ``release.json``
records truthfully which numbers came from OpenDP and which from NumPy.

Limitation (see ``docs/release.md``): the mechanisms ask for *unit* noise and scale and add it
themselves (``value + scale * noise``) in floating point, so the final arithmetic is not OpenDP's
(the snapping / lattice rounding protects OpenDP's own ``value + noise``; here it protects the draw).
"""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Any

import numpy as np

__all__ = ["NOISE_METHODS", "NUMPY_METHODS", "OpenDPGenerator", "UnsupportedNoiseError", "probe_noise", "provenance_of"]

#: The generator methods answered by OpenDP.
NOISE_METHODS = ("laplace", "normal", "standard_normal")

#: The generator methods answered by NumPy over ChaCha20 keyed from the OS, counted and recorded.
NUMPY_METHODS = ("random", "integers", "uniform", "choice", "permutation", "permuted", "shuffle", "bytes", "spawn")

#: What drew each kind of number, as ``release.json`` records it.
DRAWN_BY = {
    "laplace": "OpenDP make_laplace (exact sampler, cryptographically secure generator)",
    "normal": "OpenDP make_gaussian (exact sampler, cryptographically secure generator)",
    "standard_normal": "OpenDP make_gaussian (exact sampler, cryptographically secure generator)",
}
_NUMPY = ("NumPy's transform of ChaCha20 (randomgen.ChaCha, 20 rounds) keyed with 256 bits from the operating "
          "system (secrets): a cryptographically secure generator, not OpenDP")

#: Noise methods of numpy.random.Generator the adapter refuses (no vetted OpenDP sampler behind them).
_REFUSED = tuple(name for name in dir(np.random.Generator)
                 if not name.startswith("_") and name not in (*NOISE_METHODS, *NUMPY_METHODS, "bit_generator"))


class UnsupportedNoiseError(ValueError):
    """The mechanism asked for a kind of noise the OpenDP backend does not provide."""


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _refuse(name: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        if self.probe:
            return getattr(np.random.Generator, name)(self, *args, **kwargs)
        raise UnsupportedNoiseError(
            f"the mechanism draws {name} noise (rng.{name}), which the OpenDP release backend does not provide"
            + (" (an exponential-mechanism median)" if name == "gumbel" else "")
            + "; it cannot be released with vetted noise: choose another candidate")

    method.__name__ = name
    return method


def _counted(name: str):
    parent = getattr(np.random.Generator, name)

    def method(self, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        return parent(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"NumPy's ``{name}`` (over ChaCha20 keyed from the OS), counted in :attr:`calls`."
    return method


def provenance_of(calls: Any) -> dict[str, dict[str, Any]]:
    """``{method: {calls, drawn_by}}`` for counts of generator calls by method (``release.json``'s ``randomness``)."""
    return {name: {"calls": int(n), "drawn_by": DRAWN_BY.get(name, _NUMPY)} for name, n in sorted(dict(calls).items())}


class OpenDPGenerator(np.random.Generator):
    """A :class:`numpy.random.Generator` whose Laplace and Gaussian noise is drawn by OpenDP.

    Parameters
    ----------
    seed
        ``None`` (a release): the *non-noise* methods (``random``, ``integers``, ...) draw from ChaCha20
        keyed with 256 bits from :mod:`secrets` (a release is not reproducible, by design); an integer
        (tests, probes only): from NumPy's PCG64 with that seed.
    probe
        ``True``: draw everything with NumPy (fast) and only record which methods were called
        (:attr:`calls`), so :func:`probe_noise` can tell before a release whether the adapter covers
        a mechanism.

    Attributes
    ----------
    calls
        How often each noise method was called (a :class:`collections.Counter`).

    Examples
    --------
    >>> rng = OpenDPGenerator()
    >>> rng.laplace(0.0, 1.0, size=3).shape
    (3,)
    """

    def __init__(self, seed: int | None = None, probe: bool = False) -> None:
        if seed is None:
            from randomgen import ChaCha

            bits: np.random.BitGenerator = ChaCha(key=secrets.randbits(256), rounds=20)
        else:
            bits = np.random.PCG64(seed)
        super().__init__(bits)
        self.probe = bool(probe)
        self.calls: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"OpenDPGenerator(probe={self.probe})"

    @property
    def bit_generator(self) -> np.random.BitGenerator:  # type: ignore[override]
        """The NumPy bit generator behind the non-noise methods (its raw bits are counted too)."""
        self.calls["bit_generator"] += 1
        return super().bit_generator

    def provenance(self) -> dict[str, dict[str, Any]]:
        """What drew each kind of number the mechanism asked for: ``{method: {calls, drawn_by}}``.

        Only what the mechanism drew through this generator is seen; a mechanism that draws elsewhere
        (its own generator, NumPy's global state) is refused before a release by the conformance
        check (its releases must be a function of the generator it is given)."""
        return provenance_of(self.calls)

    #: OpenDP measurements by (kind, scale), shared by every generator (a measurement holds no randomness).
    _cache: dict[tuple[str, float], Any] = {}

    def _measurement(self, kind: str, scale: float):
        key = (kind, scale)
        if key not in self._cache:
            dp = _opendp()
            domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
            if kind == "laplace":
                self._cache[key] = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
            else:
                self._cache[key] = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)
        return self._cache[key]

    def _noisy(self, kind: str, loc: Any, scale: Any, size: Any) -> np.ndarray | float:
        loc_a = np.asarray(loc, dtype=float)
        scale_a = np.asarray(scale, dtype=float)
        if np.isnan(loc_a).any() or np.isinf(loc_a).any():
            raise ValueError(f"{kind} loc must be finite, got {loc!r}")
        if np.isnan(scale_a).any() or np.isinf(scale_a).any() or (scale_a < 0).any():
            raise ValueError(f"{kind} scale must be finite and >= 0, got {scale!r}")
        shape = np.broadcast_shapes(loc_a.shape, scale_a.shape) if size is None else tuple(np.atleast_1d(size))
        loc_b = np.broadcast_to(loc_a, shape).ravel()
        scale_b = np.broadcast_to(scale_a, shape).ravel()
        out = loc_b.copy()
        for s in np.unique(scale_b):
            if s == 0.0:
                continue  # no noise: loc itself
            where = np.flatnonzero(scale_b == s)
            out[where] = np.asarray(self._measurement(kind, float(s))(loc_b[where].tolist()), dtype=float)
        out = out.reshape(shape)
        return float(out) if size is None and out.ndim == 0 else out

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:  # type: ignore[override]
        """Laplace(``loc``, ``scale``) draws from OpenDP's ``make_laplace`` (NumPy's in probe mode)."""
        self.calls["laplace"] += 1
        if self.probe:
            return super().laplace(loc, scale, size)
        return self._noisy("laplace", loc, scale, size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:  # type: ignore[override]
        """Normal(``loc``, ``scale``^2) draws from OpenDP's ``make_gaussian`` (NumPy's in probe mode)."""
        self.calls["normal"] += 1
        if self.probe:
            return super().normal(loc, scale, size)
        return self._noisy("gaussian", loc, scale, size)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:  # type: ignore[override]
        """Standard normal draws from OpenDP's ``make_gaussian`` (NumPy's in probe mode)."""
        self.calls["standard_normal"] += 1
        if self.probe:
            return super().standard_normal(size=size, dtype=dtype, out=out)
        if out is not None or np.dtype(dtype) != np.float64:
            raise UnsupportedNoiseError("standard_normal with out= or a dtype other than float64 is not supported")
        return self._noisy("gaussian", 0.0, 1.0, size)


for _name in _REFUSED:
    setattr(OpenDPGenerator, _name, _refuse(_name))
for _name in NUMPY_METHODS:
    setattr(OpenDPGenerator, _name, _counted(_name))


def probe_noise(mechanism: Any, data: Any) -> Counter[str]:
    """Run ``mechanism.release(data)`` once with NumPy noise and say which noise it draws.

    Raises :class:`UnsupportedNoiseError` naming the first noise method the OpenDP backend does not
    provide, before any private data is read (``data`` is a stand-in of the right shape).
    """
    rng = OpenDPGenerator(seed=0, probe=True)
    mechanism.release(data, rng, trials=1)
    refused = [name for name in rng.calls if name not in (*NOISE_METHODS, *NUMPY_METHODS, "bit_generator")]
    if refused:
        raise UnsupportedNoiseError(
            f"candidate {getattr(mechanism, 'label', type(mechanism).__name__)!r} draws {refused[0]} noise "
            f"(rng.{refused[0]}{', an exponential-mechanism median' if refused[0] == 'gumbel' else ''}), which the "
            "OpenDP release backend does not provide; choose a candidate with Laplace or Gaussian noise")
    return rng.calls
