"""The budget-spending selectors' DP features, audited on neighbouring datasets
(:func:`hybridpriv.testing.audit`), with bounds that exclude 0, under every relation they offer.

* :func:`hybridpriv.families.grouped.heldout.noisy_group_mean`: add-remove (a record at the bound farthest from 0
  added: the sum moves by ``max(|lower|, |upper|)``) and replace (a record moved from one bound to the
  other: the sum moves by ``upper - lower``).  Each audit must pass at the claimed epsilon and fail
  when the noise is calibrated for the other relation's (smaller) sensitivity.
* :func:`hybridpriv.families.user_item.heldout.dp_items_histogram`: add-remove only (a user added: one count moves by
  1).  Under replace a user could move two counts: it does not offer that relation.
* :func:`hybridpriv.families.hybrid_trust.heldout.pythia_hybrid_trust`: the TCM group's central mean under both
  relations the kind offers (a user's value moved from 0 to m; a user at m added) and an LM user's local report (its
  value moved from 0 to m), each at its share of the group's epsilon; each fails when the noise is that of twice
  the epsilon.  Hybrid-trust records lie in [0, m] by the kind's definition: bounds excluding 0 do not exist here.
* :func:`hybridpriv.families.histogram.heldout.noisy_group_counts`: add-remove (a record added: one count moves by
  1) and replace (a record moved between categories: two counts move; the audited statistic is their
  difference); noise calibrated for add-remove fails the replace audit.
* :mod:`hybridpriv.families.kmeans.cells`: a TCM user's cell counted with Laplace noise (add-remove: a user added,
  one count moves by 1) and an LM user's k-ary randomized response (replace: its cell moved); each fails when the
  noise is that of a larger epsilon.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from hybridpriv.families.grouped.heldout import noisy_group_mean
from hybridpriv.families.user_item.heldout import dp_items_histogram
from hybridpriv.testing import NeighbouringPair, audit

BOUNDS = (40.0, 100.0)  # excludes 0: the two relations' sensitivities differ (100 vs 60)
N = 50
D = np.r_[np.full(N - 1, 70.0), 40.0]
PAIRS = {"add-remove": (D, np.r_[D, 100.0]),  # one record at 100 added; the public size stays N
         "replace": (D, np.r_[D[:-1], 100.0])}  # the record at 40 moved to 100


def _mean_release(relation: str, epsilon: float):
    return lambda data, rng, size: noisy_group_mean(data, N, BOUNDS, relation, epsilon, rng, trials=size)[0]


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_noisy_group_mean_holds_its_epsilon_under_each_relation(relation):
    report = audit(_mean_release(relation, 1.0), PAIRS[relation], epsilon=1.0, samples=100_000, seed=1)
    assert report.verdict == "pass", report
    assert report.epsilon_lower_bound > 0.7  # the audit sees most of the loss: the pair is the worst case


def test_noise_calibrated_for_replace_fails_the_add_remove_audit():
    # replace's sensitivity (60) used against an added record at 100: the true loss is 100/60 = 1.67
    report = audit(_mean_release("replace", 1.0), PAIRS["add-remove"], epsilon=1.0, samples=100_000, seed=2)
    assert report.verdict == "violation", report


def _matrix(rows, m=4):
    indptr = np.cumsum([0] + [len(r) for r in rows])
    return sp.csr_matrix((np.ones(indptr[-1]), [j for r in rows for j in r], indptr), shape=(len(rows), m))


def test_items_histogram_holds_epsilon_under_add_remove():
    rows = [[0], [0, 1], [1, 2], [0, 1, 2], [3]]
    first, second = _matrix(rows), _matrix(rows + [[0, 2]])  # a user with 2 items added: count of 2 moves by 1
    pair = NeighbouringPair(first, second, "a user with 2 items added", statistic=lambda out: out[:, 1])
    mech = lambda mat, rng, size: np.stack([dp_items_histogram(mat, 0.5, rng) for _ in range(size)])  # noqa: E731
    report = audit(mech, pair, epsilon=0.5, samples=20_000, seed=3)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.2, report
    too_little = lambda mat, rng, size: np.stack([dp_items_histogram(mat, 1.5, rng) for _ in range(size)])  # noqa: E731
    assert audit(too_little, pair, epsilon=0.5, samples=20_000, seed=4).verdict == "violation"


# -- the hybrid-trust selector's two features (pythia_hybrid_trust): bounds [0, m], so both relations move the
# TCM mean's sum by m; an LM user's report is local DP (replace: its value moved from 0 to m) --------------------

HT_M, HT_EPS, HT_SHARE = 10.0, 2.0, 0.5  # each feature is spent HT_SHARE * HT_EPS = 1.0
HT_SPEC = {"kind": "hybrid-trust", "m": HT_M, "tcm": {"name": "tcm", "size": 5, "epsilon": HT_EPS},
           "lm": {"name": "lm", "size": 1, "epsilon": HT_EPS}}
HT_TCM = (np.array([3.0, 3.0, 3.0, 3.0, 0.0]), np.array([3.0, 3.0, 3.0, 3.0, HT_M]))  # one TCM user moved 0 -> m
HT_LM = (np.array([0.0]), np.array([HT_M]))  # the only LM user (its report is the average) moved 0 -> m
HT_TCM_ADDED = (np.full(4, 3.0), np.r_[np.full(4, 3.0), HT_M])  # add-remove: a TCM user at m added (public size 5)


def _ht_release(unit: str, spec=HT_SPEC):  # unit "tcm" or "lm": the released mean audited
    from hybridpriv.families.hybrid_trust.heldout import pythia_hybrid_trust

    def mech(data, rng, size):  # the audited group's records are the pair's; the other group's are fixed
        groups = {"tcm": data, "lm": HT_LM[0]} if unit == "tcm" else {"tcm": HT_TCM[0], "lm": data}
        index = -2 if unit == "tcm" else -1
        return np.array([pythia_hybrid_trust(spec, groups, HT_SHARE, rng)["model"]["released_means"][index]["value"]
                         for _ in range(size)])
    return mech


@pytest.mark.slow  # 160,000 calls of the selector's SPEC builder: about 15-30 s each
@pytest.mark.parametrize("unit, pair, relation", [("tcm", HT_TCM, "replace"), ("tcm", HT_TCM_ADDED, "add-remove"),
                                                   ("lm", HT_LM, "replace")],
                         ids=["tcm-mean-replace", "tcm-mean-add-remove", "lm-report"])
def test_the_hybrid_trust_selectors_features_hold_their_share_of_epsilon(unit, pair, relation):
    spec = {**HT_SPEC, "relation": relation}  # the TCM users' relation (an LM report is local DP, replace)
    report = audit(_ht_release(unit, spec), pair, epsilon=HT_SHARE * HT_EPS, samples=40_000, seed=5)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.6, report
    # charged for a smaller share than it spends (the same noise claimed at twice the epsilon's worth): fails
    greedy = {**spec, unit: {**HT_SPEC[unit], "epsilon": 2 * HT_EPS}}
    assert audit(_ht_release(unit, greedy), pair, epsilon=HT_SHARE * HT_EPS, samples=40_000, seed=6).verdict == "violation"


# -- the histogram selector's feature (noisy_group_counts): a record added moves one count by 1; a record replaced
# moves two counts by 1 each (the statistic that sees both: their difference) -------------------------------------

H_COUNTS = np.array([5.0, 3.0, 2.0])
H_PAIRS = {"add-remove": NeighbouringPair(H_COUNTS, H_COUNTS + [1.0, 0.0, 0.0], "a record in the first category added",
                                          statistic=lambda out: out[:, 0]),
           "replace": NeighbouringPair(H_COUNTS, H_COUNTS + [-1.0, 1.0, 0.0], "a record moved from the first category "
                                       "to the second", statistic=lambda out: out[:, 1] - out[:, 0])}


def _counts_release(relation: str, epsilon: float):
    from hybridpriv.families.histogram.heldout import noisy_group_counts

    return lambda data, rng, size: noisy_group_counts(data, relation, epsilon, rng, trials=size)[0]


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_noisy_group_counts_hold_their_epsilon_under_each_relation(relation):
    report = audit(_counts_release(relation, 1.0), H_PAIRS[relation], epsilon=1.0, samples=100_000, seed=7)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.6, report


def test_counts_noised_for_add_remove_fail_the_replace_audit():
    # add-remove's sensitivity (1) against a replaced record (two counts move): the true loss is 2 epsilon
    report = audit(_counts_release("add-remove", 1.0), H_PAIRS["replace"], epsilon=1.0, samples=100_000, seed=8)
    assert report.verdict == "violation", report


# -- the K-means selector's two features (hybridpriv.families.kmeans.cells): a TCM user's cell counted with
# Laplace noise (central, add/remove-one: one count moves by 1), an LM user's cell reported by k-ary randomized
# response (local, replace-one: the user's cell moved) ---------------------------------------------------------

def test_kmeans_tcm_cell_counts_hold_epsilon_under_add_remove():
    from hybridpriv.families.kmeans.cells import laplace_cell_counts

    cells = np.array([0, 0, 1, 2, 2, 2])
    pair = NeighbouringPair(cells, np.r_[cells, 1], "a TCM user in cell 1 added", statistic=lambda out: out[:, 1])

    def release(eps):
        return lambda c, rng, size: np.array([laplace_cell_counts(c, 3, eps, rng).counts for _ in range(size)])

    report = audit(release(0.5), pair, epsilon=0.5, samples=20_000, seed=5)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.2, report
    assert audit(release(1.5), pair, epsilon=0.5, samples=20_000, seed=6).verdict == "violation"


def test_kmeans_lm_cell_report_holds_epsilon_under_replace():
    """One LM user (its debiased count vector is its report): its cell moved from 0 to 2, k = 3."""
    from hybridpriv.families.kmeans.cells import randomized_response_counts

    pair = NeighbouringPair(np.array([0]), np.array([2]), "the LM user's cell moved 0 -> 2",
                            statistic=lambda out: out[:, 0])

    def release(eps):
        return lambda c, rng, size: np.array([randomized_response_counts(c, 3, eps, rng).counts for _ in range(size)])

    report = audit(release(1.0), pair, epsilon=1.0, samples=20_000, seed=7)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.6, report
    assert audit(release(2.0), pair, epsilon=1.0, samples=20_000, seed=8).verdict == "violation"
