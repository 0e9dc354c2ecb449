"""hybridpriv: differential privacy when people in one dataset need different protection."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hybridpriv")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
