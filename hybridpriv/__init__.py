"""hybridpriv: differential privacy when people in one dataset need different protection.

The curated namespace (each name is imported on first use, so ``import hybridpriv`` stays light)::

    import hybridpriv as hp

    result = hp.select("my.toml", seed=1)             # a SPEC -> fit -> evaluate -> decide
    evaluation = hp.evaluate(candidates, source, task)  # any candidates on any source of datasets
    decision = hp.decide(evaluation)                     # expected loss, interval, P(best), MC error
    hp.Group("opt-in", size=1000, epsilon=1.0)           # privacy groups, bounds, guarantees

The packages: :mod:`hybridpriv.core` (protocols, privacy, random streams, params, validation),
:mod:`hybridpriv.engine` (evaluate, decide, chunks, checkpoint, cluster), :mod:`hybridpriv.noise` (the
noise primitives), :mod:`hybridpriv.families` (one package per family), :mod:`hybridpriv.release`,
:mod:`hybridpriv.testing`, :mod:`hybridpriv.theory`; front ends :mod:`hybridpriv.cli`,
:mod:`hybridpriv.workflow`, :mod:`hybridpriv.report`.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hybridpriv")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

#: The curated names and the modules that define them.
_NAMES = {
    "select": "hybridpriv.workflow",
    "evaluate": "hybridpriv.engine.evaluate",
    "decide": "hybridpriv.engine.decision",
    "Group": "hybridpriv.core.privacy",
    "Bounds": "hybridpriv.core.privacy",
    "Guarantee": "hybridpriv.core.privacy",
    "load_spec": "hybridpriv.spec",
}

__all__ = ["__version__", *_NAMES]


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(import_module(_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hybridpriv' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})
