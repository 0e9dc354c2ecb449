"""Private data files are validated like the SPEC: a mismatch is refused naming the group or item, the row and
the rule, never a private value or count."""

from __future__ import annotations

import pytest

from hybridpriv.families.grouped.release import load_grouped
from hybridpriv.families.user_item.release import load_user_item
from hybridpriv.release.data import PrivateDataError
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


# (file a.csv, what the refusal must say, private things it must not say): a refusal names the group,
# the row and the rule, never a record's value or how many records the file holds (issue 23, item 7)
@pytest.mark.parametrize("a_text,match,secret", [
    ("1.25\n2.75\n6.125\n4.5\n8.875\n", r"group 'a': a.csv does not hold the SPEC's size = 3 records \(rule: group sizes",
     ["5", "6.125", "8.875"]),
    ("1\nnan\n3\n", r"group 'a': data row 2 of .*a.csv: the first cell is NaN \(rule: no missing", []),
    ("1,x\n,secret-y\n3,z\n", r"group 'a': data row 2 of .*a.csv: the first cell is empty \(rule", ["secret-y"]),
    ("1\nsecret-abc\n3\n", r"group 'a': data row 2 of .*a.csv: the first cell is not a number \(rule", ["secret-abc"]),
    ("1\n7.65432\n13.5\n", r"group 'a': data row 2 of a.csv \(the first such\) lies outside the bounds \[0, 5\] "
     r"\(rule: records lie in the SPEC's bounds; set clamp = true", ["7.65432", "13.5", "2 record"]),
])
def test_grouped_refusals_name_group_row_and_rule_never_a_value(tmp_path, a_text, match, secret):
    write(tmp_path, "a.csv", a_text)
    write(tmp_path, "b.csv", "0\n4\n")
    with pytest.raises(PrivateDataError, match=match) as info:
        load_grouped(tmp_path, grouped_spec(bounds=[0, 5], groups=[{**GROUPED["groups"][0], "data": [1.0, 2.0]},
                                                                    *GROUPED["groups"][1:]]))
    message = str(info.value).replace(str(tmp_path), "DIR")
    for s in secret:
        assert s not in message, (s, message)


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


@pytest.mark.parametrize("text,match,secret", [
    ("ann,0\nbob,0\nann,1\nann,2\n", r"the number of users in matrix.csv is not the SPEC's n = 3 \(rule: n is public",
     ["2 users", "ann", "bob"]),
    ("ann,0\nbob,0\ncy,1\ncy,1\ncy,2\n", r"data row 4 of .*matrix.csv: it repeats the user,item pair of an earlier row "
     r"\(rule: the matrix is 0/1", ["cy", "item 1"]),
    ("ann,0\nbob,1\ncy,1\ncy,2\n", r"item 0: the number of its reports in matrix.csv differs from the SPEC's public "
     r"column_sums\[0\] = 2 \(rule", ["has 1", "1 reports", "ann", "cy"]),
    ("ann,0\nbob,0\nann,37\ncy,2\n", r"data row 3 of .*matrix.csv: the item is not an index 0..2 \(rule", ["37", "ann"]),
    ("ann,0\nbob,secret-x\n", r"data row 2 of .*matrix.csv: the item is not an integer \(rule", ["secret-x", "bob"]),
    ("ann-secret\n", r"data row 1 of .*matrix.csv: it has fewer than two cells \(rule: each row is user,item", ["ann"]),
])
def test_user_item_refusals_name_item_row_and_rule_never_a_value(tmp_path, text, match, secret):
    write(tmp_path, "matrix.csv", text)
    with pytest.raises(PrivateDataError, match=match) as info:
        load_user_item(tmp_path, parse_spec(USER_ITEM))
    message = str(info.value).replace(str(tmp_path), "DIR")
    for s in secret:
        assert s not in message, (s, message)


def test_user_item_missing_file(tmp_path):
    with pytest.raises(PrivateDataError, match="no file .*matrix.csv"):
        load_user_item(tmp_path, parse_spec(USER_ITEM))


def test_release_checks_the_selections_spec_but_not_its_chance_line():
    """The chance line words a warning and changes no number: a selection made with another line, or before the key
    existed, is released; any other [evaluation] difference is still refused, naming the key."""
    from hybridpriv.release.run import check_config

    spec = {"source": "a.toml", "kind": "grouped", "evaluation": {"draws": 200, "chance_warning": 0.1}}
    check_config({"source": "b.toml", "kind": "grouped", "evaluation": {"draws": 200, "chance_warning": 0.25}}, spec)
    check_config({"kind": "grouped", "evaluation": {"draws": 200}}, spec)  # made before the key existed
    with pytest.raises(ValueError, match=r"another SPEC: key 'evaluation.draws' differs \(selection: '100', this SPEC: '200'\)"):
        check_config({"kind": "grouped", "evaluation": {"draws": 100, "chance_warning": 0.1}}, spec)
