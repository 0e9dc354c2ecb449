"""Your own mechanisms in a SPEC: ``[[mechanisms]]`` names a class, the kind fills in its setting.

Every SPEC kind accepts, beside its built-in candidates, any number of ::

    [[mechanisms]]
    class = "my_mechanisms:ClippedMean"   # "package.module:Class", or an entry-point name
    label = "clipped"                     # its coordinate in the results (default: its label)
    params = { clip = 60.0 }              # constructor arguments

``class`` is either an import path ``"package.module:Class"`` (the module is imported as usual,
or from the SPEC file's folder if it is not importable) or the name of an entry point in group
:data:`ENTRY_POINT_GROUP` (``[project.entry-points."hybridpriv.noise"]`` in the author's
``pyproject.toml``).  The class must be a :class:`hybridpriv.core.mechanism.Mechanism` of the
kind's data kind.  It is built as ``Class(**params, **setting)``, where *setting* holds the
constructor arguments the class names and ``params`` does not give, taken from the kind's
context (:func:`context_docs`: what the SPEC's family offers, e.g. its groups and bounds; the fitted
``posterior`` for every kind).  The mechanism is then evaluated, selected, audited and released
like a built-in (one path: :func:`attach` adds it to the problem's candidates).

Everything that can be checked without sampling is checked at load time, naming the entry:
the class resolves, is a Mechanism of the right data kind, its constructor takes the params,
every argument it needs is given or in the context, and :func:`hybridpriv.testing.check_mechanism`
finds nothing missing in an instance built with the context (the posterior not yet fitted).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from .schema import Context, Key, SpecError, Table, _show, string

__all__ = ["ENTRY_POINT_GROUP", "MECHANISMS", "attach", "context_docs", "describe_import", "load_class", "template_block"]

#: The entry-point group a package registers its mechanisms under.
ENTRY_POINT_GROUP = "hybridpriv.noise"

#: What every family offers a plugin's constructor besides its own context.
POSTERIOR_DOC = "the fitted model of public knowledge (None while the SPEC is checked)"


def context_docs(fam: Any) -> dict[str, str]:
    """What a family offers a plugin's constructor, by argument name (its ``context_docs`` and ``posterior``)."""
    return {**dict(fam.context_docs), "posterior": POSTERIOR_DOC}


def _params(value: Any, path: str, ctx: Context) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SpecError(f"{path} must be a table of constructor arguments, got {_show(value)}")
    return dict(value)


MECHANISMS = Table((
    Key("class", string(), doc='the class: "package.module:Class" or an entry point of group "hybridpriv.noise"',
        example='"my_mechanisms:ClippedMean"'),
    Key("label", string(), None, doc="its coordinate in the results (default: the instance's label)"),
    Key("params", _params, {}, doc="constructor arguments (the others are taken from the kind's context by name)",
        example="{ clip = 60.0 }"),
), doc="your own mechanisms, compared beside the built-in candidates", name="MechanismEntry")


def load_class(ref: str, base_dir: Path | None = None, where: str = "class") -> type:
    """The class named by ``ref`` (``"package.module:Class"`` or an entry-point name)."""
    if not isinstance(ref, str) or not ref.strip():
        raise SpecError(f"{where} must name a class, got {ref!r}")
    if ":" not in ref:
        found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == ref]
        if not found:
            known = sorted(ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))
            raise SpecError(f"{where} = {ref!r} is neither \"package.module:Class\" nor an installed entry point of "
                            f"group {ENTRY_POINT_GROUP!r} (installed: {known or 'none'})")
        try:
            return found[0].load()
        except Exception as exc:  # the author's import error, named
            raise SpecError(f"{where} = {ref!r}: loading the entry point failed: {type(exc).__name__}: {exc}") from None
    module_name, _, attr = ref.partition(":")
    try:
        module = _import(module_name, base_dir)
    except ModuleNotFoundError as exc:
        raise SpecError(f"{where} = {ref!r}: no module {exc.name!r} (importable, or beside the SPEC file)") from None
    except Exception as exc:
        raise SpecError(f"{where} = {ref!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"{where} = {ref!r}: module {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def describe_import(ref: str, base_dir: Path | None = None) -> str:
    """Where the code ``ref`` names lies, found without importing (running) it."""
    from importlib.machinery import PathFinder
    from importlib.util import find_spec

    if ":" not in ref:
        found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == ref]
        if not found:
            return f"entry point {ref!r} (not installed)"
        dist = getattr(found[0], "dist", None)
        return f"entry point {ref} = {found[0].value}" + (f" ({dist.name} {dist.version})" if dist else "")
    module = ref.partition(":")[0]
    top = module.split(".")[0]
    spec = None
    if top in sys.modules:
        origin = getattr(sys.modules[top], "__file__", None)
    else:
        try:
            spec = find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None and base_dir is not None:
            spec = PathFinder.find_spec(top, [str(base_dir)])
        origin = spec.origin if spec is not None else None
    return f"{module} ({origin or 'not found'})"


def _import(name: str, base_dir: Path | None):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if base_dir is None or exc.name != name.split(".")[0]:
            raise
    sys.path.insert(0, str(base_dir))  # a module beside the SPEC file
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(base_dir))


def _check_class(cls: Any, fam: Any, data_kind: str, params: Mapping[str, Any], where: str) -> None:
    from ..core.mechanism import Mechanism

    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise SpecError(f"{where}: {cls!r} is not a subclass of hybridpriv.core.mechanism.Mechanism (see "
                        "hybridpriv.testing.check_mechanism for what a mechanism needs)")
    if cls.data_kind != data_kind:
        raise SpecError(f"{where}: {cls.__name__}.data_kind = {cls.data_kind!r}, but kind {fam.name!r} evaluates "
                        f"{data_kind!r} data")
    sig = inspect.signature(cls.__init__)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    names = [n for n in list(sig.parameters)[1:] if sig.parameters[n].kind not in (sig.parameters[n].VAR_KEYWORD,
                                                                                   sig.parameters[n].VAR_POSITIONAL)]
    unknown = sorted(set(params) - set(names))
    if unknown and not takes_any:
        raise SpecError(f"{where}.params: {cls.__name__} takes no argument(s) {unknown}; it takes {names}")
    offered = context_docs(fam)
    missing = [n for n in names if sig.parameters[n].default is inspect.Parameter.empty
               and n not in params and n not in offered]
    if missing:
        raise SpecError(f"{where}: {cls.__name__} needs {missing}, which neither params nor the {fam.name} kind's "
                        f"context gives (context: {sorted(offered)})")


def _instance(cls: type, entry: Mapping[str, Any], context: Mapping[str, Any], where: str):
    sig = inspect.signature(cls.__init__)
    kwargs = {n: context[n] for n in list(sig.parameters)[1:] if n in context and n not in entry.params}
    try:
        mech = cls(**entry.params, **kwargs)
    except Exception as exc:  # the author's constructor refused: say which entry and why
        raise SpecError(f"{where}: {cls.__name__}({', '.join(sorted({**entry.params, **kwargs}))}) failed: "
                        f"{type(exc).__name__}: {exc}") from None
    if entry.label is not None:
        mech.label = entry.label
    return mech


def attach(problem: Any, fam: Any, entries: list[dict[str, Any]], context: Callable[[Any], dict[str, Any]],
           base_dir: Path | None = None) -> Any:
    """Add the SPEC's ``[[mechanisms]]`` to ``problem``'s candidates (checked now, built after the fit).

    ``fam`` is the SPEC's :class:`~hybridpriv.core.family.Family`; ``context(posterior)`` gives its
    setting (:func:`context_docs`); it is called with ``None`` for the load-time check.
    """
    if not entries:
        return problem
    from ..testing.conformance import mechanism_problems

    data_kind = problem.task.data_kind
    classes = []
    for i, entry in enumerate(entries):
        where = f"mechanisms[{i}]"
        cls = load_class(entry.class_, base_dir, f"{where}.class")
        _check_class(cls, fam, data_kind, entry.params, where)
        mech = _instance(cls, entry, context(None), where)
        try:  # data its releases can be checked on before any sampling, where the family has them
            data, _ = fam.audit_data(mech)
        except ValueError:
            data = None
        problems = mechanism_problems(mech, data)
        if problems:
            raise SpecError(f"{where}: {cls.__name__} is not a usable mechanism: " + "; ".join(problems))
        classes.append(cls)
    builtin = problem.candidates

    def candidates(posterior: Any) -> dict[Any, Any]:
        out = dict(builtin(posterior))
        setting = context(posterior)
        for i, (cls, entry) in enumerate(zip(classes, entries)):
            mech = _instance(cls, entry, setting, f"mechanisms[{i}]")
            coord = mech.label
            if coord in out:
                raise SpecError(f"mechanisms[{i}]: label {coord!r} is already a candidate; give a label")
            out[coord] = mech
        return out

    problem.candidates = candidates
    return problem


def template_block() -> list[str]:
    """The commented ``[[mechanisms]]`` block of every kind's template."""
    lines = ["", f"# {MECHANISMS.doc} (optional; see docs/custom-mechanisms.md)", "# [[mechanisms]]"]
    for key in MECHANISMS.keys:
        lines += [f"#   {key.doc}", f"# {key.name} = {key.example}" if key.example else f"# {key.name} = ..."]
    return lines
