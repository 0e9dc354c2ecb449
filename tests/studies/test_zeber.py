import numpy as np
import pytest
import xarray as xr
from hybridpriv.engine import Engine
from hybridpriv.studies import zeber_user_item

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture(scope="module")
def quick():
    return zeber_user_item.run(quick=True, seed=2)


def test_quick_study_structure_and_reproducibility(quick):
    a = quick
    assert a["mse"].dims == ("k",) and list(a.k.values) == list(range(1, 21))
    assert a["mse_by_matrix"].dims == ("k", "chain", "draw")
    assert a.attrs["matrices"] == 100
    assert int(a.attrs["recommended_k"]) == int(a.k[int(np.argmin(a.mse.values))])
    assert float(a.p_best.sum()) == pytest.approx(1.0)
    # the expected loss is the mean of the exact per-matrix risks; the band is their 5-95% range
    np.testing.assert_allclose(a.mse, a.mse_by_matrix.mean(("chain", "draw")))
    np.testing.assert_allclose(a.mse_low, a.mse_by_matrix.quantile(0.05, ("chain", "draw")).drop_vars("quantile"))
    # the bias-variance trade-off: k = 1 (all bias) and k = 20 (all noise) are both worse than the best
    assert float(a.mse.sel(k=1)) > a.mse.min() and float(a.mse.sel(k=20)) > a.mse.min()
    assert a["posterior_share_one_item"].dims == ("chain", "draw") and 0 < float(a.posterior_share_one_item.mean()) < 1
    assert np.isfinite(a.attrs["row_sum_max_rhat"])
    # the seed's second case, n unknown (max c <= n <= sum c), runs beside it on its own posterior
    assert a["mse_unknown_n"].dims == ("k",) and a.attrs["n_range_unknown_n"] == [1200, 6222]
    n = a["posterior_n_unknown_n"].values
    assert n.min() >= 1200 and n.max() <= 6222 and np.ptp(n) > 0
    np.testing.assert_allclose(a.mse_unknown_n, a.mse_by_matrix_unknown_n.mean(("chain_unknown_n", "draw_unknown_n")))
    assert np.isfinite(a.attrs["row_sum_max_rhat_unknown_n"])
    # reproducible: the resume test below reruns seed 2 in chunks of 10 and compares with this run


def test_the_figure_is_written(quick, tmp_path):
    zeber_user_item.plot(quick, tmp_path / "z.png")
    assert (tmp_path / "z.png").stat().st_size > 10_000


def test_resume_reads_the_sampled_row_sums_back_instead_of_sampling_again(quick, tmp_path, monkeypatch):
    from hybridpriv.models import UserItemModel

    from hybridpriv.engine.checkpoint import Checkpoint

    with Checkpoint(tmp_path, {"study": "zeber", "seed": 2}) as ck:
        first = zeber_user_item.run(quick=True, seed=2, engine=Engine(checkpoint=ck, chunk_size=10))  # uninterrupted, keeping its work
    # the same seed as the plain run of the module: the same numbers in chunks of 10 with a checkpoint
    xr.testing.assert_identical(first.drop_attrs(), quick.drop_attrs())
    assert (tmp_path / "stages" / "row-sums.nc").exists()
    chunk_files = sorted((tmp_path / "chunks").glob("evaluate-0-*.npz"))
    assert len(chunk_files) == 10 and (tmp_path / "stages" / "row-sums-unknown-n.nc").exists()
    chunk_files[-1].unlink()  # as if killed before the last chunk was written

    def no_sampling(*args, **kwargs):
        raise AssertionError("the row-sum chain was sampled again")

    monkeypatch.setattr(UserItemModel, "fit", no_sampling)
    with Checkpoint(tmp_path, {"study": "zeber", "seed": 2}) as ck:
        resumed = zeber_user_item.run(quick=True, seed=2, engine=Engine(checkpoint=ck))
    xr.testing.assert_identical(first, resumed)
    assert len(list((tmp_path / "chunks").glob("evaluate-0-*.npz"))) == len(chunk_files)
    # the stage is recorded with its settings; other settings in the same folder are refused
    with Checkpoint(tmp_path, {"study": "zeber", "seed": 2}) as ck:
        with pytest.raises(ValueError, match=r"stage 'row-sums' was made with other settings \(seed: 2 there, 4 here\)"):
            ck.dataset("row-sums", {**ck.manifest["stages"]["row-sums"]["settings"], "seed": 4}, no_sampling)
