"""Packaging: every package of the source tree is installed (a plain ``pip install .`` must work)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_installed():
    import runpy

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(runpy.run_path(str(ROOT / "setup.py"), run_name="hybridpriv_setup")["packages"]())
    dirs = {"hybridpriv": ROOT / "hybridpriv", **{k: ROOT / v for k, v in conf["package-dir"].items()}}
    found = set()
    for name, folder in dirs.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join([name, *rel.parts]))
    assert found <= listed, f"packages setup.py does not install: {sorted(found - listed)}"
    assert listed <= found, f"setup.py installs packages that do not exist: {sorted(listed - found)}"


def _library_sources():
    for folder in ("hybridpriv", "models", "studies"):
        yield from (p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_library_code_never_chooses_the_matplotlib_backend():
    # the backend is the application's choice: figures are built on matplotlib.figure.Figure
    offenders = [str(p.relative_to(ROOT)) for p in _library_sources() if "matplotlib.use(" in p.read_text()]
    assert not offenders, offenders


def test_every_imported_third_party_module_is_declared():
    import ast
    import sys

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {d.split(">")[0].split("[")[0].split("=")[0].strip().lower().replace("-", "_")
                for d in [*conf["dependencies"], *conf["optional-dependencies"]["distributed"]]}
    aliases = {"dask": "dask", "distributed": "dask", "attr": "attrs"}  # dask[distributed] provides both; attrs provides attr
    local = {"hybridpriv", "models", "studies"}
    missing = set()
    for path in _library_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local:
                    continue
                if aliases.get(top, top).lower() not in declared:
                    missing.add(f"{top} ({path.relative_to(ROOT)})")
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"


def test_models_and_studies_cannot_be_imported_a_second_time_under_their_folder_names():
    import subprocess
    import sys

    for name in ("models", "studies"):
        r = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode != 0 and f"import this package as hybridpriv.{name}" in r.stderr, r.stderr


def test_models_of_public_knowledge_never_run_the_engine():
    # the layers run one way: a model is a source of datasets; evaluate + decide run on it, never from it (a model
    # may report its progress, engine.progress)
    import ast

    offenders = []
    paths = [ROOT / "hybridpriv" / "core" / "model.py", *(ROOT / "hybridpriv" / "families").rglob("model*.py")]
    # every family's model, and its helpers (model_*.py): the scan cannot silently find nothing
    assert len(paths) >= 1 + 6 + 8, [str(p.relative_to(ROOT)) for p in paths]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = (node.module or "").removeprefix("hybridpriv.")
                if module in ("workflow", "engine.evaluate", "engine.decision", "engine.chunks", "engine.cluster"):
                    offenders.append(f"{path.name}: from {module}")
    assert not offenders, offenders


def test_a_model_names_its_posterior_class_in_its_own_body():
    # not patched on after the class (`Model.posterior_class = Posterior`), where a reader of the class cannot see it
    patched = [f"{path.relative_to(ROOT)}:{line}" for path in _library_sources()
               for line, text in enumerate(path.read_text().splitlines(), start=1)
               if ".posterior_class = " in text and not text.startswith(" ")]
    assert not patched, patched
