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


def test_resume_reads_the_sampled_row_sums_back_instead_of_sampling_again(tmp_path, monkeypatch):
    import pytest
    import xarray as xr

    from hybridpriv.checkpoint import Checkpoint
    from hybridpriv.models import UserItemModel

    with Checkpoint(tmp_path, {"study": "zeber", "seed": 3}) as ck:
        first = zeber_user_item.run(quick=True, seed=3, checkpoint=ck)  # uninterrupted, keeping its work
    assert (tmp_path / "stages" / "row-sums.nc").exists()
    chunk_files = sorted((tmp_path / "chunks").glob("risks-*.npz"))
    assert chunk_files
    chunk_files[-1].unlink()  # as if killed before the last chunk was written

    def no_sampling(*args, **kwargs):
        raise AssertionError("the row-sum chain was sampled again")

    monkeypatch.setattr(UserItemModel, "sample", no_sampling)
    with Checkpoint(tmp_path, {"study": "zeber", "seed": 3}) as ck:
        resumed = zeber_user_item.run(quick=True, seed=3, checkpoint=ck)
    xr.testing.assert_identical(first, resumed)
    assert len(list((tmp_path / "chunks").glob("risks-*.npz"))) == len(chunk_files)
    # the stage is recorded with its settings; other settings in the same folder are refused
    with Checkpoint(tmp_path, {"study": "zeber", "seed": 3}) as ck:
        with pytest.raises(ValueError, match=r"stage 'row-sums' was made with other settings \(seed: 3 there, 4 here\)"):
            ck.dataset("row-sums", {**ck.manifest["stages"]["row-sums"]["settings"], "seed": 4}, no_sampling)
