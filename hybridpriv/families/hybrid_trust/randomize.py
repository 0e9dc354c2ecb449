"""The randomiser an LM user's device runs: its value plus local noise, drawn by OpenDP, as a report.

An LM user trusts only their own device: it adds Laplace noise of scale ``(upper - lower) / epsilon``
(or Gaussian noise calibrated to ``(epsilon, delta)``) to the user's value, clipped into the bounds, and
sends only the report.  The report is ``epsilon``-DP against everyone, the curator included, for any two
values in the bounds (local DP, replace-one).  The noise is OpenDP's exact sampler driven by a
cryptographically secure generator (:class:`hybridpriv.release.noise.OpenDPGenerator`).

As a function::

    from hybridpriv.families.hybrid_trust.randomize import local_report
    report = local_report(71.5, epsilon=1.0, bounds=(0, 250))

As a command (reads values, one per line, or one value; writes the report line(s) the curator's
``hybridpriv release`` reads, with the parameters used)::

    python -m hybridpriv.families.hybrid_trust.randomize --epsilon 1 --bounds 0 250 71.5
    python -m hybridpriv.families.hybrid_trust.randomize --epsilon 1 --bounds 0 250 --values my-value.txt >> reports.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

__all__ = ["REPORT_HEADER", "local_report", "local_scale", "main"]

#: The columns of a report line: the report and the parameters it was drawn with (the curator checks them).
REPORT_HEADER = "report,epsilon,delta,noise,lower,upper"


def local_scale(epsilon: float, bounds: tuple[float, float], noise: str = "laplace", delta: float = 0.0) -> float:
    """The local noise's scale: Laplace ``(upper - lower) / epsilon``, or the analytic Gaussian sigma."""
    from ...core.privacy import Bounds, check_epsilon
    from ...noise import gaussian_sigma

    eps = check_epsilon(epsilon, allow_inf=False)
    b = Bounds.from_pair(bounds)
    if noise == "laplace":
        if delta:
            raise ValueError(f"delta is only used with noise='gaussian', got delta={delta!r}")
        return b.width / eps
    if noise == "gaussian":
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1) for Gaussian noise, got {delta!r}")
        return gaussian_sigma(eps, delta, b.width)
    raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")


def local_report(value: float | Sequence[float], epsilon: float, bounds: tuple[float, float], noise: str = "laplace",
                 delta: float = 0.0) -> float | np.ndarray:
    """The report of ``value`` (clipped into ``bounds``) with local noise drawn by OpenDP (see the module)."""
    from ...core.privacy import Bounds
    from ...release.noise import OpenDPGenerator

    b = Bounds.from_pair(bounds)
    x = np.asarray(value, dtype=float)
    if np.isnan(x).any():
        raise ValueError("value must be a number, got NaN")
    x = np.clip(x, b.lower, b.upper)
    scale = local_scale(epsilon, bounds, noise, delta)
    rng = OpenDPGenerator()
    noisy = rng.laplace(x, scale) if noise == "laplace" else rng.normal(x, scale)
    return float(noisy) if np.ndim(noisy) == 0 else np.asarray(noisy)


def main(argv: Sequence[str] | None = None) -> int:
    """The command (see the module docstring); bad input: exit 2 and one ``error:`` line."""
    p = argparse.ArgumentParser(prog="python -m hybridpriv.families.hybrid_trust.randomize",
                                description="Randomise a value on this device (local DP) and print its report line.")
    p.add_argument("value", nargs="?", type=float, help="the value (or --values FILE)")
    p.add_argument("--values", help="a file of values, one per line")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--bounds", type=float, nargs=2, required=True, metavar=("LOWER", "UPPER"))
    p.add_argument("--noise", choices=("laplace", "gaussian"), default="laplace")
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--header", action="store_true", help=f"print the header line ({REPORT_HEADER}) first")
    args = p.parse_args(argv)
    try:
        if (args.value is None) == (args.values is None):
            raise ValueError("give a value or --values FILE")
        if args.values is not None:
            with open(args.values, encoding="utf-8") as f:
                values = [float(line) for line in f if line.strip()]
        else:
            values = [args.value]
        reports = np.atleast_1d(local_report(values, args.epsilon, tuple(args.bounds), args.noise, args.delta))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.header:
        print(REPORT_HEADER)
    lo, hi = args.bounds
    for r in reports:
        print(f"{float(r)!r},{args.epsilon!r},{args.delta!r},{args.noise},{lo!r},{hi!r}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
