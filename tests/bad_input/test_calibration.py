"""Bad input to the calibration scores and the held-out truths."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

from hybridpriv.calibration import score
from hybridpriv.families.grouped.heldout import REAL_GROUPED, real_grouped_truth
from hybridpriv.families.user_item.heldout import REAL_USER_ITEM, real_user_item_truth


@cfg(120)
@given(k=st.integers(1, 6), which=st.sampled_from(["expected", "low", "high", "p_best", "eligible", "realised",
                                                  "recommended"]), data=st.data())
@counted("calibration")
def test_score_rejects_bad_arguments_naming_them(k, which, data):
    args = {"expected": [1.0] * k, "low": [0.5] * k, "high": [2.0] * k, "p_best": [1.0 / k] * k,
            "eligible": [True] * k, "realised": [1.0] * k, "recommended": 0}
    if which == "recommended":
        args[which] = data.draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=k), st.booleans(),
                                          st.floats(allow_nan=True), st.text(max_size=3)))
    elif which == "realised":
        bad = data.draw(st.one_of(st.sampled_from([NAN, INF, -INF]), st.floats(max_value=-1e-300)))
        args[which] = [*([1.0] * (k - 1)), bad]
    else:
        args[which] = [1.0] * data.draw(st.integers(0, 8).filter(lambda n: n != k))
    rejects(lambda: score(**args), which)


@cfg(40)
@given(name=st.one_of(unknown_word, st.sampled_from([*REAL_USER_ITEM, *REAL_GROUPED])), data=st.data())
@counted("calibration")
def test_real_truths_reject_unknown_names(name, data):
    grouped = data.draw(st.booleans())
    known = REAL_GROUPED if grouped else REAL_USER_ITEM
    assume(name not in known)
    if grouped:
        rejects(lambda: real_grouped_truth(name, np.random.default_rng(0)), "name")
    else:
        rejects(lambda: real_user_item_truth(name), "name")
