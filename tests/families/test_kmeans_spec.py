"""SPEC kind ``kmeans``: the example's data, the pilot model, candidates, bad input, the CLI path."""

import textwrap

import numpy as np
import pytest
import xarray as xr
from _support.cli import run_cli, same_numbers_in_a_fresh_process_and_on_two_workers, select_example_in_a_fresh_process
from hybridpriv.models import KMeansPilotModel, pilot_start
from hybridpriv.core.model import chain_seeds

from hybridpriv.core.privacy import Guarantee
from hybridpriv.core.random import rng
from hybridpriv.families.kmeans.algorithms import HybridKMeans, LMKMeans, PointCloud, PublicStart, TCMKMeans
from hybridpriv.families.kmeans.spec import ALGORITHMS, make_candidates, requirements
from hybridpriv.spec import builtin_example_path, load_spec, parse_spec, template

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

PILOT = [[0.1, 0.2], [0.15, 0.25], [0.2, 0.1], [0.8, 0.9], [0.85, 0.8], [0.9, 0.85]]
GOOD = """
kind = "kmeans"
bounds = [0.0, 1.0]
n = 200
c = 0.3
epsilon = 4.0
k = 2
iterations = [1, 2]
[knowledge]
pilot = [[0.1, 0.2], [0.15, 0.25], [0.2, 0.1], [0.8, 0.9], [0.85, 0.8], [0.9, 0.85]]
"""


_run = run_cli


def _spec(tmp_path, body, name="s.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def _rows():
    return np.genfromtxt(builtin_example_path("faithful").parent / "faithful.csv", delimiter=",", dtype=None,
                         names=True, encoding="utf-8")


def test_example_parses_to_the_documented_setting():
    v = load_spec(builtin_example_path("faithful")).values
    rows = _rows()
    assert rows.size == 272
    # the scaling stated in the TOML header, recomputed from the raw columns
    np.testing.assert_allclose(rows["x"], (rows["eruptions"] - 1.5) / 4, atol=5e-7)
    np.testing.assert_allclose(rows["y"], (rows["waiting"] - 40) / 60, atol=5e-7)
    pilot = rows["role"] == "pilot"
    assert pilot.sum() == 40 and pilot[:40].all() and v.n == (~pilot).sum() == 232
    np.testing.assert_array_equal(v.model.pilot, np.c_[rows["x"], rows["y"]][pilot])
    assert v.bounds == (0.0, 1.0) and 0 < rows["x"].min() and rows["y"].max() < 1
    assert v.k == 2 and round(v.c * v.n) == 58


def test_bayesian_bootstrap_draws_are_dirichlet_with_the_chain_seeds():
    pilot = np.array(PILOT)
    model = KMeansPilotModel(pilot, (0, 1), n=50, c=0.2, k=2)
    post = model.fit(draws=4000, chains=2, seed=7)
    w = post.idata["posterior"]["weights"].values
    seeds = chain_seeds(7, 2)
    np.testing.assert_array_equal(w[1], np.random.default_rng(seeds[1]).dirichlet(np.ones(6), size=4000))
    m = 6  # Dirichlet(1, ..., 1): mean 1/m, variance (m - 1) / (m^2 (m + 1))
    assert abs(w.mean() - 1 / m) < 1e-12  # the weights sum to 1
    assert w.var() == pytest.approx((m - 1) / (m**2 * (m + 1)), rel=0.05)
    mean = post.idata["posterior"]["mean"].values
    np.testing.assert_allclose(mean, np.einsum("cdp,pj->cdj", w, pilot))
    sd = post.idata["posterior"]["sd"].values
    i = (0, 5)
    np.testing.assert_allclose(sd[i], np.sqrt(np.cov(pilot.T, aweights=w[i], bias=True).diagonal()))
    s = post.summary()
    assert (s["r_hat"] < 1.01).all() and (s["ess_bulk"] > 1000).all()


def test_datasets_resample_the_pilot_with_the_draws_weights():
    pilot = np.array(PILOT)
    post = KMeansPilotModel(pilot, (0, 1), n=60_000, c=0.25, k=2, smoothing=0).fit(draws=200, chains=1, seed=1)
    data = post.generate(0, 3, rng(0, "t"))
    assert isinstance(data, PointCloud) and data.points.shape == (60_000, 2) and data.n_trusted == 15_000
    idx = np.argmin(((data.points[:, None] - pilot[None]) ** 2).sum(-1), 1)  # which pilot point each one is
    assert (data.points == pilot[idx]).all()
    freq = np.bincount(idx, minlength=6) / 60_000
    w = post.idata["posterior"]["weights"].values[0, 3]
    np.testing.assert_allclose(freq, w, atol=4 * np.sqrt(w * (1 - w) / 60_000).max())
    np.testing.assert_array_equal(data.init, post.start)
    # smoothing adds Gaussian noise of that sd (clamped into the box: centres far from the edges)
    smooth = KMeansPilotModel(np.array([[0.5, 0.5]]), (0, 1), n=20_000, c=0.5, k=1, smoothing=0.05)
    pts = smooth.fit(draws=4, chains=1).generate(0, 0, rng(1, "t")).points
    assert pts.std(0) == pytest.approx([0.05, 0.05], rel=0.05)


def test_pilot_start_is_a_fixed_point_of_lloyd_on_the_pilot():
    pts = np.array(PILOT)
    c = pilot_start(pts, 2)
    lab = np.argmin(((pts[:, None] - c[None]) ** 2).sum(-1), 1)
    np.testing.assert_allclose(c[lab[0]], pts[:3].mean(0))
    np.testing.assert_allclose(c[lab[3]], pts[3:].mean(0))
    assert lab[0] != lab[3] and (lab[:3] == lab[0]).all() and (lab[3:] == lab[3]).all()
    with pytest.raises(ValueError, match="at least k = 7"):
        pilot_start(pts, 7)


def test_candidates_and_requirements():
    v = parse_spec({"kind": "kmeans", "bounds": [0.0, 1.0], "n": 200, "c": 0.3, "epsilon": 4.0, "k": 2,
                    "iterations": [1, 3], "model": {"pilot": PILOT}}).values
    cands = make_candidates(v)
    assert list(cands) == [*(f"{a}-T{t}" for a in ALGORITHMS for t in (1, 3)), "public-start"]
    assert type(cands["public-start"]) is PublicStart and cands["public-start"].k == 2
    assert type(cands["hybrid-T3"]) is HybridKMeans and cands["hybrid-T3"].tau == 3
    assert type(cands["tcm-T1"]) is TCMKMeans and type(cands["lm-debiased-T3"]) is LMKMeans
    assert cands["lm-debiased-T3"].debias and cands["hybrid-debiased-T1"].debias and not cands["hybrid-T1"].debias
    req = requirements(v)
    assert req == {"tcm": Guarantee(4.0, 0, "add-remove", "central"), "lm": Guarantee(4.0, 0, "replace", "local")}
    # a unit a candidate does not read (TCM K-means: the LM users) is not exposed by it
    ok = {name: all(u not in c.privacy or c.privacy[u].satisfies(req[u]) for u in req) for name, c in cands.items()}
    assert "lm" not in cands["tcm-T1"].privacy
    assert ok == {name: not name.startswith("lm") for name in cands}


BAD = [
    ("epsilon = 4.0", "epsilon = -1", "epsilon must be > 0, got -1"),
    ("c = 0.3", "c = 1.0", "c must be < 1"),
    ("c = 0.3", "c = 0.001", "gives 0 TCM users"),
    ("n = 200", "n = 1", "n must be an integer >= 2, got 1"),
    ("bounds = [0.0, 1.0]", "bounds = [1.0, 0.0]", "bounds must be [lower, upper] with lower < upper"),
    ("k = 2", "k = 0", "k must be an integer >= 1, got 0"),
    ("k = 2", "k = 7", 'knowledge.start = "pilot" needs at least k = 7 pilot points'),
    ("iterations = [1, 2]", "iterations = [1, 1]", "iterations names an iteration count twice"),
    ("iterations = [1, 2]", "iterations = [0]", "iterations[0] must be an integer >= 1, got 0"),
    ("[0.9, 0.85]]", "[0.9, 1.85]]", "knowledge.pilot point 5 has coordinate 1.85, outside bounds [0, 1]"),
    ("[0.9, 0.85]]", "[0.9]]", "knowledge.pilot rows must all have the same number"),
    ("[knowledge]", '[knowledge]\nstart = "random"', "knowledge.start must be 'pilot' or 'uniform', got 'random'"),
    ("[knowledge]", "[knowledge]\nsmoothing = -0.1", "knowledge.smoothing must be >= 0, got -0.1"),
    ("[knowledge]", '[knowledge]\nsmoothing = "cv"', 'knowledge.smoothing must be a number >= 0, "refit" or "auto", got \'cv\''),
    ("[knowledge]", "[knowledge]\nfoo = 1", "unknown key(s) ['foo'] in knowledge"),
    ("[knowledge]", '[evaluation]\nalgorithms = ["magic"]\n[knowledge]', "evaluation.algorithms: unknown candidate 'magic'"),
    ("[knowledge]", "[evaluation]\ndraws = 1000000\ntrials = 1000\n[knowledge]", "point-operations (hours of CPU)"),
    ("epsilon = 4.0", "epsilon = 1e-320", "model: epsilon=1e-320"),
]


@pytest.mark.parametrize("old, new, needle", BAD)
def test_bad_spec_exits_2_with_one_error_line_before_sampling(tmp_path, capsys, monkeypatch, old, new, needle):
    def no_fit(*args, **kwargs):
        raise AssertionError("sampling started")

    monkeypatch.setattr(KMeansPilotModel, "fit", no_fit)
    assert old in GOOD
    path = _spec(tmp_path, GOOD.replace(old, new, 1))
    code, out, err = _run(capsys, "select", path, "--out", tmp_path / "out")
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert not (tmp_path / "out").exists()


def test_missing_pilot_file_is_named(tmp_path, capsys):
    path = _spec(tmp_path, GOOD.split("[knowledge]")[0] + '[knowledge]\npilot = "nowhere.csv"\n')
    code, _, err = _run(capsys, "select", path, "--out", tmp_path / "out")
    assert code == 2 and "knowledge.pilot file not found" in err and "nowhere.csv" in err


def test_spec_prints_a_template_that_a_new_user_fills_in_and_runs(tmp_path, capsys):
    code, text, _ = _run(capsys, "spec", "kmeans")
    assert code == 0 and text.startswith(template("kmeans"))
    assert text.endswith("`hybridpriv spec kmeans --with-data DIR` writes it beside the template (small real data)\n")
    # as a new user would: write the pilot CSV the template names, fewer datasets; keep the rest as printed
    (tmp_path / "pilot.csv").write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in PILOT) + "\n")
    filled = (text.replace("# draws = 100", "draws = 6").replace("# trials = 10", "trials = 2")
              .replace("# candidates = [", "candidates = ["))
    assert filled.count("\ndraws = 6") == 1 and filled.count("\ncandidates = [") == 1
    spec = _spec(tmp_path, filled, "mine.toml")
    code, out, err = _run(capsys, "select", spec, "--out", tmp_path / "out", "--quiet")
    assert code == 0, err
    tree = xr.open_datatree(tmp_path / "out" / "selection.nc")
    dec = tree["decision"].to_dataset()
    assert list(dec.algorithm.values) == [f"{a}-T{t}" for a in ("hybrid", "tcm", "hybrid-debiased") for t in (1, 2, 3, 5)]
    assert tree.attrs["kind"] == "kmeans" and f"recommended: algorithm = {tree.attrs['recommended']}" in out
    assert "predictive checks: none possible: the model is the Bayesian bootstrap of the pilot sample" in out
    assert out.count("predictive checks") == 1
    ev = tree["evaluation"].to_dataset()
    assert ev.sizes["trial"] == 2 and ev.sizes["chain"] * ev.sizes["draw"] == 6
    np.testing.assert_allclose(dec["expected_loss"].values,
                               ev["risk"].mean(("chain", "draw")).sel(algorithm=dec.algorithm).values)


def _cli(out, *extra):
    return select_example_in_a_fresh_process("faithful", out, 10, 3, *extra)


def _table(text):
    return text[text.index("algorithm "):text.index("wrote ")]


@pytest.mark.slow
def test_example_in_a_fresh_process_and_on_two_workers_gives_the_same_numbers(tmp_path):
    """Two fresh interpreters (their own hash seeds and caches), one of them scoring on a local cluster
    of 2 worker processes: the same table and the same numbers (dask is in the test extra)."""
    one, dec = same_numbers_in_a_fresh_process_and_on_two_workers(_cli, _table, tmp_path)
    assert dec.sizes["algorithm"] == 20 + 1  # 5 algorithms x 4 iteration counts, and the public start
    assert not bool(dec["meets_requirements"].sel(algorithm="lm-T1")) and bool(dec["meets_requirements"].sel(algorithm="hybrid-T1"))
    # the pilot-sample premise: warned exactly where the public start is recommended (the example states nothing)
    assert ("warning (premise: pilot-sample): public-start rests on" in one) == (
        str(dec.attrs["recommended"]) == "public-start")
    import xarray as xr

    kept = xr.open_datatree(tmp_path / "a" / "selection.nc").attrs["premise_warnings"]  # as printed, one a line
    assert all(f"  {line}\n" in one for line in kept.splitlines()) and bool(kept) == ("premise: pilot-sample" in one)
