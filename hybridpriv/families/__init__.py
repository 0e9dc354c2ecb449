"""The families, registered once: :data:`FAMILIES` (the built-in ones) and the entry-point group
:data:`ENTRY_POINT_GROUP` (an outside package's families), found by :func:`registry`.

Each family is one package holding its SPEC, its model wiring, its private-data loader and the
:class:`~hybridpriv.core.family.Family` object that ties them (``docs/add-a-family.md``).  To add a
built-in family, add its package and one line to :data:`BUILTIN`; an outside package registers
``[project.entry-points."hybridpriv.families"] my-family = "my_package:FAMILY"`` instead.
"""

from __future__ import annotations

from importlib import import_module, metadata

from ..core.datakind import DataKind
from ..core.family import Family, Unsupported

__all__ = ["BUILTIN", "DEFAULT_EXAMPLE", "DEFAULT_KIND", "ENTRY_POINT_GROUP", "FAMILIES", "data_kind", "data_kinds", "family",
           "registry"]

#: The entry-point group an outside package registers its families under.
ENTRY_POINT_GROUP = "hybridpriv.families"

#: The built-in families' packages (each exports ``FAMILY``), one line each, in the order ``hybridpriv spec``
#: lists them.
BUILTIN = (
    "grouped",
    "user_item",
    "hybrid_trust",
    "public_private",
    "kmeans",
    "histogram",
)

_loaded: dict[str, Family] | None = None
_builtin: list[Family] | None = None


def __getattr__(name: str) -> object:
    """``FAMILIES`` (the built-in families), ``DEFAULT_KIND`` (the kind of a SPEC that names none) and
    ``DEFAULT_EXAMPLE`` (the example ``select`` runs without a SPEC), imported when first asked for, so that
    a family's own modules (its data classes, say) can be imported without importing every family."""
    global _builtin
    if name in ("FAMILIES", "DEFAULT_KIND", "DEFAULT_EXAMPLE"):
        if _builtin is None:
            _builtin = [import_module(f"{__name__}.{package}").FAMILY for package in BUILTIN]
        return {"FAMILIES": _builtin, "DEFAULT_KIND": _builtin[0].name,
                "DEFAULT_EXAMPLE": next(iter(_builtin[0].examples))}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def registry() -> dict[str, Family]:
    """Every family by name: the built-in ones, then those of installed entry points (loaded once).

    An entry point that fails to load, is not a :class:`~hybridpriv.core.family.Family` or reuses a
    name is refused, naming it (a family is trusted code, like a SPEC's mechanisms).
    """
    global _loaded
    if _loaded is None:
        out = {f.name: f for f in __getattr__("FAMILIES")}
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            try:
                fam = ep.load()
            except Exception as exc:  # the author's import error, named
                raise Unsupported(f"entry point {ep.name!r} of group {ENTRY_POINT_GROUP!r} failed to load: "
                                  f"{type(exc).__name__}: {exc}") from None
            if isinstance(fam, type) and issubclass(fam, Family):
                fam = fam()
            if not isinstance(fam, Family) or not fam.name:
                raise Unsupported(f"entry point {ep.name!r} of group {ENTRY_POINT_GROUP!r} is {fam!r}, not a "
                                  "hybridpriv.core.family.Family with a name")
            if fam.name in out:
                raise Unsupported(f"entry point {ep.name!r} registers family {fam.name!r}, which exists already")
            out[fam.name] = fam
        _loaded = out
    return dict(_loaded)


def family(name: str) -> Family:
    """The family registered as ``name`` (a SPEC's ``kind``)."""
    fams = registry()
    if name not in fams:
        raise ValueError(f"kind must be one of {list(fams)}, got {name!r}")
    return fams[name]


def data_kinds() -> dict[str, DataKind]:
    """Every data kind the registered families define, by name (a name defined twice is refused)."""
    out: dict[str, DataKind] = {}
    for fam in registry().values():
        for kind in fam.defines:
            if kind.name in out and out[kind.name] is not kind:
                raise Unsupported(f"data kind {kind.name!r} is defined by two families (the second: {fam.name!r})")
            out[kind.name] = kind
    return out


def data_kind(name: str) -> DataKind:
    """The data kind registered as ``name`` (a mechanism's ``data_kind``)."""
    kinds = data_kinds()
    if name not in kinds:
        raise ValueError(f"data_kind must be one of {list(kinds)}, got {name!r}")
    return kinds[name]
