"""A small declarative schema for SPEC files: keys, types, defaults and docs declared once.

Each SPEC kind declares its tables as :class:`Table` objects of :class:`Key` entries.  Parsing
refuses unknown keys (naming them and listing the allowed ones), names the key path and the bad
value in every error (``spec: groups[1].epsilon must be > 0, got -1``), fills defaults, and
converts values; :func:`template` writes a commented TOML template from the same declaration,
so the docs of a key live in one place.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.io import iter_rows, read_rows

__all__ = ["REQUIRED", "Config", "Context", "Key", "SpecError", "Table", "boolean", "choice", "epsilon", "integer", "read_csv_rows",
           "fit_table", "plan_key", "run_keys", "spec_groups",
           "integer_range", "list_of", "name_tables", "number", "pair", "string", "table", "tables", "template", "values"]


class SpecError(ValueError):
    """A SPEC that cannot be used; the message starts with ``spec:`` and names the key."""

    def __init__(self, message: str) -> None:
        super().__init__(message if message.startswith("spec:") else f"spec: {message}")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of a key that must be given.
REQUIRED: Any = _Required()


@dataclass
class Context:
    """What parsers may need besides the value: the SPEC file's folder (for relative paths)."""

    base_dir: Path = field(default_factory=Path.cwd)


Parser = Callable[[Any, str, Context], Any]


@dataclass(frozen=True)
class Key:
    """One key of a table: its parser, default (:data:`REQUIRED` if it must be given), docs."""

    name: str
    parse: Parser
    default: Any = REQUIRED
    doc: str = ""
    example: str | None = None  # TOML text for the template (default: the default value)

    @property
    def attr(self) -> str:
        """The config attribute holding it: the key's name, ``class_`` for ``class`` (a Python keyword)."""
        return f"{self.name}_" if keyword.iskeyword(self.name) else self.name


class Config:
    """Base of the typed configs :class:`Table` generates: a frozen dataclass with one attribute per key (the
    parsed, converted value) and per derived value a family's check adds (``dataclasses.replace``)."""

    def as_dict(self) -> dict[str, Any]:
        """The values by attribute name (not recursively)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    #: Attributes left out of :meth:`describe_params` while ``None``: optional tables (``table(..., optional=True)``),
    #: so that adding one to a kind leaves the recorded config of every SPEC without it as it was.
    _omit_when_none: frozenset[str] = frozenset()

    def describe_params(self) -> dict[str, Any]:
        """What :func:`hybridpriv.core.params.describe` records: the values by name (an absent optional table left
        out)."""
        return {k: v for k, v in self.as_dict().items() if not (v is None and k in self._omit_when_none)}

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (names must be keys or derived values of the table)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class Table:
    """A TOML table: its keys (in template order) and a one-line description.

    :meth:`parse` returns an instance of :attr:`config`, a frozen dataclass generated from the same keys
    (plus ``derived``: values a family's check computes from them, ``None`` until then) under the name
    ``name``: the template and the typed config come from one declaration."""

    keys: tuple[Key, ...]
    doc: str = ""
    #: In templates, ``{key: TOML text}`` set (not commented out): for an array of tables one block per entry,
    #: for a plain table (or the top level) the first entry.
    examples: tuple[dict[str, str], ...] = ()
    #: The generated config class's name.
    name: str = "Config"
    #: Attributes of the config that are not SPEC keys: computed by the family's check (default ``None``).
    derived: tuple[str, ...] = ()

    @functools.cached_property
    def config(self) -> type[Config]:
        """The frozen dataclass of this table's parsed values."""
        fields = [(k.attr, Any) for k in self.keys]
        fields += [(n, Any, dataclasses.field(default=None)) for n in self.derived]
        omit = frozenset(k.attr for k in self.keys if getattr(k.parse, "optional", False))
        return dataclasses.make_dataclass(self.name, fields, bases=(Config,), frozen=True, eq=False,
                                          module=__name__, namespace={"_omit_when_none": omit})

    def parse(self, raw: Any, path: str, ctx: Context) -> Config:
        where = path or "the top level"
        if not isinstance(raw, dict):
            raise SpecError(f"{where} must be a table, got {_show(raw)}")
        allowed = [k.name for k in self.keys]
        extra = sorted(set(raw) - set(allowed))
        if extra:
            raise SpecError(f"unknown key(s) {extra} in {where}; allowed: {sorted(allowed)}")
        out = {}
        for key in self.keys:
            full = f"{path}.{key.name}" if path else key.name
            if key.name in raw:
                out[key.attr] = key.parse(raw[key.name], full, ctx)
            elif (key.default is None and getattr(key.parse, "section", None) is not None
                  and not getattr(key.parse, "optional", False)):
                out[key.attr] = key.parse({}, full, ctx)  # an omitted section: its defaults
            elif key.default is REQUIRED:
                raise SpecError(f"{full} is required ({key.doc})" if key.doc else f"{full} is required")
            else:
                out[key.attr] = key.default
        return self.config(**out)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(minimum: int | None = None, maximum: int | None = None) -> Parser:
    """An integer in ``[minimum, maximum]``."""

    def parse(value: Any, path: str, ctx: Context) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpecError(f"{path} must be an integer, got {_show(value)}")
        if minimum is not None and value < minimum:
            raise SpecError(f"{path} must be an integer >= {minimum}, got {value!r}")
        if maximum is not None and value > maximum:
            raise SpecError(f"{path} must be an integer <= {maximum}, got {value!r}")
        return int(value)

    return parse


def number(minimum: float | None = None, strict: bool = False, finite: bool = True,
           maximum: float | None = None) -> Parser:
    """A real number (not NaN), finite unless ``finite=False``, ``> minimum`` if ``strict`` else ``>=``."""

    def parse(value: Any, path: str, ctx: Context) -> float:
        if not _is_number(value):
            raise SpecError(f"{path} must be a number, got {_show(value)}")
        v = float(value)
        if math.isnan(v):
            raise SpecError(f"{path} must be a number, got nan")
        if finite and math.isinf(v):
            raise SpecError(f"{path} must be finite, got {value!r}")
        if minimum is not None and (v < minimum or (strict and v == minimum)):
            raise SpecError(f"{path} must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
        if maximum is not None and v > maximum:
            raise SpecError(f"{path} must be <= {maximum:g}, got {value!r}")
        return v

    return parse


def epsilon(allow_public: bool = True) -> Parser:
    """An epsilon > 0; ``inf`` (or the strings ``"inf"``/``"public"``) marks public records."""

    def parse(value: Any, path: str, ctx: Context) -> float:
        if allow_public and isinstance(value, str) and value.strip().lower() in ("inf", "public"):
            return math.inf
        if not _is_number(value):
            raise SpecError(f"{path} must be a number > 0{' or inf' if allow_public else ''}, got {_show(value)}")
        v = float(value)
        if math.isnan(v) or v <= 0:
            raise SpecError(f"{path} must be > 0, got {value!r}")
        if math.isinf(v) and not allow_public:
            raise SpecError(f"{path} must be finite, got {value!r}")
        return v

    return parse


def boolean() -> Parser:
    def parse(value: Any, path: str, ctx: Context) -> bool:
        if not isinstance(value, bool):
            raise SpecError(f"{path} must be true or false, got {_show(value)}")
        return value

    return parse


def string() -> Parser:
    def parse(value: Any, path: str, ctx: Context) -> str:
        if not isinstance(value, str):
            raise SpecError(f"{path} must be a string, got {_show(value)}")
        return value

    return parse


def choice(*options: str) -> Parser:
    def parse(value: Any, path: str, ctx: Context) -> str:
        if not isinstance(value, str) or value not in options:
            listed = " or ".join(repr(o) for o in options) if len(options) <= 3 else str(list(options))
            raise SpecError(f"{path} must be {listed}, got {_show(value)}")
        return value

    return parse


def pair(item: Parser) -> Parser:
    """A list of exactly two items."""

    def parse(value: Any, path: str, ctx: Context) -> tuple[Any, Any]:
        if not isinstance(value, list) or len(value) != 2:
            raise SpecError(f"{path} must be a pair [a, b], got {_show(value)}")
        return item(value[0], f"{path}[0]", ctx), item(value[1], f"{path}[1]", ctx)

    return parse


def list_of(item: Parser, min_length: int = 1) -> Parser:
    def parse(value: Any, path: str, ctx: Context) -> list[Any]:
        if not isinstance(value, list) or len(value) < min_length:
            raise SpecError(f"{path} must be a list of at least {min_length} item(s), got {_show(value)}")
        return [item(v, f"{path}[{i}]", ctx) for i, v in enumerate(value)]

    return parse


def integer_range(minimum: int = 1) -> Parser:
    """An integer ``k`` (one value) or an inclusive range ``[low, high]``: a list of integers."""

    def parse(value: Any, path: str, ctx: Context) -> list[int]:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < minimum:
                raise SpecError(f"{path} must be an integer >= {minimum}, got {value!r}")
            return [int(value)]
        if (isinstance(value, list) and len(value) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in value)):
            if not minimum <= value[0] <= value[1]:
                raise SpecError(f"{path} must be a range [low, high] with {minimum} <= low <= high, got {value!r}")
            return list(range(value[0], value[1] + 1))
        raise SpecError(f"{path} must be an integer or a range [low, high], got {_show(value)}")

    return parse


def table(spec: Table, optional: bool = False) -> Parser:
    """A table (``[name]``); omitted with default ``None``, it holds its keys' defaults, or with ``optional`` it is
    ``None`` (a table whose keys have no defaults, present or not)."""

    def parse(value: Any, path: str, ctx: Context) -> Config:
        return spec.parse(value, path, ctx)

    parse.section = spec  # type: ignore[attr-defined]
    parse.optional = optional  # type: ignore[attr-defined]
    return parse


def tables(spec: Table, min_length: int = 0) -> Parser:
    """An array of tables (``[[name]]``)."""

    def parse(value: Any, path: str, ctx: Context) -> list[Config]:
        if not isinstance(value, list) or len(value) < min_length:
            raise SpecError(f"{path}: at least {min_length} [[{path}]] table(s) required, got {_show(value)}")
        return [spec.parse(v, f"{path}[{i}]", ctx) for i, v in enumerate(value)]

    parse.item = spec  # type: ignore[attr-defined]
    return parse


def name_tables(top: Table, prefix: str) -> None:
    """Name the config classes of ``top``'s nested tables that have no name yet after ``prefix`` and their key
    (``GroupedModel``, ``GroupedModelReleasedMeans``), before any of them is generated."""
    for key in top.keys:
        sub = getattr(key.parse, "section", None) or getattr(key.parse, "item", None)
        if sub is None or sub.name != "Config" or "config" in sub.__dict__:
            continue
        name = prefix + "".join(part.capitalize() for part in key.name.split("_"))
        object.__setattr__(sub, "name", name)  # a frozen declaration, named once (see Table.config)
        name_tables(sub, name)


def read_csv_rows(path: Path, key: str) -> list[list[str]]:
    """The non-blank rows of the CSV file ``path`` named by SPEC key ``key`` (errors name both)."""
    if not path.is_file():
        raise FileNotFoundError(f"spec: {key} file not found: {path}")
    return read_rows(path, key, SpecError)


def _read_column(path: Path, key: str, max_size: int | None = None) -> np.ndarray:
    """The first column of a CSV file as floats (a header line skipped); more than ``max_size`` values are
    refused as soon as the reader passes them, before the rest of the file is read."""
    if not path.is_file():
        raise FileNotFoundError(f"spec: {key} file not found: {path}")
    out: list[float] = []
    for line, row in iter_rows(path, key, SpecError):
        try:
            out.append(float(row[0]))
        except ValueError:
            if line > 1:
                raise SpecError(f"{key} file {path} has a non-numeric value: {row[0]!r}") from None
            continue  # a header line
        if max_size is not None and len(out) > max_size:
            raise SpecError(f"{key} file {path} holds more than {max_size:,} values (the limit of {key})")
    if not out:
        raise SpecError(f"{key} file {path} holds no values")
    return np.array(out)


def values(max_size: int | None = None) -> Parser:
    """A list of numbers, or the path of a CSV file (relative to the SPEC) whose first column holds them;
    at most ``max_size`` of them (refused before a larger file is read whole)."""

    def parse(value: Any, path: str, ctx: Context) -> np.ndarray:
        if isinstance(value, list) and max_size is not None and len(value) > max_size:
            raise SpecError(f"{path} holds {len(value):,} values, more than the limit of {max_size:,}")
        if isinstance(value, str):
            arr = _read_column(ctx.base_dir / value, path, max_size)
        elif isinstance(value, list):
            arr = np.array([number(finite=False)(v, path, ctx) for v in value], dtype=float)
        else:
            raise SpecError(f"{path} must be a CSV path or a list of numbers, got {_show(value)}")
        if arr.size == 0:
            raise SpecError(f"{path} holds no values")
        if np.isnan(arr).any():
            raise SpecError(f"{path} contains NaN")
        return arr

    return parse


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def template(top: Table, sub: Sequence[tuple[str, Table, bool]] = ()) -> str:
    """A commented TOML template: every key with its docs; required keys set to their example,
    optional ones commented out at their default.  ``sub``: ``(name, table, is_array)`` sections."""

    def lines_of(tab: Table, values: dict[str, str] | None = None, docs: bool = True) -> list[str]:
        out = []
        for key in tab.keys:
            if any(key.name == s[0] for s in sub) and tab is top:
                continue
            if key.doc and docs:
                out.append(f"# {key.doc}")
            if values is not None and key.name in values:
                out.append(f"{key.name} = {values[key.name]}")
                continue
            example = key.example if key.example is not None else (None if key.default is REQUIRED else _toml(key.default))
            if key.default is REQUIRED:
                out.append(f"{key.name} = {example}")
            elif key.default is None and key.example is None:
                out.append(f"# {key.name} = ...")
            else:
                out.append(f"# {key.name} = {example}")
        return out

    # a plain table's first example sets its keys (so that the template runs as printed); an array of tables
    # gets one block per example
    text = [f"# {top.doc}", "", *lines_of(top, top.examples[0] if top.examples else None)]
    for name, tab, is_array in sub:
        if is_array and tab.examples:
            for i, values in enumerate(tab.examples):
                text += ["", *([f"# {tab.doc}"] if tab.doc and i == 0 else []), f"[[{name}]]",
                         *lines_of(tab, values, docs=i == 0)]
        else:
            text += ["", *([f"# {tab.doc}"] if tab.doc else []), f"[[{name}]]" if is_array else f"[{name}]",
                     *lines_of(tab, tab.examples[0] if tab.examples else None)]
    return "\n".join(text) + "\n"


def run_keys(draws: int = 200, trials: int = 20, draws_doc: str = "simulated datasets",
             trials_doc: str = "mechanism runs per dataset", max_trials: int = 1_000_000,
             criterion: str = "loss") -> tuple[Key, Key, Key, Key, Key]:
    """The ``draws``, ``trials``, ``seed``, ``criterion`` and ``chance_warning`` keys every family's ``[evaluation]``
    has, declared once (each family gives its defaults, what a trial means for it, and the criterion its calibration
    favours)."""
    from ..engine.decision import CHANCE_WARNING, CRITERIA

    return (Key("draws", integer(2, 1_000_000), draws, doc=draws_doc),
            Key("trials", integer(1, max_trials), trials, doc=trials_doc),
            Key("seed", integer(0, 2**63 - 1), 0, doc="the seed of everything"),
            Key("criterion", choice(*CRITERIA), criterion,
                doc="what the recommendation minimises: loss (expected loss) or regret (expected relative regret "
                    "against the best candidate on each dataset)"),
            Key("chance_warning", number(0.0, strict=True, maximum=1.0), CHANCE_WARNING,
                doc="select warns when the recommendation is more than 25% worse than the best candidate on at least "
                    "this share of the model's datasets (lower: fewer silent failures, more warnings; "
                    "docs/calibration.md#how-many-warnings-a-lower-chance-line-costs)"))


def plan_key(what: str) -> Key:
    """``plan_share``: the share of each unit's budget a two-stage plan spends on ``what`` before choosing
    (:mod:`hybridpriv.engine.plan`; 0: do not consider one), for the families that have a probe."""
    from ..engine.plan import DEFAULT_SHARE

    return Key("plan_share", number(0.0, maximum=0.9), DEFAULT_SHARE,
               doc=f"share of each unit's budget a two-stage plan would spend on {what} before choosing; "
                   "select says whether that pays (0: do not consider it)")


def fit_table(chains_doc: str = "MCMC chains", tune: int | None = 500, doc: str = "how the model is fitted") -> Table:
    """The ``[fit]`` table every family has, declared once: ``chains`` and, for a sampler that tunes, ``tune``
    (``tune=None``: the family's sampler has no tuning steps)."""
    keys = [Key("chains", integer(1, 64), 2, doc=chains_doc)]
    if tune is not None:
        keys.append(Key("tune", integer(0, 100_000), tune, doc="MCMC tuning steps per chain"))
    return Table(tuple(keys), doc)


def spec_groups(raw: list[Config], fields: tuple[str, ...] = ()) -> list[tuple[int, Any, Any]]:
    """The ``[[groups]]`` of a SPEC as :class:`~hybridpriv.core.privacy.Group` objects: ``[(index, group, data)]``.

    ``fields``: optional Group fields the table has (``"delta"``, ``"trust"``).  Refused, naming the key: a group
    the Group class refuses, ``data`` (public records) given for a private group, or a number of records other
    than the group's size, and duplicate names.  What the records must be is the family's to check.
    """
    from ..core.privacy import Group, check_groups

    out = []
    for k, g in enumerate(raw):
        try:
            group = Group(g.name, g.size, g.epsilon, **{f: getattr(g, f) for f in fields})
        except (TypeError, ValueError) as exc:
            raise SpecError(f"groups[{k}]: {exc}") from None
        data = g.data
        if data is not None:
            if not group.is_public:
                raise SpecError(f"groups[{k}].data given for group {group.name!r} with epsilon={group.epsilon:g}: "
                                "only public groups' records may be used")
            if len(data) != group.size:
                raise SpecError(f"groups[{k}].data holds {len(data)} records but size = {group.size}")
        out.append((k, group, data))
    try:
        check_groups([g for _, g, _ in out])
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    return out
