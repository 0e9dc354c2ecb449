"""SPEC kind ``public-private``: parsing, the public CSV, bad input, candidates, the CLI path on the built-in example."""

import csv
import math
import re
import shutil
import textwrap

import numpy as np
import pytest
import xarray as xr
from _support.cli import run_cli, same_numbers_in_a_fresh_process_and_on_two_workers, select_example_in_a_fresh_process

from hybridpriv.families.public_private.spec import CONTRASTS, register_contrast
from hybridpriv.spec import builtin_example_path, load_spec, parse_spec, template

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

FIXTURES = builtin_example_path("pima").parent

SMALL = """
kind = "public-private"
public_records = "pub.csv"
columns = { a = "number", b = "number" }
outcome = "y"
epsilon = 1.0
[private]
n = 60
[candidates]
subset_sizes = [5, 15, 30]
[model]
tune = 200
order_datasets = 3
[evaluation]
draws = 4
trials = 2
"""


def _public_csv(path, n=30, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, 1, n), rng.normal(5, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(a + 0.3 * (b - 5))))).astype(int)
    y[:2] = (0, 1)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "y", "site", "k", "smoker"])
        for i in range(n):
            w.writerow([f"{a[i]:.3f}", f"{b[i]:.3f}", y[i], ("north", "south", "east")[i % 3], i % 7 + 18,
                        "yes" if i % 4 == 0 else "no"])
    return path


def _spec(tmp_path, body, name="s.toml"):
    _public_csv(tmp_path / "pub.csv")
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


_run = run_cli


def _fast(problem):
    """A cheap fit for tests: few posterior draws (the select path is otherwise unchanged)."""
    problem.min_posterior_draws = 60
    return problem


def test_example_parses_to_the_documented_setting():
    spec = load_spec(builtin_example_path("pima"))
    v = spec.values
    assert spec.kind == "public-private" and v.epsilon == 1.0 and v.private.n == 332
    rows = list(csv.DictReader(open(FIXTURES / "pima-public.csv")))
    cols = ["npreg", "glu", "bmi", "ped", "age"]
    np.testing.assert_array_equal(v.public["X"], [[float(r[c]) for c in cols] for r in rows])
    np.testing.assert_array_equal(v.public["y"], [r["type"] == "Yes" for r in rows])
    # the published "Table 1" is what the shipped private records give (independent computation)
    private = list(csv.DictReader(open(FIXTURES / "pima-private.csv")))
    assert len(private) == 332
    for c in cols:
        x = np.array([float(r[c]) for r in private])
        assert v.private.covariate_mean[c] == pytest.approx(x.mean(), abs=5e-4)
        assert v.private.covariate_variance[c] == pytest.approx(x.var(ddof=1), abs=5e-4)
    assert v.private.outcome_rate == pytest.approx(sum(r["type"] == "Yes" for r in private) / 332, abs=5e-4)


def test_the_example_problem_says_what_is_charged_and_what_is_left_out():
    problem = load_spec(builtin_example_path("pima")).problem()
    text = "\n".join(problem.header)
    assert "all at total epsilon = 1" in text and "public-only spends nothing" in text
    # 10 bins on 5 continuous columns and a 0/1 outcome: 2e5 cells, over the default 10,000
    assert "left out: lei (its grid has 2e+05 cells > candidates.lei_max_cells = 10000" in text
    assert problem.dim == "candidate" and problem.task.loss_name == "prediction error"
    assert problem.requirements["private"].epsilon == 1.0


def test_candidates_lei_where_it_fits_and_everyone_charged_at_most_epsilon(tmp_path):
    problem = _fast(load_spec(_spec(tmp_path, SMALL)).problem())
    posterior = problem.model.fit(draws=60, tune=200, chains=2, seed=0)
    cands = problem.candidates(posterior)
    assert list(cands) == ["public-only", "lei", "algorithm2", "alg1-n=5", "alg1-n=15", "alg1-n=30"]
    spent = {k: m.privacy["private"].epsilon for k, m in cands.items()}
    assert spent["public-only"] == 0.0 and spent["lei"] == 1.0 and spent["alg1-n=15"] == 1.0
    assert spent["algorithm2"] == pytest.approx(1.0, rel=1e-12) and spent["algorithm2"] <= 1.0 * (1 + 1e-9)
    assert cands["algorithm2"].epsilons == pytest.approx((0.1, 0.8, 0.1))
    assert all(m.privacy["private"].relation == "replace" for m in cands.values())
    # Algorithm 1's subsets are nested prefixes of one public order
    data = posterior.generate(0, 0, np.random.default_rng(1))
    full = cands["alg1-n=30"].subset(data)
    assert sorted(full.tolist()) == list(range(30))
    for n in (5, 15):
        np.testing.assert_array_equal(cands[f"alg1-n={n}"].subset(data), full[:n])
    # a generated dataset: standardised public columns, the outcome last, n private records
    assert data.n_private == 60 and data.columns == ("a", "b", "y") and data.label == "y"
    pub = np.genfromtxt(tmp_path / "pub.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
    z = (pub["a"] - pub["a"].mean()) / pub["a"].std(ddof=1)
    np.testing.assert_allclose(data.public[:, 0], z)
    np.testing.assert_array_equal(data.public[:, 2], pub["y"])


def test_a_categorical_column_is_one_hot_and_integer_columns_stay_integer(tmp_path):
    body = SMALL.replace('columns = { a = "number", b = "number" }', 'columns = { k = "integer", site = "categorical" }')
    body = body.replace("epsilon = 1.0", 'epsilon = 1.0\ncontrast = "mean"').replace("[5, 15, 30]", "[5, 10, 20]")
    spec = load_spec(_spec(tmp_path, body))
    assert spec.values.public["duplicates"] == 30 - spec.values.public["X"].shape[0] > 0
    assert spec.values.public["levels"]["site"] == ("east", "north", "south")
    problem = _fast(spec.problem())
    assert "left out: algorithm2 (its selection criterion needs the logistic contrast, not 'mean')" in problem.header
    assert problem.task.loss_name == "squared parameter error"
    posterior = problem.model.fit(draws=60, tune=200, chains=2, seed=0)
    data = posterior.generate(1, 3, np.random.default_rng(2))
    assert data.columns == ("k", "site") and data.label is None and data.categorical == (1,)
    assert set(np.unique(data.private[:, 1])) <= {0.0, 1.0, 2.0}
    layout = posterior.spec.layout
    raw = layout.center[0] + layout.scale[0] * data.private[:, 0]
    np.testing.assert_allclose(raw, np.round(raw), atol=1e-9)
    # the paper's rescaling: the categorical column becomes three one-hot columns / sqrt(2)
    p01, e01, _ = data.rescaled()
    assert e01.shape == (data.n_public, 4)
    np.testing.assert_allclose(np.sort(np.unique(e01[:, 1:])), [0.0, 1 / math.sqrt(2)])
    # mean contrast: Lei's grid is 10 bins x 3 levels = 30 cells, it fits
    assert list(problem.candidates(posterior)) == ["public-only", "lei", "alg1-n=5", "alg1-n=10", "alg1-n=20"]


def test_a_registered_contrast_runs_through_the_select_path(tmp_path):
    from hybridpriv.families.public_private.wang import CustomContrast
    from hybridpriv.workflow import run_selection

    def huber(points, theta, k=1.0):
        r = np.abs(points - theta)
        return np.sum(np.where(r <= k, 0.5 * r**2, k * (r - 0.5 * k)), axis=1)

    register_contrast("huber-test", lambda: CustomContrast(huber, name="huber"))
    try:
        body = SMALL.replace("epsilon = 1.0", 'epsilon = 1.0\ncontrast = "huber-test"')
        problem = _fast(load_spec(_spec(tmp_path, body)).problem())
        result = run_selection(problem)
    finally:
        del CONTRASTS["huber-test"]
    dec = result.decision
    assert list(dec.candidate.values) == ["public-only", "lei", "alg1-n=5", "alg1-n=15", "alg1-n=30"]
    assert np.isfinite(dec["expected_loss"].values).all() and float(dec["p_best"].sum()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"contrast must be .* got 'huber-test'"):
        load_spec(tmp_path / "s.toml")


def test_the_select_path_decides_again_within_each_outcome_law(tmp_path):
    """The default mixture (the private outcome law the public one, or not) reaches the decision: the
    selection decides within each alternative on the datasets of the draws that hold it, and keeps the check."""
    from hybridpriv.workflow import _source, run_selection

    body = SMALL.replace("n = 60", "n = 60\noutcome_rate = 0.45").replace("draws = 4", "draws = 30")
    problem = _fast(load_spec(_spec(tmp_path, body)).problem())
    result = run_selection(problem)
    check = result.branches
    assert list(check.branch.values) == ["same-law"]
    assert check.attrs["recommended"] == result.decision.attrs["recommended"]
    index = _source(problem, result.posterior).index
    holds = result.posterior.same_law.reshape(result.posterior.shape)[:, index]
    check = check.sel(branch="same-law")
    assert float(check["share"].sel(side="holds")) == pytest.approx(holds.mean())
    assert int(check["datasets"].sum()) == result.evaluation.sizes["chain"] * result.evaluation.sizes["draw"]
    risk = result.evaluation["risk"].transpose("candidate", "chain", "draw").values
    for side, mask in (("holds", holds), ("fails", ~holds)):
        if mask.any():  # the lowest expected loss within the alternative, by hand
            loss = risk[:, mask].mean(axis=1)
            rec = list(result.evaluation.candidate.values).index(result.decision.attrs["recommended"])
            assert float(check["excess"].sel(side=side)) == pytest.approx(loss[rec] / loss.min() - 1)
    assert result.branch_lines()[0].startswith("the recommendation (")
    tree = result.to_datatree()
    assert "branches" in tree.children and list(tree["branches"]["side"].values) == ["holds", "fails"]


@pytest.mark.parametrize("old, new, match", [
    ('a = "number"', 'a = "text"', r"columns.a must be 'number' or 'integer' or 'categorical', got 'text'"),
    ('a = "number"', 'site = "number"', r"columns.site is declared number, but public_records file pub.csv row 2 holds 'north'"),
    ('a = "number"', 'a = "integer"', r"columns.a is declared integer, but public_records file pub.csv row 2 holds '0.126'"),
    ('a = "number"', 'z = "number"', r"columns.z: public_records file pub.csv has no column 'z'"),
    ('outcome = "y"', 'outcome = "site"', r"outcome column 'site' must hold two values, public_records file pub.csv has \['east', 'north', 'south'\]"),
    ('outcome = "y"', 'outcome = "smoker"', r"outcome column 'smoker' holds \['no', 'yes'\]: name the value coded 1 with outcome_positive"),
    ('outcome = "y"', 'outcome = "y"\noutcome_positive = "Yes"', r"outcome_positive = 'Yes' does not occur in outcome column 'y'"),
    ('public_records = "pub.csv"', 'public_records = "nope.csv"', r"public_records file not found: .*nope.csv"),
    ("epsilon = 1.0", "epsilon = -1", r"epsilon must be > 0, got -1"),
    ("epsilon = 1.0", 'epsilon = 1.0\ncontrast = "no-such"', r"contrast must be 'mean', 'median', 'logistic' or a registered contrast \[.*\], got 'no-such'"),
    ("n = 60", "n = 60\ncovariate_mean = { a = 0.1 }", r"private.covariate_mean must give every column \(or none\); missing \['b'\]"),
    ("n = 60", "n = 60\ncovariate_variance = { a = 1.0, b = -2.0 }", r"private.covariate_variance.b must be > 0, got -2.0"),
    ("n = 60", "n = 60\noutcome_rate = 1.0", r"private.outcome_rate must be strictly between 0 and 1, got 1.0"),
    ("n = 60", "n = 1", r"private.n must be an integer >= 2, got 1"),
    ("subset_sizes = [5, 15, 30]", "subset_sizes = [5, 15, 31]", r"candidates.subset_sizes must be at most the 30 distinct public records, got 31"),
    ("subset_sizes = [5, 15, 30]", "subset_sizes = [15, 5]", r"candidates.subset_sizes must be strictly increasing, got \[15, 5\]"),
    ("subset_sizes = [5, 15, 30]", "subset_sizes = [5, 15]\nalgorithm2_split = [0.5, 0.6, 0.1]", r"candidates.algorithm2_split must be three fractions > 0 summing to 1"),
    ("draws = 4\ntrials = 2", "draws = 1000000\ntrials = 10000", r"evaluation.draws = 1000000 x evaluation.trials = 10000"),
    ("tune = 200", "tune = 200\nshift = 1", r"unknown key\(s\) \['shift'\] in model"),
])
def test_bad_input_exits_2_with_one_error_line_before_sampling(tmp_path, capsys, old, new, match):
    assert old in SMALL
    spec = _spec(tmp_path, SMALL.replace(old, new))
    code, out, err = _run(capsys, "select", spec, "--out", tmp_path / "out", "--quiet")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: spec: "), err

    assert re.search(match, lines[0]), lines[0]
    assert "fitting" not in out and not (tmp_path / "out").exists()


def test_knowledge_the_model_cannot_use_is_refused_naming_it(tmp_path):
    (tmp_path / "pub.csv").write_text("a,b,y\n1,2,0\n1,3,1\n1,4,0\n")
    (tmp_path / "s.toml").write_text(textwrap.dedent(SMALL).replace("[5, 15, 30]", "[1, 2]"))
    with pytest.raises(ValueError, match=r"columns.a: the public records hold one value only"):
        load_spec(tmp_path / "s.toml")
    (tmp_path / "pub.csv").write_text("a,b,y\n1,2,0\n2,3,0\n3,4,0\n")
    with pytest.raises(ValueError, match=r"outcome column 'y' must hold two values"):
        load_spec(tmp_path / "s.toml")
    body = textwrap.dedent(SMALL).replace("[5, 15, 30]", "[1, 2]").replace('outcome = "y"', 'outcome = "a"')
    (tmp_path / "s.toml").write_text(body.replace('a = "number", ', ""))
    (tmp_path / "pub.csv").write_text("a,b\n0,2\n1,3\n0,4\n")
    assert load_spec(tmp_path / "s.toml").values.columns == {"b": "number"}
    (tmp_path / "s.toml").write_text(body)
    with pytest.raises(ValueError, match=r"outcome 'a' is also listed in columns"):
        load_spec(tmp_path / "s.toml")


def test_spec_prints_a_template_that_a_new_user_fills_in_and_runs(tmp_path, capsys):
    code, text, _ = _run(capsys, "spec", "public-private")
    assert code == 0 and text.startswith(template("public-private"))
    assert text.endswith("`hybridpriv spec public-private --with-data DIR` writes it beside the template (small real data)\n")
    from hybridpriv.families import family
    from hybridpriv.spec import top_table

    kind = family("public-private")
    top = top_table(kind, mechanisms=False)  # the commented [[mechanisms]] block is checked below
    for name, tab, _ in kind.sections:
        assert f"[{name}]\n" in text and f"# {tab.doc}\n[{name}]" in text
    for tab in (top, *(t for _, t, _ in kind.sections)):
        for key in tab.keys:  # every key is in the template, with its docs
            if tab is top and key.name in [s[0] for s in kind.sections]:
                continue
            assert f"# {key.doc}\n" in text and (f"\n{key.name} =" in text or f"\n# {key.name} =" in text), key.name
    assert "\n# [[mechanisms]]\n" in text and "(optional; see docs/custom-mechanisms.md)" in text
    # as a new user would: their public CSV beside the SPEC, the outcome's "yes" value, fewer datasets
    shutil.copy(FIXTURES / "pima-public.csv", tmp_path / "public.csv")
    filled = (text.replace('# outcome_positive = "Yes"', 'outcome_positive = "Yes"')
              .replace("# outcome_rate = 0.33", "outcome_rate = 0.33")
              .replace("# draws = 100", "draws = 4").replace("# trials = 10", "trials = 2")
              .replace("# tune = 500", "tune = 300"))
    assert filled.count("\ndraws = 4") == 1 and filled.count("\noutcome_rate = 0.33") == 1
    (tmp_path / "mine.toml").write_text(filled)
    code, out, err = _run(capsys, "select", tmp_path / "mine.toml", "--out", tmp_path / "out", "--quiet")
    assert code == 0, err
    tree = xr.open_datatree(tmp_path / "out" / "selection.nc")
    dec = tree["decision"].to_dataset()
    # 10 bins on 3 continuous columns and the outcome: 2,000 cells, so Lei is a candidate; the default sizes
    # are 5%, 10%, 25%, 50% and 100% of the 199 distinct public records (one of the 200 rows repeats)
    assert "(1 repeated rows dropped)" in out
    assert list(dec.candidate.values) == ["public-only", "lei", "algorithm2",
                                          *(f"alg1-n={n}" for n in (10, 20, 50, 100, 199))]
    assert tree.attrs["kind"] == "public-private" and f"recommended: candidate = {tree.attrs['recommended']}" in out
    # the published outcome rate is checked against the simulated private datasets
    assert "posterior predictive checks of the public knowledge:" in out and "outcome rate (published)" in out
    assert bool(dec["meets_requirements"].all())
    # the decision by approach: Algorithm 1's sizes pooled, each approach with P(best) and an interval
    summary = tree["summary"].to_dataset()
    assert list(summary.approach.values) == ["public-only", "lei", "algorithm2", "alg1 (best n)"]
    sizes = [f"alg1-n={n}" for n in (10, 20, 50, 100, 199)]
    assert float(summary.p_best.sel(approach="alg1 (best n)")) == pytest.approx(float(dec.p_best.sel(candidate=sizes).sum()))
    assert "approach" in out and "alg1 (best n)" in out
    ev = tree["evaluation"].to_dataset()
    assert ev.sizes["trial"] == 2 and ev.sizes["chain"] * ev.sizes["draw"] == 4
    assert (ev["privacy_epsilon"].sel(unit="private") <= 1.0 + 1e-9).all()
    risk = ev["risk"].mean(("chain", "draw"))
    np.testing.assert_allclose(dec["expected_loss"].values, risk.sel(candidate=dec.candidate).values)


def _cli(out, *extra):
    return select_example_in_a_fresh_process("pima", out, 6, 2, *extra)


def _table(text):
    start = re.search(r"^candidate +expected loss", text, re.M).start()  # the table, not the header's lines
    return text[start:text.index("wrote ")]


def test_parse_spec_from_python_resolves_the_csv_against_base_dir(tmp_path):
    _public_csv(tmp_path / "pub.csv")
    import tomllib

    spec = parse_spec(tomllib.loads(textwrap.dedent(SMALL)), base_dir=tmp_path)
    assert spec.values.public_records == "pub.csv" and spec.values.public["X"].shape == (30, 2)
    assert "pub.csv" in str(spec.config()["public_records"])


@pytest.mark.slow
def test_example_in_a_fresh_process_and_on_two_workers_gives_the_same_numbers(tmp_path):
    """Two fresh interpreters (their own hash seeds and caches), one of them scoring on a local cluster
    of 2 worker processes: the same table and the same numbers (dask is in the test extra)."""
    one, dec = same_numbers_in_a_fresh_process_and_on_two_workers(_cli, _table, tmp_path)
    assert "left out: lei" in one and "all at total epsilon = 1" in one
    assert list(dec.candidate.values) == ["public-only", "algorithm2", *(f"alg1-n={n}" for n in (10, 20, 50, 100, 200))]
