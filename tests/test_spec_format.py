"""SPEC format 2 (issue 24, item 4): the same section names in every kind, and format-1 SPECs still read.

Format 2 calls public knowledge ``[model]``, the sampler's settings ``[fit]`` and the candidates
``evaluation.candidates`` in every kind.  The format-1 versions of the built-in examples are made here by
hand-written reverse moves (not by the reader's table), then read and compared with the format-2 files.
"""

from __future__ import annotations

import copy
import tomllib

import pytest

from hybridpriv.families import registry
from hybridpriv.spec import SPEC_FORMAT, SpecError, builtin_example_path, examples, load_spec, parse_spec, template

#: What each kind's format-1 SPECs called the format-2 keys (written out independently of Family.renamed).
FORMAT1 = {
    "grouped": {"fit.chains": "model.chains", "fit.tune": "model.tune", "evaluation.candidates": "evaluation.estimators"},
    "histogram": {"evaluation.candidates": "evaluation.estimators"},
    "hybrid-trust": {"model": "knowledge", "fit.chains": "knowledge.chains", "fit.tune": "knowledge.tune"},
    "kmeans": {"model": "knowledge", "fit.chains": "knowledge.chains", "evaluation.candidates": "evaluation.algorithms"},
    "public-private": {"fit.chains": "model.chains", "fit.tune": "model.tune"},
    "user-item": {"fit.chains": "evaluation.chains"},
}


def _pop(raw: dict, path: str):
    *parents, last = path.split(".")
    for p in parents:
        raw = raw.get(p, {})
    return raw.pop(last, None)


def _put(raw: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for p in parents:
        raw = raw.setdefault(p, {})
    raw[last] = value


def downgrade(raw: dict, kind: str) -> dict:
    """A format-2 SPEC written as format 1 (no ``format`` key, the old names)."""
    out = copy.deepcopy(raw)
    out.pop("format", None)
    moves = FORMAT1[kind]
    # a renamed section first (its keys go with it), then the keys that moved into or out of it
    for new, old in sorted(moves.items(), key=lambda kv: kv[0].count(".")):
        value = _pop(out, new)
        if value is not None:
            assert _pop(copy.deepcopy(out), old) is None, (old, "the downgrade would overwrite it")
            _put(out, old, value)
    for section in [k for k in out if k in ("fit",) and not out[k]]:
        del out[section]
    return out


def _example_raws():
    for name, where in examples().items():
        path = builtin_example_path(name)
        yield name, path, tomllib.loads(path.read_text())


def test_every_kind_is_covered():
    assert set(FORMAT1) == set(registry()), "a new family: say what its format-1 SPECs called things"


def test_builtin_examples_are_format_2():
    for name, path, raw in _example_raws():
        assert raw.get("format") == SPEC_FORMAT, name
        assert load_spec(path).upgraded == (), name


@pytest.mark.parametrize("name", sorted(examples()))
def test_a_format_1_spec_reads_as_its_format_2_twin(name, tmp_path):
    path = builtin_example_path(name)
    raw = tomllib.loads(path.read_text())
    new = load_spec(path)
    old_raw = downgrade(raw, new.kind)
    old = parse_spec(old_raw, path.parent, str(path))
    assert old.config() == new.config()
    changed = [f"{o} -> {n}" for n, o in FORMAT1[new.kind].items()]
    assert set(old.upgraded) <= set(changed)
    moved = [n for n in FORMAT1[new.kind] if _pop(copy.deepcopy(raw), n) is not None]
    assert len(old.upgraded) == len(moved), (old.upgraded, moved)


def test_a_format_2_spec_refuses_a_format_1_name_naming_the_new_one():
    raw = tomllib.loads(builtin_example_path("salaries").read_text())
    raw["knowledge"] = raw.pop("model")
    with pytest.raises(SpecError, match=r"knowledge is the format-1 name of model: with format = 2 write model"):
        parse_spec(raw, builtin_example_path("salaries").parent)


def test_both_names_in_a_format_1_spec_are_refused():
    raw = downgrade(tomllib.loads(builtin_example_path("grouped").read_text()), "grouped")
    raw["model"]["chains"] = 2
    raw["fit"] = {"chains": 3}
    with pytest.raises(SpecError, match=r"both model.chains \(its format-1 name\) and fit.chains are given"):
        parse_spec(raw, builtin_example_path("grouped").parent)


@pytest.mark.parametrize("fmt", [0, 3, "2", True])
def test_an_unknown_format_is_refused_naming_it(fmt):
    raw = tomllib.loads(builtin_example_path("grouped").read_text())
    raw["format"] = fmt
    with pytest.raises(SpecError, match=r"format must be"):
        parse_spec(raw, builtin_example_path("grouped").parent)


def test_a_format_1_error_names_the_key_as_the_spec_wrote_it():
    raw = downgrade(tomllib.loads(builtin_example_path("salaries").read_text()), "hybrid-trust")
    raw["knowledge"]["tune"] = -1
    with pytest.raises(SpecError) as info:
        parse_spec(raw, builtin_example_path("salaries").parent)
    text = str(info.value)
    assert text.startswith("spec: knowledge.tune must be an integer >= 0, got -1"), text
    assert "read as format 2 by moving " in text and "knowledge.tune -> fit.tune" in text


@pytest.mark.parametrize("kind", sorted(registry()))
def test_every_template_is_format_2_with_the_shared_sections(kind):
    text = template(kind)
    assert f"\nformat = {SPEC_FORMAT}\n" in text
    for old in ("[knowledge]", "estimators =", "algorithms =", "knowledge."):
        assert old not in text, (kind, old)
    sections = [line for line in text.splitlines() if line.startswith("[") and not line.startswith("[[")]
    assert sections[-1] == "[evaluation]", sections
    fam = registry()[kind]
    # the chains of a fitted model are in [fit] wherever the family has chains
    if any(k.name == "fit" for k in fam.top.keys):
        assert "[fit]" in sections and "\n# chains = 2\n" in text.split("[fit]")[1].split("\n[")[0]



# -- typed values: one frozen dataclass per table, generated from the declaration that writes the template --

@pytest.mark.parametrize("name", sorted(examples()))
def test_spec_values_are_frozen_dataclasses_named_after_the_family(name):
    import dataclasses
    import json

    spec = load_spec(builtin_example_path(name))
    v = spec.values
    prefix = "".join(p.capitalize() for p in spec.kind.split("-"))
    assert type(v).__name__ == f"{prefix}Spec" and dataclasses.is_dataclass(v)
    assert type(v.evaluation).__name__ == f"{prefix}Evaluation"
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.evaluation = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.evaluation.draws = 1
    with pytest.raises(TypeError):
        v.replace(no_such_key=1)
    # the same family gives the same classes (one per declaration), and the SPEC's attributes are the values'
    again = load_spec(builtin_example_path(name)).values
    assert type(again) is type(v) and type(again.evaluation) is type(v.evaluation)
    assert spec.evaluation is v.evaluation
    json.dumps(spec.config())  # provenance: plain JSON


@pytest.mark.parametrize("kind", sorted(registry()))
def test_the_config_has_exactly_the_template_keys_and_the_declared_derived_values(kind):
    import dataclasses
    import re

    from hybridpriv.spec import top_table

    top = top_table(registry()[kind])
    text = template(kind)
    # top-level keys of the template (set or commented out), before the first section
    head = text.split("\n[")[0]
    keys = set(re.findall(r"^#? ?([a-z_]+) = ", head, flags=re.M))
    sections = set(re.findall(r"^\[\[?([a-z_]+)\]\]?$", text, flags=re.M))
    fields = {f.name for f in dataclasses.fields(top.config)}
    assert fields == keys | sections | {"mechanisms"} | set(top.derived), (kind, fields ^ (keys | sections))
