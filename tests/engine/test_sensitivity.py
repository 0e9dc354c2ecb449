"""Sensitivity of a decision to the model's assumptions (issue 25, item 2): departures, tipping points, words."""

import numpy as np
import pytest
import xarray as xr

from hybridpriv.core.assumptions import SHIFTS, Assumption  # noqa: F401 (Assumption: bad input below)
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.engine.sensitivity import PerturbedSource, sensitivity_lines, tipping_points, warnings_of
from hybridpriv.families.grouped.assumptions import ShiftGroups, grouped_assumptions

GROUPS = [Group("panel", 200, np.inf), Group("opt-in", 1000, 1.0), Group("strict", 1000, 0.1)]
BOUNDS = Bounds(0.0, 100.0)


def _sens(best_by_shift: dict[float, str], gap: float = 1.0) -> xr.Dataset:
    """A sensitivity result: at each shift the named candidate is best, and the others' expected loss is
    ``1 + gap`` times its loss of 1."""
    best = [[best_by_shift.get(s, "a") for s in SHIFTS]]
    loss = [[[1.0 if best[0][j] == c else 1.0 + gap for c in "abc"] for j in range(len(SHIFTS))]]
    return xr.Dataset({"best": (("assumption", "shift"), np.array(best)),
                       "expected_loss": (("assumption", "shift", "estimator"), loss),
                       "delta": (("assumption", "shift"), [[s * 50.0 for s in SHIFTS]])},
                      coords={"assumption": ["x"], "shift": list(SHIFTS), "estimator": list("abc"),
                              "assumes": ("assumption", ["A"]), "departure": ("assumption", ["D"]),
                              "scale": ("assumption", [50.0])},
                      attrs={"candidate_dim": "estimator"})


def test_tipping_points_walk_out_from_zero_on_each_side():
    tp = tipping_points(_sens({0.05: "b", 0.1: "b", 0.2: "c", -0.2: "c"}), "a")["x"]
    assert tp["above"] == {"delta": 2.5, "share": 0.05, "better": "b", "held": 1.0}  # 0.02 x 50 held, 0.05 flipped
    assert tp["below"] == {"delta": -10.0, "share": 0.2, "better": "c", "held": -5.0}
    assert tipping_points(_sens({}), "a")["x"] == {"below": None, "above": None}
    lines = sensitivity_lines(_sens({0.05: "b"}), "a")
    assert any(line.startswith("warning: the recommendation flips") and "by 2.5 or less (5% of 50)" in line
               for line in lines), lines
    assert not any(line.startswith("warning") for line in sensitivity_lines(_sens({0.2: "b"}), "a"))


def test_a_flip_between_near_equals_is_a_near_tie_not_a_warning():
    # within 5% of the scale b becomes best, but a's expected loss is only 10% above b's there: no warning
    lines = sensitivity_lines(_sens({0.05: "b"}, gap=0.10), "a")
    assert not any(line.startswith("warning") for line in lines), lines
    assert any("near tie" in line and "within 10% of the best's" in line for line in lines), lines
    # 30% above: past MATTERS (25%), the warning says by how much
    lines = sensitivity_lines(_sens({0.05: "b"}, gap=0.30), "a")
    assert any(line.startswith("warning") and "up to 30% above the best's" in line for line in lines), lines


def test_shift_groups_moves_each_group_and_the_population_mean():
    rng = np.random.default_rng(0)
    from hybridpriv.families.grouped.data import GroupedDataset

    data = GroupedDataset(tuple(np.clip(rng.normal(50, 15, g.size), 0, 100) for g in GROUPS), {"mean": 50.0, "median": 50.0})
    out = ShiftGroups([0.0, -0.5, 0.5], BOUNDS)(data, 6.0)
    np.testing.assert_array_equal(out.values[0], data.values[0])
    np.testing.assert_allclose(out.values[1], np.clip(data.values[1] - 3.0, 0, 100))
    np.testing.assert_allclose(out.values[2], np.clip(data.values[2] + 3.0, 0, 100))
    pooled = lambda d: np.concatenate(d.values).mean()  # noqa: E731
    assert out.population == {"mean": pytest.approx(50.0 + pooled(out) - pooled(data))}  # the median is dropped


def test_the_grouped_assumptions_order_the_private_groups_by_strictness():
    panel, between = grouped_assumptions(GROUPS, BOUNDS, "mean", "population")
    assert panel.perturb.weights == (0.0, 1.0, 1.0) and between.perturb.weights == (0.0, -0.5, 0.5)
    assert "strict" in between.departure and panel.scale == between.scale == 100.0
    assert grouped_assumptions(GROUPS, BOUNDS, "median", "population") == []  # a shift does not tell the median
    assert [a.name for a in grouped_assumptions(GROUPS[:2], BOUNDS, "mean", "sample")] == ["panel"]


def test_a_departure_adds_exactly_the_weighted_means_bias_on_common_random_numbers():
    """Independent derivation: WeightedMean is linear in the group means, so shifting group g by d_g moves every
    estimate by sum_g w_g d_g and the pooled truth by the pooled shift; with the same noise (common random
    numbers), loss_d - loss_0 = 2 b e + b^2 per dataset and trial, b the bias, e the error at 0."""
    from hybridpriv.engine.evaluate import evaluate
    from hybridpriv.estimators import WeightedMean
    from hybridpriv.families.grouped import Statistic, normal_source

    source = normal_source(GROUPS, BOUNDS, 50.0, 5.0, draws=30)  # no record within 9 sd of a bound: none clipped
    mech = WeightedMean(GROUPS, BOUNDS, 25.0)
    task = Statistic(target="sample")
    a = grouped_assumptions(GROUPS, BOUNDS, "mean", "sample")[1]
    base = evaluate([mech], source, task, trials=4, seed=1)
    moved = evaluate([mech], PerturbedSource(source, a, 8.0), task, trials=4, seed=1)
    shifts = np.array(a.perturb.weights) * 8.0
    n = np.array([g.size for g in GROUPS])
    b = float(mech.weights @ shifts - (n @ shifts) / n.sum())
    e = (base["estimate"] - base["truth"].sel(quantity="mean")).values
    want = base["loss"].values + 2 * b * e + b**2
    np.testing.assert_allclose(moved["loss"].values, want, rtol=1e-9, atol=1e-9)
    assert abs(b) > 0.5  # the strict group is down-weighted: a real bias


@pytest.mark.slow
def test_a_grouped_selection_reports_where_its_recommendation_flips(tmp_path):
    from hybridpriv.spec import parse_spec
    from hybridpriv.workflow import run_selection

    rng = np.random.default_rng(0)
    spec = {"bounds": [0, 100], "groups": [
        {"name": "panel", "size": 200, "epsilon": "inf", "data": np.round(np.clip(rng.normal(50, 15, 200), 0, 100), 2).tolist()},
        {"name": "opt-in", "size": 1000, "epsilon": 1.0}, {"name": "strict", "size": 1000, "epsilon": 0.1}],
        "model": {"family": "normal"},
        "evaluation": {"draws": 60, "trials": 6, "candidates": ["weighted", "uniform-mean", "pdp-opt-expected"]}}
    with pytest.warns(UserWarning, match="the recommendation flips"):
        result = run_selection(parse_spec(spec).problem())
    sens = result.sensitivity
    assert set(sens.assumption.values) == {"panel", "between"} and sens.sizes["shift"] == len(SHIFTS)
    tp = tipping_points(sens, str(result.decision.attrs["recommended"]))["between"]
    # a 10-point spread between the groups (10% of the range) already favours the unbiased uniform mean
    assert tp["above"] is not None and tp["above"]["share"] <= 0.1 and tp["above"]["better"] == "uniform-mean"
    tree = result.to_datatree()
    assert "sensitivity" in tree.children
    assert any(line.startswith("warning:") for line in result.sensitivity_lines())
    # the figure says it too, under the plot: the warning (in red) and the two-stage plan's verdict
    notes = result.figure_notes()
    assert notes[0].startswith("warning:") and "share one law" in notes[0] and "uniform-mean is then better" in notes[0]
    assert notes[-1].startswith("two-stage plan:") and "the plan does not pay" in notes[-1]
    texts = {t.get_text().replace("\n", " "): t.get_color() for t in result.figure().texts}
    assert any(t.startswith("warning:") and c == "tab:red" for t, c in texts.items()), texts
    assert any(t.startswith("two-stage plan:") and c == "0.15" for t, c in texts.items()), texts


@pytest.mark.parametrize("kwargs, match", [
    ({"name": ""}, "name must be"), ({"name": "a/b"}, "name must be"), ({"assumes": ""}, "assumes must be"),
    ({"scale": 0.0}, "scale must be a finite number > 0, got 0.0"), ({"scale": float("nan")}, "scale must be"),
    ({"scale": True}, "scale must be"), ({"perturb": 3}, "perturb must be callable"),
])
def test_a_bad_assumption_is_refused_naming_the_field(kwargs, match):
    good = {"name": "x", "assumes": "A", "departure": "D", "scale": 1.0, "perturb": lambda d, delta: d}
    with pytest.raises((TypeError, ValueError), match=match):
        Assumption(**{**good, **kwargs})


def test_warnings_of_gives_the_flip_share_the_worst_excess_and_the_rule():
    assert warnings_of(_sens({0.05: "b"}, gap=0.30), "a")["x"] == {"flip": 0.05, "worst": pytest.approx(0.30),
                                                                    "warns": True}
    assert warnings_of(_sens({0.05: "b"}, gap=0.10), "a")["x"]["warns"] is False
    far = warnings_of(_sens({0.2: "c"}, gap=3.0), "a")["x"]  # flips only at 20%: no warning however large
    assert far == {"flip": 0.2, "worst": 0.0, "warns": False}
    assert warnings_of(_sens({}), "a")["x"]["flip"] == float("inf")


def test_remembered_datasets_give_the_same_sensitivity_and_are_generated_once(monkeypatch):
    from hybridpriv.engine import sensitivity as sens_mod
    from hybridpriv.estimators import UniformMean, WeightedMean
    from hybridpriv.families.grouped import Statistic, normal_source

    source = normal_source(GROUPS, BOUNDS, 50.0, 15.0, draws=12)
    calls = []
    real = source.generate
    monkeypatch.setattr(source, "generate", lambda c, d, rng: calls.append((c, d)) or real(c, d, rng))
    cands = {"weighted": WeightedMean(GROUPS, BOUNDS, 25.0), "uniform-mean": UniformMean(GROUPS, BOUNDS)}
    assumptions = grouped_assumptions(GROUPS, BOUNDS, "mean", "sample")
    kw = {"dim": "estimator", "trials": 3, "seed": 4}
    remembered = sens_mod.sensitivity(cands, source, Statistic(target="sample"), assumptions, **kw)
    n = source.shape[0] * source.shape[1]
    assert len(calls) == n  # once per dataset, not once per dataset, departure and assumption
    calls.clear()
    monkeypatch.setattr(sens_mod, "RememberedSource", lambda s: s)  # generated afresh for every departure
    fresh = sens_mod.sensitivity(cands, source, Statistic(target="sample"), assumptions, **kw)
    assert len(calls) == n * len(SHIFTS) * len(assumptions)
    xr.testing.assert_identical(remembered, fresh)


def test_a_remembered_source_ships_without_its_datasets():
    import pickle

    from hybridpriv.core.random import rng
    from hybridpriv.engine.sensitivity import RememberedSource
    from hybridpriv.families.grouped import normal_source

    src = RememberedSource(normal_source(GROUPS, BOUNDS, 50.0, 15.0, draws=4))
    a = src.generate(0, 1, rng(1, "dataset", 0, 1))
    assert src.generate(0, 1, rng(1, "dataset", 0, 1)) is a  # the same call: the same dataset
    assert src.generate(0, 1, rng(2, "dataset", 0, 1)) is not a  # another generator state: generated again
    assert len(src._memo) == 2 and pickle.loads(pickle.dumps(src))._memo == {}


def test_remembering_stops_at_its_byte_cap(monkeypatch):
    import scipy.sparse as sp

    from hybridpriv.core.random import rng
    from hybridpriv.engine import sensitivity as sens_mod
    from hybridpriv.families.grouped import normal_source
    from hybridpriv.families.grouped.data import GroupedDataset

    # the bytes counted: arrays in attributes, tuples and dicts, sparse matrices by their three arrays
    data = GroupedDataset((np.zeros(10), np.zeros(30)), {"mean": 0.0})
    assert sens_mod._array_bytes(data) == 40 * 8
    m = sp.csr_array(np.eye(4))
    assert sens_mod._array_bytes({"m": m, "t": (np.zeros(3, np.int8),)}) == m.data.nbytes + m.indices.nbytes + \
        m.indptr.nbytes + 3
    source = normal_source(GROUPS, BOUNDS, 50.0, 15.0, draws=4)
    one = sens_mod._array_bytes(source.generate(0, 0, rng(1, "dataset", 0, 0)))
    monkeypatch.setattr(sens_mod, "MAX_REMEMBERED_BYTES", 2 * one)
    src = sens_mod.RememberedSource(source)
    first = [src.generate(0, d, rng(1, "dataset", 0, d)) for d in range(4)]
    assert len(src._memo) == 2 and src._bytes == 2 * one  # two fit; the others are not kept ...
    again = [src.generate(0, d, rng(1, "dataset", 0, d)) for d in range(4)]
    assert [a is b for a, b in zip(first, again)] == [True, True, False, False]
    for a, b in zip(first[2:], again[2:]):  # ... but generated again, the same
        for x, y in zip(a.values, b.values):
            np.testing.assert_array_equal(x, y)


def test_no_declared_departure_changes_the_dataset_it_is_given():
    """The sensitivity check hands every departure the same remembered dataset: none may modify it."""
    import copy

    import scipy.sparse as sp

    from hybridpriv.families.grouped.data import GroupedDataset
    from hybridpriv.families.histogram.assumptions import histogram_assumptions
    from hybridpriv.families.histogram.data import CategoryCounts
    from hybridpriv.families.hybrid_trust.assumptions import hybrid_trust_assumptions
    from hybridpriv.families.kmeans.algorithms import PointCloud
    from hybridpriv.families.kmeans.assumptions import kmeans_assumptions
    from hybridpriv.families.user_item.assumptions import user_item_assumptions

    rng = np.random.default_rng(0)
    grouped = GroupedDataset(tuple(np.clip(rng.normal(50, 15, g.size), 0, 100) for g in GROUPS), {"mean": 50.0})
    cases = [(a, grouped) for a in grouped_assumptions(GROUPS, BOUNDS, "mean", "sample")]
    cases += [(a, GroupedDataset((rng.uniform(0, 5, 30), rng.uniform(0, 5, 40)), {"mean": 2.5}))
              for a in hybrid_trust_assumptions(5.0)]
    cases += [(a, CategoryCounts(np.array([[20, 20, 10], [80, 80, 40], [50, 30, 20]])))
              for a in histogram_assumptions(GROUPS)]
    cloud = PointCloud(rng.uniform(0, 1, (50, 2)), rng.random(50) < 0.5, (0, 1), init=rng.uniform(0, 1, (3, 2)))
    cases += [(a, cloud) for a in kmeans_assumptions((0, 1))]
    ui = sp.csr_array((rng.random((40, 6)) < 0.4).astype(float))
    cases += [(a, ui) for a in user_item_assumptions(6, 40)]
    for a, data in cases:
        before = copy.deepcopy(data)
        for shift in SHIFTS:
            a.perturb(data, shift * a.scale)
        for x, y in zip(_leaves(before), _leaves(data)):
            np.testing.assert_array_equal(x, y, err_msg=a.name)


def _leaves(data):
    import scipy.sparse as sp

    if sp.issparse(data):
        return [data.toarray()]
    if hasattr(data, "values") and isinstance(data.values, tuple):
        return [*data.values, np.array(sorted(data.population.items()), dtype=object)]
    if hasattr(data, "counts"):
        return [data.counts]
    return [data.points, data.trusted, data.init]


def test_figure_notes_are_wrapped_under_the_plot_and_add_to_its_height():
    from hybridpriv.report import plot_decision

    dec = xr.Dataset({"expected_loss": ("estimator", [1.0, 2.0]), "risk_low": ("estimator", [0.5, 1.0]),
                      "risk_high": ("estimator", [2.0, 3.0]), "mcse": ("estimator", [0.1, 0.1]),
                      "p_best": ("estimator", [0.9, 0.1])}, coords={"estimator": ["a", "b"]},
                     attrs={"candidate_dim": "estimator", "recommended": "a"})
    plain = plot_decision(dec)
    assert plain.texts == []
    note = "warning: " + "a long note " * 20  # 249 characters: three lines of at most 110
    fig = plot_decision(dec, notes=[note, "two-stage plan: short"])
    (warn, plan) = sorted(fig.texts, key=lambda t: -t.get_position()[1])  # the warning above the plan
    assert warn.get_text().count("\n") == 2 and all(len(line) <= 110 for line in warn.get_text().split("\n"))
    assert warn.get_color() == "tab:red" and plan.get_color() == "0.15" and plan.get_text() == "two-stage plan: short"
    assert fig.get_figheight() == pytest.approx(plain.get_figheight() + 0.125 * 4 + 0.1)


def test_p_best_labels_of_neighbouring_candidates_do_not_overlap():
    """30 values of k, P(best) shared by four neighbours (the favorite-sites picture): their labels, side by
    side before, overlapped; each label's box is measured on the drawn figure."""
    from hybridpriv.report import plot_decision

    k = np.arange(1, 31)
    loss = 1e4 * (1 + 0.02 * (k - 7.5) ** 2)
    pb = np.zeros(30)
    pb[[5, 6, 7, 8]] = [0.33, 0.28, 0.35, 0.04]
    dec = xr.Dataset({"expected_loss": ("k", loss), "risk_low": ("k", 0.8 * loss), "risk_high": ("k", 1.2 * loss),
                      "mcse": ("k", 0.01 * loss), "p_best": ("k", pb)}, coords={"k": k},
                     attrs={"candidate_dim": "k", "recommended": "7"})
    import itertools

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot_decision(dec)
    renderer = FigureCanvasAgg(fig).get_renderer()
    labels = [t for t in fig.axes[0].texts if t.get_text() in ("0.33", "0.28", "0.35", "0.04")]
    assert len(labels) == 4
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in itertools.pairwise(boxes)), [(b.x0, b.x1) for b in boxes]


def test_a_categorical_figures_legend_sits_between_its_axis_label_and_its_notes():
    """The legend, placed in the axes' coordinates before, floated half an inch below the axis label and as far
    above the notes; now in its own strip: under the label, above the notes, with no more than 0.3 inch gaps."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from hybridpriv.report import plot_decision

    names = [f"estimator-{i}" for i in range(8)]
    dec = xr.Dataset({"expected_loss": ("estimator", np.arange(1.0, 9.0)), "risk_low": ("estimator", np.arange(0.5, 8.5)),
                      "risk_high": ("estimator", np.arange(2.0, 10.0)), "mcse": ("estimator", np.full(8, 0.1)),
                      "p_best": ("estimator", [0.6, 0.4, 0, 0, 0, 0, 0, 0])}, coords={"estimator": names},
                     attrs={"candidate_dim": "estimator", "recommended": "estimator-0"})
    for notes in ([], ["two-stage plan: " + "a note " * 30]):
        fig = plot_decision(dec, notes=notes)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # as savefig does: the legend's place is settled when it is drawn
        renderer, dpi = canvas.get_renderer(), fig.dpi
        label = fig.axes[0].xaxis.label.get_window_extent(renderer)
        legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()  # wherever it is placed
        box = legend.get_window_extent(renderer)
        assert box.y1 <= label.y0 and label.y0 - box.y1 < 0.3 * dpi, (label.y0, box.y1)
        if notes:
            (note,) = fig.texts
            top = note.get_window_extent(renderer).y1
            assert top <= box.y0 and box.y0 - top < 0.3 * dpi, (top, box.y0)


@pytest.mark.parametrize("low, high", [(3.47, 61.3), (3.4, 9.0), (0.02, 900.0), (1.1, 1.9), (120.0, 180.0)])
def test_a_log_axis_labels_plain_numbers_that_do_not_overlap(low, high):
    """The K-means figure's log axis printed "3x10^1" into "4x10^1"; now plain numbers (a power of ten, and 2 and 5
    times it under two decades, more under one, every tick within about 2x), at least two of them, no two labels'
    boxes overlapping."""
    import itertools

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from hybridpriv.report import plot_decision

    mid = np.sqrt(low * high)
    dec = xr.Dataset({"expected_loss": ("algorithm", [mid, 1.2 * mid]), "risk_low": ("algorithm", [low, 1.1 * low]),
                      "risk_high": ("algorithm", [high / 1.1, high]), "mcse": ("algorithm", [0.01, 0.01]),
                      "p_best": ("algorithm", [0.75, 0.25])}, coords={"algorithm": ["a", "b"]},
                     attrs={"candidate_dim": "algorithm", "recommended": "a"})
    fig = plot_decision(dec)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    shown = [t for t in ax.xaxis.get_majorticklabels() + ax.xaxis.get_minorticklabels()
             if t.get_text() and ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
    texts = [t.get_text() for t in shown]
    assert len(texts) >= 2 and all("10^" not in s and "times" not in s for s in texts), texts
    for s in texts:
        float(s)  # a plain number
    boxes = sorted((t.get_window_extent(canvas.get_renderer()) for t in shown), key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in itertools.pairwise(boxes)), texts
