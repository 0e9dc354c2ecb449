"""Cost per user-item matrix: our sampler against R vegan's curveball, same margins, same thinning, one run.

Margins: one posterior draw of the row sums of a built-in user-item example (default
``favorite-sites``: n = 2,000 users, m = 100 items, the Mozilla scale) and its column sums.  Both
samplers run Curveball trades (Strona et al. 2014: two users, their non-shared items pooled and
redistributed):

* **ours, continuing** (the default since issue 13), as the engine makes each matrix:
  :meth:`UserItemPosterior.generate` on ``--matrices`` consecutive posterior draws with the
  engine's stream of each draw; the chain continues within blocks of ``block`` draws (row-sum move
  to the draw's margins, then ``TRADES_PER_ROW * n`` trades on bit rows, then a CSR matrix), the
  fresh starts of the blocks included;
* **ours, fresh start** (``block=1``, the sampler before issue 13, :meth:`UserItemModel.matrix_for`):
  a fresh random matrix with the margins, then ``TRADES_PER_ROW * n`` trades (the default, 10 n:
  the criterion of ``benchmarks/user_item_thinning.py``), then a CSR matrix in the caller's item
  order; also its trades alone along one continuing chain (``curveball`` on the previous matrix);
* **vegan** (R, ``nullmodel(m, "curveball")``, a sequential null model in C): ``simulate(...,
  nsim, thin = TRADES_PER_ROW * n, burnin = 0)`` from our first matrix, timed inside R with
  ``system.time`` (R's start-up and the matrix transfer excluded).

Each is timed over ``--matrices`` matrices after one warm-up; the ratio vegan / ours is printed
(the issue's target: >= 5).  Needs ``Rscript`` with vegan (Debian: ``apt-get install
r-cran-vegan``); without it the script says so and prints our cost only.

    python benchmarks/user_item_vegan.py                    # favorite-sites, 200 of ours, 50 of vegan's
    python benchmarks/user_item_vegan.py --example flights  # the real NYC flights margins
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

R_SCRIPT = """
suppressPackageStartupMessages(library(vegan))
args <- commandArgs(trailingOnly = TRUE)
m <- as.matrix(read.csv(args[1], header = FALSE))
nsim <- as.integer(args[2]); thin <- as.integer(args[3])
nm <- nullmodel(m, "curveball")
invisible(simulate(nm, nsim = 2, thin = thin, burnin = 0, seed = 1))
t <- system.time(s <- simulate(nm, nsim = nsim, thin = thin, burnin = 0, seed = 2))[["elapsed"]]
stopifnot(all(rowSums(s[, , nsim]) == rowSums(m)), all(colSums(s[, , nsim]) == colSums(m)))
cat(sprintf("%.9f %s\\n", t / nsim, as.character(packageVersion("vegan"))))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example", default="favorite-sites")
    ap.add_argument("--matrices", type=int, default=200, help="matrices of ours timed")
    ap.add_argument("--vegan-matrices", type=int, default=50, help="matrices of vegan's timed")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import logging

    logging.getLogger("pymc").setLevel(logging.CRITICAL)
    from hybridpriv.models import BLOCK, TRADES_PER_ROW, UserItemModel
    from hybridpriv.families.user_item.model_chains import curveball

    from hybridpriv.core.random import rng as stream
    from hybridpriv.spec import builtin_example_path, load_spec

    spec = load_spec(builtin_example_path(args.example))
    n, m = spec.values.n, len(spec.column_sums)
    model = UserItemModel(spec.column_sums, n)
    # one posterior draw per matrix of ours (the continuing chain moves between their row sums)
    post = model.fit(draws=args.matrices + 1, tune=300, chains=1, seed=args.seed, on_unconverged="ignore",
                     progressbar=False)
    h = post.histogram(0, 0)
    # the continuing chain, as evaluate() makes the matrices: draws 1..matrices (draw 0 compiles)
    post.generate(0, 0, stream(args.seed, "dataset", 0, 0))
    t0 = time.perf_counter()
    for d in range(1, args.matrices + 1):
        post.generate(0, d, stream(args.seed, "dataset", 0, d))
    cont = (time.perf_counter() - t0) / args.matrices
    moved = np.mean([np.abs(post.histogram(0, d) - post.histogram(0, d - 1)).sum() / 2
                     for d in range(1, args.matrices + 1)])
    thin = TRADES_PER_ROW * n
    gen = stream(args.seed, "benchmark", "vegan")
    first = model.matrix_for(h, gen)  # also compiles the kernels
    t0 = time.perf_counter()
    for _ in range(args.matrices):
        model.matrix_for(h, gen)
    ours = (time.perf_counter() - t0) / args.matrices
    indptr, indices = first.indptr.astype(np.int64), first.indices.astype(np.int64)
    indices = np.ascontiguousarray(indices)
    t0 = time.perf_counter()
    for _ in range(args.matrices):
        curveball(indptr, indices, thin, gen)
    chain = (time.perf_counter() - t0) / args.matrices
    print(f"{args.example}: n = {n:,} users, m = {m} items, {int(first.sum()):,} ones; thinning {thin:,} trades "
          f"({TRADES_PER_ROW} n) per matrix")
    print(f"  ours, continuing chain (block {BLOCK}; move + trades + CSR, block starts incl.): {cont * 1e3:7.2f} ms"
          f"  (users changing level between draws: {moved:.0f} on average)")
    print(f"  ours, fresh start per matrix (block=1: random start + trades + CSR):        {ours * 1e3:7.2f} ms")
    print(f"  ours, fresh-start kernel's trades alone along one chain:                     {chain * 1e3:7.2f} ms")
    if shutil.which("Rscript") is None:
        print("  vegan: Rscript not found (Debian: apt-get install r-cran-vegan); no ratio")
        return
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = Path(tmp) / "m.csv", Path(tmp) / "bench.R"
        np.savetxt(csv, first.toarray().astype(int), fmt="%d", delimiter=",")
        script.write_text(R_SCRIPT)
        res = subprocess.run(["Rscript", str(script), str(csv), str(args.vegan_matrices), str(thin)],
                             capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        print(f"  vegan failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
        return
    per, version = res.stdout.split()
    vegan = float(per)
    print(f"  vegan {version} curveball, simulate(thin = {thin:,}):                             {vegan * 1e3:7.2f} ms")
    print(f"  ratio vegan / ours per matrix: continuing chain {vegan / cont:.1f}x (target >= 5); fresh start "
          f"{vegan / ours:.1f}x; fresh-start trades alone {vegan / chain:.1f}x; continuing vs fresh {ours / cont:.1f}x")


if __name__ == "__main__":
    main()
