"""Parameters as data: record a candidate's constructor arguments, describe them as JSON, compare them.

Every mechanism, source and task records the arguments it was built with (scikit-learn's
``get_params``, captured by :class:`Parametrized` so subclasses need not repeat them).  They are
stored in results, hashed into checkpoint manifests and compared on resume: :func:`describe`
turns any parameter value into plain JSON (numbers, strings, lists, dicts), and :func:`differences`
names every parameter that differs between two descriptions, by its path
(``candidates.weighted.sigma2: 1 there, 100 here``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import zlib
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = ["Parametrized", "as_attrs", "attr_differences", "describe", "differences", "fingerprint"]


class Parametrized:
    """Mixin recording the arguments of the outermost ``__init__`` a subclass defines.

    ``get_params()`` returns them (defaults filled in), ``clone()`` builds an equal object from
    them.  Classes whose ``__init__`` takes ``*args`` cannot be cloned (keyword arguments can).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_records_params", False):
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self, *args: Any, **kw: Any) -> None:
            if "_params" not in self.__dict__:  # the outermost __init__ records; super() calls do not
                try:
                    bound = signature.bind(self, *args, **kw)
                except TypeError:
                    init(self, *args, **kw)  # let __init__ raise its own, clearer error
                    raise
                bound.apply_defaults()
                params: dict[str, Any] = {}
                for name, value in list(bound.arguments.items())[1:]:
                    kind = signature.parameters[name].kind
                    if kind is inspect.Parameter.VAR_KEYWORD:
                        params.update(value)
                    elif kind is inspect.Parameter.VAR_POSITIONAL:
                        params[f"*{name}"] = tuple(value)
                    else:
                        params[name] = value
                self.__dict__["_params"] = params
            init(self, *args, **kw)

        recording_init._records_params = True  # type: ignore[attr-defined]
        cls.__init__ = recording_init  # type: ignore[method-assign]

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments this object was built with (defaults included)."""
        return dict(self.__dict__.get("_params", {}))

    def clone(self):
        """A new, equal object built from :meth:`get_params`."""
        params = self.get_params()
        if any(k.startswith("*") for k in params):
            raise TypeError(f"{type(self).__name__} takes positional *args and cannot be cloned from its parameters")
        return type(self)(**params)

    def fingerprint(self) -> str:
        """SHA-256 of :func:`describe` of this object (class and parameters)."""
        return fingerprint(self)


def _float(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)  # JSON has no inf/nan


def describe(value: object, _depth: int = 0) -> Any:
    """``value`` as plain JSON data, deterministic across processes (no addresses, no ids).

    Numbers and strings as themselves (``inf``/``nan`` as strings); sequences as lists; mappings as
    dicts; NumPy arrays as shape, dtype and CRC-32 of their bytes (small ones also by value);
    objects with ``get_params`` as ``{"class", "params"}``; objects with ``describe_params()`` as
    what it returns; dataclasses by their fields; callables by qualified name; anything else by
    class name and ``str``.
    """
    if _depth > 12:
        return f"<{type(value).__name__}: nested too deep>"
    d = _depth + 1
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return _float(float(value))
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        if arr.size <= 16 and arr.dtype.kind in "biuf":
            return {"array": [describe(v, d) for v in arr.ravel().tolist()], "shape": list(arr.shape)}
        return {"array_crc32": zlib.crc32(arr.tobytes()), "shape": list(arr.shape), "dtype": str(arr.dtype)}
    if isinstance(value, Mapping):
        return {str(k): describe(v, d) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe(v, d) for v in value]
    if hasattr(value, "describe_params") and callable(value.describe_params):
        return describe(value.describe_params(), d)
    if isinstance(value, Parametrized) or (hasattr(value, "get_params") and callable(value.get_params)):
        return {"class": _qualname(type(value)), "params": describe(value.get_params(), d)}
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"class": _qualname(type(value)), "fields": describe(fields, d)}
    if isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value):
        return {"callable": _qualname(value)}
    try:
        import scipy.sparse as sp

        if sp.issparse(value):
            csr = sp.csr_array(value)
            return {"sparse": list(csr.shape), "nnz": int(csr.nnz),
                    "crc32": zlib.crc32(np.ascontiguousarray(csr.indices).tobytes())}
    except ImportError:  # pragma: no cover
        pass
    return {"class": _qualname(type(value)), "str": str(value)[:200]}


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)))}"


def fingerprint(value: object) -> str:
    """SHA-256 (hex) of the JSON of :func:`describe` ``(value)``."""
    text = json.dumps(describe(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def as_attrs(described: Any) -> dict[str, Any]:
    """A :func:`describe` result as netCDF attributes, one per leaf, named by its path (``sigma2.params.draws``,
    ``weights[0].epsilon``): numbers and strings as themselves, a list of numbers as one array, a list of
    strings as one list; ``true``/``false``, ``none`` and an empty list or table (``[]``, ``{}``) spelled as
    text.  For reading (``tree["candidates/weighted"].attrs``); a candidate's identity is its
    :func:`fingerprint`."""
    out: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if not value:
                out[path or "value"] = "{}"
            for k, x in value.items():
                walk(x, f"{path}.{k}" if path else str(k))
        elif isinstance(value, list):
            numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
            if not value:
                out[path or "value"] = "[]"
            elif numbers:
                ints = all(isinstance(x, int) for x in value)
                out[path or "value"] = np.asarray(value, dtype=np.int64 if ints else np.float64)
            elif all(isinstance(x, str) for x in value):
                out[path or "value"] = list(value)
            else:
                for i, x in enumerate(value):
                    walk(x, f"{path}[{i}]")
        elif isinstance(value, bool):
            out[path or "value"] = "true" if value else "false"
        elif value is None:
            out[path or "value"] = "none"
        else:
            out[path or "value"] = value

    walk(described, "")
    return out


def attr_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Where two :func:`as_attrs` results differ (read back from a file, or made now), by attribute:
    ``"name: OLD there, NEW here"``; arrays compared by value."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        if isinstance(a, str) or isinstance(b, str):
            same = a == b
        else:
            same = np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))
        if not same:
            out.append(f"{key}: {a!r:.40} there, {b!r:.40} here")
    return out


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Every leaf where two :func:`describe` results differ, as ``"path: OLD there, NEW here"``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in old:
                out.append(f"{p}: (absent) there, {_short(new[k])} here")
            elif k not in new:
                out.append(f"{p}: {_short(old[k])} there, (absent) here")
            else:
                out.extend(differences(old[k], new[k], p))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for i, (a, b) in enumerate(zip(old, new)):
            out.extend(differences(a, b, f"{path}[{i}]"))
        return out
    return [] if old == new else [f"{path or '(value)'}: {_short(old)} there, {_short(new)} here"]


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
