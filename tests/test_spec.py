import math
import textwrap

import numpy as np
import pytest

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
    assert spec.released_means == [{"value": 23.1, "noise_scale": 0.5, "group": "default"}]


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
        ("size = 100", "size = 0", r"size must be >= 1 \(empty groups are not allowed\), got 0"),
        ("size = 100", "size = 2.5", r"size must be an integer, got 2.5"),
        ("bounds = [0, 10]", "bounds = [10, 0]", r"lower < upper, got \[10, 0\]"),
        ("bounds = [0, 10]", "bounds = [0, nan]", r"bounds upper must be finite, got nan"),
        ('statistic = "mean"', 'statistic = "mode"', r"statistic must be 'mean' or 'median', got 'mode'"),
        ("data = [1.0, 2.0, 3.0]", "data = [1.0, 2.0]", r"holds 2 values but size = 3"),
        ("data = [1.0, 2.0, 3.0]", "data = [1.0, nan, 3.0]", r"groups\[0\].data must be a number, got nan"),
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
