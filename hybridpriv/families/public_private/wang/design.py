"""The data of the ``"public-private"`` kind: a private design beside public records (:class:`HybridDesign`).

One dataset a Wang mechanism reads: the private points ``D`` and the public points ``E`` (same
columns, the outcome last for the logistic contrast), which columns are categorical (for the
rescaling), the column names and which one is the outcome (the contrast's layout), and named
**public orders** of the public points (public knowledge: an order from a model of the private
population, or an earlier DP release such as Algorithm 2's ``epsilon_1``-noisy order).  The
rescaling of step 1 and every nearest-point search are computed once per dataset and kept, so
all the candidates the engine runs on one dataset share them (a subset searched once).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from ....core.privacy import check_integer
from ._checks import points, same_width
from .prefix import PrefixNearest, ScanPrefix, prefix_nearest
from .scaling import Scaling, check_categorical, fit_scaling
from .weights import KDTREE_MAX_COLUMNS, nearest_search

__all__ = ["HybridData", "HybridDesign", "check_order"]


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=float, copy=True)
    out.flags.writeable = False
    return out


def check_order(order: object, n_public: int | None, name: str = "order") -> np.ndarray:
    """``order`` as a read-only ``intp`` array of distinct public indices in ``[0, n_public)`` (at least one;
    ``n_public=None``: any indices >= 0)."""
    try:
        arr = np.asarray(order)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D sequence of public indices, got {order!r:.80}") from None
    if isinstance(order, (str, bytes)) or arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of public indices, got {order!r:.80}")
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one public index, got an empty sequence")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer public indices, got dtype {arr.dtype}")
    if arr.min() < 0 or (n_public is not None and arr.max() >= n_public):
        upper = "" if n_public is None else f", {n_public})"
        raise ValueError(f"{name} must hold indices in [0{upper or ', n_E)'}, got min {arr.min()}, max {arr.max()}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} must not repeat a public index")
    out = arr.astype(np.intp, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class HybridDesign:
    """A private design beside public records: one dataset of the ``"public-private"`` kind.

    Parameters
    ----------
    private, public
        Numeric arrays ``(n_D, q)`` and ``(n_E, q)`` with the same columns (finite; categorical
        columns hold codes).  For the logistic contrast the outcome (0/1) is a column, the last
        one by default.
    categorical
        Indices of the categorical columns (one-hot encoded by the rescaling).
    columns
        Column names (``q`` distinct strings), or None.
    label
        Name of the outcome column (in ``columns``), or None.  A mechanism whose logistic contrast
        reads another column is refused.
    orders
        Named public orders of the public points: ``{name: indices}``, each a sequence of distinct
        public indices (most representative first).  Public knowledge only: an order from a model
        of public knowledge, or an earlier release whose epsilon is charged elsewhere.
    public_all
        Every public row when ``public`` holds the de-duplicated ones (:func:`load_hybrid_csv`);
        default ``public``.
    levels
        ``{column name: levels}`` of categorical columns read from a file (a code is the index of
        its level).

    Notes
    -----
    ``HybridData`` (the type :func:`~hybridpriv.families.public_private.wang.load_hybrid_csv` returned) is this
    class.  Arrays are copied and made read-only; :meth:`rescaled` and :meth:`nearest` are
    computed once per object and kept.
    """

    private: np.ndarray
    public: np.ndarray
    categorical: tuple[int, ...] = ()
    columns: tuple[str, ...] | None = None
    label: str | None = None
    orders: Mapping[str, np.ndarray] = field(default_factory=dict)
    public_all: np.ndarray | None = None
    levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    data_kind: ClassVar[str] = "public-private"

    def __post_init__(self) -> None:
        P = points(self.private, "private")
        E = points(self.public, "public")
        same_width(P, E, "private", "public")
        q = E.shape[1]
        object.__setattr__(self, "private", _frozen(P))
        object.__setattr__(self, "public", _frozen(E))
        object.__setattr__(self, "categorical", check_categorical(self.categorical, q))
        if self.columns is not None:
            if isinstance(self.columns, (str, bytes)) or not all(isinstance(c, str) for c in self.columns):
                raise TypeError(f"columns must be a sequence of column names (strings) or None, got {self.columns!r}")
            cols = tuple(self.columns)
            if len(cols) != q or len(set(cols)) != q:
                raise ValueError(f"columns must name the {q} columns once each, got {list(cols)}")
            object.__setattr__(self, "columns", cols)
        if self.label is not None:
            if not isinstance(self.label, str) or self.columns is None or self.label not in self.columns:
                raise ValueError(f"label must be the name of a column in columns {self.columns}, got {self.label!r}")
        if not isinstance(self.orders, Mapping):
            raise TypeError(f"orders must be a mapping name -> public indices, got {type(self.orders).__name__}")
        orders = {}
        for name, order in self.orders.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"orders must be keyed by non-empty names, got {name!r}")
            orders[name] = check_order(order, E.shape[0], f"orders[{name!r}]")
        object.__setattr__(self, "orders", orders)
        if self.public_all is None:
            object.__setattr__(self, "public_all", self.public)
        else:
            A = points(self.public_all, "public_all")
            same_width(A, E, "public_all", "public")
            object.__setattr__(self, "public_all", _frozen(A))
        if not isinstance(self.levels, Mapping):
            raise TypeError(f"levels must be a mapping column name -> levels, got {type(self.levels).__name__}")
        object.__setattr__(self, "levels", dict(self.levels))
        object.__setattr__(self, "_cache", {})

    # -- sizes and layout ---------------------------------------------------------------
    @property
    def n_private(self) -> int:
        """``n_D``."""
        return int(self.private.shape[0])

    @property
    def n_public(self) -> int:
        """``n_E``."""
        return int(self.public.shape[0])

    @property
    def outcome(self) -> int | None:
        """Index of the outcome column (from ``label``), or None."""
        return None if self.label is None else self.columns.index(self.label)  # type: ignore[union-attr]

    def covariates(self) -> np.ndarray:
        """The private points without the outcome column (the last column when no ``label`` is named)."""
        j = self.outcome if self.outcome is not None else self.private.shape[1] - 1
        return np.delete(self.private, j, axis=1)

    def order(self, name: str) -> np.ndarray:
        """The public order called ``name``."""
        if not isinstance(name, str) or name not in self.orders:
            raise ValueError(f"order must name one of the dataset's public orders {sorted(self.orders)}, got {name!r}")
        return self.orders[name]

    def with_orders(self, orders: Mapping[str, object]) -> HybridDesign:
        """The same design with more named public orders (the rescaling and searches are kept)."""
        new = replace(self, orders={**self.orders, **dict(orders)})
        object.__setattr__(new, "_cache", self._cache)  # same points: the same searches
        return new

    # -- the computations shared by every candidate -----------------------------------------
    def cached(self, key: object, make: Any) -> Any:
        """``make()``, computed once per dataset and ``key`` (hashable) and kept (e.g. a task's reference fit)."""
        full = ("user", key)
        if full not in self._cache:
            self._cache[full] = make()
        return self._cache[full]

    def rescaled(self) -> tuple[np.ndarray, np.ndarray, Scaling]:
        """Algorithm 1, step 1 on this design: ``(private01, public01, scaling)`` (computed once)."""
        if "rescaled" not in self._cache:
            s = fit_scaling(self.public, self.categorical)
            self._cache["rescaled"] = (s.transform(self.private, "private"), s.transform(self.public, "public"), s)
        return self._cache["rescaled"]

    def nearest(self, subset: np.ndarray | None = None, method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
        """Each private point's nearest public point among ``subset`` (positions in ``subset``; ties to the
        earliest) and its distance, on the rescaled points; ``None``: all public points.  Kept per subset."""
        key = ("nearest", method, None if subset is None else np.asarray(subset, dtype=np.intp).tobytes())
        if key not in self._cache:
            p01, e01, _ = self.rescaled()
            self._cache[key] = nearest_search(p01, e01 if subset is None else e01[np.asarray(subset, dtype=np.intp)],
                                              method)
        return self._cache[key]

    def nearest_prefix(self, order: np.ndarray, size: int, method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
        """:meth:`nearest` on ``order[:size]``, for many sizes of one public order: the records of the
        order answer every size (:mod:`~hybridpriv.families.public_private.wang.prefix`: one pass by matrix products
        above ``KDTREE_MAX_COLUMNS`` columns or with ``method="chunked"``, else a direct scan as far as
        the largest size asked); ``method="kdtree"`` searches each subset with a KD-tree.  Kept per
        order (and size) by the dataset: for the public orders its candidates share."""
        key = ("prefix", method, np.asarray(order, dtype=np.intp).tobytes(), size)
        if key not in self._cache:
            whole = key[:3]
            if whole not in self._cache:
                self._cache[whole] = self.prefix_search(order, method)
            self._cache[key] = self._cache[whole](size)
        return self._cache[key]

    def prefix_search(self, order: np.ndarray, method: str = "auto") -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
        """``search(size)``: :meth:`nearest` on ``order[:size]``, kept by nobody (for an order drawn by
        one run, e.g. Algorithm 2's ``epsilon_1``-noisy order): the order's records, from one pass by
        matrix products above ``KDTREE_MAX_COLUMNS`` columns or with ``method="chunked"``, else from a
        direct scan extended to the largest size asked (:class:`~hybridpriv.families.public_private.wang.prefix.ScanPrefix`,
        the KD-tree's distances bit for bit); ``method="kdtree"``: a KD-tree per size."""
        if not isinstance(method, str) or method not in ("auto", "kdtree", "chunked"):
            raise ValueError(f"method must be 'auto', 'kdtree' or 'chunked', got {method!r}")
        order = np.asarray(order, dtype=np.intp)
        p01, e01, _ = self.rescaled()
        if method == "kdtree":
            def search(size: int) -> tuple[np.ndarray, np.ndarray]:
                size = check_integer(size, "size", 1)
                if size > order.size:
                    raise ValueError(f"size must be at most the order's length {order.size}, got {size}")
                return nearest_search(p01, e01[order[:size]], method)

            return search
        if method == "auto" and e01.shape[1] <= KDTREE_MAX_COLUMNS:
            return ScanPrefix(p01, e01, order).query
        records: PrefixNearest = prefix_nearest(p01, e01, order)
        return records.query

    def counts(self, subset: np.ndarray | None = None, method: str = "auto") -> np.ndarray:
        """``|D_{y_i}|`` of every point of ``subset`` (all public points by default)."""
        n = self.n_public if subset is None else len(subset)
        return np.bincount(self.nearest(subset, method)[0], minlength=n).astype(float)

    def describe_params(self) -> dict[str, Any]:
        """What results and checkpoints record: shapes, layout and checksums of the arrays."""
        crc = lambda a: zlib.crc32(np.ascontiguousarray(a).tobytes())  # noqa: E731
        return {"class": "HybridDesign", "private": [list(self.private.shape), crc(self.private)],
                "public": [list(self.public.shape), crc(self.public)], "categorical": list(self.categorical),
                "columns": list(self.columns or ()), "label": self.label,
                "orders": {k: crc(v) for k, v in sorted(self.orders.items())}}

    def __repr__(self) -> str:
        return (f"HybridDesign(n_private={self.n_private}, n_public={self.n_public}, columns={self.columns}, "
                f"categorical={self.categorical}, orders={sorted(self.orders)})")


#: The name :func:`~hybridpriv.families.public_private.wang.load_hybrid_csv` used for its result (the same class).
HybridData = HybridDesign
