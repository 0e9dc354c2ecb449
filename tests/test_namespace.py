"""The curated ``hybridpriv`` namespace: each name is the library's own object, imported on first use."""

import subprocess
import sys

import pytest

import hybridpriv as hp
from hybridpriv.engine import Engine
from hybridpriv import workflow
from hybridpriv.core import privacy
from hybridpriv.engine import decision, evaluate
from hybridpriv.spec import builtin_example_path, load_spec


def test_each_curated_name_is_the_object_its_module_defines():
    assert hp.select is workflow.select and hp.evaluate is evaluate.evaluate and hp.decide is decision.decide
    assert hp.Group is privacy.Group and hp.Bounds is privacy.Bounds and hp.Guarantee is privacy.Guarantee
    assert hp.load_spec is load_spec
    assert set(hp.__all__) == {"__version__", "select", "evaluate", "decide", "Group", "Bounds", "Guarantee",
                               "load_spec"}
    assert set(hp.__all__) <= set(dir(hp))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        hp.nonsense  # noqa: B018


def test_importing_the_package_loads_neither_pymc_nor_numpy():
    code = "import sys, hybridpriv; print(sorted(m for m in ('pymc', 'numpy', 'xarray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_select_reads_the_spec_and_applies_the_overrides_as_the_cli_flags_do(monkeypatch):
    seen = {}

    def fake_run(problem, **run):
        seen.update(problem=problem, run=run)
        return workflow.Selection(problem, None, None, None)

    monkeypatch.setattr(workflow, "run_selection", fake_run)
    path = builtin_example_path("grouped")
    result = hp.select(path, draws=40, trials=5, seed=7, engine=Engine(chunk_size=3))
    problem = seen["problem"]
    assert (problem.datasets, problem.trials, problem.seed) == (40, 5, 7) and seen["run"] == {"engine": Engine(chunk_size=3)}
    assert result.config["overrides"] == {"draws": 40, "trials": 5, "seed": 7}
    # the same through a Spec, and a Problem as it is
    hp.select(load_spec(path), draws=41)
    assert seen["problem"].datasets == 41 and seen["problem"].chance_warning == 0.25
    result = hp.select(path, chance_warning=0.1)
    assert seen["problem"].chance_warning == 0.1 and result.config["overrides"] == {"chance_warning": 0.1}
    built = load_spec(path).problem()
    hp.select(built)
    assert seen["problem"] is built


def test_select_refuses_what_it_cannot_use():
    path = builtin_example_path("grouped")
    with pytest.raises(ValueError, match=r"draws: a Problem is built already"):
        hp.select(load_spec(path).problem(), draws=10)
    with pytest.raises(TypeError, match=r"spec must be a SPEC path, a Spec or a Problem, got int"):
        hp.select(42)
    with pytest.raises(ValueError, match=r"evaluation\.draws"):
        hp.select(path, draws=-3)
    with pytest.raises(ValueError, match=r"evaluation\.chance_warning must be <= 1, got 2"):
        hp.select(path, chance_warning=2)
