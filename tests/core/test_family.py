"""A family is one object (issue 24): the registry, the protocol's defaults, an outside family found
through the entry-point group, and a capability a family lacks refused naming the family."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from hybridpriv.cli import main
from hybridpriv.core.family import Family, NoChecks, Unsupported
from hybridpriv.families import ENTRY_POINT_GROUP, FAMILIES, family, registry
from hybridpriv.spec import builtin_example_path, examples, load_spec, parse_spec, template


def test_every_registered_family_declares_what_the_core_asks():
    assert [f.name for f in FAMILIES] == list(registry())[: len(FAMILIES)]
    for fam in registry().values():
        assert isinstance(fam, Family) and fam.name and fam.summary and fam.data_kind, fam
        assert fam.top.doc and f"kind {fam.name}" in fam.top.doc
        assert "posterior" not in fam.context_docs and fam.context_docs  # posterior is added for every family
        assert fam.examples, fam
        for example in fam.examples:
            assert load_spec(builtin_example_path(example)).family is fam
        assert template(fam.name).startswith("# hybridpriv SPEC, kind")
    assert set(examples()) == {e for f in FAMILIES for e in f.examples}


def test_a_missing_capability_is_refused_naming_the_family_and_the_method(tmp_path, capsys, monkeypatch):
    bare = Family()
    with pytest.raises(Unsupported, match=r"family '' cannot be released: it has no loader .*\(it has no load_private"):
        bare.load_private(tmp_path, None)
    assert isinstance(bare.predictive_checks(object(), 0), NoChecks)
    # from the command line: a family that cannot be released (here K-means without its stand-in data) is refused
    # before anything else
    monkeypatch.setattr(type(family("kmeans")), "stand_in", Family.stand_in)
    code = main(["release", str(builtin_example_path("faithful")), "--data", str(tmp_path), "--candidate", "hybrid-1",
                 "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "family 'kmeans' cannot be released" in err
    with pytest.raises(ValueError, match=r"kind must be one of \['grouped', 'user-item'"):
        family("movies")


TINY = textwrap.dedent('''
    from hybridpriv.core.family import Family
    from hybridpriv.families.grouped import FAMILY as GROUPED


    class Tiny(Family):
        """An outside family: grouped means under another name (enough to prove the registry path)."""
        name = "tiny"
        summary = "grouped means, registered from outside"
        data_kind = "grouped"
        top, sections = GROUPED.top, GROUPED.sections
        context_docs = GROUPED.context_docs
        examples = {}

        def check(self, values, ctx):
            return GROUPED.check(values, ctx)

        def build(self, values):
            return GROUPED.build(values)


    FAMILY = Tiny()
''')


def test_an_outside_family_is_found_through_the_entry_point_group(tmp_path, monkeypatch):
    import hybridpriv.families as families

    (tmp_path / "tiny_family.py").write_text(TINY)
    info = tmp_path / "tiny_family-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-family\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntiny = tiny_family:FAMILY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(families, "_loaded", None)
    try:
        assert family("tiny").summary == "grouped means, registered from outside"
        spec = parse_spec({"kind": "tiny", "bounds": [0, 10], "groups": [{"name": "a", "size": 10, "epsilon": 1.0}]})
        assert spec.family.name == "tiny" and spec.problem().candidates is not None
    finally:
        monkeypatch.setattr(families, "_loaded", None)
    # a broken entry point is refused, naming it
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbroken = tiny_family:NOTHING\n")
    monkeypatch.setattr(families, "_loaded", None)
    try:
        with pytest.raises(Unsupported, match="entry point 'broken' .* failed to load"):
            registry()
    finally:
        monkeypatch.setattr(families, "_loaded", None)


def test_no_core_module_names_a_family():
    """The core asks the family: no string literal in a core module is a family's or a data kind's name, and no
    core module imports a family's package (issue 24's rule; the registry and the families are not core)."""
    import ast
    from pathlib import Path

    from hybridpriv.families import data_kinds

    root = Path(__file__).resolve().parents[2]
    names = set(registry()) | set(data_kinds())
    packages = {p.name for p in (root / "hybridpriv" / "families").iterdir() if p.is_dir() and p.name != "__pycache__"}
    # every package but the families, the registry and the catalogue of mechanisms (hybridpriv.estimators, which
    # re-exports each family's); the audit cases' own family modules aside
    core = [*(root / "hybridpriv").glob("*.py"), *(root / "hybridpriv" / "core").glob("*.py"),
            *(root / "hybridpriv" / "engine").glob("*.py"),
            *(root / "hybridpriv" / "spec").glob("*.py"), *(root / "hybridpriv" / "release").glob("*.py"),
            *(root / "hybridpriv" / "calibration_runs").glob("*.py"),
            *[root / "hybridpriv" / "testing" / f for f in ("__init__.py", "core.py", "pairs.py", "intervals.py",
                                                            "conformance.py")],
            *[root / "hybridpriv" / "testing" / "cases" / f for f in ("__init__.py", "_registry.py")]]
    assert len([p for p in core if p.parent.name == "engine"]) >= 7  # the engine is covered since it moved
    found = set()
    for path in core:
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.add((rel, node.value))
            if isinstance(node, ast.ImportFrom) and node.module and any(
                    f"families.{p}" in node.module for p in packages):
                found.add((rel, f"import {node.module}"))
    assert not found, sorted(found)


OUTSIDE = textwrap.dedent('''
    from hybridpriv.families.histogram.family import HistogramFamily


    class Outside(HistogramFamily):
        """A family from another package: the histogram family's code under another name."""
        name = "outside-histogram"
        summary = "histograms, registered from outside"
        defines = ()  # it reuses the category-counts data kind
        examples = {}


    FAMILY = Outside()
''')


@pytest.mark.slow
def test_an_outside_family_is_selected_audited_released_and_calibrated(tmp_path, monkeypatch, capsys):
    """Registered only through the entry-point group, a family goes the whole way with no core edit."""
    import dataclasses
    import json

    import hybridpriv.families as families
    from hybridpriv.calibration import calibrate
    from hybridpriv.core.random import rng

    (tmp_path / "outside_family.py").write_text(OUTSIDE)
    info = tmp_path / "outside_family-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-family\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\noutside = outside_family:FAMILY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(families, "_loaded", None)
    try:
        spec = tmp_path / "o.toml"
        spec.write_text(template("outside-histogram"))
        assert 'kind = "outside-histogram"' in spec.read_text()
        assert main(["select", str(spec), "--out", str(tmp_path / "sel"), "--draws", "40", "--quiet"]) == 0
        assert main(["audit", str(spec), "--candidate", "pooled", "--samples", "2000", "--quiet"]) == 0
        data = tmp_path / "data"
        data.mkdir()
        (data / "opt-in.csv").write_text("a\nb\n" * 400)
        (data / "strict.csv").write_text("c\n" * 300)
        assert main(["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "sel" / "selection.nc"),
                     "--out", str(tmp_path / "r")]) == 0
        assert json.loads((tmp_path / "r" / "release.json").read_text())["kind"] == "outside-histogram"
        truth = family("histogram").synthetic_truth(0, rng(0, "calibration", "outside", 0, "truth"), quick=True)
        truth = dataclasses.replace(truth, family="outside-histogram", spec={**truth.spec, "kind": "outside-histogram"})
        ds = calibrate([truth], 0, {"outside-histogram": {"evaluation": {"draws": 40, "trials": 5}}}, realised_draws=2,
                       realised_trials=100)
        assert list(ds.family.values) == ["outside-histogram"] and np.isfinite(ds.regret.values).all()
    finally:
        monkeypatch.setattr(families, "_loaded", None)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [f.name for f in FAMILIES])
def test_every_template_runs_as_printed(kind, tmp_path, capsys):
    """Issue 24: ``hybridpriv spec KIND --with-data DIR`` then ``select`` runs, exactly as printed."""
    folder = tmp_path / "t"
    assert main(["spec", kind, "--with-data", str(folder)]) == 0
    files = sorted(p.name for p in folder.iterdir())
    assert f"{kind}.toml" in files and len(files) == 1 + len(family(kind).template_files())
    capsys.readouterr()
    assert main(["select", str(folder / f"{kind}.toml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0, \
        capsys.readouterr().err
    assert main(["spec", kind, "--with-data", str(folder)]) == 2  # never overwrites
