"""The hybrid-trust family's held-out truths (the calibration study).

Synthetic truths (records in ``[0, 100]``, :data:`hybridpriv.heldout.RECORD_LAWS`): the TCM and the LM
group sharing one law's parameters (half the truths) or each drawing its own (a mean gap, a different
spread); pilot records of both groups are public.  Real truths (:data:`REAL_HYBRID_TRUST`):
``salaries`` (the built-in example's pilots and groups), ``acs12-income``, ``boston-medv``,
``faithful-waiting`` (records shuffled into pilots and groups).  No budget-spending selector: its
features of the LM group would have to be local-DP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...heldout import RECORD_LAWS, Truth, draw_records, law_params, read_example, shuffled_values

__all__ = ["REAL_HYBRID_TRUST", "TRUST_EPSILONS", "hybrid_trust_truth", "real_hybrid_trust_truth"]

#: Real hybrid-trust datasets: name -> m (records lie in [0, m]).
REAL_HYBRID_TRUST = {"salaries": 250.0, "acs12-income": 200.0, "boston-medv": 50.0, "faithful-waiting": 100.0}
#: Epsilons of a hybrid-trust truth's groups (each group its own).
TRUST_EPSILONS = (0.5, 1.0, 2.0, 4.0)


def _hybrid_trust_spec(m: float, pilots: tuple[np.ndarray, np.ndarray], sizes, epsilons) -> dict[str, Any]:
    return {"kind": "hybrid-trust", "m": float(m),
            "tcm": {"name": "tcm", "size": int(sizes[0]), "epsilon": float(epsilons[0])},
            "lm": {"name": "lm", "size": int(sizes[1]), "epsilon": float(epsilons[1])},
            "model": {"pilot_tcm": pilots[0].tolist(), "pilot_lm": pilots[1].tolist()}}


def hybrid_trust_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic hybrid-trust truth number ``i`` (its law: ``RECORD_LAWS[i % 6]``), ``m = 100``.

    ``n`` users in 300-3,000 (100-500 at ``quick``), a TCM share ``c`` in 2-50% (at least one user
    in each group), each group's epsilon from :data:`TRUST_EPSILONS`; the LM group shares the TCM
    group's law parameters on even-numbered rounds of the six laws and draws its own otherwise
    (``shifted-groups`` always shifts it).  Public: 10-40 pilot records per group (10-20 at
    ``quick``), drawn from the group's law beside its private records.
    """
    kind = RECORD_LAWS[i % len(RECORD_LAWS)]
    p_tcm = law_params(kind, rng)
    p_lm = p_tcm if (i // len(RECORD_LAWS)) % 2 == 0 else law_params(kind, rng)
    n = int(rng.integers(100, 501) if quick else rng.integers(300, 3001))
    n_tcm = int(np.clip(round(rng.uniform(0.02, 0.5) * n), 1, n - 1))
    epsilons = rng.choice(TRUST_EPSILONS, 2)
    shifts = rng.uniform(-1, 1, 2) * p_tcm.get("spread", 0.0)
    pilot_n = rng.integers(10, 21, 2) if quick else rng.integers(10, 41, 2)
    tcm = draw_records(kind, n_tcm + int(pilot_n[0]), rng, p_tcm, shifts[0])
    lm = draw_records(kind, n - n_tcm + int(pilot_n[1]), rng, p_lm, shifts[1])
    pilots = (tcm[:pilot_n[0]], lm[:pilot_n[1]])
    data = {"tcm": tcm[pilot_n[0]:], "lm": lm[pilot_n[1]:]}
    return Truth("hybrid-trust", "synthetic", kind,
                 _hybrid_trust_spec(100.0, pilots, (n_tcm, n - n_tcm), epsilons), data)


def real_hybrid_trust_truth(name: str, rng: np.random.Generator) -> Truth:
    """Real hybrid-trust truth ``name`` (:data:`REAL_HYBRID_TRUST`) at epsilon 1 in both groups.

    ``salaries`` is the built-in example without its earlier release (junior faculty TCM,
    professors LM; the published pilots, 20 each).  The others are shuffled by ``rng``: 20 + 20
    pilot records, then 30% of the rest TCM and 70% LM (records clamped to ``[0, m]``).
    """
    if name not in REAL_HYBRID_TRUST:
        raise ValueError(f"name must be one of {list(REAL_HYBRID_TRUST)}, got {name!r}")
    m = REAL_HYBRID_TRUST[name]
    if name == "salaries":
        rows = read_example("salaries.csv")

        def part(group, role):
            return np.array([float(r["salary_k"]) for r in rows if r["group"] == group and r["role"] == role])
        pilots = (part("junior", "pilot"), part("professors", "pilot"))
        data = {"tcm": part("junior", "private"), "lm": part("professors", "private")}
    else:
        x = np.clip(shuffled_values(name, rng), 0.0, m)
        rest = x[40:]
        n_tcm = int(round(0.3 * rest.size))
        pilots, data = (x[:20], x[20:40]), {"tcm": rest[:n_tcm], "lm": rest[n_tcm:]}
    return Truth("hybrid-trust", "real", name,
                 _hybrid_trust_spec(m, pilots, (data["tcm"].size, data["lm"].size), (1.0, 1.0)), data)
