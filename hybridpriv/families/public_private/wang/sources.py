"""Sources of ``"public-private"`` datasets: the Section 5.1 simulation, and public orders attached to any source.

* :class:`Section51Source` -- Wang et al.'s simulation, one draw = one repeat: private covariates
  ``N(0, I_p)``, public ``N(0, diag(0.5, 1))`` (``p = 2``) or ``N(0, 0.5 I_p)``, outcomes
  ``Bernoulli(expit(x . beta))`` without intercept, ``beta_D ~ U(-1, 1)^p`` and ``beta_E ~ U(0, 1/2)^p``
  drawn afresh in every repeat.
* :class:`OrderedSource` -- another source's datasets with named public orders attached: fixed
  ones per draw (e.g. from a model of public knowledge fitted to that draw's public records), or
  ``epsilon``-noisy orders of Algorithm 2's step 2 drawn with the dataset (an earlier DP release
  whose budget is charged to it, not to the mechanisms that read the order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ....core.data import check_source
from ....core.params import Parametrized
from ....core.privacy import check_epsilon, check_integer
from .algorithm2 import noisy_order
from .design import HybridDesign, check_order

__all__ = ["OrderedSource", "Section51Source", "simulate_section51"]


def simulate_section51(p: int, n_private: int, n_public: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One draw of the Section 5.1 setting: ``Xd``, ``yd``, ``Xe``, ``ye`` and both coefficient vectors.

    Draws, in order: ``beta_d`` ``(p,)``, ``beta_e`` ``(p,)``, ``Xd``, ``Xe``, the uniforms of ``yd``
    then of ``ye``.
    """
    beta_d = rng.uniform(-1.0, 1.0, p)
    beta_e = rng.uniform(0.0, 0.5, p)
    sd_e = np.array([math.sqrt(0.5), 1.0]) if p == 2 else np.full(p, math.sqrt(0.5))
    Xd = rng.standard_normal((n_private, p))
    Xe = rng.standard_normal((n_public, p)) * sd_e
    yd = (rng.random(n_private) < 1.0 / (1.0 + np.exp(-Xd @ beta_d))).astype(float)
    ye = (rng.random(n_public) < 1.0 / (1.0 + np.exp(-Xe @ beta_e))).astype(float)
    return {"Xd": Xd, "yd": yd, "Xe": Xe, "ye": ye, "beta_d": beta_d, "beta_e": beta_e}


def _columns(p: int) -> tuple[str, ...]:
    return (*(f"x{j}" for j in range(p)), "y")


class Section51Source(Parametrized):
    """Wang et al.'s Section 5.1 simulation as a dataset source (one draw = one repeat).

    Parameters
    ----------
    p
        Number of covariates (the paper: 2 and 100).
    n_private, n_public
        ``n_D`` and ``n_E`` (the paper: 10,000 each).
    draws
        Repeats offered (one chain).

    ``generate(0, r, rng)`` is :func:`simulate_section51` with ``rng``: a :class:`HybridDesign` with
    columns ``x0 .. x{p-1}, y`` (outcome ``y`` last).
    """

    data_kind = "public-private"

    def __init__(self, p: int, n_private: int = 10_000, n_public: int = 10_000, draws: int = 10) -> None:
        self.p = check_integer(p, "p")
        self.n_private = check_integer(n_private, "n_private", 2)
        self.n_public = check_integer(n_public, "n_public", 1)
        self.draws = check_integer(draws, "draws")

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.draws)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> HybridDesign:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        s = simulate_section51(self.p, self.n_private, self.n_public, rng)
        return HybridDesign(np.column_stack([s["Xd"], s["yd"]]), np.column_stack([s["Xe"], s["ye"]]),
                            columns=_columns(self.p), label="y")


class OrderedSource(Parametrized):
    """Another ``"public-private"`` source's datasets with named public orders attached.

    Parameters
    ----------
    source
        The source of the datasets (its draws and data are unchanged).
    orders
        ``{name: orders}``: public orders fixed per dataset, an array ``(chains, draws, m)`` of public
        indices (e.g. a model of public knowledge's order for each repeat's public records).
    noisy
        ``{name: epsilon}``: per dataset, Algorithm 2's step 2 order at ``epsilon``
        (:func:`~hybridpriv.families.public_private.wang.noisy_order`), drawn from the dataset's generator after
        the dataset (so the dataset does not change).  An ``epsilon``-DP release of ``D``, charged
        to whatever reports it, not to the mechanisms that read it as a public order.
    """

    data_kind = "public-private"

    def __init__(self, source: Any, orders: Mapping[str, np.ndarray] | None = None,
                 noisy: Mapping[str, float] | None = None) -> None:
        check_source(source)
        if getattr(source, "data_kind", "public-private") != "public-private":
            raise ValueError(f"source must make public-private data, got {source.data_kind!r}")
        self.source = source
        chains, draws = source.shape
        for arg, value in (("orders", orders), ("noisy", noisy)):
            if value is not None and not isinstance(value, Mapping):
                raise TypeError(f"{arg} must be a mapping name -> {'orders' if arg == 'orders' else 'epsilon'}, "
                                f"got {type(value).__name__}")
        self.orders: dict[str, np.ndarray] = {}
        for name, arr in (orders or {}).items():
            try:
                a = np.asarray(arr)
            except (TypeError, ValueError):
                raise ValueError(f"orders[{name!r}] must be an array (chains, draws, m) of public indices") from None
            if a.ndim != 3 or a.shape[:2] != (chains, draws):
                raise ValueError(f"orders[{name!r}] must have shape ({chains}, {draws}, m): one order per dataset, "
                                 f"got {a.shape}")
            for c in range(chains):
                for d in range(draws):
                    check_order(a[c, d], getattr(source, "n_public", None), f"orders[{name!r}]")
            self.orders[str(name)] = a
        self.noisy = {str(k): check_epsilon(v, f"noisy[{k!r}]", allow_inf=False) for k, v in (noisy or {}).items()}
        both = set(self.orders) & set(self.noisy)
        if both:
            raise ValueError(f"orders and noisy must not share names, got {sorted(both)}")

    @property
    def shape(self) -> tuple[int, int]:
        return self.source.shape

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> HybridDesign:
        data = self.source.generate(chain, draw, rng)
        if not isinstance(data, HybridDesign):
            raise TypeError(f"the source made {type(data).__name__}, not a HybridDesign")
        extra: dict[str, object] = {name: a[chain, draw] for name, a in self.orders.items()}
        for name, eps in self.noisy.items():
            extra[name] = noisy_order(data.counts(), data.n_private, eps, rng)
        return data.with_orders(extra)
