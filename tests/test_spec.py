import math
import textwrap

import numpy as np
import pytest
from scipy import stats

from hybridpriv.spec import builtin_example_path, load_spec

BASE = """
statistic = "mean"
bounds = [0, 10]

[[groups]]
name = "pub"
size = 3
epsilon = inf
data = [1.0, 2.0, 3.0]

[[groups]]
name = "priv"
size = 100
epsilon = 0.5
"""


def _write(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_builtin_example_parses():
    spec = load_spec(builtin_example_path())
    assert [g.name for g in spec.groups] == ["panel", "opt-in", "default", "strict"]
    assert spec.groups[0].is_public and spec.public_data["panel"].size == 150
    assert [r.as_dict() for r in spec.model.released_means] == [{"value": 36.5, "noise_scale": 0.5, "group": "default"}]
    assert spec.kind == "grouped" and spec.evaluation.draws == 200


def test_builtin_grouped_example_is_the_documented_preprocessing_of_its_real_data():
    # grouped.toml's header: the 959 acs12 respondents with hrs_work in row order; panel = first 150,
    # then 300 / 400 / 109; the old release = the default group's real mean + Laplace(0.5) noise
    import csv

    spec = load_spec(builtin_example_path())
    rows = list(csv.DictReader(open(builtin_example_path().parent / "acs12-hours.csv")))
    assert len(rows) == 959 and [int(r["acs12_row"]) for r in rows] == sorted(int(r["acs12_row"]) for r in rows)
    hours = {g.name: np.array([float(r["hours"]) for r in rows if r["group"] == g.name]) for g in spec.groups}
    assert [hours[g.name].size for g in spec.groups] == [g.size for g in spec.groups]
    np.testing.assert_array_equal(spec.public_data["panel"], hours["panel"])
    assert [r["group"] for r in rows] == ["panel"] * 150 + ["opt-in"] * 300 + ["default"] * 400 + ["strict"] * 109
    assert ((hours["default"] >= 1) & (hours["default"] <= 99)).all()
    noisy = hours["default"].mean() + np.random.default_rng(20261123).laplace(0, 0.5)
    assert round(noisy, 1) == spec.model.released_means[0].value


def test_inline_data_and_csv_data(tmp_path):
    spec = load_spec(_write(tmp_path, BASE))
    np.testing.assert_array_equal(spec.public_data["pub"], [1.0, 2.0, 3.0])
    (tmp_path / "pub.csv").write_text("value\n4\n5\n6\n")
    spec = load_spec(_write(tmp_path, BASE.replace("data = [1.0, 2.0, 3.0]", 'data = "pub.csv"')))
    np.testing.assert_array_equal(spec.public_data["pub"], [4.0, 5.0, 6.0])
    assert spec.groups[0].epsilon == math.inf


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("epsilon = 0.5", "epsilon = -1", r"epsilon must be > 0, got -1"),
        ("epsilon = 0.5", "epsilon = 0", r"epsilon must be > 0, got 0"),
        ("epsilon = 0.5", "epsilon = nan", r"epsilon must be > 0, got nan"),
        ("size = 100", "size = 0", r"groups\[1\].size must be an integer >= 1, got 0"),
        ("size = 100", "size = 2.5", r"groups\[1\].size must be an integer, got 2.5"),
        ("bounds = [0, 10]", "bounds = [10, 0]", r"lower < upper, got \[10, 0\]"),
        ("bounds = [0, 10]", "bounds = [0, nan]", r"bounds\[1\] must be a number, got nan"),
        ('statistic = "mean"', 'statistic = "mode"', r"statistic must be 'mean' or 'median', got 'mode'"),
        ("epsilon = 0.5", 'epsilon = "half"', r"groups\[1\].epsilon must be a number > 0 or inf, got 'half'"),
        ("data = [1.0, 2.0, 3.0]", "data = [1.0, 2.0]", r"holds 2 records but size = 3"),
        ("data = [1.0, 2.0, 3.0]", "data = [1.0, nan, 3.0]", r"groups\[0\].data must be a number, got nan"),
        ("data = [1.0, 2.0, 3.0]", "data = [1.0, 2.0, 30.0]", r"outside bounds \[0, 10\]"),
        ('name = "priv"', 'name = "pub"', r"group names must be unique"),
        ("epsilon = 0.5", "epsilon = 0.5\ndata = [1.0]", r"only public groups' records may be used"),
        ("epsilon = 0.5", "epsilon = 0.5\ncolour = 1", r"unknown key\(s\) \['colour'\] in groups\[1\]"),
    ],
)
def test_bad_specs_name_the_key_and_value(tmp_path, old, new, match):
    assert old in BASE
    with pytest.raises(ValueError, match=match):
        load_spec(_write(tmp_path, BASE.replace(old, new, 1)))


def test_unknown_estimator_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match=r"unknown estimator 'best-mean'"):
        load_spec(_write(tmp_path, BASE + '\n[evaluation]\nestimators = ["weighted", "best-mean"]\n'))
    with pytest.raises(FileNotFoundError, match="spec file not found"):
        load_spec(tmp_path / "nope.toml")
    with pytest.raises(FileNotFoundError, match="data file not found"):
        load_spec(_write(tmp_path, BASE.replace("data = [1.0, 2.0, 3.0]", 'data = "missing.csv"')))
    with pytest.raises(ValueError, match="not valid TOML"):
        load_spec(_write(tmp_path, "bounds = [0, "))
    with pytest.raises(ValueError, match=r"evaluation.draws must be an integer >= 2, got 0"):
        load_spec(_write(tmp_path, BASE + "\n[evaluation]\ndraws = 0\n"))
    with pytest.raises(ValueError, match=r"released_means\[0\].group names unknown group 'nobody'"):
        load_spec(_write(tmp_path, BASE + '\n[model]\nreleased_means = [{group = "nobody", value = 1, noise_scale = 1}]\n'))


def test_the_problem_is_built_and_checked_before_any_sampling(tmp_path):
    # issue 15 item 8: records out of bounds and a family_options typo were found only after fitting began
    with pytest.raises(ValueError, match=r"groups\[0\].data has 1 value\(s\) outside bounds"):
        load_spec(_write(tmp_path, BASE.replace("data = [1.0, 2.0, 3.0]", "data = [1.0, 2.0, 30.0]")))
    clamped = load_spec(_write(tmp_path, "clamp = true\n" + BASE.replace("data = [1.0, 2.0, 3.0]", "data = [1.0, 2.0, 30.0]")))
    assert clamped.problem().model.public_data["pub"].max() == 10.0
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['sigma_scal'\] in model.family_options"):
        load_spec(_write(tmp_path, BASE + "\n[model]\nfamily_options = { sigma_scal = 3.0 }\n"))
    problem = load_spec(_write(tmp_path, BASE)).problem()
    assert problem.kind == "grouped" and problem.dim == "estimator" and problem.datasets == 200


def test_a_binary_or_foreign_file_is_refused_in_one_line(tmp_path):
    p = tmp_path / "spec.toml"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(ValueError, match=r"is not a text \(TOML\) file"):
        load_spec(p)
    with pytest.raises(ValueError, match=r"is a folder"):
        load_spec(tmp_path)
    with pytest.raises(ValueError, match=r"kind must be one of \['grouped', 'user-item'.*\], got 'movies'"):
        load_spec(_write(tmp_path, 'kind = "movies"\n'))
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['statistc'\] in the top level"):
        load_spec(_write(tmp_path, BASE.replace("statistic", "statistc")))


@pytest.mark.parametrize("kind", ["grouped", "user-item"])
def test_templates_parse_as_written_and_list_every_key(tmp_path, kind):
    from hybridpriv.families import family
    from hybridpriv.spec import template

    text = template(kind)
    spec = load_spec(_write(tmp_path, text))
    assert spec.kind == kind
    problem = spec.problem()  # a template runs as written
    assert problem.kind == kind
    from hybridpriv.spec import top_table

    for key in top_table(family(kind), mechanisms=False).keys:
        assert f"{key.name} =" in text or f"[{key.name}]" in text or f"[[{key.name}]]" in text, key.name


@pytest.mark.parametrize("old, new, match", [
    ("size = 100", "size = 1000000000000", r"records in all .* exceed 50,000,000"),
    ("epsilon = 0.5", "epsilon = 0.5\n[evaluation]\ndraws = 1000000\ntrials = 1000000", r"evaluation.draws = 1000000 x evaluation.trials"),
    ("epsilon = 0.5", "epsilon = 0.5\n[model]\nchains = 100000", r"model.chains must be an integer <= 64, got 100000"),
])
def test_runs_that_cannot_finish_are_refused_naming_the_key(tmp_path, old, new, match):
    # issue 15 item 5: these were accepted and ran for hours or ended in a MemoryError traceback
    with pytest.raises(ValueError, match=match):
        load_spec(_write(tmp_path, BASE.replace(old, new, 1)))


def test_user_item_runs_that_cannot_finish_are_refused_naming_the_key(tmp_path):
    body = 'kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nn = 6\nepsilon = 1.0\n'
    with pytest.raises(ValueError, match=r"trades_per_row must be an integer <= 10000, got 1000000000000"):
        load_spec(_write(tmp_path, body + "trades_per_row = 1000000000000\n"))
    many = 'kind = "user-item"\ncolumn_sums = [400000, 2, 2, 1]\nn = 400000\nepsilon = 1.0\ntrades_per_row = 10000\n[evaluation]\ndraws = 100\n'
    with pytest.raises(ValueError, match=r"Curveball trades .* CPU hours"):
        load_spec(_write(tmp_path, many)).problem()
    unknown_n = 'kind = "user-item"\ncolumn_sums = [400000, 2, 2, 1]\nepsilon = 1.0\n'
    with pytest.raises(ValueError, match=r"GiB"):  # a MemoryError traceback before
        load_spec(_write(tmp_path, unknown_n)).problem()


def test_builtin_flights_example_holds_the_real_matrix_column_sums():
    import csv

    spec = load_spec(builtin_example_path("flights"))
    rows = [r for r in csv.DictReader(open(builtin_example_path().parent / "calibration-user-item.csv"))
            if r["dataset"] == "flights-ua"]
    sums = np.zeros(47, int)
    for r in rows:
        sums[[int(i) for i in r["items"].split()]] += 1
    assert spec.kind == "user-item" and spec.n == len(rows) == 620
    np.testing.assert_array_equal(spec.column_sums, sums)


def test_user_item_items_prior_reaches_the_model_and_a_bad_one_is_named(tmp_path):
    from hybridpriv.families.user_item.model_mixture import ItemsMixture
    from hybridpriv.models import FixedItems

    body = 'kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nn = 6\nepsilon = 1.0\n'
    auto = load_spec(_write(tmp_path, body)).problem()  # n given: the mixture of four shapes
    assert isinstance(auto.model.items_prior, ItemsMixture) and auto.model.items_prior.shapes == (
        ("power-law-mean", 1.0), ("negative-binomial", 1.0), ("negative-binomial", 4.0), ("power-law-capped", 6.0))
    # the power law's own mean is the known 9 / 6 = 1.5 items per user: on 1..4 items, exponent 1.90 (SciPy's zipfian)
    assert auto.model.items_prior.mean == 1.5 and stats.zipfian(auto.model.items_prior.exponents[0], 4).mean() == (
        pytest.approx(1.5))
    assert ("items per user: mixture prior (auto: n is given): power law k^-1.9 (its own mean 1 x sum(c) / n = 1.5 "
            "items), negative binomial of dispersion 1, negative binomial of dispersion 4, power law k^-1.9 up to 4 items "
            "(6 x sum(c) / n; its own mean sum(c) / n = 1.5 items), equal weights") in auto.header
    flat = load_spec(_write(tmp_path, body + 'items_prior = "exchangeable"\n')).problem()  # a flat pmf over 1..m
    assert isinstance(flat.model.items_prior, FixedItems) and np.allclose(flat.model.items_prior.log_pmf, np.log(0.25))
    unknown = load_spec(_write(tmp_path, body.replace("n = 6\n", ""))).problem()  # n not given: the seed's uniform
    assert unknown.model.items_prior is None and "uniform prior (auto: n is not given)" in unknown.header[1]
    assert load_spec(_write(tmp_path, body + 'items_prior = "uniform"\n')).problem().model.items_prior is None
    with pytest.raises(ValueError, match=r"items_prior='exchangeable' needs n \(the number of users\)"):
        load_spec(_write(tmp_path, body.replace("n = 6", "n = [5, 7]") + 'items_prior = "exchangeable"\n')).problem()
    problem = load_spec(_write(tmp_path, body + 'items_prior = "negative-binomial"\n')).problem()
    assert callable(problem.model.items_prior) and "items per user: negative-binomial prior" in problem.header
    with pytest.raises(ValueError, match=r"spec: items_prior must be \['auto', 'uniform', 'exchangeable', 'mixture', 'negative-binomial'\], got 'zipf'"):
        load_spec(_write(tmp_path, body + 'items_prior = "zipf"\n'))


def test_oversized_spec_files_and_value_lists_are_refused_before_they_are_parsed(tmp_path):
    """Issue 23, item 10: a million inline numbers took 2.2 s of TOML parsing before any guard; a CSV of a
    million column sums 1.1 s of reading.  Both are refused at once now, naming the limit."""
    import time

    from hybridpriv.spec import MAX_SPEC_BYTES

    big = tmp_path / "big.toml"
    big.write_text('kind = "user-item"\nepsilon = 1.0\ncolumn_sums = [' + ", ".join(["1"] * 1_000_000) + "]\n")
    assert big.stat().st_size > MAX_SPEC_BYTES
    start = time.process_time()
    with pytest.raises(ValueError, match=r"more than a SPEC may be \(1 MiB\).*CSV"):
        load_spec(big)
    (tmp_path / "sums.csv").write_text("c\n" + "1\n" * 1_000_000)
    with pytest.raises(ValueError, match=r"column_sums file .*sums.csv holds more than 100,000 values"):
        load_spec(_write(tmp_path, 'kind = "user-item"\nepsilon = 1.0\ncolumn_sums = "sums.csv"\n'))
    assert time.process_time() - start < 30  # hang guard only (measured: about 0.1 s)
