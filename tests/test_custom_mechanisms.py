"""A mechanism defined outside the package, named in a SPEC: checked, selected, audited, released.

The module is written to a temporary folder beside the SPEC (it is not importable otherwise), the
way a researcher would keep their own candidate next to their SPEC file.
"""

import json
import textwrap

import numpy as np
import pytest
import xarray as xr
from _support.cli import run_cli

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.estimators import WeightedMean
from hybridpriv.families.grouped.estimator import Estimator
from hybridpriv.spec import SpecError, load_spec, parse_spec, template
from hybridpriv.testing import MechanismCheckError, check_mechanism, mechanism_problems

MODULE = textwrap.dedent('''
    """A researcher's own candidate: one Laplace noise on the pooled mean of every record."""
    import math

    import numpy as np

    from hybridpriv.families.grouped.estimator import Estimator
    from hybridpriv.core.privacy import Guarantee


    class PooledMean(Estimator):
        """The mean of all records plus Laplace noise for the strictest group (replace-one).

        Changing one record moves the pooled mean by at most (b - a) / N, so noise of scale
        (b - a) / (N * min epsilon) gives every private group min epsilon.  ``scale_factor`` < 1
        makes it claim more than it gives (a bug the audit must find).
        """

        label = "pooled"

        def __init__(self, groups, bounds, scale_factor=1.0):
            super().__init__(groups, bounds)
            if not scale_factor > 0:
                raise ValueError(f"scale_factor must be > 0, got {scale_factor!r}")
            self.scale_factor = float(scale_factor)
            private = [g.epsilon for g in self.groups if math.isfinite(g.epsilon)]
            self.epsilon = min(private)
            self.scale = scale_factor * self.bounds.width / (self.sizes.sum() * self.epsilon)

        @property
        def privacy(self):
            return {g.name: Guarantee(self.epsilon if math.isfinite(g.epsilon) else math.inf, 0.0, "replace")
                    for g in self.groups}

        def _estimate(self, data, rng):
            pooled = np.concatenate(data, axis=1).mean(axis=1)
            return pooled + rng.laplace(0.0, self.scale, pooled.shape[0])


    class NotAMechanism:
        label = "nothing"
''')

SPEC = textwrap.dedent('''
    description = "a custom candidate beside the built-in ones"
    bounds = [0, 10]
    relation = "replace"

    [[groups]]
    name = "public"
    size = 30
    epsilon = inf
    data = [4.0, 5.0, 6.0, 5.5, 4.5, 5.0, 6.5, 3.5, 5.0, 5.0, 4.0, 5.0, 6.0, 5.5, 4.5,
            5.0, 6.5, 3.5, 5.0, 5.0, 4.0, 5.0, 6.0, 5.5, 4.5, 5.0, 6.5, 3.5, 5.0, 5.0]

    [[groups]]
    name = "private"
    size = 200
    epsilon = 0.5

    [model]
    family = "normal"
    chains = 2
    tune = 200

    [evaluation]
    estimators = ["weighted", "public-mean"]
    draws = 20
    trials = 5

    [[mechanisms]]
    class = "my_mechanisms:PooledMean"
    {extra}
''')


@pytest.fixture
def spec_dir(tmp_path):
    (tmp_path / "my_mechanisms.py").write_text(MODULE)
    return tmp_path


def _write(spec_dir, extra=""):
    path = spec_dir / "spec.toml"
    path.write_text(SPEC.format(extra=extra))
    return path


@pytest.fixture(scope="module")
def selected(tmp_path_factory):
    """The SPEC with the custom candidate, selected (few draws)."""
    d = tmp_path_factory.mktemp("custom")
    (d / "my_mechanisms.py").write_text(MODULE)
    path = _write(d)
    from hybridpriv.cli import main

    assert main(["select", str(path), "--out", str(d / "out"), "--quiet"]) == 0
    return d


@pytest.mark.slow
def test_a_spec_named_mechanism_is_selected_beside_the_built_ins(selected):
    tree = xr.open_datatree(selected / "out" / "selection.nc")
    decision = tree["decision"].to_dataset()
    assert set(decision.estimator.values) == {"weighted", "public-mean", "pooled"}
    # it is evaluated like a built-in: a finite expected loss, its declaration stored and compared
    assert np.isfinite(float(decision.expected_loss.sel(estimator="pooled")))
    assert bool(decision.meets_requirements.sel(estimator="pooled"))
    params = tree["candidates/pooled"].attrs
    assert params["scale_factor"] == 1.0 and params["class"].endswith(":PooledMean")


@pytest.mark.slow
def test_a_spec_named_mechanism_is_released_and_charged(selected, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "private.csv").write_text("x\n" + "".join(f"{v}\n" for v in np.linspace(2, 8, 200)))
    ledger = tmp_path / "ledger.json"
    code, out, err = run_cli(capsys, "release", selected / "spec.toml", "--data", data, "--selection",
                             selected / "out" / "selection.nc", "--candidate", "pooled", "--ledger", ledger,
                             "--out", tmp_path / "r", "--quiet")
    assert code == 0, err
    rec = json.loads((tmp_path / "r" / "release.json").read_text())
    assert rec["candidate"]["label"] == "pooled"
    assert rec["guarantee"]["private"]["epsilon"] == pytest.approx(0.5)
    assert json.loads(ledger.read_text())["releases"][0]["label"] == "pooled"
    # its whole budget is spent: a second release is refused before the data are read
    code, _, err = run_cli(capsys, "release", selected / "spec.toml", "--data", data, "--selection",
                           selected / "out" / "selection.nc", "--candidate", "pooled", "--ledger", ledger,
                           "--out", tmp_path / "r2", "--quiet")
    assert code == 2 and "over its budget" in err


def test_params_and_label_come_from_the_spec(spec_dir):
    spec = load_spec(_write(spec_dir, 'label = "pooled-x2"\nparams = { scale_factor = 2.0 }'))
    problem = spec.problem()

    class FakePosterior:  # the built-in weighted mean reads the records' variance from the model
        variance_posterior_mean = 1.0
        mean_square_posterior_mean = 25.0

    cands = problem.candidates(FakePosterior())
    assert cands["pooled-x2"].get_params()["scale_factor"] == 2.0
    # the group list and bounds came from the kind's context
    assert [g.name for g in cands["pooled-x2"].groups] == ["public", "private"]
    assert cands["pooled-x2"].scale == pytest.approx(2.0 * 10 / (230 * 0.5))


@pytest.mark.parametrize("extra, needle", [
    ("params = { nonsense = 1 }", "takes no argument(s) ['nonsense']"),
    ("params = { scale_factor = -1.0 }", "scale_factor"),
])
def test_bad_params_are_refused_at_load_naming_the_entry(spec_dir, extra, needle):
    with pytest.raises(SpecError, match=r"mechanisms\[0\]") as info:
        load_spec(_write(spec_dir, extra)).problem()
    assert needle in str(info.value)


@pytest.mark.parametrize("ref, needle", [
    ("my_mechanisms:Missing", "has no 'Missing'"),
    ("no_such_module:X", "no module 'no_such_module'"),
    ("my_mechanisms:NotAMechanism", "not a subclass of hybridpriv.core.mechanism.Mechanism"),
    ("hybridpriv.estimators:ContributionBoundedCounts", "data_kind = 'user-item'"),
    ("no-such-entry-point", "entry point"),
])
def test_bad_classes_exit_2_naming_the_key(spec_dir, capsys, ref, needle):
    path = _write(spec_dir)
    path.write_text(path.read_text().replace('"my_mechanisms:PooledMean"', f'"{ref}"'))
    code, _, err = run_cli(capsys, "select", path, "--out", spec_dir / "out", "--quiet")
    assert code == 2
    assert err.startswith("error: spec: mechanisms[0]") and needle in err, err


def test_a_wrong_label_collision_is_refused(spec_dir):
    spec = load_spec(_write(spec_dir, 'label = "weighted"'))

    class FakePosterior:
        variance_posterior_mean = 1.0

    with pytest.raises(SpecError, match="label 'weighted' is already a candidate"):
        spec.problem().candidates(FakePosterior())


@pytest.mark.slow
def test_the_audit_passes_the_correct_mechanism_and_catches_the_broken_one(spec_dir, capsys):
    code, out, err = run_cli(capsys, "audit", _write(spec_dir), "--candidate", "pooled", "--samples", "20000",
                             "--quiet")
    assert code == 0, err
    assert "pooled" in out and "no violation found" in out
    # claiming its epsilon with a quarter of the noise really gives about 4x epsilon: exit 1
    code, out, err = run_cli(capsys, "audit", _write(spec_dir, "params = { scale_factor = 0.25 }"),
                             "--candidate", "pooled", "--samples", "20000", "--quiet")
    assert code == 1, (out, err)
    assert "VIOLATION" in out


class GlobalNoise(Estimator):
    """Uses NumPy's global state, has no label, declares a number instead of a Guarantee."""

    def __init__(self, groups, bounds):
        super().__init__(groups, bounds)

    @property
    def privacy(self):
        return {"private": 1.0}

    def _estimate(self, data, rng):
        return data[0].mean(axis=1) + np.random.laplace(0, 1, data[0].shape[0])


class FixedLabel(GlobalNoise):
    label = "global"

    @property
    def privacy(self):
        return {"private": Guarantee(1.0), "public": Guarantee(float("inf"))}


class Deterministic(FixedLabel):
    def _estimate(self, data, rng):
        return data[0].mean(axis=1)


class TooLittleNoise(Estimator):
    label = "too-little"

    def __init__(self, groups, bounds):
        super().__init__(groups, bounds)

    @property
    def privacy(self):
        return {"private": Guarantee(1.0, 0.0, "replace")}

    def _estimate(self, data, rng):  # sensitivity 1/10, noise for sensitivity 1/40: really 4-DP
        return data[0].mean(axis=1) + rng.laplace(0, 0.025, data[0].shape[0])


def test_check_mechanism_lists_everything_missing():
    groups = [Group("private", 50, 1.0), Group("public", 20, float("inf"))]
    data = [np.full(50, 0.5), np.full(20, 0.5)]
    check_mechanism(WeightedMean(groups, (0, 1), sigma2=0.1), data)  # a built-in passes

    text = "\n".join(mechanism_problems(GlobalNoise(groups, (0, 1)), data))
    assert "label must be a non-empty string" in text
    assert "privacy['private'] must be a hybridpriv.core.privacy.Guarantee" in text
    with pytest.raises(MechanismCheckError, match="not a function of its rng"):
        check_mechanism(FixedLabel(groups, (0, 1)), data)
    assert any("same values under two seeds" in p for p in mechanism_problems(Deterministic(groups, (0, 1)), data))
    assert "not a subclass" in mechanism_problems(object())[0]

    class Local(FixedLabel):  # a class defined in a function cannot reach dask workers
        pass

    assert any("does not pickle" in p for p in mechanism_problems(Local(groups, (0, 1))))


def test_check_mechanism_runs_the_audit_when_asked():
    groups = [Group("private", 10, 1.0)]
    data = [np.zeros(10)]
    assert mechanism_problems(TooLittleNoise(groups, (0, 1)), data) == []  # the protocol is fine
    problems = mechanism_problems(TooLittleNoise(groups, (0, 1)), data, audit_samples=20_000)
    assert len(problems) == 1 and "the audit of unit 'private' found epsilon >=" in problems[0]
    with pytest.raises(ValueError, match="audit_samples needs data"):
        mechanism_problems(TooLittleNoise(groups, (0, 1)), audit_samples=1000)


def test_every_kind_accepts_mechanisms_and_documents_its_context():
    from hybridpriv.families import registry
    from hybridpriv.spec.custom import context_docs

    for kind, fam in registry().items():
        assert "posterior" in context_docs(fam) and len(context_docs(fam)) >= 2, kind
        text = template(kind)
        assert "# [[mechanisms]]" in text and "# class = " in text
        assert "\nmechanisms" not in text  # the key is documented once, commented out
    with pytest.raises(SpecError, match=r"mechanisms\[0\] must be a table"):
        parse_spec({"kind": "user-item", "column_sums": [3, 2], "epsilon": 1.0, "k": [1, 2],
                    "mechanisms": ["oops"]})


def test_an_entry_point_names_the_class(tmp_path, monkeypatch):
    """A package registering its mechanism under group hybridpriv.noise (a dist-info on sys.path)."""
    (tmp_path / "ep_mechanisms.py").write_text(MODULE)
    info = tmp_path / "ep_mechanisms-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-mechanisms\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hybridpriv.noise]\npooled-mean = ep_mechanisms:PooledMean\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from hybridpriv.spec.custom import load_class

    assert load_class("pooled-mean").__name__ == "PooledMean"
    with pytest.raises(SpecError, match=r"installed: \['pooled-mean'\]"):
        load_class("pooled")
