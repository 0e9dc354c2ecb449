"""``study run calibration --kinds``: one kind's truths alone are the same truths, and refusals name the value."""

import numpy as np
import pytest

from hybridpriv.studies import calibration, run_study


def _same(a, b, where: str) -> None:
    """Truth fields equal, arrays by value (a truth's data and SPEC nest dicts, lists and arrays)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


@pytest.mark.parametrize("kinds", [["histogram"], ["hybrid-trust", "grouped"]])
def test_a_kinds_truths_alone_are_its_truths_in_the_whole_study(kinds):
    every = calibration.truths("quick", 3)
    alone = calibration.truths("quick", 3, kinds)
    order = calibration.check_kinds(kinds)  # the registry's order, whatever order they were given in
    assert order == [k for k in ("grouped", "user-item", "hybrid-trust", "public-private", "kmeans", "histogram") if k in kinds]
    want = [t for k in order for t in every if t.family == k]
    assert len(alone) == len(want) == 2 * len(kinds)  # quick: one synthetic and one real truth a kind
    for t, u in zip(alone, want):
        for field in ("family", "source", "generator", "spec", "data"):
            _same(getattr(t, field), getattr(u, field), f"{t.family} {field}")


def test_kinds_refused_naming_the_value():
    with pytest.raises(ValueError, match=r"--kinds: 'nope' is not a kind with held-out truths; known: grouped, user-item"):
        calibration.check_kinds(["nope"], what="--kinds")
    with pytest.raises(ValueError, match=r"kinds names a kind twice: kmeans, kmeans"):
        calibration.check_kinds(["kmeans", "kmeans"])
    with pytest.raises(ValueError, match=r"kinds must name at least one kind \(of grouped, .*\), got none"):
        calibration.check_kinds([])
    with pytest.raises(TypeError, match=r"kinds must be a list of kinds, got 'histogram'"):
        calibration.check_kinds("histogram")
    with pytest.raises(ValueError, match=r"study 'ferrando-means' has no --kinds"):
        run_study("ferrando-means", quick=True, kinds=["histogram"])


def test_the_cli_refuses_bad_kinds_before_any_work(tmp_path, capsys):
    from hybridpriv.cli import main

    for argv, needle in [
        (["--kinds", "nope"], "error: --kinds: 'nope' is not a kind with held-out truths; known: grouped"),
        (["--kinds", "histogram,histogram"], "error: --kinds names a kind twice: histogram, histogram"),
    ]:
        assert main(["study", "run", "calibration", "--quick", "--out", str(tmp_path / "o"), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(needle) and err.count("\n") == 1, err
    assert main(["study", "run", "ferrando-means", "--quick", "--kinds", "histogram", "--out", str(tmp_path / "o")]) == 2
    assert "study 'ferrando-means' has no --kinds" in capsys.readouterr().err
    assert main(["study", "run", "all", "--quick", "--kinds", "histogram", "--out", str(tmp_path / "o")]) == 2
    assert "--kinds is an option of one study (calibration), not of all" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing written
