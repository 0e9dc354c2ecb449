"""Bad input to the CLI: SPEC files and flags exit 2 with one line naming the key."""

import pytest
from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


# ----------------------------------------------------------------------------------------
# The CLI: SPEC files
# ----------------------------------------------------------------------------------------


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + "".join(
            "\\" + c if c in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in v
        ) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def toml_dumps(spec: dict) -> str:
    """A minimal TOML writer for SPEC dicts (tables and arrays of tables one level deep)."""
    lines, tables, arrays = [], [], []
    for k, v in spec.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for k, items in arrays:
        for item in items:
            lines += ["", f"[[{k}]]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in item.items()]
    for k, table in tables:
        lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in table.items()]
    return "\n".join(lines) + "\n"


def run_cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_limit(60.0), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_cli_error(code: int, err: str, *names: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, f"exit status {code}, stderr {err!r}"
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    assert lines[0].startswith("error: "), lines[0]
    assert any(_names(lines[0], n) for n in names), f"{lines[0]!r} names none of {names}"


def select_spec(spec: dict | str, *extra: str, filename: str = "spec.toml", files: dict | None = None):
    """Write ``spec`` (a dict or raw text) in a fresh folder and run ``hybridpriv select`` on it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / filename
        path.write_text(spec if isinstance(spec, str) else toml_dumps(spec), encoding="utf-8")
        for name, text in (files or {}).items():
            (Path(tmp) / name).write_text(text)
        return run_cli(["select", str(path), "--out", str(Path(tmp) / "out"), *extra])


@st.composite
def grouped_spec(draw):
    lo = draw(st.integers(-100, 100))
    return {
        "statistic": "mean",
        "bounds": [lo, lo + draw(st.integers(1, 100))],
        "groups": [
            {"name": "pub", "size": draw(st.integers(1, 30)), "epsilon": INF},
            {"name": "priv", "size": draw(st.integers(1, 500)), "epsilon": draw(st.floats(0.05, 5.0))},
        ],
        "evaluation": {"draws": 4, "trials": 2, "seed": 0},
    }


def _set(spec, path, value):
    node = spec
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value



#: key -> (path in the spec, strategy of bad values, names the error must give)
GROUPED_BAD = {
    "epsilon": (("groups", 1, "epsilon"), st.one_of(st.floats(max_value=0.0), st.just(NAN), st.booleans(),
                                                  text_not("inf", "public")), ("epsilon",)),
    "size": (("groups", 1, "size"), st.one_of(st.integers(-(2**63), 0), st.floats(0.5, 10), st.text(max_size=2), st.booleans()), ("size",)),
    "delta": (("groups", 1, "delta"), st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN)), ("delta",)),
    "name": (("groups", 1, "name"), st.sampled_from(["pub", "", "  "]), ("name", "names")),
    "bounds": (("bounds",), st.one_of(
        st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)).filter(lambda p: not p[0] < p[1]).map(list),
        st.tuples(st.floats(-1e6, 1e6), st.sampled_from([NAN, INF, -INF])).map(list),
        st.lists(st.floats(0, 1), max_size=1),
        st.lists(st.floats(0, 1), min_size=3, max_size=3),
        st.just(["0", "1"]),
        st.just(5),
    ), ("bounds",)),
    "statistic": (("statistic",), st.one_of(text_not("mean", "median"), st.integers()), ("statistic",)),
    "clamp": (("clamp",), st.one_of(st.integers(), st.text(max_size=3)), ("clamp",)),
    "relation": (("relation",), text_not("replace"), ("relation",)),
    "estimators": (("evaluation", "estimators"), st.one_of(
        st.lists(text_not(*ESTIMATOR_NAMES), min_size=1, max_size=2),
        st.just([]),
        st.just(["weighted-median"]),
        st.just("weighted"),
        st.just([1]),
    ), ("estimator", "estimators")),
    "draws": (("evaluation", "draws"), st.one_of(st.integers(-(2**63), 1), st.floats(2.5, 10), st.text(max_size=2)), ("draws",)),
    "trials": (("evaluation", "trials"), st.one_of(st.integers(-(2**63), 0), st.floats(), st.booleans()), ("trials",)),
    "seed": (("evaluation", "seed"), st.one_of(st.integers(-(2**63), -1), st.floats(allow_nan=False)), ("seed",)),
    "chance_warning": (("evaluation", "chance_warning"), st.one_of(
        st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True), st.booleans(), st.text(max_size=2)),
        ("chance_warning",)),
    "target": (("evaluation", "target"), text_not("population", "sample"), ("target",)),
    "loss": (("evaluation", "loss"), text_not("squared", "absolute"), ("loss",)),
    "family": (("model", "family"), text_not("normal", "beta"), ("family",)),
    "chains": (("model", "chains"), st.integers(-100, 0), ("chains",)),
    "tune": (("model", "tune"), st.integers(-100, -1), ("tune",)),
    "known_variance": (("model", "known_variance"), st.one_of(st.just(NAN), st.text(max_size=2), st.booleans()), ("known_variance",)),
    "released_means": (("model", "released_means"), st.one_of(
        st.just([{"value": NAN, "noise_scale": 1.0}]),
        st.just([{"value": 1.0}]),
        st.just([{"value": 1.0, "noise_scale": 1.0, "group": "nobody"}]),
        st.just([{"value": 1.0, "noise_scale": 1.0, "extra": 1}]),
    ), ("value", "noise_scale", "group", "unknown key(s)", "released_means")),
    "unknown": (("zz_unknown",), st.integers(), ("unknown key(s)",)),
    "data-private": (("groups", 1, "data"), st.just([0.0]), ("data",)),
    "data-length": (("groups", 0, "data"), st.lists(st.floats(0, 1), max_size=3).map(lambda v: v + [0.0] * 40), ("data",)),
    "data-nan": (("groups", 0, "data"), st.just(None), ("data",)),
    "data-missing-file": (("groups", 0, "data"), st.just("missing.csv"), ("data",)),
}


@cfg(480)
@given(spec=grouped_spec(), key=st.sampled_from(sorted(GROUPED_BAD)), data=st.data())
@counted("cli")
def test_cli_grouped_spec_bad_values_exit_2_with_one_line(spec, key, data):
    path, strategy, names = GROUPED_BAD[key]
    value = data.draw(strategy)
    if key == "data-nan":
        value = [0.0] * spec["groups"][0]["size"]
        value[0] = NAN
    _set(spec, path, value)
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, *names)


@cfg(60)
@given(spec=grouped_spec(), key=st.sampled_from(["known_variance", "noise_scale", "family_options"]), data=st.data())
@counted("cli")
def test_cli_grouped_spec_model_knowledge_exit_2(spec, key, data):
    """Knowledge checked when the model is built (after parsing, before any sampling)."""
    if key == "known_variance":
        _set(spec, ("model", "known_variance"), data.draw(st.one_of(st.floats(max_value=0.0), st.just(INF))))
    elif key == "noise_scale":
        _set(spec, ("model", "released_means"), [{"value": 1.0, "noise_scale": data.draw(st.floats(max_value=0.0))}])
    else:
        _set(spec, ("model", "family_options"), {"sigma_scale": data.draw(st.floats(max_value=0.0))})
        key = "sigma_scale"
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, key)


@cfg(60)
@given(spec=grouped_spec())
@counted("cli")
def test_good_grouped_spec_loads(spec):
    """The generator writes valid SPECs: unmutated, they parse back to the same values."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(toml_dumps(spec), encoding="utf-8")
        parsed = accepts(lambda: load_spec(path))
    assert [g.size for g in parsed.groups] == [g["size"] for g in spec["groups"]]
    assert [g.epsilon for g in parsed.groups] == [g["epsilon"] for g in spec["groups"]]
    assert (parsed.bounds.lower, parsed.bounds.upper) == tuple(spec["bounds"])


@st.composite
def user_item_spec(draw):
    c = draw(st.lists(st.integers(0, 6), min_size=2, max_size=6).filter(lambda c: sum(c) > 0))
    return {
        "kind": "user-item",
        "column_sums": c,
        "n": draw(st.integers(max(c), sum(c))),
        "epsilon": draw(st.floats(0.1, 5.0)),
        "k": [1, len(c)],
        "evaluation": {"draws": 4, "chains": 2, "trials": 2},
    }


@cfg(480)
@given(
    spec=user_item_spec(),
    key=st.sampled_from(["epsilon", "k<=0", "k>m", "k-range", "k-type", "column_sums", "column_sums-infeasible",
                         "column_sums-file", "n-type", "n-infeasible", "n-bounds", "loss", "draws", "trades_per_row",
                         "unknown"]),
    data=st.data(),
)
@counted("cli")
def test_cli_user_item_spec_bad_values_exit_2_with_one_line(spec, key, data):
    c = spec["column_sums"]
    m, lo, hi = len(c), max(c), sum(c)
    names = (key.split("-")[0].split("<")[0].split(">")[0],)
    if key == "epsilon":
        spec["epsilon"] = data.draw(st.one_of(st.floats(max_value=0.0), st.sampled_from([NAN, INF]), st.text(max_size=2), st.booleans()))
    elif key == "k<=0":
        spec["k"] = data.draw(st.one_of(st.integers(-(2**63), 0), st.tuples(st.integers(-100, 0), st.integers(1, m)).map(list)))
    elif key == "k>m":
        spec["k"] = data.draw(st.one_of(st.integers(m + 1, 2**63 - 1), st.tuples(st.integers(1, m), st.integers(m + 1, 10**6)).map(list)))
    elif key == "k-range":
        spec["k"] = data.draw(st.tuples(st.integers(2, m + 5), st.integers(1, m + 5)).filter(lambda p: p[0] > p[1]).map(list))
    elif key == "k-type":
        spec["k"] = data.draw(st.one_of(st.floats(), st.text(max_size=2), st.booleans(), st.just([1, 2, 3]), st.just([1.0, 2.0])))
    elif key == "column_sums":
        spec["column_sums"] = data.draw(
            st.one_of(
                st.just([]),
                st.lists(st.integers(0, 5), min_size=1, max_size=4).map(lambda v: v + [-1]),
                st.lists(st.integers(0, 5), min_size=1, max_size=4).map(lambda v: v + [1.5]),
                st.just([1.0, NAN]),
                st.just([1.0, INF]),
                st.just(["1", "2"]),
                st.just([True, 1]),
                st.just(3),
            )
        )
    elif key == "column_sums-infeasible":  # all zero: nobody reported anything
        spec["column_sums"] = [0] * m
        spec.pop("n")
    elif key == "column_sums-file":
        spec["column_sums"] = data.draw(st.sampled_from(["missing.csv", "sub/none.csv"]))
    elif key == "n-type":
        spec["n"] = data.draw(st.one_of(st.floats(0.5, 10), st.text(max_size=2), st.booleans(), st.just([1]), st.just([1, 2, 3]), st.just([1.5, 3])))
    elif key == "n-infeasible":
        spec["n"] = data.draw(st.one_of(st.integers(-(2**63), lo - 1), st.integers(hi + 1, 2**63 - 1)))
    elif key == "n-bounds":
        spec["n"] = data.draw(
            st.one_of(
                st.tuples(st.integers(-100, hi), st.integers(-100, hi)).filter(lambda p: p[0] > p[1]).map(list),
                st.tuples(st.integers(hi + 1, hi + 50), st.integers(hi + 50, hi + 100)).map(list),
                st.tuples(st.integers(-100, lo - 1), st.integers(-100, lo - 1)).filter(lambda p: p[0] <= p[1]).map(list),
            )
        )
        names = ("n",)
    elif key == "loss":
        spec["loss"] = data.draw(text_not("squared", "max", "top10"))
    elif key == "draws":
        spec["evaluation"]["draws"] = data.draw(st.integers(-(2**63), 1))
    elif key == "trades_per_row":
        spec["trades_per_row"] = data.draw(st.integers(-100, 0))
    else:
        spec["zz_unknown"] = 1
        names = ("unknown key(s)",)
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, *names)


@cfg(60)
@given(
    case=st.sampled_from(["missing-file", "not-toml", "directory", "kind", "draws-flag", "trials-flag", "seed-flag",
                          "chance-warning-flag", "example"]),
    data=st.data(),
)
@counted("cli")
def test_cli_files_and_flags_exit_2_with_one_line(case, data):
    good = data.draw(grouped_spec())
    if case == "missing-file":
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_cli(["select", str(Path(tmp) / data.draw(names_ok) / "spec.toml")])
        assert_cli_error(code, err, "spec file not found", "No such file or directory")
    elif case == "not-toml":
        code, _, err = select_spec(data.draw(st.sampled_from(["bounds = [0, ", "[[groups]\nname=1", "= 3", "x = 'a\n"])))
        assert_cli_error(code, err, "TOML")
    elif case == "directory":
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_cli(["select", tmp])
        assert_cli_error(code, err, "is a folder, not a SPEC file")
    elif case == "kind":
        good["kind"] = data.draw(text_not("grouped", "user"))
        code, _, err = select_spec(good)
        assert_cli_error(code, err, "kind")
    elif case == "example":
        code, _, err = run_cli(["select", "--example", data.draw(text_not("grouped")) + "-x", "--out", "/nonexistent/x"])
        assert_cli_error(code, err, "example")
    else:
        flag = case.removesuffix("-flag")
        value = {"draws": st.integers(-(10**6), 1), "trials": st.integers(-(10**6), 0), "seed": st.integers(-(10**6), -1),
                 "chance-warning": st.one_of(st.floats(-10.0, 0.0), st.floats(1.0, 100.0, exclude_min=True))}[flag]
        code, _, err = select_spec(good, f"--{flag}", str(data.draw(value)))
        assert_cli_error(code, err, f"--{flag}")
