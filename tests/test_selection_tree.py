"""Selection.to_datatree (issue 24, item 5): a Python user gets the file ``select`` writes; the evaluation's
``posterior_draw`` names the posterior draw each dataset came from; no variable is stored twice."""

from __future__ import annotations

import numpy as np
import xarray as xr

from hybridpriv.core.random import rng
from hybridpriv.spec import parse_spec
from hybridpriv.workflow import run_selection

SPEC = {"kind": "histogram", "categories": ["a", "b", "c"],
        "groups": [{"name": "panel", "size": 6, "epsilon": float("inf"), "data": ["a", "b", "a", "c", "a", "b"]},
                   {"name": "opt-in", "size": 200, "epsilon": 1.0}],
        "evaluation": {"draws": 30, "trials": 4}}


def test_the_tree_holds_each_group_once_and_names_the_posterior_draws(tmp_path):
    from hybridpriv.cli import main

    problem = parse_spec(SPEC).problem()
    result = run_selection(problem)
    tree = result.to_datatree()
    assert {"posterior", "evaluation", "decision"} <= set(tree.children)
    assert "risk" in tree["evaluation"] and "risk" not in tree["decision"]
    assert tree.attrs["kind"] == "histogram" and tree.attrs["recommended"] == result.decision.attrs["recommended"]
    ev = tree["evaluation"].to_dataset()
    draws = ev["posterior_draw"].values
    assert draws.size == ev.sizes["draw"] and np.all(np.diff(draws) > 0) and draws.max() < result.posterior.shape[1]
    # the dataset at (chain, draw) is the posterior's draw posterior_draw[draw] (stream ("dataset", chain, draw))
    for c, d in ((0, 0), (1, ev.sizes["draw"] - 1)):
        data = result.posterior.generate(c, int(draws[d]), rng(problem.seed, "dataset", c, d))
        truth = problem.task.truth(data)
        assert np.isclose(float(ev["truth"].sel(quantity="top_share", chain=c, draw=d)), truth["top_share"])
    # the CLI writes the same groups
    path = tmp_path / "spec.toml"
    path.write_text('kind = "histogram"\ncategories = ["a", "b", "c"]\n[[groups]]\nname = "panel"\nsize = 6\n'
                    'epsilon = inf\ndata = ["a", "b", "a", "c", "a", "b"]\n[[groups]]\nname = "opt-in"\nsize = 200\n'
                    'epsilon = 1.0\n[evaluation]\ndraws = 30\ntrials = 4\n')
    assert main(["select", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    written = xr.open_datatree(tmp_path / "out" / "selection.nc")
    assert set(written.children) == set(tree.children)
    assert np.array_equal(written["evaluation"]["posterior_draw"].values, draws)
    np.testing.assert_array_equal(written["decision"]["expected_loss"].values, tree["decision"]["expected_loss"].values)


def test_audit_selection_audits_the_instance_the_selection_evaluated(tmp_path, capsys):
    """``audit --selection`` rebuilds the candidate from the selection's posterior: its parameters (the posterior's
    fingerprint among them) are those evaluated, where a fresh fit with another seed gives other ones."""
    import json

    from hybridpriv.cli import main

    path = tmp_path / "spec.toml"
    path.write_text('kind = "histogram"\ncategories = ["a", "b", "c"]\n[[groups]]\nname = "panel"\nsize = 6\n'
                    'epsilon = inf\ndata = ["a", "b", "a", "c", "a", "b"]\n[[groups]]\nname = "opt-in"\nsize = 200\n'
                    'epsilon = 1.0\n[evaluation]\ndraws = 30\ntrials = 4\n')
    assert main(["select", str(path), "--out", str(tmp_path / "out"), "--seed", "5", "--quiet"]) == 0
    selection = str(tmp_path / "out" / "selection.nc")
    tree = xr.open_datatree(selection)
    # without --candidate, the recommendation is audited
    assert main(["audit", str(path), "--selection", selection, "--samples", "200", "--quiet"]) == 0
    assert f"auditing {tree.attrs['recommended']} as the selection" in capsys.readouterr().out
    # "weighted" is built from the posterior (its sigma2 is the posterior's): the selection's instance is audited
    chosen = "weighted"
    assert main(["audit", str(path), "--selection", selection, "--candidate", chosen, "--samples", "2000",
                 "--record", str(tmp_path / "rec.json"), "--quiet"]) == 0
    assert f"auditing {chosen} as the selection" in capsys.readouterr().out
    record = json.loads((tmp_path / "rec.json").read_text())["audits"]
    from hybridpriv.core.params import as_attrs, fingerprint

    evaluated = str(tree["decision"]["params_fingerprint"].sel(estimator=chosen).values)
    assert [a["candidate"] for a in record] == [chosen] and fingerprint(record[0]["binding"]["params"]) == evaluated
    # the candidates group holds the same parameters, readable: one attribute per parameter
    stored = dict(tree[f"candidates/{chosen}"].attrs)
    assert stored["class"] == record[0]["binding"]["class"]
    assert stored.keys() - {"class"} == as_attrs(record[0]["binding"]["params"]).keys()
    # a fit of its own (the SPEC's seed 0, not the run's 5) would have audited another instance
    assert main(["audit", str(path), "--candidate", chosen, "--samples", "2000", "--record", str(tmp_path / "own.json"),
                 "--quiet"]) == 0
    own = json.loads((tmp_path / "own.json").read_text())["audits"][0]["binding"]["params"]
    assert fingerprint(own) != evaluated


def test_candidate_parameters_are_attributes_of_a_candidates_group_and_read_back_equal(tmp_path):
    """Issue 24, item 5: no JSON strings; each candidate a node of ``candidates`` whose attributes are its class and
    parameters (nested ones by path), equal after a netCDF round trip to what the candidate says of itself."""
    from hybridpriv.core.params import as_attrs, describe, fingerprint
    from hybridpriv.report import write_result

    problem = parse_spec(SPEC).problem()
    result = run_selection(problem)
    path = write_result(tmp_path / "selection.nc", result.to_datatree())
    back = xr.open_datatree(path)
    coords = [str(c) for c in result.decision[result.decision.attrs["candidate_dim"]].values]
    assert sorted(back["candidates"].children) == sorted(coords)
    for coord, mech in problem.candidates(result.posterior).items():
        attrs = dict(back[f"candidates/{coord}"].attrs)
        expected = as_attrs(describe(mech.get_params()))
        assert attrs.pop("class") == f"{type(mech).__module__}:{type(mech).__qualname__}"
        assert attrs.keys() == expected.keys(), coord
        for key, value in expected.items():
            np.testing.assert_array_equal(np.asarray(attrs[key]), np.asarray(value), err_msg=f"{coord}: {key}")
            assert not (isinstance(attrs[key], str) and attrs[key][:1] in "[{" and len(attrs[key]) > 2), (coord, key)
        sel = back["decision"]["params_fingerprint"].sel({result.decision.attrs["candidate_dim"]: coord})
        assert str(sel.values) == fingerprint(mech.get_params())
    assert "params" not in back["decision"].coords and "params" not in back["evaluation"].coords


def test_as_attrs_spells_every_json_leaf_and_keeps_numbers_as_numbers():
    from hybridpriv.core.params import as_attrs

    got = as_attrs({"a": 1, "b": [1, 2], "c": [0.5, 1], "d": ["x", "y"], "e": {"f": None, "g": True, "h": []},
                    "i": [{"j": 1}, "k"], "l": {}})
    assert got.keys() == {"a", "b", "c", "d", "e.f", "e.g", "e.h", "i[0].j", "i[1]", "l"}
    assert got["a"] == 1 and got["b"].dtype == np.int64 and got["c"].dtype == np.float64 and got["d"] == ["x", "y"]
    assert (got["e.f"], got["e.g"], got["e.h"], got["i[0].j"], got["i[1]"], got["l"]) == ("none", "true", "[]", 1, "k", "{}")


def test_a_release_refuses_a_rebuilt_candidate_that_differs_naming_the_parameter(tmp_path, capsys):
    from hybridpriv.cli import main

    spec = tmp_path / "spec.toml"
    spec.write_text('kind = "histogram"\ncategories = ["a", "b", "c"]\n[[groups]]\nname = "panel"\nsize = 6\n'
                    'epsilon = inf\ndata = ["a", "b", "a", "c", "a", "b"]\n[[groups]]\nname = "opt-in"\nsize = 200\n'
                    'epsilon = 1.0\n[evaluation]\ndraws = 30\ntrials = 4\ncandidates = ["weighted", "pooled"]\n')
    assert main(["select", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    tree = xr.open_datatree(tmp_path / "out" / "selection.nc").load()
    chosen = str(tree.attrs["recommended"])
    # as if the selection had evaluated another instance: its fingerprint and one parameter differ
    fp = tree["decision"]["params_fingerprint"].values.copy()
    fp[[str(c) for c in tree["decision"]["estimator"].values].index(chosen)] = "0" * 64
    tree["decision"] = tree["decision"].to_dataset().assign_coords(params_fingerprint=("estimator", fp))
    node = tree[f"candidates/{chosen}"]
    key = sorted(k for k in node.attrs if k != "class")[0]
    node.attrs[key] = "something else"
    tree.to_netcdf(tmp_path / "tampered.nc")
    data = tmp_path / "data"
    data.mkdir()
    (data / "opt-in.csv").write_text("category\n" + "a\n" * 120 + "b\n" * 50 + "c\n" * 30)
    code = main(["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "tampered.nc"),
                 "--out", str(tmp_path / "rel"), "--ledger", str(tmp_path / "ledger.json")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "rel" / "release.json").exists()
    assert f"candidate {chosen!r} rebuilt from the SPEC and selection differs from the one evaluated" in err, err
    assert f"{key}: 'something else' there" in err, err


def test_provenance_says_on_which_machine_and_with_which_samplers_a_result_was_made(tmp_path):
    """NUTS draws differ between machines from the same seed (docs/calibration.md): a result records the machine
    and the PyMC and PyTensor versions beside NumPy's."""
    from importlib.metadata import version

    from hybridpriv.report import machine, provenance

    xeon = tmp_path / "cpuinfo"
    xeon.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse4_2 avx avx2 fma\n\n"
                    "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse4_2 avx avx2 fma\n")
    said = machine(xeon).split(", ")
    assert said[1:3] == ["Intel(R) Xeon(R) Processor", "avx2"] and said[3].endswith(" cores")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm\n")
    assert machine(arm).split(", ")[2] == "asimd"
    assert machine(tmp_path / "absent").split(", ")[2] == "unknown"  # no description: said, not guessed
    p = provenance({"kind": "grouped"}, 0)
    assert p["pymc"] == version("pymc") and p["pytensor"] == version("pytensor") and p["machine"] == machine()
