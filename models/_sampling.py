"""What every PyMC model here does before ``pm.sample``: one seed per chain from one seed."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["chain_seeds"]


def chain_seeds(seed: int, chains: int, sample_kwargs: Mapping[str, object] = {}) -> list[int]:
    """``pm.sample``'s ``random_seed``: one integer per chain from ``SeedSequence(seed).spawn(chains)``.

    Refuses a ``random_seed`` among ``sample_kwargs`` (it would bypass ``seed``).
    """
    if "random_seed" in sample_kwargs:
        raise TypeError("pass seed=..., not random_seed (it is derived from seed)")
    return [int(s.generate_state(1, np.uint32)[0]) for s in np.random.SeedSequence(seed).spawn(chains)]
