"""The hybrid-trust family's held-out truths (the calibration study).

Synthetic truths (records in ``[0, 100]``, :data:`hybridpriv.heldout.RECORD_LAWS`): the TCM and the LM
group sharing one law's parameters (half the truths) or each drawing its own (a mean gap, a different
spread); pilot records of both groups are public.  Real truths (:data:`REAL_HYBRID_TRUST`):
``salaries`` (the built-in example's pilots and groups), ``acs12-income``, ``boston-medv``,
``faithful-waiting`` (records shuffled into pilots and groups).  The budget-spending selector
(:func:`pythia_hybrid_trust`) spends a share of each group's epsilon on its mean: central DP for the TCM
group, the average of local-DP reports for the LM group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...heldout import RECORD_LAWS, Truth, draw_records, law_params, read_example, shuffled_values

__all__ = ["REAL_HYBRID_TRUST", "TRUST_EPSILONS", "hybrid_trust_truth", "pythia_hybrid_trust", "real_hybrid_trust_truth"]

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


def pythia_hybrid_trust(raw: dict[str, Any], data: dict[str, np.ndarray], share: float,
                        rng: np.random.Generator) -> dict[str, Any]:
    """A budget-spending selector's SPEC (Pythia-style): each group spends ``share`` of its epsilon on its mean,
    which enters the model as an earlier release (``model.released_means``), and the candidates get the rest,
    ``(1 - share) epsilon``, so each user is charged the same epsilon in all as under the model-only selector.

    * TCM group (trusts the curator): the central Laplace mean of its records, scale ``m / (n_T share eps_T)``
      (sensitivity ``m`` under either relation, records in ``[0, m]``; as the grouped kind's
      :func:`~hybridpriv.families.grouped.heldout.noisy_group_mean`).
    * LM group (trusts only its device): each user reports its value plus Laplace noise of scale ``b = m /
      (share eps_L)`` (local DP, replace), and the curator averages the ``n_L`` reports: the mean's noise is the
      sum of ``n_L`` Laplace draws over ``n_L`` (:func:`hybridpriv.noise.laplace_sum`, exact in law), variance
      ``2 b^2 / n_L``.  The model reads every release through a Laplace likelihood, so this one is entered with
      the scale of the same variance, ``b / sqrt(n_L)``: the average's law is nearly normal, and the Laplace has
      the heavier tails (it trusts the release a little less than it could).

    Simulation noise (NumPy), not for a release of real data; Laplace noise only (``noise = "gaussian"`` is
    refused: its delta would have to be split too)."""
    from ...noise import laplace_sum
    from ..grouped.heldout import noisy_group_mean

    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    if raw.get("noise", "laplace") != "laplace":
        raise ValueError(f"noise must be 'laplace' for the budget-spending selector, got {raw.get('noise')!r}")
    from ...spec import parse_spec

    m = float(raw["m"])
    tcm, lm = dict(raw["tcm"]), dict(raw["lm"])
    if tcm.get("size") is not None and lm.get("size") is not None:
        n_T, n_L = int(tcm["size"]), int(lm["size"])
    else:  # a SPEC of n and c: the sizes its parser derives (parsing costs ~1 ms: only here, not per call)
        n_T, n_L = parse_spec(raw).values.sizes
    value_T, scale_T = noisy_group_mean(data["tcm"], n_T, (0.0, m), raw.get("relation", "replace"),
                                        share * float(tcm["epsilon"]), rng)
    b = m / (share * float(lm["epsilon"]))
    reports = np.clip(np.asarray(data["lm"], dtype=float), 0.0, m)  # a device reports a value inside the bounds
    value_L = float(laplace_sum(float(np.sum(reports)), b, n_L, rng)) / n_L
    released = [*raw.get("model", {}).get("released_means", []),
                {"group": tcm["name"], "value": float(value_T), "noise_scale": float(scale_T)},
                {"group": lm["name"], "value": value_L, "noise_scale": b / np.sqrt(n_L)}]
    tcm["epsilon"] = float(tcm["epsilon"]) * (1.0 - share)
    lm["epsilon"] = float(lm["epsilon"]) * (1.0 - share)
    return {**raw, "tcm": tcm, "lm": lm, "model": {**raw.get("model", {}), "released_means": released}}
