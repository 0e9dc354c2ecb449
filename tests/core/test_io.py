"""hybridpriv.core.io: the one tabular reader every CSV of the toolkit goes through."""

import ast
from pathlib import Path

import pytest

from hybridpriv.core.io import iter_rows, read_rows, read_table

ROOT = Path(__file__).resolve().parents[2]


class Refused(ValueError):
    pass


def test_rows_skip_blank_lines_and_keep_cells_as_strings(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("x,y\n\n1, 2\n , \n3,4\n")
    assert read_rows(path, "a") == [["x", "y"], ["1", " 2"], ["3", "4"]]
    assert [line for line, _ in iter_rows(path, "a")] == [1, 2, 3]
    (tmp_path / "b.csv").write_text("x;y\n1;2\n")
    assert read_rows(tmp_path / "b.csv", "b", delimiter=";") == [["x", "y"], ["1", "2"]]


def test_a_size_limit_refuses_on_passing_it_before_reading_the_rest(tmp_path):
    path = tmp_path / "big.csv"
    path.write_bytes(b"1\n" * 50_000 + b"\xff\xfe\n")  # bytes past the first read-ahead block are never decoded
    with pytest.raises(Refused, match=r"big file .* holds more than 5 rows \(the limit\)"):
        read_rows(path, "big", Refused, max_rows=5)
    with pytest.raises(Refused, match=r"big file .* is not a text \(CSV\) file"):
        read_rows(path, "big", Refused)


def test_a_table_needs_a_header_unique_names_and_records_of_its_width(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(" a , b \n1,2\n3,4\n")
    table = read_table(path, "t")
    assert table.header == ("a", "b") and table.rows == [["1", "2"], ["3", "4"]] and table.column("b") == 1
    with pytest.raises(KeyError, match=r"t.csv has no column 'c'; it has \['a', 'b'\]"):
        table.column("c")
    for text, message in (("a,b\n", r"needs a header row and at least 1 record"),
                          ("a,a\n1,2\n", r"repeats the column name\(s\) \['a'\]"),
                          ("a,b\n1,2\nsecret\n", r"t.csv row 3 has 1 fields, the header has 2")):
        path.write_text(text)
        with pytest.raises(Refused, match=message) as info:
            read_table(path, "t", Refused)
        assert "secret" not in str(info.value)  # a refusal names the row, never a cell
    with pytest.raises(FileNotFoundError, match=r"t file not found: .*none.csv"):
        read_table(tmp_path / "none.csv", "t")
    with pytest.raises(TypeError, match="t must be a path, got int"):
        read_table(3, "t")


def test_no_other_module_reads_csv_files_itself():
    # heldout.read_example parses the package's own example text (a string from importlib.resources), not a
    # file a user gives
    allowed = {"hybridpriv/core/io.py", "hybridpriv/heldout.py"}
    readers = set()
    for folder in ("hybridpriv", "models", "studies"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            uses = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "csv"
                       and n.attr in ("reader", "DictReader") for n in ast.walk(tree))
            if uses:
                readers.add(str(path.relative_to(ROOT)))
    assert readers <= allowed, sorted(readers - allowed)
