"""The fitted knowledge of a hybrid-model curator (:class:`HybridTrustPosterior`) and the Bayes weight it implies.

Part of :mod:`hybridpriv.families.hybrid_trust.model` (imported from there): the posterior of
:class:`~hybridpriv.families.hybrid_trust.model.HybridTrustModel` -- its draws, the weight minimising the
posterior expected MSE (:func:`bayes_weight_from_moments`, derivation in ``docs/avent-bayes.md``),
and the two-group datasets it generates as a dataset source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from ...core.privacy import check_real_array
from ..grouped import GroupedDataset
from ...core.model import Posterior, check_convergence

if TYPE_CHECKING:
    from .model import HybridTrustModel

__all__ = ["HybridTrustPosterior", "bayes_weight_from_moments", "resolve_shared_law"]

#: The quantities the weight depends on, in the order they are stored.
MOMENTS = ("sigma_T2", "sigma_L2", "gap")


def _check_array(value: object, name: str, allow_zero: bool = True, upper: float | None = None) -> Any:
    """Check a scalar / array / DataArray argument; return it unchanged (xarray passes through)."""
    if isinstance(value, bool) or (isinstance(value, np.ndarray) and value.dtype == bool):
        raise TypeError(f"{name} must be a real number or array of them, got {value!r}")
    arr = check_real_array(getattr(value, "values", value), name)
    if not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        raise ValueError(f"{name} must be finite, got {bad!r}")
    low = arr < 0 if allow_zero else arr <= 0
    if low.any():
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0, got {float(arr[low].flat[0])!r}")
    if upper is not None and (arr >= upper).any():
        raise ValueError(f"{name} must be < {upper:g}, got {float(arr[arr >= upper].flat[0])!r}")
    return value if hasattr(value, "dims") else (float(arr) if arr.ndim == 0 else arr)


def _check_setting(n: object, c: object, s_T2: object, s_L2: object) -> tuple[Any, Any, Any, Any]:
    n = _check_array(n, "n", allow_zero=False)
    c = _check_array(c, "c", allow_zero=False, upper=1.0)
    s_T2 = _check_array(s_T2, "s_T2")
    s_L2 = _check_array(s_L2, "s_L2")
    return n, c, s_T2, s_L2


def bayes_weight_from_moments(
    n: Any, c: Any, s_T2: Any, s_L2: Any, e_sigma_T2: Any, e_sigma_L2: Any, e_gap2: Any,
    benchmark: str = "empirical",
) -> Any:
    """The weight minimising the posterior expected MSE, from posterior moments.

    ``benchmark="empirical"`` (the paper's risk, against the empirical mean):
    ``w = (c A + B) / (A + s_T2 + B)`` with
    ``A = E[sigma_T^2] / (c n) + E[sigma_L^2] / ((1 - c) n) + E[(mu_T - mu_L)^2]`` and
    ``B = s_L2 / ((1 - c) n)`` (derivation in ``docs/avent-bayes.md``).  With point masses
    (``E[gap^2] = gap^2``) it is the heterogeneous KVH weight of Definition 6.1.
    ``benchmark="population"`` (risk against the mixture mean):
    ``w = (V_L + c G) / (V_T + V_L + G)`` with ``V_T = E[sigma_T^2] / (c n) + s_T2``,
    ``V_L = (E[sigma_L^2] + s_L2) / ((1 - c) n)`` and ``G = E[(mu_T - mu_L)^2]``.
    Broadcasts over NumPy arrays and xarray; always in ``[0, 1]``.
    """
    if benchmark == "empirical":
        a = e_sigma_T2 / (c * n) + e_sigma_L2 / ((1 - c) * n) + e_gap2
        b = s_L2 / ((1 - c) * n)
        num, den = c * a + b, a + s_T2 + b
    elif benchmark == "population":
        v_t = e_sigma_T2 / (c * n) + s_T2
        v_l = (e_sigma_L2 + s_L2) / ((1 - c) * n)
        num, den = v_l + c * e_gap2, v_t + v_l + e_gap2
    else:
        raise ValueError(f"benchmark must be 'empirical' or 'population', got {benchmark!r}")
    if (np.asarray(den) <= 0).any():
        raise ValueError(
            "the expected MSE does not depend on w (no data variance, mean gap nor noise): "
            "s_T2 and s_L2 must not both be 0 when the posterior puts all mass on sigma^2 = 0 and gap = 0"
        )
    return num / den


def resolve_shared_law(model: HybridTrustModel, idata: Any, seed: int, *keys: object) -> Any:
    """The draws of a mixture model with its indicator drawn: ``shared`` (1: one law) and ``p_shared``.

    Each draw's indicator is Bernoulli(``sigmoid(shared_logodds)``), its posterior probability given
    the draw's parameters (the likelihood marginalised it out), with uniforms from stream
    ``("shared-law", *keys)`` of ``seed`` (``keys``: a block of :func:`~hybridpriv.families.hybrid_trust.model.fit_many`,
    so that models fitted together do not share their uniforms).  In a shared draw the LM group takes the TCM group's law
    (``mu_L = mu_T``, ``sigma_L2 = sigma_T2``), so ``gap = 0``; the others keep the two laws of
    their draw.
    """
    from ...core.model import draw_indicator
    from ...core.random import rng as stream_rng

    post = idata["posterior"].to_dataset()
    if "shared" in post.data_vars:
        return idata
    p_shared, is_shared = draw_indicator(post["shared_logodds"], stream_rng(seed, "shared-law", *keys))
    mu0, s0 = post["mu_T"], post["sigma_T2"]
    out = post.assign(
        shared=is_shared.astype(float), p_shared=p_shared,
        mu_T=xr.where(is_shared, mu0, post["mu_T"]), mu_L=xr.where(is_shared, mu0, post["mu_L"]),
        gap=xr.where(is_shared, 0.0, post["gap"]),
        sigma_T2=xr.where(is_shared, s0, post["sigma_T2"]), sigma_L2=xr.where(is_shared, s0, post["sigma_L2"]),
    )
    tree = idata.copy()
    tree["posterior"] = xr.DataTree(out)
    return tree


# --------------------------------------------------------------------------------------
# the posterior
# --------------------------------------------------------------------------------------


class HybridTrustPosterior(Posterior):
    """Draws of the curator's knowledge: the Bayes weight they imply and the datasets they generate.

    Build it with :meth:`hybridpriv.families.hybrid_trust.model.HybridTrustModel.fit` (or :func:`~hybridpriv.families.hybrid_trust.model.fit_many`),
    :meth:`~hybridpriv.families.hybrid_trust.model.HybridTrustModel.prior`
    or, from any sampler's draws, :meth:`from_draws`.  Every route runs the shared convergence
    check (:func:`hybridpriv.core.model.check_convergence`: R-hat and bulk ESS of the free
    parameters and of ``sigma_T2``, ``sigma_L2``, ``gap``), which refuses an unconverged posterior
    unless told otherwise (``on_unconverged``).

    Attributes
    ----------
    sigma_T2, sigma_L2, gap
        Float arrays shaped ``(chains, draws)``: the records' variances of each group and the
        mean gap ``mu_T - mu_L`` (data scale).
    idata
        The ``DataTree`` of the draws (``idata["posterior"]`` as PyMC wrote it after a fit).
    sizes, bounds
        The groups' sizes ``(n_T, n_L)`` and ``[0, m]`` (``None`` when built from draws).
    """

    data_kind = "grouped"

    def __init__(self, model: HybridTrustModel | None, idata: Any, seed: int = 0) -> None:
        if model is not None and "shared_logodds" in idata["posterior"].data_vars:
            idata = resolve_shared_law(model, idata, seed)
        super().__init__(model, idata, seed)  # type: ignore[arg-type]
        post = idata["posterior"]
        free = model.free_names if model is not None else ()
        self.convergence_vars = tuple(v for v in (*free, *MOMENTS) if v in post.data_vars)

        def draws(name: str) -> np.ndarray:
            return np.asarray(post[name].transpose("chain", "draw").values, dtype=float)

        self.sigma_T2, self.sigma_L2, self.gap = (draws(k) for k in MOMENTS)
        self._means = (draws("mu_T"), draws("mu_L")) if {"mu_T", "mu_L"} <= set(post.data_vars) else None
        self.sizes = model.sizes if model is not None else None
        self.bounds = model.bounds if model is not None else None
        self.groups = None  # the groups' epsilons are not the model's business: no requirements

    def branches(self) -> list[Any]:
        """With the mixture (``0 < shared_prior < 1``): whether the LM group follows the TCM group's law."""
        post = self.idata["posterior"]
        if "shared" not in post.data_vars:
            return []
        from ...core.assumptions import Branch

        shared = np.asarray(post["shared"].transpose("chain", "draw").values) > 0
        return [Branch("shared-law", "the LM users' values follow the TCM users' law",
                       "the LM users' values follow a law of their own", shared,
                       advice="if you know whether they do, say so: model.homogeneous = true if they do, "
                              "model.shared_prior = 0 if not")]

    @classmethod
    def from_draws(cls, sigma_T2: object, sigma_L2: object, gap: object = 0.0,
                   on_unconverged: str = "raise") -> HybridTrustPosterior:
        """A posterior from given draws (any sampler, or a point mass for a known setting).

        Parameters
        ----------
        sigma_T2, sigma_L2
            Draws of the two groups' record variances (>= 0): scalars, 1-D arrays (one chain)
            or arrays shaped ``(chains, draws)``; broadcast against each other.
        gap
            Draws of ``mu_T - mu_L`` (default 0: the groups share their mean).
        on_unconverged
            As in :meth:`hybridpriv.families.hybrid_trust.model.HybridTrustModel.fit`: ``"raise"`` (default), ``"warn"`` or ``"ignore"``.

        Such a posterior gives weights but no datasets (it has no means, bounds nor sizes).
        """
        if not isinstance(on_unconverged, str) or on_unconverged not in ("raise", "warn", "ignore"):
            raise ValueError(f"on_unconverged must be 'raise', 'warn' or 'ignore', got {on_unconverged!r}")
        arrays = {}
        for name, v in (("sigma_T2", sigma_T2), ("sigma_L2", sigma_L2), ("gap", gap)):
            a = check_real_array(v, name)
            if a.ndim > 2:
                raise ValueError(f"{name} must be a scalar, 1-D (draws) or 2-D (chains, draws), got shape {a.shape}")
            if not np.isfinite(a).all():
                raise ValueError(f"{name} must be finite, got {float(a[~np.isfinite(a)].flat[0])!r}")
            if name != "gap" and (a < 0).any():
                raise ValueError(f"{name} must be >= 0 (a variance), got {float(a[a < 0].flat[0])!r}")
            arrays[name] = np.atleast_2d(a)
        try:
            b = np.broadcast_arrays(*arrays.values())
        except ValueError:
            raise ValueError(
                "sigma_T2, sigma_L2 and gap must broadcast to one (chains, draws) shape, got "
                + ", ".join(str(a.shape) for a in arrays.values())
            ) from None
        if b[0].size == 0:
            raise ValueError("the posterior needs at least one draw, got none")
        ds = xr.Dataset({k: (("chain", "draw"), np.array(x, dtype=float)) for k, x in zip(arrays, b)})
        post = cls(None, xr.DataTree.from_dict({"posterior": ds}))
        post.check_convergence(on_unconverged)
        return post

    def check_convergence(self, on_fail: str = "raise") -> dict[str, dict[str, float]]:
        """The shared check (R-hat, bulk ESS) of the free parameters and ``sigma_T2``, ``sigma_L2``, ``gap``."""
        what = ("the model of what the curator knows" if self.model_spec is not None
                else "the given draws of the curator's knowledge")
        idata: Any = self.idata
        post = idata["posterior"]
        if post.sizes["chain"] == 1 and post.sizes["draw"] >= 8:
            # one chain (exact prior draws, or given draws): split R-hat, i.e. its two halves as chains
            half = post.sizes["draw"] // 2
            ds = post.to_dataset()[list(self.convergence_vars)].isel(chain=0, drop=True)
            first = ds.isel(draw=slice(0, half))
            second = ds.isel(draw=slice(half, 2 * half)).assign_coords(draw=first["draw"])
            idata = {"posterior": xr.concat([first, second], dim="chain")}
        # a quantity fixed over every draw (a point mass, the gap of a homogeneous model) is converged
        # however few the draws: only the others go through the R-hat and ESS test
        varying = [v for v in self.convergence_vars if float(np.ptp(post[v].values)) > 0.0]
        out = check_convergence(idata, varying, on_fail, what=what)
        fixed = {v: {"r_hat": 1.0, "ess_bulk": float(post[v].size)} for v in self.convergence_vars if v not in out}
        self.convergence = {v: {**fixed, **out}[v] for v in self.convergence_vars}
        return self.convergence

    def __repr__(self) -> str:
        e = self.moments
        return (
            f"HybridTrustPosterior(shape={self.shape}, E[sigma_T^2]={e['sigma_T2']:.4g}, "
            f"E[sigma_L^2]={e['sigma_L2']:.4g}, E[gap^2]={e['gap2']:.4g}, max R-hat={self.max_rhat:.3f})"
        )

    @property
    def moments(self) -> dict[str, float]:
        """Posterior means ``E[sigma_T^2]``, ``E[sigma_L^2]``, ``E[gap]`` and ``E[gap^2]``."""
        return {
            "sigma_T2": float(self.sigma_T2.mean()),
            "sigma_L2": float(self.sigma_L2.mean()),
            "gap": float(self.gap.mean()),
            "gap2": float(np.mean(self.gap**2)),
        }

    def bayes_weight(self, n: Any, c: Any, s_T2: Any, s_L2: Any, benchmark: str = "empirical") -> Any:
        """The weight ``w`` minimising ``E_post[hybrid_mse(w, n, c, sigma_T2, sigma_L2, s_T2, s_L2, gap, 0)]``.

        Closed form :func:`bayes_weight_from_moments` at this posterior's moments.  ``n``,
        ``c``, ``s_T2`` (variance of the TCM mean's noise) and ``s_L2`` (variance of one LM
        user's noise) broadcast over NumPy arrays or xarray; a float for scalar inputs.
        ``benchmark``: the risk of :func:`hybridpriv.theory.avent.hybrid_mse` (``"empirical"``,
        the paper's, or ``"population"``).
        """
        n, c, s_T2, s_L2 = _check_setting(n, c, s_T2, s_L2)
        e = self.moments
        return bayes_weight_from_moments(n, c, s_T2, s_L2, e["sigma_T2"], e["sigma_L2"], e["gap2"], benchmark)

    def expected_mse(self, w: Any, n: Any, c: Any, s_T2: Any, s_L2: Any, benchmark: str = "empirical") -> Any:
        """Posterior expected MSE of the hybrid estimator with weight ``w``: the average of
        :func:`hybridpriv.theory.avent.hybrid_mse` over every draw (brute force, no closed form).

        Arguments broadcast over NumPy arrays (memory: their size times the number of draws);
        a float for scalar inputs.
        """
        from ...theory.avent import hybrid_mse

        n, c, s_T2, s_L2 = _check_setting(n, c, s_T2, s_L2)
        w = check_real_array(w, "w")
        if not np.isfinite(w).all():
            raise ValueError(f"w must be finite, got {float(w[~np.isfinite(w)].flat[0])!r}")
        args = np.broadcast_arrays(w, *(np.asarray(x, dtype=float) for x in (n, c, s_T2, s_L2)))
        w_, n_, c_, t_, l_ = (a[..., None] for a in args)
        mse = hybrid_mse(w_, n_, c_, self.sigma_T2.ravel(), self.sigma_L2.ravel(), t_, l_, self.gap.ravel(), 0.0,
                         benchmark=benchmark)
        out = np.asarray(mse).mean(axis=-1)
        return float(out) if out.ndim == 0 else out

    # -- the dataset source ---------------------------------------------------------------
    def _generating(self) -> tuple[tuple[int, int], float]:
        if self.sizes is None or self._means is None:
            raise ValueError(
                "this posterior cannot generate datasets: give the model the groups' sizes, "
                "HybridTrustModel(m, sizes=(n_T, n_L), ...), and fit it (draws alone carry no means)"
            )
        return self.sizes, self.model_spec.m  # type: ignore[union-attr]

    def population(self, chain: int, draw: int) -> dict[str, float]:
        """The two-group population of draw ``(chain, draw)``: the pooled ``mean``
        ``(n_T mu_T + n_L mu_L) / n`` and the mixture ``variance``."""
        (n_T, n_L), _ = self._generating()
        c, d = self._check_index(chain, draw)
        share = n_T / (n_T + n_L)
        mu_T, mu_L = self._means[0][c, d], self._means[1][c, d]  # type: ignore[index]
        gap = mu_T - mu_L
        var = share * self.sigma_T2[c, d] + (1 - share) * self.sigma_L2[c, d] + share * (1 - share) * gap**2
        return {"mean": float(share * mu_T + (1 - share) * mu_L), "variance": float(var)}

    def _beta(self, chain: int, draw: int, m: float) -> tuple[tuple[float, float], tuple[float, float]]:
        """Each group's Beta shape parameters ``(p kappa, (1 - p) kappa)`` on ``[0, m]`` at ``(chain, draw)``."""
        out = []
        for mu, var in ((self._means[0], self.sigma_T2), (self._means[1], self.sigma_L2)):  # type: ignore[index]
            p = float(np.clip(mu[chain, draw] / m, 1e-12, 1 - 1e-12))
            v = float(np.clip(var[chain, draw] / (m * m * p * (1 - p)), 1e-12, 1 - 1e-12))  # the variance fraction
            kappa = 1.0 / v - 1.0
            out.append((p * kappa, (1 - p) * kappa))
        return out[0], out[1]

    def predictive_checks(self, seed: int = 0, draws: int = 400):
        """Posterior predictive checks of the public knowledge (:mod:`hybridpriv.criticism`).

        For ``draws`` posterior draws (spread evenly): each group's pilot records replicated (as
        many, ``m * Beta`` of that draw), with the statistics of
        :func:`~hybridpriv.families.grouped.model_checks.record_statistics` (mean, sd, 10/50/90% quantiles,
        share at each bound: a Beta puts no mass on a bound, so pilot records piled there are
        flagged); each earlier release replicated as the model generates it (the group's mean plus
        its sampling error and Laplace noise).  Randomness: stream ``("predictive-check", seed)``.
        ``None`` when neither pilot records nor releases are public.
        """
        from ...core.privacy import check_integer
        from ...core.random import rng as stream_rng
        from ...criticism import predictive_check
        from ..grouped.model_checks import record_statistics
        from .model import released_mean_moments

        model = self.model_spec
        if model is None or self._means is None:
            return None
        m = float(model.m)
        pilots = {name: rec for name, rec in (("pilot_T", model.pilot_T), ("pilot_L", model.pilot_L))
                  if rec is not None}
        releases = list(model.released_means)
        if not pilots and not releases:
            return None
        observed: dict[str, float] = {}
        for name, rec in pilots.items():
            observed.update({f"{name}.{k}": v for k, v in record_statistics(rec, 0.0, m).items()})
        for i, r in enumerate(releases):
            observed[f"release_{i}({r.group or 'both'})"] = float(r.value)
        replicated: dict[str, list[float]] = {k: [] for k in observed}
        rng = stream_rng(seed, "predictive-check")
        chains, n_draws = self.shape
        count = min(check_integer(draws, "draws", 2), chains * n_draws)
        flat = np.linspace(0, chains * n_draws - 1, count).round().astype(int)
        for k in flat:
            c, d = divmod(int(k), n_draws)
            shapes = dict(zip(("pilot_T", "pilot_L"), self._beta(c, d, m)))
            for name, rec in pilots.items():
                rep = m * rng.beta(*shapes[name], size=rec.size)
                for stat, v in record_statistics(rep, 0.0, m).items():
                    replicated[f"{name}.{stat}"].append(v)
            for i, r in enumerate(releases):
                mean, var = released_mean_moments(r.group, self._means[0][c, d], self._means[1][c, d],  # type: ignore[index]
                                                  self.sigma_T2[c, d], self.sigma_L2[c, d], model.sizes)
                value = mean + np.sqrt(var) * rng.standard_normal() + rng.laplace(0.0, r.noise_scale)
                replicated[f"release_{i}({r.group or 'both'})"].append(float(value))
        # a statistic that cannot vary (a share at a bound the Beta never reaches, observed 0) is not a check
        keep = [k for k in observed if np.ptp(replicated[k]) > 0 or replicated[k][0] != observed[k]]
        if not keep:
            return None
        return predictive_check({k: observed[k] for k in keep}, {k: np.asarray(replicated[k]) for k in keep},
                                advice="each group's records are modelled as a Beta on [0, m], which cannot pile "
                                       "records on a bound or follow several modes; check whether the pilots were "
                                       "clamped, and read the expected losses as approximate")

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> GroupedDataset:
        """The dataset of draw ``(chain, draw)``: ``n_T`` TCM records, then ``n_L`` LM records, each
        ``m * Beta(p kappa, (1 - p) kappa)`` with that draw's mean ``m p`` and variance
        ``m^2 p (1 - p) / (kappa + 1)``; ``population`` as :meth:`population`."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        (n_T, n_L), m = self._generating()
        pop = self.population(chain, draw)
        c, d = self._check_index(chain, draw)
        values = tuple(m * rng.beta(*shape, size=size) for shape, size in zip(self._beta(c, d, m), (n_T, n_L)))
        return GroupedDataset(values, pop)
