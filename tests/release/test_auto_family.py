"""A selection made with ``family = "auto"`` is released with the family that was fitted.

When the family chosen by PSIS-LOO does not converge, the fit falls back to the next family
(:meth:`hybridpriv.models.GroupedDataModel.fit`); the selection records the fitted family and
``hybridpriv release`` rebuilds the posterior with it, not with the family the SPEC's choice
would pick again.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from hybridpriv.cli import main
from hybridpriv.models import GroupedPosterior
from hybridpriv.core.model import ConvergenceError

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture
def mixture_never_converges(monkeypatch):
    original = GroupedPosterior.check_convergence

    def check(self, on_fail="raise"):
        if self.model_spec.family.name == "mixture":
            raise ConvergenceError("R-hat of m = 1.86 > 1.1 (simulated)")
        return original(self, on_fail)

    monkeypatch.setattr(GroupedPosterior, "check_convergence", check)


def test_release_uses_the_family_the_selection_fitted(mixture_never_converges, tmp_path, capsys):
    rng = np.random.default_rng(3)  # a clamped bimodal panel: auto chooses the mixture
    panel = np.clip(np.concatenate([rng.normal(10, 8, 120), rng.normal(75, 10, 80)]), 0, 100).round(2)
    (tmp_path / "panel.csv").write_text("x\n" + "\n".join(map(str, panel)) + "\n")
    spec = tmp_path / "s.toml"
    spec.write_text('bounds = [0, 100]\n[[groups]]\nname = "panel"\nsize = 200\nepsilon = inf\ndata = "panel.csv"\n'
                    '[[groups]]\nname = "priv"\nsize = 300\nepsilon = 1.0\n'
                    '[evaluation]\nestimators = ["weighted", "pdp-opt"]\n')
    data = tmp_path / "data"
    data.mkdir()
    (data / "priv.csv").write_text("x\n" + "\n".join(map(str, rng.uniform(0, 100, 300).round(2))) + "\n")
    assert main(["select", str(spec), "--draws", "8", "--trials", "2", "--out", str(tmp_path / "sel"), "--quiet"]) == 0
    out, err = capsys.readouterr()
    # the fallback is a line of the run's log, not a Python warning with a source line
    assert "  warning: family = auto: the mixture family's fit did not converge" in out and "using normal" in out
    assert "UserWarning" not in err
    sel = tmp_path / "sel" / "selection.nc"
    attrs = xr.open_datatree(sel).attrs
    assert attrs["model_family"] == "normal" and "using normal" in attrs["family_fallback"]
    code = main(["release", str(spec), "--data", str(data), "--selection", str(sel), "--ledger",
                 str(tmp_path / "ledger.json"), "--out", str(tmp_path / "r"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rec = json.loads((tmp_path / "r" / "release.json").read_text())
    assert rec["candidate"]["label"] == attrs["recommended"] and np.isfinite(rec["released"])
