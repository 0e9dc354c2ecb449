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
    evaluated = json.loads(str(tree["decision"]["params"].sel(estimator=chosen).values))
    assert [a["candidate"] for a in record] == [chosen] and record[0]["binding"]["params"] == evaluated
    # a fit of its own (the SPEC's seed 0, not the run's 5) would have audited another instance
    assert main(["audit", str(path), "--candidate", chosen, "--samples", "2000", "--record", str(tmp_path / "own.json"),
                 "--quiet"]) == 0
    own = json.loads((tmp_path / "own.json").read_text())["audits"][0]["binding"]["params"]
    assert own != evaluated
