"""The K-means family's held-out truths (the calibration study).

Synthetic truths: ``n`` users' points in ``[0, 1]^2`` from ``k`` = 2-4 clusters whose shape cycles over
:data:`CLUSTER_LAWS` -- ``separated`` and ``overlapping`` Gaussian clusters, ``unequal`` cluster weights,
``elongated`` (rotated anisotropic) clusters, ``noisy`` (a quarter of the points uniform in the box) and
``pilot-biased`` (the public pilot over-samples some clusters: a pilot that is not a random sample of
the users).  The model (a Bayesian bootstrap of the pilot) assumes the pilot is one and that trust is
split at random; on alternate rounds of the six laws the users who trust the curator come mostly from
one cluster instead (trust that goes with the values).

Real truths (:data:`REAL_KMEANS`, ``calibration-kmeans.csv`` and ``faithful.csv``; sources in
``hybridpriv/examples/README.md``): ``faithful`` (the built-in example: its 40 pilot points, a random
quarter of the 232 others trust the curator), and three whose trust follows a real attribute, each with
a random public pilot of 20% of its points: ``iris-petals`` (petal length x width, the setosa irises
trust the curator), ``quakes-fiji`` (longitude x latitude of 1,000 earthquakes near Fiji, the deep ones,
300 km or more), ``crabs`` (frontal lobe x rear width of 200 crabs, the blue species), ``penguins-sex`` (bill
length x flipper length of the 333 Palmer penguins whose sex is recorded, three species; the males trust the
curator: they lie 0.7-1.4 standard deviations from the females within every species, as the deep quakes do).
Epsilon 5, the example's, for the real ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...heldout import Truth, read_example

__all__ = ["CLUSTER_LAWS", "KMEANS_EPSILONS", "REAL_KMEANS", "kmeans_truth", "real_kmeans_truth"]

CLUSTER_LAWS = ("separated", "overlapping", "unequal", "elongated", "noisy", "pilot-biased")
#: Every user's epsilon in a synthetic truth (one per truth).
KMEANS_EPSILONS = (1.0, 2.0, 5.0, 10.0)
#: Real datasets: name -> (k, the attribute value whose users trust the curator, or None: a random quarter).
REAL_KMEANS = {"faithful": (2, None), "iris-petals": (3, "setosa"), "quakes-fiji": (3, "deep"), "crabs": (2, "blue"),
               "penguins-sex": (3, "male")}
ITERATIONS = [1, 2, 3, 5]


def _spec(pilot: np.ndarray, n: int, n_tcm: int, epsilon: float, k: int) -> dict[str, Any]:
    return {"kind": "kmeans", "bounds": [0.0, 1.0], "n": int(n), "c": n_tcm / n, "epsilon": float(epsilon),
            "k": int(k), "iterations": list(ITERATIONS), "model": {"pilot": pilot.tolist()}}


def _cloud(points: np.ndarray, trusted: np.ndarray, pilot: np.ndarray, k: int):
    from .algorithms import PointCloud
    from .model import pilot_start

    return PointCloud(points, trusted, (0.0, 1.0), pilot_start(pilot, k))  # the SPEC's start: the pilot's


def _clusters(law: str, k: int, rng: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Centres, covariances and weights of ``k`` clusters of ``law``."""
    centres = rng.uniform(0.2, 0.8, (k, 2))
    sd = {"separated": 0.035, "overlapping": 0.11}.get(law, 0.06) * rng.uniform(0.8, 1.25)
    covs = []
    for _ in range(k):
        if law == "elongated":
            a = rng.uniform(0, np.pi)
            rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            covs.append(rot @ np.diag([(2.2 * sd) ** 2, (0.5 * sd) ** 2]) @ rot.T)
        else:
            covs.append(np.eye(2) * sd**2)
    weights = rng.dirichlet(np.full(k, 0.7 if law == "unequal" else 6.0))
    return centres, covs, weights


def _draw(size: int, centres, covs, weights, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` points (clipped into the box) and their cluster (-1: uniform noise)."""
    label = rng.choice(len(weights), size=size, p=weights)
    label[rng.random(size) < noise] = -1
    points = rng.uniform(0, 1, (size, 2))
    for j, (m, s) in enumerate(zip(centres, covs)):
        at = label == j
        points[at] = rng.multivariate_normal(m, s, int(at.sum()))
    return np.clip(points, 0.0, 1.0), label


def kmeans_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic K-means truth number ``i`` (its law: ``CLUSTER_LAWS[i % 6]``; trust follows a cluster on odd rounds)."""
    law = CLUSTER_LAWS[i % len(CLUSTER_LAWS)]
    k = int(rng.integers(2, 5))
    centres, covs, weights = _clusters(law, k, rng)
    noise = 0.25 if law == "noisy" else 0.0
    n = int(rng.integers(100, 501) if quick else rng.integers(300, 3001))
    points, label = _draw(n, centres, covs, weights, noise, rng)
    pilot_weights = rng.dirichlet(np.full(k, 0.5)) if law == "pilot-biased" else weights
    pilot, _ = _draw(int(rng.integers(20, 41) if quick else rng.integers(20, 81)), centres, covs, pilot_weights,
                     noise, rng)
    n_tcm = int(np.clip(round(rng.uniform(0.05, 0.5) * n), 1, n - 1))
    by_cluster = (i // len(CLUSTER_LAWS)) % 2 == 1
    if by_cluster:  # the TCM users: mostly one cluster's (5x the odds of the others')
        odds = np.where(label == int(rng.integers(k)), 5.0, 1.0)
        tcm = rng.choice(n, n_tcm, replace=False, p=odds / odds.sum())
    else:
        tcm = rng.permutation(n)[:n_tcm]
    trusted = np.zeros(n, dtype=bool)
    trusted[tcm] = True
    epsilon = float(rng.choice(KMEANS_EPSILONS))
    return Truth("kmeans", "synthetic", f"{law}{'+trust-by-cluster' if by_cluster else ''}",
                 _spec(pilot, n, n_tcm, epsilon, k), _cloud(points, trusted, pilot, k))


def real_kmeans_truth(name: str, rng: np.random.Generator) -> Truth:
    """Real K-means truth ``name`` (:data:`REAL_KMEANS`) at epsilon 5."""
    if name not in REAL_KMEANS:
        raise ValueError(f"name must be one of {list(REAL_KMEANS)}, got {name!r}")
    k, trusting = REAL_KMEANS[name]
    if name == "faithful":
        rows = read_example("faithful.csv")
        xy = np.array([[float(r["x"]), float(r["y"])] for r in rows])
        role = np.array([r["role"] for r in rows])
        pilot, points = xy[role == "pilot"], xy[role != "pilot"]
        trusted = np.zeros(len(points), dtype=bool)
        trusted[rng.permutation(len(points))[: int(round(0.25 * len(points)))]] = True
    else:
        rows = [r for r in read_example("calibration-kmeans.csv") if r["dataset"] == name]
        xy = np.array([[float(r["x"]), float(r["y"])] for r in rows])
        attr = np.array([r["attribute"] for r in rows])
        order = rng.permutation(len(rows))
        cut = int(round(0.2 * len(rows)))
        pilot, private = xy[order[:cut]], order[cut:]
        points, trusted = xy[private], attr[private] == trusting
    return Truth("kmeans", "real", name, _spec(pilot, len(points), int(trusted.sum()), 5.0, k),
                 _cloud(points, trusted, pilot, k))
