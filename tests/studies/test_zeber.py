import numpy as np

from hybridpriv.studies import zeber_user_item


def test_quick_study_structure_and_reproducibility():
    a = zeber_user_item.run(quick=True, seed=2)
    assert a["mse"].dims == ("k",) and list(a.k.values) == list(range(1, 21))
    assert a["mse_by_matrix"].dims == ("k", "chain", "draw")
    assert a.attrs["matrices"] == 100
    assert int(a.attrs["recommended_k"]) == int(a.k[int(a.mse.argmin("k"))])
    # the bias-variance trade-off: k = 1 (all bias) and k = 20 (all noise) are both worse than the best
    assert float(a.mse.sel(k=1)) > a.mse.min() and float(a.mse.sel(k=20)) > a.mse.min()
    b = zeber_user_item.run(quick=True, seed=2)
    np.testing.assert_array_equal(a.mse_by_matrix.values, b.mse_by_matrix.values)
