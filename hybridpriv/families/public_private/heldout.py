"""The public-private family's held-out truths (the calibration study).

A truth is a public sample of records (covariates and a 0/1 outcome) beside a private cohort; what is
public about the cohort is its size and its "Table 1" (each column's mean and variance, the outcome
rate), as in the ``pima`` example.  The model of public knowledge lets the cohort's covariates and
coefficients shift from the public sample's (``shift_sd``, ``log_scale_sd``, ``coef_sd``).

Synthetic truths (:data:`SHIFT_LAWS`, cycled): three covariates (two continuous, one count) and a
logistic outcome; the cohort is drawn like the public sample (``same``), or with shifted covariate
means (``mean-shift``), wider covariates (``scale-shift``), other coefficients (``coef-shift``: the
outcome depends on the covariates differently, which Table 1 cannot show), skewed log-normal
covariates (``skewed``) or another outcome rate (``rate-shift``).

Real truths (:data:`REAL_PUBLIC_PRIVATE`; sources in ``hybridpriv/examples/README.md``), each split by a
real attribute: ``pima`` (the example: MASS ``Pima.tr`` public, ``Pima.te`` private), ``swisslabor``
(labour-force participation of Swiss women, public: the foreign women, private: the Swiss), ``mroz``
(US married women's labour-force participation in 1975, public: those who went to college, private: the
others).

The records reach the SPEC as CSV files, written once per truth into a content-addressed folder under the
system's temporary directory (``hybridpriv-heldout/<sha>``); the private file is read back by the
family's release loader, so a truth is scored on what a release would read.

The budget-spending selector (:func:`pythia_public_private`) spends a share of the cohort's epsilon on a Laplace
release of its cross-moments (what the outcome does with each covariate, which Table 1 cannot show), which enters the
model as ``private.cross_moments``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ...heldout import Truth, read_example

__all__ = ["REAL_PUBLIC_PRIVATE", "SHIFT_LAWS", "public_private_truth", "pythia_public_private",
           "real_public_private_truth"]

SHIFT_LAWS = ("same", "mean-shift", "scale-shift", "coef-shift", "skewed", "rate-shift")
#: Epsilons of a synthetic truth (one per truth).
PP_EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: Real datasets: name -> (file, outcome column, its positive value, {column: type}).
REAL_PUBLIC_PRIVATE = {
    "pima": (("pima-public.csv", "pima-private.csv"), "type", "Yes",
             {"npreg": "integer", "glu": "integer", "bmi": "number", "ped": "number", "age": "integer"}),
    "swisslabor": ("swisslabor.csv", "participation", "yes",
                   {"income": "number", "age": "number", "education": "integer", "youngkids": "integer",
                    "oldkids": "integer"}),
    "mroz": ("mroz.csv", "lfp", "yes", {"k5": "integer", "k618": "integer", "age": "integer", "lwg": "number",
                                        "inc": "number"}),
}


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def _folder(public: str, private: str) -> Path:
    """A folder holding ``public.csv`` and ``private.csv`` with these contents (written once; atomic)."""
    sha = hashlib.sha256((public + "\0" + private).encode()).hexdigest()[:20]
    folder = Path(tempfile.gettempdir()) / "hybridpriv-heldout" / sha
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("public.csv", public), ("private.csv", private)):
        path = folder / name
        if not path.is_file() or path.read_text() != text:
            tmp = folder / f".{name}.{os.getpid()}"
            tmp.write_text(text)
            os.replace(tmp, path)
    return folder


def _truth(source: str, generator: str, columns: dict[str, str], outcome: str, positive: str,
           public: list[dict[str, str]], private: list[dict[str, str]], epsilon: float) -> Truth:
    header = [*columns, outcome]
    folder = _folder(_csv_text(header, [[r[h] for h in header] for r in public]),
                     _csv_text(header, [[r[h] for h in header] for r in private]))
    X = np.array([[float(r[c]) for c in columns] for r in private])
    y = np.array([r[outcome] == positive for r in private], dtype=float)
    spec = {"kind": "public-private", "public_records": str(folder / "public.csv"), "columns": dict(columns),
            "outcome": outcome, "outcome_positive": positive, "contrast": "logistic", "epsilon": float(epsilon),
            "private": {"n": len(private),
                        "covariate_mean": {c: round(float(m), 6) for c, m in zip(columns, X.mean(0))},
                        "covariate_variance": {c: round(float(v), 6) for c, v in zip(columns, X.var(0, ddof=1))},
                        "outcome_rate": round(float(y.mean()), 6)}}
    return Truth("public-private", source, generator, spec, {"folder": str(folder), "spec": spec})


def _records(X: np.ndarray, y: np.ndarray, columns: dict[str, str]) -> list[dict[str, str]]:
    rows = []
    for x, o in zip(X, y):
        r = {c: (str(int(v)) if kind == "integer" else f"{v:.6g}") for (c, kind), v in zip(columns.items(), x)}
        r["y"] = "1" if o else "0"
        rows.append(r)
    return rows


def public_private_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic public-private truth number ``i`` (its law: ``SHIFT_LAWS[i % 6]``)."""
    law = SHIFT_LAWS[i % len(SHIFT_LAWS)]
    columns = {"x1": "number", "x2": "number", "count": "integer"}
    n_pub = int(rng.integers(80, 201) if quick else rng.integers(100, 401))
    n_priv = int(rng.integers(150, 401) if quick else rng.integers(200, 1501))
    beta = rng.normal(0.0, 0.8, 3)
    intercept = rng.normal(-0.5, 0.5)

    def draw(n: int, shift: np.ndarray, scale: float, b: np.ndarray, b0: float) -> tuple[np.ndarray, np.ndarray]:
        z = rng.standard_normal((n, 2)) * scale + shift[:2]
        if law == "skewed":
            z = np.exp(0.6 * z) - 1.0
        count = rng.poisson(np.exp(0.8 + 0.3 * z[:, 0] + shift[2]))
        X = np.column_stack([10 + 3 * z[:, 0], 50 + 8 * z[:, 1], count])
        logit = b0 + b[0] * z[:, 0] + b[1] * z[:, 1] + b[2] * (count - 2.0) / 2.0
        return X, rng.random(n) < 1 / (1 + np.exp(-logit))

    zero = np.zeros(3)
    X_pub, y_pub = draw(n_pub, zero, 1.0, beta, intercept)
    shift = rng.uniform(0.5, 1.0, 3) * rng.choice([-1, 1], 3) if law == "mean-shift" else zero
    scale = rng.uniform(1.5, 2.0) if law == "scale-shift" else 1.0
    b = beta + rng.normal(0.0, 0.8, 3) if law == "coef-shift" else beta
    b0 = intercept + rng.choice([-1, 1]) * rng.uniform(0.7, 1.2) if law == "rate-shift" else intercept
    X_priv, y_priv = draw(n_priv, shift, scale, b, b0)
    columns_y = {**columns}
    return _truth("synthetic", law, columns_y, "y", "1", _records(X_pub, y_pub, columns),
                  _records(X_priv, y_priv, columns), float(rng.choice(PP_EPSILONS)))


def real_public_private_truth(name: str, rng: np.random.Generator | None = None) -> Truth:
    """Real public-private truth ``name`` (:data:`REAL_PUBLIC_PRIVATE`) at epsilon 1 (the pima example's)."""
    if name not in REAL_PUBLIC_PRIVATE:
        raise ValueError(f"name must be one of {list(REAL_PUBLIC_PRIVATE)}, got {name!r}")
    files, outcome, positive, columns = REAL_PUBLIC_PRIVATE[name]
    if isinstance(files, tuple):
        public, private = (read_example(f) for f in files)
    else:
        rows = read_example(files)
        public = [r for r in rows if r["role"] == "public"]
        private = [r for r in rows if r["role"] == "private"]
    return _truth("real", name, columns, outcome, positive, public, private, 1.0)


def pythia_public_private(raw: dict[str, Any], data: dict[str, Any], share: float,
                          rng: np.random.Generator) -> dict[str, Any]:
    """A budget-spending selector's SPEC: ``share`` of the cohort's epsilon spent on a Laplace release of its
    cross-moments (the two-stage plan's probe, :class:`~hybridpriv.families.public_private.plan.CrossMomentsProbe`,
    clipped at :data:`~hybridpriv.families.public_private.wang.cross_moments.CROSS_CLIP` public sds), which enters the
    model as ``private.cross_moments`` (:func:`~hybridpriv.families.public_private.plan.refit_spec`); the candidates
    get ``(1 - share) epsilon``, so the cohort is charged the same total as the model-only selector's.  The same
    procedure as the plan's second stage.  ``data``: the truth's ``{"folder", "spec"}`` (the private records are read
    by the family's release loader)."""
    from ...spec import parse_spec
    from .plan import CrossMomentsProbe, refit_spec
    from .release import load_private_records

    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    if raw.get("contrast", "logistic") != "logistic":
        raise ValueError(f"the cross-moments need the outcome, which only the logistic contrast reads; contrast is "
                         f"{raw['contrast']!r}")
    design = load_private_records(data["folder"], parse_spec(raw))
    probe = CrossMomentsProbe(len(raw["columns"]), design.private.shape[0], float(raw["epsilon"]), share)
    return refit_spec(raw, probe.release(design, rng)[0], share, probe.scale, probe.clip)
