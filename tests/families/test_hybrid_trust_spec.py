"""SPEC kind ``hybrid-trust``: parsing, bad input, candidates and weights, the CLI path on the built-in example."""

import math
import textwrap

import numpy as np
import pytest
import xarray as xr
from _support.cli import run_cli, same_numbers_in_a_fresh_process_and_on_two_workers, select_example_in_a_fresh_process

from hybridpriv.core.privacy import Guarantee
from hybridpriv.families.hybrid_trust.spec import CANDIDATES, make_candidates, requirements
from hybridpriv.spec import builtin_example_path, load_spec, parse_spec, template

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

GOOD = """
kind = "hybrid-trust"
m = 10.0
[tcm]
size = 30
epsilon = 1.0
[lm]
size = 70
epsilon = 2.0
"""


_run = run_cli


def _spec(tmp_path, body, name="s.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def test_example_parses_to_the_documented_setting():
    spec = load_spec(builtin_example_path("salaries"))
    v = spec.values
    assert spec.kind == "hybrid-trust" and v.sizes == (111, 246) and v.m == 250.0
    assert v.model.pilot_tcm.size == 20 and v.model.pilot_lm.size == 20
    # the pilot files are the rows marked "pilot" of the full fixture, in the data's order
    rows = np.genfromtxt(builtin_example_path("salaries").parent / "salaries.csv", delimiter=",", dtype=None,
                         names=True, encoding="utf-8")
    for key, group in (("pilot_tcm", "junior"), ("pilot_lm", "professors")):
        pick = (rows["group"] == group) & (rows["role"] == "pilot")
        np.testing.assert_array_equal(getattr(v.model, key), rows["salary_k"][pick])
    private = rows["role"] == "private"
    assert [(private & (rows["group"] == g)).sum() for g in ("junior", "professors")] == [111, 246]
    assert rows["salary_k"].min() >= 0 and rows["salary_k"].max() <= 250


def test_n_and_c_give_the_sizes():
    v = parse_spec({"kind": "hybrid-trust", "m": 1.0, "n": 1000, "c": 0.05, "tcm": {"epsilon": 1.0},
                    "lm": {"epsilon": 1.0}}).values
    assert v.sizes == (50, 950)


def test_requirements_are_central_for_tcm_and_local_for_lm():
    v = parse_spec({"kind": "hybrid-trust", "m": 1.0, "n": 100, "c": 0.2, "tcm": {"epsilon": 1.0, "name": "t"},
                    "lm": {"epsilon": 0.5, "name": "l"}}).values
    req = requirements(v)
    assert req == {"t": Guarantee(1.0, 0.0, "replace", "central"), "l": Guarantee(0.5, 0.0, "replace", "local")}
    # add-remove for the TCM users: Full-LM's local replace-one promise does not meet it (the number of
    # reports is visible), so that candidate becomes ineligible; TCM-only's central promise does
    v = v.replace(relation="add-remove")
    from hybridpriv.families.hybrid_trust.mechanisms import FullLM, TCMOnly
    from hybridpriv.families.hybrid_trust.spec import _groups

    req = requirements(v)
    full = FullLM(_groups(v), (0.0, 1.0), relation="add-remove").privacy
    tcm = TCMOnly(_groups(v), (0.0, 1.0), relation="add-remove").privacy
    assert not full["t"].satisfies(req["t"]) and full["l"].satisfies(req["l"])
    assert tcm["t"].satisfies(req["t"]) and tcm["l"].satisfies(req["l"])


def test_candidate_weights_come_from_the_posterior():
    """hkvh plugs in the posterior means; bayes minimises the posterior expected MSE (checked by a grid search
    over w of the brute-force average of the exact MSE over the draws)."""
    from hybridpriv.models import HybridTrustModel

    from hybridpriv.theory.avent import kvh_weight, kvh_weight_heterogeneous

    v = parse_spec({"kind": "hybrid-trust", "m": 10.0, "n": 400, "c": 0.25, "tcm": {"epsilon": 1.0},
                    "lm": {"epsilon": 1.0}}).values
    post = HybridTrustModel(10.0, sizes=v.sizes).prior(draws=400, seed=3)
    cands = make_candidates(v, post)
    assert list(cands) == list(CANDIDATES)
    p = post.idata["posterior"]
    e = {k: float(p[k].values.mean()) for k in ("sigma_T2", "sigma_L2", "mu_T", "mu_L")}
    h = cands["hybrid-hkvh"]
    assert h.w == pytest.approx(float(kvh_weight_heterogeneous(400, 0.25, e["sigma_T2"], e["sigma_L2"], h.s_T2, h.s_L2,
                                                               e["mu_T"], e["mu_L"])))
    gap2 = float((p["gap"].values ** 2).mean())
    sigma2 = 0.25 * e["sigma_T2"] + 0.75 * e["sigma_L2"] + 0.25 * 0.75 * gap2
    assert cands["hybrid-kvh"].w == pytest.approx(float(kvh_weight(400, 0.25, sigma2, h.s_T2, h.s_L2)))
    assert cands["hybrid-naive"].w == pytest.approx(0.25)
    w = np.linspace(0, 1, 2001)
    risk = post.expected_mse(w, 400, 0.25, h.s_T2, h.s_L2)
    assert cands["hybrid-bayes"].w == pytest.approx(w[np.argmin(risk)], abs=1e-3)
    # and it is not worse than any other hybrid weight under that posterior
    for name in ("hybrid-kvh", "hybrid-hkvh", "hybrid-pwh", "hybrid-naive"):
        assert post.expected_mse(cands["hybrid-bayes"].w, 400, 0.25, h.s_T2, h.s_L2) <= post.expected_mse(
            cands[name].w, 400, 0.25, h.s_T2, h.s_L2) * (1 + 1e-12)


BAD = [
    ("epsilon = 1.0", "epsilon = -1", "tcm.epsilon must be > 0, got -1"),
    ("m = 10.0", "m = 0", "m must be > 0, got 0"),
    ("size = 30", "size = 0", "tcm.size must be an integer >= 1, got 0"),
    ("size = 30\n", "", "tcm.size is required (or give n and c at the top level)"),
    ("m = 10.0", "m = 10.0\nn = 100", "c is required with n"),
    ("m = 10.0", "m = 10.0\nn = 100\nc = 0.3", "give n and c, or tcm.size and lm.size, not both"),
    ("m = 10.0", 'm = 10.0\nnoise = "gaussian"', 'tcm.delta must be in (0, 1) with noise = "gaussian", got 0.0'),
    ("epsilon = 2.0", "epsilon = 2.0\ndelta = 0.001", 'lm.delta must be 0 with noise = "laplace" (pure DP), got 0.001'),
    ("m = 10.0", 'm = 10.0\nnoise = "cauchy"', "noise must be 'laplace' or 'gaussian', got 'cauchy'"),
    ("[lm]", '[lm]\nname = "tcm"', "tcm.name and lm.name must differ, both are 'tcm'"),
    ("m = 10.0", "m = 10.0\nepsilon = 1.0", "unknown key(s) ['epsilon'] in the top level"),
    ("epsilon = 2.0", 'epsilon = 2.0\n[evaluation]\ncandidates = ["hybrid-magic"]',
     "evaluation.candidates: unknown candidate 'hybrid-magic'"),
    ("epsilon = 2.0", "epsilon = 2.0\n[knowledge]\npilot_tcm = [1.0, 12.5]",
     "knowledge.pilot_tcm holds 12.5, outside [0, m = 10]"),
    ("epsilon = 2.0", 'epsilon = 2.0\n[knowledge]\nreleased_means = [{ group = "nobody", value = 3.0, noise_scale = 1.0 }]',
     "knowledge.released_means[0].group names unknown group 'nobody'"),
    ("epsilon = 2.0", "epsilon = 2.0\n[knowledge]\nreleased_means = [{ value = 90.0, noise_scale = 1.0 }]",
     "knowledge.released_means[0].value = 90 is impossible"),
    ("epsilon = 2.0", "epsilon = 2.0\n[knowledge]\nmean = [1.0, -1.0]", "knowledge.mean[1] must be > 0, got -1.0"),
    ("epsilon = 2.0", "epsilon = 2.0\n[knowledge]\nhomogeneous = true\ngap_logit_sd = 2.0",
     "knowledge.gap_logit_sd = 2.0 is not used with knowledge.homogeneous = true"),
    ("epsilon = 1.0", "epsilon = 1e-320", "the laplace noise on the TCM mean (central) has scale"),
]


@pytest.mark.parametrize("old, new, needle", BAD)
def test_bad_spec_exits_2_with_one_error_line_before_sampling(tmp_path, capsys, monkeypatch, old, new, needle):
    from hybridpriv.models import HybridTrustModel

    def no_fit(*args, **kwargs):
        raise AssertionError("sampling started")

    monkeypatch.setattr(HybridTrustModel, "fit", no_fit)
    path = _spec(tmp_path, GOOD.replace(old, new, 1))
    code, out, err = _run(capsys, "select", path, "--out", tmp_path / "out")
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert not (tmp_path / "out").exists()


def test_spec_prints_a_template_that_a_new_user_fills_in_and_runs(tmp_path, capsys):
    code, text, _ = _run(capsys, "spec", "hybrid-trust")
    assert code == 0 and text == template("hybrid-trust")
    # as a new user would: give n and c instead of the printed sizes, fewer datasets; keep every other line
    assert "\nsize = 100\n" in text and "\nsize = 900\n" in text  # the template runs as printed (sizes given)
    filled = (text.replace("\nsize = 100\n", "\n# size = 100\n").replace("\nsize = 900\n", "\n# size = 900\n")
              .replace("# n = 1000", "n = 1000").replace("# c = 0.1", "c = 0.1")
              .replace("# draws = 200", "draws = 6").replace("# trials = 20", "trials = 2")
              .replace("# candidates = [", "candidates = ["))
    assert filled.count("\nn = 1000") == 1 and filled.count("\ndraws = 6") == 1
    spec = _spec(tmp_path, filled, "mine.toml")
    code, out, err = _run(capsys, "select", spec, "--out", tmp_path / "out", "--quiet")
    assert code == 0, err
    tree = xr.open_datatree(tmp_path / "out" / "selection.nc")
    dec = tree["decision"].to_dataset()
    assert list(dec.estimator.values) == ["tcm-only", "full-lm", "hybrid-pwh", "hybrid-bayes"]
    assert tree.attrs["kind"] == "hybrid-trust" and f"recommended: estimator = {tree.attrs['recommended']}" in out
    ev = tree["evaluation"].to_dataset()
    assert ev.sizes["trial"] == 2 and ev.sizes["chain"] * ev.sizes["draw"] == 6
    # the decision agrees with the evaluation it summarises
    risk = ev["risk"].mean(("chain", "draw"))
    np.testing.assert_allclose(dec["expected_loss"].values, risk.sel(estimator=dec.estimator).values)


def _cli(out, *extra):
    return select_example_in_a_fresh_process("salaries", out, 16, 4, *extra)


def _table(text):
    return text[text.index("estimator "):text.index("wrote ")]


@pytest.mark.slow
def test_example_in_a_fresh_process_and_on_two_workers_gives_the_same_numbers(tmp_path):
    """Two fresh interpreters (their own hash seeds and caches), one of them scoring on a local cluster
    of 2 worker processes: the same table and the same numbers (dask is in the test extra)."""
    one, dec = same_numbers_in_a_fresh_process_and_on_two_workers(_cli, _table, tmp_path)
    assert set(dec.estimator.values) == set(CANDIDATES) and bool(dec["meets_requirements"].all())


def test_full_lm_is_marked_ineligible_when_tcm_users_require_add_remove(tmp_path, capsys):
    body = GOOD.replace("m = 10.0", 'm = 10.0\nrelation = "add-remove"') + (
        '[evaluation]\ncandidates = ["tcm-only", "full-lm"]\ndraws = 4\ntrials = 2\n[knowledge]\ntune = 200\n')
    code, out, err = _run(capsys, "select", _spec(tmp_path, body), "--out", tmp_path / "o", "--quiet")
    assert code == 0, err
    dec = xr.open_datatree(tmp_path / "o" / "selection.nc")["decision"].to_dataset()
    assert not bool(dec["meets_requirements"].sel(estimator="full-lm"))
    assert bool(dec["meets_requirements"].sel(estimator="tcm-only"))
    assert "not eligible" in out and "full-lm" in out.split("not eligible")[1]
    assert math.isfinite(float(dec["expected_loss"].sel(estimator="tcm-only")))
