"""Resumable runs: a folder holding a manifest and one file per finished chunk.

``DIR/manifest.json`` records the run's configuration, its seed and, per section of work
(``evaluate``, ``risks``, ...), the engine's settings and the chunk layout.  ``DIR/chunks/``
holds one ``SECTION-NNNNNN.npz`` per finished chunk, written to a temporary file and moved
into place with :func:`os.replace`, so a killed run leaves whole chunks or none.  Work done
before the chunks (e.g. a sampled posterior) can be kept as ``DIR/stages/NAME.nc`` with
:meth:`Checkpoint.dataset`, recorded in the manifest with its settings.  The temporary
files a killed writer leaves behind are removed when the folder is next opened.  A folder is
used by one run at a time (an exclusive ``flock`` on ``DIR/.lock``; a second run is refused).
Opening a folder whose manifest holds another configuration is refused, naming what differs
(down to one candidate's parameter: ``candidates.weighted.params.sigma2: 1.0 there, 100.0 here``).

Every chunk file proves what it is: it carries its identity (section, index, item range and the
hash of the section's settings) and a SHA-256 of its arrays, checked when it is read.  A chunk
that is empty, truncated, altered, or copied from another chunk or run is not used: it is
reported in one line on stderr and recomputed.  A read-only folder holding a finished run can be
read back (nothing needs writing).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..core.params import differences

__all__ = ["Checkpoint"]


def _normalise(obj: object) -> object:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _diff(old: Mapping, new: Mapping, limit: int = 6) -> str:
    parts = differences(old, new)
    more = f"; and {len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def _hash(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes (sorted by name)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _write_atomic(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _local_locks():
    """xarray takes its netCDF locks from dask's current scheduler: with a dask.distributed client
    open it asks the scheduler for a named lock (which fails for in-memory files).  The stage
    files are written and read by this process only, so use local locks."""
    import contextlib
    import sys

    if "dask" not in sys.modules:
        return contextlib.nullcontext()
    import dask

    return dask.config.set(scheduler="synchronous")


class Checkpoint:
    """A resumable run's folder (see the module docstring).

    ``config`` is the run's full configuration (JSON-serialisable; it includes the seed).
    A new folder gets a manifest; an existing one must hold the same configuration.
    """

    def __init__(self, folder: str | os.PathLike, config: Mapping[str, object]) -> None:
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a mapping, got {config!r}")
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise ValueError(f"resume folder must be a folder, got the existing file {str(self.folder)!r}")
        self.chunks = self.folder / "chunks"
        if not self.chunks.is_dir():
            self.chunks.mkdir(parents=True, exist_ok=True)
        self.read_only = not os.access(self.folder, os.W_OK) or not os.access(self.chunks, os.W_OK)
        lock_path = self.folder / ".lock"
        try:  # held (and the lock with it) until this object is closed or freed
            self._lock = open(lock_path, "r" if self.read_only and lock_path.exists() else "a")
        except OSError as exc:
            raise ValueError(f"resume folder {str(self.folder)!r} cannot be used: {exc.strerror}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ValueError(f"resume folder {str(self.folder)!r} is in use by another run; wait for it or use a new folder") from None
        self.stages = self.folder / "stages"
        self._section_hash: dict[str, str] = {}
        self._layouts: dict[str, list[tuple[int, int]]] = {}
        self.damaged: list[str] = []
        if not self.read_only:
            for orphan in [*self.chunks.glob(".*.tmp"), *self.folder.glob(".*.tmp"), *self.stages.glob(".*.tmp")]:
                # left by a killed writer
                orphan.unlink(missing_ok=True)
        self.manifest_path = self.folder / "manifest.json"
        self.config = _normalise(dict(config))
        if self.manifest_path.exists():
            try:
                self.manifest = json.loads(self.manifest_path.read_text())
                old = self.manifest["config"]
            except (ValueError, KeyError) as exc:
                raise ValueError(f"resume folder {str(self.folder)!r} has an unreadable manifest.json ({exc})") from None
            if old != self.config:
                raise ValueError(
                    f"resume folder {str(self.folder)!r} holds a run with another configuration ({_diff(old, self.config)}); "
                    "rerun with the same settings or use a new folder"
                )
        else:
            if self.read_only:
                raise ValueError(f"resume folder {str(self.folder)!r} is read-only and holds no run")
            self.manifest = {"config": self.config, "seed": self.config.get("seed"), "sections": {}}
            self._save_manifest()

    def next_call(self) -> int:
        """The index of this evaluation among those run through this checkpoint since it was opened
        (0, 1, ...): sections of the k-th call are named apart, so a run with several evaluations
        (in a fixed order, as a study has) resumes each from its own chunks."""
        k = self.__dict__.get("_calls", 0)
        self._calls = k + 1
        return k

    def close(self) -> None:
        """Release the folder for other runs (also done when the object is garbage-collected)."""
        if not self._lock.closed:
            self._lock.close()

    def __enter__(self) -> "Checkpoint":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _save_manifest(self) -> None:
        if self.read_only:
            raise ValueError(f"resume folder {str(self.folder)!r} is read-only and this run would need to write to it")
        text = json.dumps(self.manifest, indent=1, sort_keys=True).encode()
        _write_atomic(self.manifest_path, lambda fh: fh.write(text))

    def layout(self, section: str, engine: Mapping[str, object], chunks: Sequence[tuple[int, int]] | None,
               make=None) -> list[tuple[int, int]]:
        """The chunk layout of ``section``: the manifest's if it has one, else ``chunks`` (or ``make()``)
        recorded now.  ``engine`` (the section's settings) must match the manifest's."""
        engine = _normalise(dict(engine))
        known = self.manifest["sections"].get(section)
        if known is not None:
            if known["engine"] != engine:
                raise ValueError(
                    f"resume folder {str(self.folder)!r}: section {section!r} was run with other settings "
                    f"({_diff(known['engine'], engine)}); rerun with the same settings or use a new folder"
                )
            stored = [tuple(c) for c in known["chunks"]]
            if chunks is not None and [tuple(c) for c in chunks] != stored:
                raise ValueError(
                    f"chunk_size does not match the chunk layout recorded in {str(self.manifest_path)!r} "
                    f"(first chunk {list(stored[0])} there); omit chunk_size to resume"
                )
            self._section_hash[section], self._layouts[section] = _hash(engine), stored
            return stored
        layout = [tuple(int(x) for x in c) for c in (chunks if chunks is not None else make())]
        self.manifest["sections"][section] = {"engine": engine, "chunks": [list(c) for c in layout]}
        self._save_manifest()
        self._section_hash[section], self._layouts[section] = _hash(engine), layout
        return layout

    def dataset(self, name: str, settings: Mapping[str, object], make):
        """An ``xarray.Dataset`` kept in the folder: read back if this folder holds stage ``name``
        with the same ``settings``; else ``make()`` is called, its result written (atomically, as
        ``stages/NAME.nc``) and the stage recorded in the manifest.  Other settings are refused."""
        import xarray as xr

        if not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"stage name must be letters, digits, '-' or '_', got {name!r}")
        settings = _normalise(dict(settings))
        stages = self.manifest.setdefault("stages", {})
        known = stages.get(name)
        path = self.stages / f"{name}.nc"
        if known is not None and known["settings"] != settings:
            raise ValueError(
                f"resume folder {str(self.folder)!r}: stage {name!r} was made with other settings "
                f"({_diff(known['settings'], settings)}); rerun with the same settings or use a new folder"
            )
        if known is not None and path.exists():
            with _local_locks():
                return xr.load_dataset(path, engine="h5netcdf")
        ds = make()
        if not isinstance(ds, xr.Dataset):
            raise TypeError(f"make() must return an xarray.Dataset, got {type(ds).__name__}")
        self.stages.mkdir(exist_ok=True)
        with _local_locks():
            data = ds.to_netcdf(engine="h5netcdf")  # bytes
        _write_atomic(path, lambda fh: fh.write(bytes(data)))
        stages[name] = {"settings": settings, "file": f"stages/{name}.nc"}
        self._save_manifest()
        return ds

    def _path(self, section: str, index: int) -> Path:
        return self.chunks / f"{section}-{index:06d}.npz"

    def _identity(self, section: str, index: int) -> str:
        """What a chunk must say it is: section, index, item range and settings (when laid out), run."""
        items = list(self._layouts[section][index]) if section in self._layouts else None
        return json.dumps({"section": section, "index": index, "items": items,
                           "settings": self._section_hash.get(section), "run": _hash(self.config)}, sort_keys=True)

    def _damaged(self, path: Path, why: str) -> None:
        self.damaged.append(path.name)
        print(f"checkpoint: {path.name} in {str(self.folder)!r} is not this chunk ({why}); recomputing it",
              file=sys.stderr, flush=True)
        if not self.read_only:
            path.unlink(missing_ok=True)

    def load(self, section: str, index: int) -> dict[str, np.ndarray] | None:
        """The arrays of a finished chunk, or ``None`` (not there yet, or damaged: then recomputed)."""
        path = self._path(section, index)
        if not path.exists():
            return None
        expected = self._identity(section, index)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            self._damaged(path, f"unreadable: {type(exc).__name__}")
            return None
        identity = arrays.pop("__chunk__", None)
        digest = arrays.pop("__sha256__", None)
        if identity is None or digest is None:
            self._damaged(path, "no identity or checksum")
            return None
        if str(identity) != expected:
            self._damaged(path, "it belongs to another chunk or run")
            return None
        if str(digest) != _arrays_digest(arrays):
            self._damaged(path, "checksum mismatch")
            return None
        return arrays

    def save(self, section: str, index: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Write a finished chunk atomically, with its identity and checksum."""
        if self.read_only:
            raise ValueError(f"resume folder {str(self.folder)!r} is read-only and this run would need to write to it "
                             f"(chunk {index} of {section!r} is missing)")
        if any(k.startswith("__") for k in arrays):
            raise ValueError("chunk array names must not start with '__' (reserved)")
        payload = dict(arrays)
        payload["__chunk__"] = np.array(self._identity(section, index))
        payload["__sha256__"] = np.array(_arrays_digest(arrays))
        buf = io.BytesIO()
        np.savez(buf, **payload)
        _write_atomic(self._path(section, index), lambda fh: fh.write(buf.getvalue()))

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.folder)!r})"
