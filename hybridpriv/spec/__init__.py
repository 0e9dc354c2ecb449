"""SPEC files: what is public, which candidates to compare, how to evaluate them (TOML).

One schema per SPEC kind (:mod:`hybridpriv.spec.schema`), declared once: parsing refuses unknown
keys naming them, every error names the key and the value, and ``hybridpriv spec KIND`` prints a
commented template generated from the same declaration.  Each kind builds a
:class:`hybridpriv.workflow.Problem` (model, candidates, task, candidate dimension, requirements)
and every kind runs through the same select path (:func:`hybridpriv.workflow.run_selection`).

==================  =============================================================================
kind                what it chooses
==================  =============================================================================
``grouped``         a mean or median estimator for groups of different epsilons (Ferrando et al.)
``user-item``       k, the items kept per user, for DP item counts (Zeber & Lopatka)
``hybrid-trust``    a mean estimator for trusted-curator beside local-DP users (Avent et al.)
``kmeans``          DP K-means under hybrid trust: algorithm x iterations (Avent et al.)
``public-private``  an M-estimator helped by public records: approach, subset size (Wang et al.)
==================  =============================================================================
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import grouped, useritem
from . import hybrid_trust
from . import public_private
from . import kmeans
from .custom import MECHANISMS, attach, template_block
from .schema import Context, Key, SpecError, Table, tables, template as _template

__all__ = ["EXAMPLES", "KINDS", "Kind", "Spec", "SpecError", "builtin_example_path", "load_spec", "parse_spec",
           "template"]


#: Largest SPEC file read (TOML parsing is slow on long inline lists; data belong in CSV files).
MAX_SPEC_BYTES = 2**20


@dataclass(frozen=True)
class Kind:
    """A SPEC kind: its schema (top table and sections), cross-key checks and problem builder."""

    name: str
    summary: str
    top: Table
    sections: Sequence[tuple[str, Table, bool]]
    check: Callable[[dict[str, Any], Context], dict[str, Any]]
    build: Callable[[dict[str, Any]], Any]
    #: ``context(values, posterior)``: what a SPEC-named mechanism's constructor may take.
    context: Callable[[dict[str, Any], Any], dict[str, Any]]

    def __post_init__(self) -> None:
        # every kind accepts [[mechanisms]]: your own classes beside the built-in candidates
        key = Key("mechanisms", tables(MECHANISMS), [], doc=MECHANISMS.doc)
        object.__setattr__(self, "top", Table((*self.top.keys, key), self.top.doc, self.top.examples))


KINDS: dict[str, Kind] = {
    "grouped": Kind("grouped", "a mean or median estimator for groups of different epsilons (Ferrando et al.)",
                    grouped.TOP, grouped.SECTIONS, grouped.check, grouped.build,
                    grouped.context),
    "user-item": Kind("user-item", "k, the items kept per user, for DP item counts (Zeber & Lopatka)",
                      useritem.TOP, useritem.SECTIONS, useritem.check, useritem.build,
                      useritem.context),
    "hybrid-trust": Kind("hybrid-trust", "a mean estimator for users who trust the curator beside local-DP users "
                         "(Avent et al.)", hybrid_trust.TOP, hybrid_trust.SECTIONS, hybrid_trust.check, hybrid_trust.build,
                         hybrid_trust.context),
    "public-private": Kind("public-private", "an M-estimator of private records helped by public ones: the approach "
                           "and the public subset size (Wang et al.)", public_private.TOP, public_private.SECTIONS,
                           public_private.check, public_private.build, public_private.context),
}
KINDS["kmeans"] = Kind("kmeans", "DP K-means for users who trust the curator beside local-DP users: the algorithm "
                       "and its iterations (Avent et al.)", kmeans.TOP, kmeans.SECTIONS, kmeans.check, kmeans.build,
                       kmeans.context)

#: Built-in examples: name -> (file in hybridpriv/examples, kind).
EXAMPLES = {"grouped": "grouped.toml", "favorite-sites": "favorite-sites.toml"}
EXAMPLES["salaries"] = "salaries.toml"  # hybrid-trust
EXAMPLES["pima"] = "pima.toml"  # public-private
EXAMPLES["faithful"] = "faithful.toml"  # kmeans
EXAMPLES["flights"] = "flights.toml"  # user-item, real data


@dataclass
class Spec:
    """A validated SPEC: its kind, its values (defaults filled, converted) and where it came from."""

    kind: str
    values: dict[str, Any]
    source: str = "<inline>"
    #: The SPEC file's folder (a ``[[mechanisms]]`` module may sit beside the file).
    base_dir: Path | None = None
    #: The TOML as read (before defaults and checks), for :meth:`with_overrides`.
    raw: Mapping[str, Any] | None = None

    def with_overrides(self, evaluation: Mapping[str, Any]) -> Spec:
        """This SPEC with ``[evaluation]`` keys replaced (the CLI's ``--draws``, ``--trials``, ``--seed``),
        checked again by the kind's schema and size guards as if the file said so: an override the file
        could not hold is refused the same way, naming ``evaluation.KEY``."""
        if not evaluation:
            return self
        if self.raw is None:
            raise SpecError("this SPEC was not read from TOML; build it with the values you want instead")
        raw = dict(self.raw)
        raw["evaluation"] = {**dict(raw.get("evaluation") or {}), **dict(evaluation)}
        return parse_spec(raw, self.base_dir, self.source)

    def problem(self):
        """The :class:`hybridpriv.workflow.Problem` this SPEC describes (the model is built and validated)."""
        kind = KINDS[self.kind]
        return attach(kind.build(self.values), self.kind, self.values.get("mechanisms", []),
                      lambda posterior: kind.context(self.values, posterior), self.base_dir)

    def imports(self) -> list[str]:
        """The code this SPEC makes hybridpriv import (its ``[[mechanisms]]``), found without importing it:
        ``"module (file)"`` or ``"entry point NAME = module:Class (distribution)"``.  A SPEC is trusted
        input: the CLI prints this list before it runs anything."""
        from .custom import describe_import

        return list(dict.fromkeys(describe_import(m["class"], self.base_dir) for m in self.values.get("mechanisms", [])))

    def config(self) -> dict[str, Any]:
        """The values as JSON data (arrays by checksum), for provenance."""
        from ..params import describe

        return {"kind": self.kind, "source": self.source, **describe(self.values)}

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} has no {name!r}")


def parse_spec(raw: Mapping[str, Any], base_dir: str | Path | None = None, source: str = "<inline>") -> Spec:
    """Validate a SPEC given as a dict (e.g. from ``tomllib``)."""
    if not isinstance(raw, Mapping):
        raise SpecError("the top level must be a table")
    kind = raw.get("kind", "grouped")
    if kind not in KINDS:
        raise SpecError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    ctx = Context(Path(base_dir) if base_dir is not None else Path.cwd())
    k = KINDS[kind]
    values = k.check(k.top.parse(dict(raw), "", ctx), ctx)
    return Spec(kind, values, source, ctx.base_dir, dict(raw))


def load_spec(path: str | Path) -> Spec:
    """Read and validate a SPEC file (TOML)."""
    path = Path(path)
    if path.is_dir():
        raise SpecError(f"{path} is a folder, not a SPEC file")
    if not path.is_file():
        raise FileNotFoundError(f"spec file not found: {path}")
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(f"{path} is {size / 2**20:.1f} MiB, more than a SPEC may be ({MAX_SPEC_BYTES // 2**20} MiB): keep "
                        "long lists of numbers in CSV files beside it (column_sums = \"sums.csv\")")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path} is not a text (TOML) file: it is not valid UTF-8") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path} is not valid TOML: {exc}") from None
    return parse_spec(raw, base_dir=path.parent, source=str(path))


def template(kind: str) -> str:
    """A commented TOML template of SPEC kind ``kind``: every key with its meaning and default."""
    if kind not in KINDS:
        raise SpecError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    k = KINDS[kind]
    top = Table(tuple(key for key in k.top.keys if key.name != "mechanisms"), k.top.doc, k.top.examples)
    return _template(top, k.sections) + "\n".join(template_block()) + "\n"


def builtin_example_path(name: str = "grouped") -> Path:
    """The SPEC of a built-in example (see :data:`EXAMPLES`)."""
    if name not in EXAMPLES:
        raise ValueError(f"example must be one of {list(EXAMPLES)}, got {name!r}")
    return Path(str(resources.files("hybridpriv") / "examples" / EXAMPLES[name]))
