"""The row-sum chain alone: CPU time per draw of ``h_chain`` and of ``pm.sample``, and a draw hash.

Favorite-sites margins (m = 100, sum(c) = 6,222), ``moves = sum(c)`` per draw as in
``user_item_full_scale.py``, n known (2,000) and unknown (``UserItemModel(c, None)``: n in
[1,200, 6,222], uniform row sums).  CPU seconds of this process (one core; BLAS/numba threads 1).

The hash is SHA-256 over 2,000 consecutive draws (after 200 discarded) of ``h_chain`` from the
model's start with ``default_rng(12345)``: each draw's histogram, n and acceptance count, then the
generator's final state.  A kernel change that keeps the draws identical keeps it:

    n known    81e4b056b5cbba3c
    n unknown  a8f035cfb42b7d87

    python benchmarks/user_item_rowsum.py             # ~20 s
    python benchmarks/user_item_rowsum.py --no-pymc   # h_chain only
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000, help="draws hashed and timed (default 2,000)")
    ap.add_argument("--no-pymc", action="store_true", help="skip the pm.sample timing")
    args = ap.parse_args()

    logging.getLogger("pymc").setLevel(logging.CRITICAL)
    from hybridpriv.models import UserItemModel
    from hybridpriv.families.user_item.model_chains import h_chain
    from hybridpriv.families.user_item.model_step import initial_histogram
    from hybridpriv.spec import builtin_example_path, load_spec

    c = load_spec(builtin_example_path("favorite-sites")).column_sums
    for label, n_arg in (("n known", 2000), ("n unknown", None)):
        model = UserItemModel(c, n_arg)
        lo, hi = model.n_range
        cs, lt, moves = model._c_sorted, model._log_target_n, model.total
        h0 = initial_histogram(cs, lo)
        h_chain(h0, lo, cs, lt, None, 1, np.random.default_rng(0), lo, hi)  # compile / load the cache
        rng = np.random.default_rng(12345)
        h, n = h0, lo
        for _ in range(200):
            h, n, _ = h_chain(h, n, cs, lt, None, moves, rng, lo, hi)
        digest = hashlib.sha256()
        accepted = 0
        t = time.process_time()
        for _ in range(args.draws):
            h, n, acc = h_chain(h, n, cs, lt, None, moves, rng, lo, hi)
            digest.update(h.tobytes())
            digest.update(np.int64(n).tobytes())
            digest.update(np.int64(acc).tobytes())
            accepted += acc
        cpu = (time.process_time() - t) / args.draws
        digest.update(rng.bit_generator.state["state"]["state"].to_bytes(16, "little"))
        line = (f"{label:9s}: h_chain {cpu * 1e3:.3f} ms CPU per draw ({cpu / moves * 1e9:.0f} ns per move), "
                f"acceptance {accepted / (args.draws * moves):.3f}, hash {digest.hexdigest()[:16]}"
                + ("" if args.draws == 2000 else " (hash of a different number of draws)"))
        if not args.no_pymc:
            pm_model = model.build()
            model._sample(pm_model, draws=10, tune=0, chains=1, random_seed=[1], progressbar=False, moves=moves)
            t = time.process_time()
            model._sample(pm_model, draws=args.draws, tune=0, chains=1, random_seed=[1], progressbar=False,
                          moves=moves)
            line += f"; pm.sample {(time.process_time() - t) / args.draws * 1e3:.3f} ms CPU per draw"
        print(line, flush=True)


if __name__ == "__main__":
    main()
