"""SPEC files: what is public, which candidates to compare, how to evaluate them (TOML).

A SPEC's ``kind`` names a registered family (:mod:`hybridpriv.families`), which declares its schema
once (:mod:`hybridpriv.spec.schema`): parsing refuses unknown keys naming them, every error names the
key and the value, and ``hybridpriv spec KIND`` prints a commented template generated from the same
declaration.  The family builds a :class:`hybridpriv.workflow.Problem` (model, candidates, task,
candidate dimension, requirements) and every family runs through the same select path
(:func:`hybridpriv.workflow.run_selection`).  ``hybridpriv spec`` lists the kinds.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .custom import MECHANISMS, attach, template_block
from .schema import Context, Key, SpecError, Table, choice, integer, tables
from .schema import template as _template

__all__ = ["EXAMPLES", "Spec", "SpecError", "builtin_example_path", "examples", "load_spec", "parse_spec", "template",
           "top_table"]


#: The SPEC format this hybridpriv reads (the optional top-level key ``format``).
SPEC_FORMAT = 1

#: Largest SPEC file read (TOML parsing is slow on long inline lists; data belong in CSV files).
MAX_SPEC_BYTES = 2**20


def _kind_key(fam: Any) -> Key:
    """The ``kind`` key of a family's SPEC: its name (optional for the default family)."""
    from ..families import DEFAULT_KIND

    if fam.name == DEFAULT_KIND:
        return Key("kind", choice(fam.name), fam.name, doc=f'"{fam.name}" (the default kind)')
    return Key("kind", choice(fam.name), doc=f'"{fam.name}"', example=f'"{fam.name}"')


def top_table(fam: Any, mechanisms: bool = True) -> Table:
    """A family's top-level SPEC table: ``kind``, the family's own keys and ``[[mechanisms]]`` (every family
    accepts your own classes; ``mechanisms=False``: without it, for the template)."""
    extra = (Key("mechanisms", tables(MECHANISMS), [], doc=MECHANISMS.doc),) if mechanisms else ()
    fmt = Key("format", integer(SPEC_FORMAT, SPEC_FORMAT), SPEC_FORMAT, doc=f"the SPEC format ({SPEC_FORMAT})")
    return Table((fmt, _kind_key(fam), *fam.top.keys, *extra), fam.top.doc, fam.top.examples)


def examples() -> dict[str, Any]:
    """Built-in examples: name -> SPEC file, from every registered family (a file name in
    ``hybridpriv/examples``, or a :class:`~pathlib.Path` a family ships in its own folder)."""
    from ..families import registry

    out: dict[str, Any] = {}
    for fam in registry().values():
        out.update(getattr(fam, "examples", {}) or {})
    return out


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

    @property
    def family(self) -> Any:
        """The :class:`~hybridpriv.core.family.Family` of this SPEC's kind."""
        from ..families import family

        return family(self.kind)

    def problem(self):
        """The :class:`hybridpriv.workflow.Problem` this SPEC describes (the model is built and validated)."""
        import dataclasses

        fam = self.family
        problem = dataclasses.replace(fam.build(self.values), kind=fam.name)  # the family that built it, by name
        return attach(problem, fam, self.values.get("mechanisms", []),
                      lambda posterior: fam.plugin_context(self.values, posterior), self.base_dir)

    def imports(self) -> list[str]:
        """The code this SPEC makes hybridpriv import (its ``[[mechanisms]]``), found without importing it:
        ``"module (file)"`` or ``"entry point NAME = module:Class (distribution)"``.  A SPEC is trusted
        input: the CLI prints this list before it runs anything."""
        from .custom import describe_import

        return list(dict.fromkeys(describe_import(m["class"], self.base_dir) for m in self.values.get("mechanisms", [])))

    def config(self) -> dict[str, Any]:
        """The values as JSON data (arrays by checksum), for provenance."""
        from ..core.params import describe

        return {"kind": self.kind, "source": self.source, **describe(self.values)}

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} has no {name!r}")


def parse_spec(raw: Mapping[str, Any], base_dir: str | Path | None = None, source: str = "<inline>") -> Spec:
    """Validate a SPEC given as a dict (e.g. from ``tomllib``)."""
    from ..families import DEFAULT_KIND, registry

    if not isinstance(raw, Mapping):
        raise SpecError("the top level must be a table")
    kind = raw.get("kind", DEFAULT_KIND)
    fams = registry()
    if kind not in fams:
        raise SpecError(f"kind must be one of {list(fams)}, got {kind!r}")
    ctx = Context(Path(base_dir) if base_dir is not None else Path.cwd())
    fam = fams[kind]
    values = fam.check(top_table(fam).parse(dict(raw), "", ctx), ctx)
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
    from ..families import registry

    fams = registry()
    if kind not in fams:
        raise SpecError(f"kind must be one of {list(fams)}, got {kind!r}")
    fam = fams[kind]
    release = []
    if fam.release_files:
        import textwrap

        release = ["", *textwrap.wrap(f"To release the chosen candidate (hybridpriv release SPEC --data DIR --selection "
                                      f"selection.nc), DIR holds: {fam.release_files}.", 96,
                                      initial_indent="# ", subsequent_indent="# ")]
    return (_template(top_table(fam, mechanisms=False), fam.sections) + "\n".join(template_block()) + "\n"
            + "".join(line + "\n" for line in release))


def builtin_example_path(name: str | None = None) -> Path:
    """The SPEC of a built-in example (:func:`examples`; default: the first family's first)."""
    from ..families import DEFAULT_EXAMPLE

    name = DEFAULT_EXAMPLE if name is None else name
    known = examples()
    if name not in known:
        raise ValueError(f"example must be one of {list(known)}, got {name!r}")
    where = known[name]
    return where if isinstance(where, Path) else Path(str(resources.files("hybridpriv") / "examples" / where))


def __getattr__(name: str) -> Any:
    if name == "EXAMPLES":  # the examples of every registered family (a function of the registry)
        return examples()
    raise AttributeError(name)
