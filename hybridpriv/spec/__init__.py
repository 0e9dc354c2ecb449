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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .custom import MECHANISMS, attach, template_block
from .schema import Context, Key, SpecError, Table, choice, integer, name_tables, tables
from .schema import template as _template

#: The ``[evaluation]`` keys a command line or :func:`hybridpriv.select` may override (:meth:`Spec.with_overrides`),
#: in the order of ``select``'s arguments.
OVERRIDABLE = ("draws", "trials", "seed", "chance_warning")

__all__ = ["EXAMPLES", "OVERRIDABLE", "Spec", "SpecError", "builtin_example_path", "examples", "load_spec", "parse_spec", "template",
           "top_table"]


#: The SPEC format this hybridpriv writes (the top-level key ``format``).  Format 2 names the same things the
#: same way in every kind: ``[model]`` (public knowledge), ``[fit]`` (chains, tune), ``[evaluation]`` with its
#: ``candidates``; a SPEC without ``format`` or with ``format = 1`` is read by moving each family's
#: :attr:`~hybridpriv.core.family.Family.renamed` keys first (``[knowledge]`` -> ``[model]``,
#: ``model.chains`` -> ``fit.chains``, ``evaluation.estimators`` -> ``evaluation.candidates``, ...).
SPEC_FORMAT = 2

#: Largest SPEC file read (TOML parsing is slow on long inline lists; data belong in CSV files).
MAX_SPEC_BYTES = 2**20


def _kind_key(fam: Any) -> Key:
    """The ``kind`` key of a family's SPEC: its name (optional for the default family)."""
    from ..families import DEFAULT_KIND

    if fam.name == DEFAULT_KIND:
        return Key("kind", choice(fam.name), fam.name, doc=f'"{fam.name}" (the default kind)')
    return Key("kind", choice(fam.name), doc=f'"{fam.name}"', example=f'"{fam.name}"')


#: The top tables made so far: one per (family, mechanisms), so that a family's configs have one class.
_TOPS: dict[tuple[int, bool], tuple[Any, Table]] = {}


def top_table(fam: Any, mechanisms: bool = True) -> Table:
    """A family's top-level SPEC table: ``kind``, the family's own keys and ``[[mechanisms]]`` (every family
    accepts your own classes; ``mechanisms=False``: without it, for the template).  Parsed, it gives a
    ``<Family>Spec`` config (:class:`~hybridpriv.spec.schema.Config`; nested tables ``<Family><Key>``)."""
    held = _TOPS.get((id(fam), mechanisms))
    if held is not None and held[0] is fam:
        return held[1]
    table_ = _top_table(fam, mechanisms)
    _TOPS[(id(fam), mechanisms)] = (fam, table_)
    return table_


def _top_table(fam: Any, mechanisms: bool) -> Table:
    extra = (Key("mechanisms", tables(MECHANISMS), [], doc=MECHANISMS.doc),) if mechanisms else ()
    fmt = Key("format", integer(1, SPEC_FORMAT), SPEC_FORMAT, doc=f"the SPEC format ({SPEC_FORMAT})",
              example=str(SPEC_FORMAT))
    # the template sets format (a SPEC without it is read as format 1)
    first = {"format": str(SPEC_FORMAT), **(fam.top.examples[0] if fam.top.examples else {})}
    prefix = "".join(part.capitalize() for part in fam.name.replace("_", "-").split("-"))
    top = Table((fmt, _kind_key(fam), *fam.top.keys, *extra), fam.top.doc, (first, *fam.top.examples[1:]),
                name=f"{prefix}Spec", derived=fam.top.derived)
    name_tables(top, prefix)
    return top


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
    """A validated SPEC: its kind, its values (a typed config: defaults filled, converted) and where it came from.

    ``spec.values`` is the family's ``<Kind>Spec`` config (:class:`~hybridpriv.spec.schema.Config`, a frozen
    dataclass generated from the family's schema: ``spec.values.evaluation.draws``); its attributes are also
    the SPEC's (``spec.groups``)."""

    kind: str
    values: Any
    source: str = "<inline>"
    #: The SPEC file's folder (a ``[[mechanisms]]`` module may sit beside the file).
    base_dir: Path | None = None
    #: The TOML as read (before defaults and checks), for :meth:`with_overrides`.
    raw: Mapping[str, Any] | None = None
    #: The format-1 keys read under their format-2 names: ``("knowledge -> model", ...)`` (empty for format 2).
    upgraded: tuple[str, ...] = ()

    def with_overrides(self, evaluation: Mapping[str, Any]) -> Spec:
        """This SPEC with ``[evaluation]`` keys replaced (the CLI's ``--draws``, ``--trials``, ``--seed``,
        ``--chance-warning``: :data:`OVERRIDABLE`),
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
        problem = dataclasses.replace(fam.build(self.values), kind=fam.name,  # the family that built it, by name
                                      criterion=self.values.evaluation.criterion,
                                      chance_warning=self.values.evaluation.chance_warning)
        return attach(problem, fam, self.values.mechanisms,
                      lambda posterior: fam.plugin_context(self.values, posterior), self.base_dir)

    def imports(self) -> list[str]:
        """The code this SPEC makes hybridpriv import (its ``[[mechanisms]]``), found without importing it:
        ``"module (file)"`` or ``"entry point NAME = module:Class (distribution)"``.  A SPEC is trusted
        input: the CLI prints this list before it runs anything."""
        from .custom import describe_import

        return list(dict.fromkeys(describe_import(m.class_, self.base_dir) for m in self.values.mechanisms))

    def config(self) -> dict[str, Any]:
        """The values as JSON data (arrays by checksum), for provenance."""
        from ..core.params import describe

        return {"kind": self.kind, "source": self.source, **describe(self.values)}

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values")
        if values is not None and not name.startswith("_") and hasattr(values, name):
            return getattr(values, name)
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
    upgraded, moves = upgrade(raw, fam.renamed)
    try:
        values = fam.check(top_table(fam).parse(upgraded, "", ctx), ctx)
    except (SpecError, FileNotFoundError) as exc:
        if not moves:
            raise
        import re

        message = str(exc)  # names the keys as this SPEC does
        for move in reversed(moves):
            old, new = move.split(" -> ")
            message = re.sub(rf"(?<![\w.]){re.escape(new)}(?=\b)", old, message)
        raise type(exc)(f"{message} (a format-1 SPEC, read as format {SPEC_FORMAT} by moving {'; '.join(moves)})") from None
    return Spec(kind, values, source, ctx.base_dir, dict(raw), tuple(moves))


def _lookup(raw: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any] | None, str]:
    """The table holding dotted ``path`` in ``raw`` (``None`` if a table on the way is missing), and its last key."""
    *parents, last = path.split(".")
    where: Any = raw
    for part in parents:
        where = where.get(part) if isinstance(where, Mapping) else None
        if where is None:
            return None, last
    return (where if isinstance(where, Mapping) else None), last


def upgrade(raw: Mapping[str, Any], renamed: Sequence[tuple[str, str]]) -> tuple[dict[str, Any], list[str]]:
    """A SPEC's TOML in the current format, and the moves made (``"knowledge -> model"``).

    ``format = 2`` is read as is, and a format-1 name in it is refused naming the format-2 one; a SPEC without
    ``format`` (or ``format = 1``) has each family's renamed keys moved, in order (giving both the old and the
    new name is refused).  ``raw`` is not changed."""
    import copy

    fmt = raw.get("format", 1)
    if isinstance(fmt, bool) or fmt not in (1, SPEC_FORMAT):
        raise SpecError(f"format must be 1 or {SPEC_FORMAT} (or left out: 1), got {fmt!r}")
    if fmt == SPEC_FORMAT:
        for old, new in renamed:
            table_, key = _lookup(raw, old)
            if table_ is not None and key in table_:
                raise SpecError(f"{old} is the format-1 name of {new}: with format = {SPEC_FORMAT} write {new}")
        return dict(raw), []
    out = copy.deepcopy(dict(raw))
    out["format"] = SPEC_FORMAT
    moves = []
    for old, new in renamed:
        src, key = _lookup(out, old)
        if src is None or key not in src:
            continue
        *parents, last = new.split(".")
        dst: Any = out
        for part in parents:
            if not isinstance(dst.get(part, {}), dict):
                raise SpecError(f"{part} must be a table, got {dst[part]!r:.60}")
            dst = dst.setdefault(part, {})
        if last in dst:
            raise SpecError(f"both {old} (its format-1 name) and {new} are given: keep {new}")
        dst[last] = src.pop(key)
        moves.append(f"{old} -> {new}")
    return out, moves


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
