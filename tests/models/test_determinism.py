"""Same seed, same NUTS draws, whatever the state of PyTensor's compile cache (issue 15, item 3).

PyTensor compiles a model's log density and gradient with Numba and caches the compiled code
on disk (``<base_compiledir>/numba``).  With Numba's fast-math on, which copy of a compiled
helper ran depended on what the process compiled afresh and what it loaded from that cache, and
the gradient's last bits, and with them the NUTS draws, differed between a cold and a warm cache.
:meth:`~hybridpriv.core.model.KnowledgeModel.fit` now compiles with fast-math off.

Each fit runs in a fresh interpreter whose PyTensor compile folder and Numba cache folder are
folders of ``tmp_path``: the first run finds them empty (cold), the next ones find what it wrote
(warm).  The third run samples its 2 chains in 2 ``forkserver`` worker processes, which
recompile the sampler from its pickle with the default PyTensor configuration.  The fast tests
check the compile mode itself: no compiled kernel has fast-math, also after a pickle round trip.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hybridpriv.core.model import StrictNumbaLinker, _strict_sample_kwargs, sampling_mode
from pytensor.link.numba.linker import NumbaLinker
from pytensor.link.vm import VMLinker

# The fit: a grouped model with a public group and a released mean, as in the built-in example.
_SCRIPT = '''
import math
import sys

import numpy as np


def main():
    from hybridpriv.models import GroupedDataModel, NormalFamily, ReleasedMean
    from hybridpriv.core.privacy import Group

    out, cores = sys.argv[1], int(sys.argv[2])
    kwargs = {"cores": cores, "mp_ctx": "forkserver"} if cores > 1 else {"cores": 1}
    panel = np.round(np.clip(np.random.default_rng(20261122).normal(22, 9, 60), 0, 80), 1)
    model = GroupedDataModel(
        [Group("panel", 60, math.inf), Group("opt-in", 2000, 1.0), Group("default", 5000, 0.3)],
        (0, 80), family=NormalFamily(mu=(20.0, 20.0), sigma_scale=30.0), public_data={"panel": panel},
        released_means=[ReleasedMean(23.1, 0.5, "default")])
    post = model.fit(draws=150, tune=150, chains=2, seed=7, **kwargs)
    p = post.idata["posterior"]
    np.savez(out, **{name: p[name].values for name in p.data_vars})


if __name__ == "__main__":
    main()
'''

#: Hang guard per fresh interpreter (a cold fit takes well under a minute).
_TIMEOUT = 900


def _fit(tmp_path: Path, name: str, cores: int) -> dict[str, np.ndarray]:
    """Run the fit in a fresh interpreter with the compile caches of ``tmp_path``; its draws."""
    script = tmp_path / "fit.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ)
    env["PYTENSOR_FLAGS"] = f"base_compiledir={tmp_path / 'pytensor'}"
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    out = tmp_path / f"{name}.npz"
    proc = subprocess.run([sys.executable, str(script), str(out), str(cores)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=_TIMEOUT)
    assert proc.returncode == 0, f"{name} fit failed:\n{proc.stderr[-3000:]}"
    with np.load(out) as f:
        return {k: f[k] for k in f.files}


def _numba_cache_files(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "pytensor" / "numba").glob("*") if p.is_file()]


@pytest.mark.slow
def test_nuts_draws_are_the_same_bytes_with_a_cold_and_a_warm_compile_cache(tmp_path):
    assert not (tmp_path / "pytensor").exists() and not (tmp_path / "numba").exists()
    cold = _fit(tmp_path, "cold", cores=1)
    written = _numba_cache_files(tmp_path)
    assert written, "the cold fit wrote no compiled code to its cache folder: the next fit would not be warm"

    warm = _fit(tmp_path, "warm", cores=1)
    workers = _fit(tmp_path, "workers", cores=2)

    assert set(cold) >= {"mu", "sigma", "released_mean_0_z", "released_mean_0_latent"}
    for name, draws in cold.items():
        assert draws.shape[:2] == (2, 150) and np.ptp(draws) > 0, f"{name}: no posterior draws to compare"
        for label, other in (("warm cache", warm), ("warm cache, 2 forkserver workers", workers)):
            assert other[name].dtype == draws.dtype and other[name].shape == draws.shape
            assert other[name].tobytes() == draws.tobytes(), (
                f"{name}: {label} gives other draws than a cold cache "
                f"({np.count_nonzero(other[name] != draws)} of {draws.size} differ)")
    # every compiled function was compiled without fast-math (the cache keys say so): the
    # worker processes too, whose default configuration has fast-math on
    names = [p.name for p in _numba_cache_files(tmp_path)]
    assert not [n for n in names if "_fastmath1" in n], "some code was compiled with fast-math"
    assert [n for n in names if "_fastmath0" in n]


# ------------------------------------------------------------------------------ the compile mode


#: Helpers PyTensor jits once, when its Numba dispatch modules are imported, with the fast-math
#: flag of that moment; they do integer arithmetic only (fast-math flags act on floating point).
_IMPORT_TIME_INTEGER_HELPERS = {"_is_non_reversed_dense"}


def _fastmath_options(fn) -> list:
    """The ``fastmath`` option of every Numba dispatcher a compiled PyTensor function reaches
    (except :data:`_IMPORT_TIME_INTEGER_HELPERS`)."""
    seen, out, todo = set(), [], [fn.vm.jit_fn]
    while todo:
        d = todo.pop()
        if id(d) in seen:
            continue
        seen.add(id(d))
        py = d.py_func
        if py.__name__ in _IMPORT_TIME_INTEGER_HELPERS:
            continue
        out.append(d.targetoptions.get("fastmath"))
        refs = list(py.__globals__.values()) + [c.cell_contents for c in (py.__closure__ or ())]
        todo.extend(r for r in refs if hasattr(r, "targetoptions") and hasattr(r, "py_func"))
    return out


def _graph():
    x = pt.dvector("x")
    return [x], pt.exp(x) * 2.0 / (1.0 + x.sum()) + pt.log1p(x ** 2).sum()


def test_sampling_mode_compiles_every_kernel_without_fast_math_also_after_a_pickle():
    with pytensor.config.change_flags(numba__fastmath=True):  # PyTensor's default
        fast = pytensor.function(*_graph())
        strict = pytensor.function(*_graph(), mode=sampling_mode())
        x = np.array([0.5, 1.5, 3.0])
        fast(x), strict(x)
        assert any(_fastmath_options(fast)), "control: the default mode should compile with fast-math"
        assert len(_fastmath_options(strict)) > 1 and not any(_fastmath_options(strict))
        # a worker process recompiles the unpickled function with its own (default) configuration
        again = pickle.loads(pickle.dumps(strict))
        assert isinstance(again.maker.linker, StrictNumbaLinker)
        assert again(x).tobytes() == strict(x).tobytes()
        assert not any(_fastmath_options(again))


def test_sampling_mode_keeps_the_rewrites_and_leaves_other_backends_alone():
    strict = sampling_mode()
    assert type(strict.linker) is StrictNumbaLinker and isinstance(strict.linker, NumbaLinker)
    assert strict.provided_optimizer == pytensor.compile.mode.get_default_mode().provided_optimizer
    assert sampling_mode(strict) is strict
    assert type(sampling_mode("NUMBA").linker) is StrictNumbaLinker
    assert isinstance(sampling_mode("CVM").linker, VMLinker)  # the C backend: unchanged
    with pytest.raises(ValueError, match="BOGUS"):
        sampling_mode("BOGUS")


def test_fit_hands_pm_sample_a_strict_mode_unless_another_backend_is_asked_for():
    given = {"target_accept": 0.9, "compile_kwargs": {"on_unused_input": "ignore"}}
    out = _strict_sample_kwargs(given)
    assert given == {"target_accept": 0.9, "compile_kwargs": {"on_unused_input": "ignore"}}  # not mutated
    assert out["target_accept"] == 0.9 and out["compile_kwargs"]["on_unused_input"] == "ignore"
    assert type(out["compile_kwargs"]["mode"].linker) is StrictNumbaLinker
    assert type(_strict_sample_kwargs({"backend": "numba"})["compile_kwargs"]["mode"].linker) is StrictNumbaLinker
    assert "backend" not in _strict_sample_kwargs({"backend": "numba"})
    assert isinstance(_strict_sample_kwargs({"backend": "c"})["compile_kwargs"]["mode"].linker, VMLinker)
    assert isinstance(_strict_sample_kwargs({"compile_kwargs": {"mode": "CVM"}})["compile_kwargs"]["mode"].linker,
                      VMLinker)
    with pytest.raises(ValueError, match="backend"):
        _strict_sample_kwargs({"backend": "numba", "compile_kwargs": {"mode": "NUMBA"}})
    with pytest.raises(TypeError, match="compile_kwargs.*'fast'"):
        _strict_sample_kwargs({"compile_kwargs": "fast"})


def test_fit_asks_for_pymcs_own_nuts_unless_another_sampler_is_named():
    assert _strict_sample_kwargs({})["nuts_sampler"] == "pymc"
    assert _strict_sample_kwargs({"nuts_sampler": "nutpie"})["nuts_sampler"] == "nutpie"


def test_an_installed_nutpie_does_not_change_the_sampler(monkeypatch):
    """PyMC 6 samples with nutpie whenever it finds it installed and no sampler is named; the toolkit names
    PyMC's own, so the same seed gives the same draws on a machine with nutpie.  Here PyMC is made to believe
    nutpie is installed, and its route to an external sampler refuses: the fit must not take it."""
    import math

    import pymc.sampling.mcmc as mcmc
    from hybridpriv.core.privacy import Group
    from hybridpriv.models import GroupedDataModel, NormalFamily

    def external(*args, **kwargs):
        raise AssertionError(f"pm.sample went to the external sampler {kwargs.get('sampler')!r}")

    monkeypatch.setattr(mcmc, "NUTPIE_INSTALLED", True)
    monkeypatch.setattr(mcmc, "_nutpie_meets_min_version", lambda: True)
    monkeypatch.setattr(mcmc, "_sample_external_nuts", external)
    panel = np.random.default_rng(1).normal(20, 5, 30)
    model = GroupedDataModel([Group("panel", 30, math.inf), Group("private", 200, 1.0)], (0, 80),
                             family=NormalFamily(mu=(20.0, 20.0), sigma_scale=30.0), public_data={"panel": panel})
    post = model.fit(draws=20, tune=20, chains=1, seed=0, on_unconverged="ignore")
    assert post.idata["posterior"]["mu"].shape == (1, 20)
    # and the check can fail: without a named sampler PyMC takes the external route
    with pytest.raises(AssertionError, match="external sampler"):
        model.fit(draws=20, tune=20, chains=1, seed=0, on_unconverged="ignore", nuts_sampler=None)
