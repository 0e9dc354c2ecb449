"""Private data files are validated like the SPEC: a mismatch is refused naming the group or item."""

from __future__ import annotations

import pytest

from hybridpriv.release.data import PrivateDataError, load_grouped, load_user_item
from hybridpriv.spec import parse_spec

GROUPED = {"bounds": [0, 10], "groups": [
    {"name": "panel", "size": 2, "epsilon": float("inf"), "data": [1.0, 2.0]},
    {"name": "a", "size": 3, "epsilon": 1.0},
    {"name": "b", "size": 2, "epsilon": 0.5}]}


def grouped_spec(**changes):
    return parse_spec({**GROUPED, **changes})


def write(d, name, text):
    (d / name).write_text(text)


def test_grouped_files_header_optional_public_from_spec(tmp_path):
    write(tmp_path, "a.csv", "hours,other\n1,x\n2.5,y\n10,z\n")
    write(tmp_path, "b.csv", "0\n7\n")
    arrays = load_grouped(tmp_path, grouped_spec())
    assert [a.tolist() for a in arrays] == [[1.0, 2.0], [1.0, 2.5, 10.0], [0.0, 7.0]]


@pytest.mark.parametrize("a_text,match", [
    ("1\n2\n", r"group 'a': a.csv holds 2 records but the SPEC declares size = 3"),
    ("1\nnan\n3\n", r"group 'a': NaN in data row 2"),
    ("1,x\n,y\n3,z\n", r"group 'a': empty first cell in data row 2"),
    ("1\nabc\n3\n", r"group 'a': data row 2 .* not a number: 'abc'"),
    ("1\n11\n3\n", r"group 'a': 1 record\(s\) outside bounds \[0, 10\] \(first: 11\)"),
])
def test_grouped_mismatch_names_the_group(tmp_path, a_text, match):
    write(tmp_path, "a.csv", a_text)
    write(tmp_path, "b.csv", "0\n7\n")
    with pytest.raises(PrivateDataError, match=match):
        load_grouped(tmp_path, grouped_spec())


def test_grouped_clamp_only_if_the_spec_says_so(tmp_path):
    write(tmp_path, "a.csv", "-1\n5\n12\n")
    write(tmp_path, "b.csv", "0\n7\n")
    assert load_grouped(tmp_path, grouped_spec(clamp=True))[1].tolist() == [0.0, 5.0, 10.0]


def test_grouped_missing_and_unknown_files(tmp_path):
    write(tmp_path, "a.csv", "1\n2\n3\n")
    with pytest.raises(PrivateDataError, match=r"group 'b': no file"):
        load_grouped(tmp_path, grouped_spec())
    write(tmp_path, "b.csv", "0\n7\n")
    write(tmp_path, "c.csv", "0\n")
    with pytest.raises(PrivateDataError, match=r"c.csv, but the SPEC has no group 'c'"):
        load_grouped(tmp_path, grouped_spec())
    with pytest.raises(PrivateDataError, match="must be a folder"):
        load_grouped(tmp_path / "a.csv", grouped_spec())


USER_ITEM = {"kind": "user-item", "column_sums": [2, 1, 1], "n": 3, "epsilon": 1.0}


def test_user_item_pairs(tmp_path):
    write(tmp_path, "matrix.csv", "user,item\nann,0\nbob,0\nann,1\ncy,2\n")
    m = load_user_item(tmp_path, parse_spec(USER_ITEM))
    assert m.toarray().tolist() == [[1, 1, 0], [1, 0, 0], [0, 0, 1]]
    write(tmp_path, "matrix.csv", "ann,0\nbob,0\nann,1\ncy,2\n")  # no header
    assert load_user_item(tmp_path, parse_spec(USER_ITEM)).nnz == 4


@pytest.mark.parametrize("text,match", [
    ("ann,0\nbob,0\nann,1\nann,2\n", r"2 users but the SPEC declares n = 3"),
    ("ann,0\nbob,0\ncy,1\ncy,1\ncy,2\n", r"user 'cy' reports item 1 twice"),
    ("ann,0\nbob,1\ncy,1\ncy,2\n", r"item 0: matrix.csv has 1 reports but the SPEC's public column_sums\[0\] = 2"),
    ("ann,0\nbob,0\nann,3\ncy,2\n", r"item 3 outside 0..2"),
    ("ann,0\nbob,x\n", r"item must be an integer index, got 'x'"),
    ("ann\n", r"must be user,item"),
])
def test_user_item_mismatch_names_the_item_or_user(tmp_path, text, match):
    write(tmp_path, "matrix.csv", text)
    with pytest.raises(PrivateDataError, match=match):
        load_user_item(tmp_path, parse_spec(USER_ITEM))


def test_user_item_missing_file(tmp_path):
    with pytest.raises(PrivateDataError, match="no file .*matrix.csv"):
        load_user_item(tmp_path, parse_spec(USER_ITEM))
