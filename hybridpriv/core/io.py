"""The one tabular reader: CSV files of a SPEC, of a release's private data, of a device batch.

Every CSV the toolkit reads goes through :func:`iter_rows` (streamed, so a size limit refuses a large
file as soon as the reader passes it, before the rest is read) or :func:`read_table` (a header row and
records of its width).  Blank lines are skipped; cells stay strings (each caller converts them under
its own rules).  Errors are the caller's exception class (``error=``: a ``SpecError`` for a SPEC's
files, a ``PrivateDataError`` for a release's) and name ``what`` the file is, the path and the row;
they never quote a cell, so a refusal about private data reveals no value.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Table", "iter_rows", "read_rows", "read_table"]


@dataclass(frozen=True)
class Table:
    """A CSV file's header (stripped names) and its records (rows of cells, as strings)."""

    path: Path
    header: tuple[str, ...]
    rows: list[list[str]]

    def column(self, name: str) -> int:
        """The index of column ``name`` (``KeyError`` naming the columns there are)."""
        try:
            return self.header.index(name)
        except ValueError:
            raise KeyError(f"{self.path.name} has no column {name!r}; it has {list(self.header)}") from None


def _path(path: object, what: str) -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{what} must be a path, got {type(path).__name__}")
    return Path(path)


def iter_rows(path: str | Path, what: str, error: type[Exception] = ValueError, delimiter: str = ",",
              max_rows: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """``(line number, cells)`` of each non-blank row of the CSV file ``path``.

    Raises ``FileNotFoundError`` naming ``what`` and the path when there is no such file, ``error``
    when the file is not UTF-8 text or holds more than ``max_rows`` non-blank rows (refused on
    passing the limit, before the rest of the file is read).
    """
    p = _path(path, what)
    if not p.is_file():
        raise FileNotFoundError(f"{what} file not found: {p}")
    count = 0
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh, delimiter=delimiter):
                if not row or not any(c.strip() for c in row):
                    continue
                count += 1
                if max_rows is not None and count > max_rows:
                    raise error(f"{what} file {p} holds more than {max_rows:,} rows (the limit)")
                yield count, row
    except UnicodeDecodeError:
        raise error(f"{what} file {p} is not a text (CSV) file") from None


def read_rows(path: str | Path, what: str, error: type[Exception] = ValueError, delimiter: str = ",",
              max_rows: int | None = None) -> list[list[str]]:
    """The non-blank rows of the CSV file ``path`` (see :func:`iter_rows`)."""
    return [row for _, row in iter_rows(path, what, error, delimiter, max_rows)]


def read_table(path: str | Path, what: str, error: type[Exception] = ValueError, delimiter: str = ",",
               min_rows: int = 1, max_rows: int | None = None) -> Table:
    """A CSV file with a header row: refused (``error``, naming ``what``, the path and the row) without a
    header and ``min_rows`` records, with a repeated column name, or with a record of another width."""
    p = _path(path, what)
    rows = read_rows(p, what, error, delimiter, None if max_rows is None else max_rows + 1)
    if len(rows) < 1 + min_rows:
        raise error(f"{what} file {p} needs a header row and at least {min_rows} record(s)")
    header = tuple(h.strip() for h in rows[0])
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise error(f"{what} file {p} repeats the column name(s) {repeated}")
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise error(f"{what} file {p.name} row {i} has {len(r)} fields, the header has {len(header)}")
    return Table(p, header, rows[1:])
