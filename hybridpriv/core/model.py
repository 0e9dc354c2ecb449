"""What every PyMC model of public knowledge shares: one ``fit()``, one posterior base, one convergence check.

* :class:`KnowledgeModel` -- the base of the models.  A subclass builds its ``pm.Model``
  (:meth:`KnowledgeModel.build`) and names its posterior class; :meth:`KnowledgeModel.fit` samples
  it the same way for every model (one seed per chain from :func:`hybridpriv.core.random.stream`),
  wraps the draws and checks convergence.
* :class:`Posterior` -- the base of the fitted models: the ``DataTree`` PyMC wrote
  (``idata``), ``shape = (chains, draws)``, ``generate(chain, draw, rng)`` (a dataset source for
  :func:`hybridpriv.engine.evaluate.evaluate`), ``summary()`` and ``describe_params()`` (the model's
  parameters and a checksum of the draws, for results and checkpoints).
* :func:`check_convergence` -- R-hat and bulk ESS of the named variables from ``arviz_stats``:
  above :data:`RHAT_FAIL` (or with :data:`ESS_FAIL` or fewer effective draws) it raises
  :class:`ConvergenceError` (``on_fail="raise"``, the default) or warns (``"warn"``); the message
  names the worst variable.
* :func:`sampling_mode` and :class:`StrictNumbaLinker` -- the PyTensor compile mode of every fit:
  PyTensor's Numba backend with fast-math off, so that one seed gives the same draws, bit for bit,
  whether PyTensor's compile cache is cold or warm (see :meth:`KnowledgeModel.fit`, Notes).
"""

from __future__ import annotations

import contextlib
import math
import warnings
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pytensor
import xarray as xr
from pytensor.compile.mode import get_mode
from pytensor.link.numba.linker import NumbaLinker

from .params import Parametrized, describe
from .random import check_seed, stream

__all__ = ["ConvergenceError", "ConvergenceWarning", "ESS_FAIL", "KnowledgeModel", "Posterior", "RHAT_FAIL",
           "RHAT_WARN", "StrictNumbaLinker", "check_convergence", "chain_seeds", "draw_indicator", "judge_convergence",
           "sampling_mode"]

#: A posterior with a larger R-hat is refused: its datasets would not reflect the knowledge.
RHAT_FAIL = 1.1
#: Above this R-hat the fit is reported with a warning (:attr:`Posterior.convergence_advice`).
RHAT_WARN = 1.01
#: A posterior with this many effective draws or fewer (bulk ESS, all chains) is refused.
ESS_FAIL = 20


class ConvergenceError(ValueError):
    """The posterior of a model of public knowledge has not converged."""


class ConvergenceWarning(UserWarning):
    """The posterior may not have converged well (R-hat above :data:`RHAT_WARN`)."""


class StrictNumbaLinker(NumbaLinker):
    """PyTensor's Numba linker with fast-math off: IEEE 754 arithmetic, whatever the compile cache holds.

    With fast-math (PyTensor's default, ``numba__fastmath=True``) LLVM may reassociate sums, turn
    divisions into reciprocal multiplications and fuse multiply-adds, and need not do so alike in
    each copy of a helper function: the copy in its own compiled library and the copy inlined into
    the whole graph's library may differ in their last bits.  Which copy a call reaches depends on what
    this process compiled afresh and what it loaded from PyTensor's Numba cache, so gradients, and
    hence NUTS draws, differed between a cold and a warm cache.  Without fast-math LLVM may only
    apply value-preserving transformations, so every copy gives the same bits.

    The flag is read while the graph is converted and jitted (:meth:`make_all`), so it also holds
    when a pickled function is recompiled in a worker process (``mp_ctx="forkserver"``/``"spawn"``),
    where the process-wide configuration is the default again.  Compiled functions are cached under
    their own keys (``..._fastmath0``), apart from fast-math ones.
    """

    def make_all(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`NumbaLinker.make_all` with ``pytensor.config.numba__fastmath`` off."""
        with pytensor.config.change_flags(numba__fastmath=False):
            return super().make_all(*args, **kwargs)


def sampling_mode(mode: Any = None) -> Any:
    """The PyTensor compile mode a fit samples with: ``mode`` with its Numba linker made strict.

    ``mode`` (a ``Mode``, a mode name, or ``None`` for PyTensor's default, which is the Numba
    backend) is returned with a :class:`StrictNumbaLinker` in place of a ``NumbaLinker`` and the
    same rewrites; a mode with another linker (C, JAX, ...) is returned unchanged.
    """
    m = get_mode(mode)
    if isinstance(m.linker, NumbaLinker) and not isinstance(m.linker, StrictNumbaLinker):
        return type(m)(linker=StrictNumbaLinker(allow_gc=m.linker.allow_gc), optimizer=m.provided_optimizer)
    return m


def sampler_loggers() -> list[Any]:
    """The loggers of PyMC and PyTensor (PyMC sets its level on import, so import it first)."""
    import logging

    import pymc  # noqa: F401

    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in ("pymc", "pytensor")]
    return [logging.getLogger(n) for n in dict.fromkeys(["pymc", "pytensor", *names])]


@contextlib.contextmanager
def quiet_sampler() -> Iterator[None]:
    """PyMC's sampler chatter ("Initializing NUTS", "We recommend running at least 4 chains", its own R-hat
    notes) silenced inside the block: a fit reports its convergence through :func:`check_convergence`, in the
    project's words, once.  The levels are restored on leaving."""
    import logging

    loggers = sampler_loggers()
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _strict_sample_kwargs(sample_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``sample_kwargs`` with ``compile_kwargs["mode"]`` made strict (:func:`sampling_mode`) and PyMC's own
    NUTS chosen (``nuts_sampler="pymc"``).

    A ``backend=...`` given by the caller is honoured (turned into its mode, made strict if Numba), and so is a
    ``nuts_sampler`` the caller names.  Without one PyMC 6 picks nutpie whenever nutpie is installed: the same
    seed would then give other draws on a machine that happens to have it, and the toolkit's many small fits
    ran slower there (``benchmarks/nuts_samplers.py``: nutpie compiles each model for several seconds).
    """
    kwargs = dict(sample_kwargs)
    kwargs.setdefault("nuts_sampler", "pymc")
    given = kwargs.get("compile_kwargs")
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"compile_kwargs must be a mapping of pytensor.function arguments, got {given!r}")
    compile_kwargs = dict(given or {})
    backend = kwargs.pop("backend", None)
    if backend is not None and "mode" in compile_kwargs:
        raise ValueError("pass one of backend=... or compile_kwargs['mode'], not both")
    if backend is not None:
        compile_kwargs["mode"] = "cvm" if backend == "c" else backend
    compile_kwargs["mode"] = sampling_mode(compile_kwargs.get("mode"))
    kwargs["compile_kwargs"] = compile_kwargs
    return kwargs


def chain_seeds(seed: int, chains: int, sample_kwargs: Any = None) -> list[int]:
    """``pm.sample``'s ``random_seed``: one integer per chain, stream ``("fit", chain)`` of ``seed``.

    Refuses a ``random_seed`` among ``sample_kwargs`` (it would bypass ``seed``).
    """
    if sample_kwargs and "random_seed" in sample_kwargs:
        raise TypeError("pass seed=..., not random_seed (it is derived from seed)")
    return [int(stream(seed, "fit", c).generate_state(1, np.uint32)[0]) for c in range(chains)]


def check_convergence(
    idata: Any,
    var_names: Sequence[str],
    on_fail: str = "raise",
    what: str = "the model of public knowledge",
    rhat_fail: float = RHAT_FAIL,
    advice: str = "raise draws (--draws) and fit.tune, or check the knowledge for contradictions",
    ess_fail: float = ESS_FAIL,
) -> dict[str, dict[str, float]]:
    """R-hat and bulk ESS of ``var_names`` in ``idata["posterior"]``; refuse or warn when unconverged.

    Returns ``{variable: {"r_hat": ..., "ess_bulk": ...}}`` (the worst element of vector variables).
    Variables constant over all draws (a fixed quantity) are left out: nothing to converge.  One
    chain is split in halves (split R-hat); chains each stuck at their own value get R-hat ``inf``.  ``on_fail``: ``"raise"``
    (:class:`ConvergenceError`), ``"warn"`` (:class:`ConvergenceWarning`) or ``"ignore"``.
    """
    import arviz_stats

    if on_fail not in ("raise", "warn", "ignore"):
        raise ValueError(f"on_fail (on_unconverged) must be 'raise', 'warn' or 'ignore', got {on_fail!r}")
    post = idata["posterior"]
    out: dict[str, dict[str, float]] = {}
    for name in var_names:
        x = post[name]
        if float(np.ptp(x.values)) == 0.0:  # a fixed quantity (e.g. a known n): nothing to converge
            continue
        if x.sizes.get("chain", 1) == 1:  # one chain: split it in halves (split R-hat), as ArviZ does within chains
            half = x.sizes["draw"] // 2
            x = xr.concat([x.isel(draw=slice(0, half)), x.isel(draw=slice(half, 2 * half)).assign_coords(
                draw=x.draw.values[:half])], dim="chain")
        if x.sizes.get("draw", 0) < 4:
            out[name] = {"r_hat": math.inf, "ess_bulk": float(x.sizes.get("chain", 1) * x.sizes.get("draw", 1))}
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = np.asarray(arviz_stats.rhat(x, sample_dims=["chain", "draw"], method="rank"), dtype=float)
            e = np.asarray(arviz_stats.ess(x, sample_dims=["chain", "draw"], method="bulk"), dtype=float)
        # not constant overall (checked above), so NaN means chains stuck at different values
        r = np.where(np.isfinite(r), r, np.inf)
        e = np.where(np.isfinite(e), e, 1.0)
        out[name] = {"r_hat": float(r.max()), "ess_bulk": float(e.min())}
    return judge_convergence(out, on_fail, what, rhat_fail, advice, ess_fail, stacklevel=4)


def judge_convergence(out: dict[str, dict[str, float]], on_fail: str = "raise",
                      what: str = "the model of public knowledge", rhat_fail: float = RHAT_FAIL,
                      advice: str = "raise draws (--draws) and fit.tune, or check the knowledge for contradictions",
                      ess_fail: float = ESS_FAIL, stacklevel: int = 3) -> dict[str, dict[str, float]]:
    """:func:`check_convergence`'s verdict on diagnostics already computed (``{variable: {"r_hat", "ess_bulk"}}``):
    refuse (:class:`ConvergenceError`), warn or pass, naming the worst variable; returns ``out``."""
    if on_fail not in ("raise", "warn", "ignore"):
        raise ValueError(f"on_fail (on_unconverged) must be 'raise', 'warn' or 'ignore', got {on_fail!r}")
    if not out or on_fail == "ignore":
        return out
    worst = max(out, key=lambda k: out[k]["r_hat"])
    fewest = min(out, key=lambda k: out[k]["ess_bulk"])
    r, e = out[worst]["r_hat"], out[fewest]["ess_bulk"]
    if r > rhat_fail or e <= ess_fail:
        problem = (f"R-hat of {worst} = {r:.3f} > {rhat_fail}" if r > rhat_fail
                   else f"bulk ESS of {fewest} = {e:.0f} <= {ess_fail}")
        msg = f"{what} did not converge ({problem}): its simulated datasets would not reflect the knowledge; {advice}"
        if on_fail == "raise":
            raise ConvergenceError(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=stacklevel)
    elif r > RHAT_WARN and on_fail == "warn":
        warnings.warn(f"{what}: R-hat of {worst} = {r:.3f} > {RHAT_WARN}; consider: {advice}",
                      ConvergenceWarning, stacklevel=stacklevel)
    return out


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def draw_indicator(logodds: xr.DataArray, rng: np.random.Generator) -> tuple[xr.DataArray, xr.DataArray]:
    """A mixture model's indicator drawn once per posterior draw: ``(p, drawn)``.

    ``p = sigmoid(logodds)``, the indicator's posterior probability given each draw's parameters (when the
    likelihood marginalised the indicator out, ``logodds`` is what the model recorded), and ``drawn`` (boolean)
    is Bernoulli(``p``) from ``rng``'s uniforms, in ``logodds``'s layout."""
    p = 1.0 / (1.0 + np.exp(-logodds.clip(-700, 700)))
    drawn = xr.DataArray(rng.random(p.shape) < p.values, dims=p.dims, coords=p.coords)
    return p, drawn


class Posterior(ABC):
    """A fitted model of public knowledge: its draws and the datasets they generate.

    Subclasses implement :meth:`generate`; ``convergence_vars`` names the variables that
    :meth:`check_convergence` looks at.
    """

    convergence_vars: tuple[str, ...] = ()
    #: What a refusal for non-convergence advises (in the SPEC's words: its keys and the command's flags).
    convergence_advice: str = "raise draws (--draws) and fit.tune, or check the knowledge for contradictions"
    #: The data kind :meth:`generate` makes (a registered data kind, ``hybridpriv.families.data_kinds()``); every
    #: posterior names its own.
    data_kind: str = ""

    def __init__(self, model: KnowledgeModel, idata: Any, seed: int = 0) -> None:
        self.model_spec = model
        self.idata = idata
        self.seed = int(seed)
        post = idata["posterior"]
        self._shape = (int(post.sizes["chain"]), int(post.sizes["draw"]))
        self.convergence: dict[str, dict[str, float]] = {}
        #: The stratum of every draw (:func:`hybridpriv.core.data.strata_of`): the posterior variable that the
        #: posterior's attribute ``strata`` names (a pooled mixture's component), else ``None``.
        self.strata = self._strata(post)

    @staticmethod
    def _strata(post: Any) -> np.ndarray | None:
        name = post.attrs.get("strata")
        if name is None:
            return None
        if name not in post:
            raise ValueError(f"the posterior's attribute strata names {name!r}, which it does not hold")
        out = np.asarray(post[name].transpose("chain", "draw").values)
        if out.dtype.kind not in "iu":
            raise ValueError(f"the posterior's strata variable {name!r} must hold integers, got dtype {out.dtype}")
        return out

    @property
    def shape(self) -> tuple[int, int]:
        """``(chains, draws)``."""
        return self._shape

    def _check_index(self, chain: object, draw: object) -> tuple[int, int]:
        for name, v, n in (("chain", chain, self._shape[0]), ("draw", draw, self._shape[1])):
            if not isinstance(v, Integral) or isinstance(v, bool):
                raise TypeError(f"{name} must be an integer, got {v!r}")
            if not 0 <= v < n:
                raise ValueError(f"{name} must be in [0, {n}), got {v!r}")
        return int(chain), int(draw)  # type: ignore[arg-type]

    @abstractmethod
    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        """The dataset of posterior draw ``(chain, draw)``, using only ``rng`` for randomness."""

    def branches(self) -> list[Any]:
        """The alternatives this posterior draws one of per draw and public knowledge cannot tell apart
        (:class:`~hybridpriv.core.assumptions.Branch`; :mod:`hybridpriv.engine.branches` decides within each).
        None by default."""
        return []

    def check_convergence(self, on_fail: str = "raise") -> dict[str, dict[str, float]]:
        """:func:`check_convergence` of this posterior's ``convergence_vars`` (stored in ``convergence``)."""
        self.convergence = check_convergence(self.idata, self.convergence_vars, on_fail,
                                             what=f"the {type(self.model_spec).__name__} of public knowledge",
                                             advice=self.convergence_advice)
        return self.convergence

    @property
    def max_rhat(self) -> float:
        """The largest R-hat found by :meth:`check_convergence` (``nan`` before it ran)."""
        return max((v["r_hat"] for v in self.convergence.values()), default=math.nan)

    def summary(self, var_names: Sequence[str] | None = None, **kwargs: Any) -> Any:
        """``arviz_stats.summary`` of ``var_names`` (default ``convergence_vars``), numbers not strings."""
        import arviz_stats

        kwargs.setdefault("round_to", "none")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return arviz_stats.summary(self.idata, var_names=list(var_names or self.convergence_vars), **kwargs)

    def describe_params(self) -> dict[str, Any]:
        """The model's parameters, the fit's seed and a checksum of every posterior variable."""
        post = self.idata["posterior"]
        crc = 0
        for name in sorted(post.data_vars):
            crc = zlib.crc32(np.ascontiguousarray(post[name].values).tobytes(), crc)
        return {"class": type(self).__name__, "model": describe(self.model_spec), "seed": self.seed,
                "shape": list(self.shape), "draws_crc32": crc}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"


class KnowledgeModel(Parametrized, ABC):
    """Base of the PyMC models of public knowledge (one ``fit`` for all of them)."""

    #: The :class:`Posterior` subclass :meth:`fit` returns.
    posterior_class: type[Posterior]

    @abstractmethod
    def build(self) -> Any:
        """The ``pm.Model`` of the knowledge."""

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """``pm.sample`` inside ``model`` (models with custom step methods override this).

        Compiles with :func:`sampling_mode` (``compile_kwargs["mode"]``) and fast-math off.
        """
        import pymc as pm

        with model, pytensor.config.change_flags(numba__fastmath=False):
            return pm.sample(draws=draws, tune=tune, chains=chains, random_seed=random_seed, progressbar=progressbar,
                             **_strict_sample_kwargs(sample_kwargs))

    def fit(
        self,
        draws: int = 500,
        tune: int = 500,
        chains: int = 2,
        seed: int = 0,
        progressbar: bool = False,
        on_unconverged: str = "raise",
        **sample_kwargs: Any,
    ) -> Posterior:
        """Sample the posterior and return it as a dataset source.

        Parameters
        ----------
        draws, tune, chains
            Passed to ``pm.sample`` (``tune`` may be ignored by models without tuning).
        seed
            Integer >= 0; chain ``c`` samples with the seed of stream ``("fit", c)``.
        progressbar
            Passed to ``pm.sample``.
        on_unconverged
            ``"raise"`` (default: :class:`ConvergenceError` names the worst variable), ``"warn"``
            or ``"ignore"`` (the diagnostics are still in ``posterior.convergence``).
        **sample_kwargs
            Other ``pm.sample`` arguments (``cores``, ``target_accept``, ...).

        Notes
        -----
        The same ``seed`` gives the same draws, bit for bit, in one process or another, with a cold
        or a warm PyTensor compile cache: the model is built and sampled with PyTensor's Numba
        fast-math off (:class:`StrictNumbaLinker`, :func:`sampling_mode`).  With fast-math on,
        the gradient's last bits depended on which compiled copy of a helper function ran, which
        depended on the cache, and NUTS turned those bits into other draws.
        """
        draws = _check_count(draws, "draws", 1)
        tune = _check_count(tune, "tune", 0)
        chains = _check_count(chains, "chains", 1)
        seed = check_seed(seed)
        random_seed = chain_seeds(seed, chains, sample_kwargs)
        with pytensor.config.change_flags(numba__fastmath=False):  # see Notes (and _sample overrides)
            with quiet_sampler():
                idata = self._sample(self.build(), draws, tune, chains, random_seed, progressbar, **sample_kwargs)
        posterior = self.posterior_class(self, idata, seed)
        posterior.check_convergence(on_unconverged)
        return posterior
