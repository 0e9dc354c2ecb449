"""Named random streams: every random number in hybridpriv comes from ``stream(seed, name, *keys)``.

One integer ``seed`` makes everything.  A *stream* is the ``numpy.random.SeedSequence``

    SeedSequence(seed, spawn_key=(key(name), key(k1), key(k2), ...))

where ``key`` maps an integer ``k >= 0`` to itself and a string to the first 128 bits of its SHA-256
(so names and labels need no registry, a new name cannot shift an old stream, and two names collide
with probability ``2**-128`` rather than the ``2**-32`` of a CRC-32, among whose keys two of about
77,000 labels collide at even odds, and two labels that collide share their noise).  ``STREAM_SCHEME`` names this scheme; checkpoints record it, so
results drawn under another scheme are never resumed.  Streams with different
names or keys are statistically independent (``SeedSequence`` hashes the whole key).

The guarantees, stated once:

* **Same seed, same numbers.**  A stream depends only on ``(seed, name, keys)``; the engine keys
  datasets by ``(chain, draw)`` and mechanisms by ``(label, chain, draw)``, never by chunk,
  worker, process or the order work is done in, so the same seed gives the same numbers in one
  process, on N dask workers, after a resume, with more or fewer candidates beside a candidate.
* **Adding a candidate changes nothing else.**  A candidate's noise is keyed by its own label.
* **Common random numbers across candidates come from the data**, which every candidate sees
  identically (the dataset of ``(chain, draw)`` is generated once per item).

Names in use (``stream`` takes any name; these are the library's):

============  =====================================  ==============================================
name          keys                                   what it seeds
============  =====================================  ==============================================
``dataset``   chain, draw                            the simulated dataset at ``(chain, draw)``
``mechanism`` label, chain, draw                     one candidate's releases on that dataset
``fit``       chain                                  ``pm.sample``'s seed of one chain
``matrix``    chain, draw                            the user-item matrix of a posterior draw
``audit``     case, ...                              DP audits
``study``     setting keys ...                       a study's own fixed data (e.g. one point cloud)
============  =====================================  ==============================================

Public functions that draw random numbers take ``rng`` (SPEC 7): ``None`` (fresh OS entropy),
an integer seed, a ``SeedSequence`` or a ``Generator`` -- see :func:`as_generator`.
"""

from __future__ import annotations

import hashlib
from numbers import Integral

import numpy as np

from .validation import check_seed  # noqa: E402 (re-exported: the seeds' one check)

__all__ = ["STREAM_SCHEME", "as_generator", "check_seed", "key", "rng", "stream"]


#: The key scheme: 2 is 128-bit SHA-256 keys of strings (1 was CRC-32, before issue 24).
STREAM_SCHEME = 2


def key(value: object) -> int:
    """A spawn-key entry: an integer ``>= 0`` as itself, a string as the first 128 bits of its SHA-256."""
    if isinstance(value, str):
        return int.from_bytes(hashlib.sha256(value.encode()).digest()[:16], "little")
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 0:
        raise TypeError(f"stream keys must be integers >= 0 or strings, got {value!r}")
    return int(value)


def stream(seed: int | np.random.SeedSequence, name: str, *keys: object) -> np.random.SeedSequence:
    """The ``SeedSequence`` of stream ``name`` with ``keys`` under ``seed`` (see the module docstring).

    ``seed`` may be a ``SeedSequence``: the stream is then keyed below it (its entropy and spawn
    key are kept), so a caller handed a sequence can still name sub-streams.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"stream name must be a non-empty string, got {name!r}")
    path = (key(name), *(key(k) for k in keys))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, *path))
    return np.random.SeedSequence(check_seed(seed), spawn_key=path)


def rng(seed: int | np.random.SeedSequence, name: str, *keys: object) -> np.random.Generator:
    """A ``Generator`` on :func:`stream` ``(seed, name, *keys)``."""
    return np.random.default_rng(stream(seed, name, *keys))


def as_generator(value: object, name: str = "rng") -> np.random.Generator:
    """SPEC 7: ``None`` (fresh entropy), an integer seed, a ``SeedSequence`` or a ``Generator``.

    A ``Generator`` is returned as it is (the caller's state advances); anything else is refused
    naming ``name``.
    """
    if isinstance(value, np.random.Generator):
        return value
    if value is None or isinstance(value, np.random.SeedSequence):
        return np.random.default_rng(value)
    if isinstance(value, Integral) and not isinstance(value, bool):
        return np.random.default_rng(check_seed(value, name))
    raise TypeError(f"{name} must be None, an integer seed, a numpy SeedSequence or Generator, got {value!r}")
