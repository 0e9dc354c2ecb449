"""Oversized user-item problems are refused at once (issue 23, item 10).

A user-item SPEC with a million items hung for minutes: the guard meant to refuse oversized
problems (``log_count_cost``) itself looped over every item and every count, and with ``n`` known
the model's Gale-Ryser term allocated an ``m x m`` matrix (7 TiB) and died with a traceback.  Such
input must end with exit 2 and one ``error:`` line naming the parameter, before any large
allocation.  Hang guards only (no test depends on wall-clock speed): a call taking more than
:data:`HANG` seconds of wall clock or :data:`CPU` seconds of CPU fails; ``-s`` prints the CPU time.
"""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

import time

from hypothesis import Phase, example

import hybridpriv.families.user_item.model as ui
import hybridpriv.families.user_item.spec as spec_ui
from hybridpriv.families.user_item.model_feasibility import histogram_feasible
from hybridpriv.families.user_item.model_step import initial_histogram
from hybridpriv.spec import builtin_example_path

#: Wall-clock seconds before a call counts as a hang (SIGALRM; generous: a hang guard).
HANG = 120.0
#: CPU seconds a refusal may take (generous: the guards take milliseconds).
CPU = 30.0


def no_shrink(n: int) -> settings:
    """:func:`cfg` without shrinking: a hang is not re-run to find a smaller one."""
    return settings(cfg(n), phases=(Phase.explicit, Phase.generate))


def cpu_timed(fn):
    """``fn()`` under the hang guard; returns ``(result or exception, CPU seconds)``."""
    t0 = time.process_time()
    with time_limit(HANG):
        try:
            out = fn()
        except (ValueError, TypeError) as exc:
            out = exc
    return out, time.process_time() - t0


def run_cli(argv) -> tuple[int, str, float]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.process_time()
    with time_limit(HANG), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli_main(list(argv))
    return code, err.getvalue(), time.process_time() - t0


def user_item_spec(tmp: Path, m: int, value: int, mode: str, extra: str = "") -> Path:
    """A user-item SPEC whose ``m`` column sums (all ``value``) are in a CSV file beside it."""
    (tmp / "counts.csv").write_text(f"{value}\n" * m)
    n = {"unknown": "", "known": f"n = {max(value, m // 2)}\n", "range": f"n = [{value}, {m * value // 2}]\n",
         "negative-binomial": 'items_prior = "negative-binomial"\n'}[mode]
    path = tmp / "spec.toml"
    path.write_text(f'kind = "user-item"\ncolumn_sums = "counts.csv"\nepsilon = 1.0\n{n}{extra}')
    return path


MODES = ["unknown", "known", "range", "negative-binomial"]
#: The SPEC's cap on items (getattr: this module also runs, and fails, on the code before issue 23).
MAX_ITEMS = getattr(spec_ui, "MAX_ITEMS", 100_000)


@no_shrink(1)  # the four examples at a million items, and one more (the CSV read is most of the time)
@given(mode=st.sampled_from(MODES), m=st.integers(MAX_ITEMS + 1, 3 * MAX_ITEMS), value=st.integers(1, 3))
@example(mode="unknown", m=1_000_000, value=1)
@example(mode="known", m=1_000_000, value=1)
@example(mode="range", m=1_000_000, value=2)
@example(mode="negative-binomial", m=1_000_000, value=1)
@counted("useritem")
def test_cli_refuses_a_million_items_with_one_line(mode, m, value):
    """``hybridpriv select`` on m = 1,000,000 items (n unknown, known, a range; the negative-binomial
    prior): exit 2, one ``error:`` line naming column_sums and the number of items, at once (today
    the guard's own loop hung, or the m x m matrix of the known-n model raised MemoryError)."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = user_item_spec(Path(tmp), m, value, mode)
        code, err, cpu = run_cli(["select", str(spec), "--out", str(Path(tmp) / "out")])
    print(f"\nselect, m = {m:,} ({mode}): refused in {cpu:.2f} CPU s (the CSV read included)")
    lines = err.strip().splitlines()
    assert code == 2, f"exit status {code}, stderr {err[-500:]!r}"
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert _names(lines[0], "column_sums") and f"{MAX_ITEMS:,}" in lines[0], lines[0]  # the limit, found early
    assert cpu < CPU


@no_shrink(6)
@given(case=st.sampled_from(["reports", "reports-overflow", "moves", "negative-binomial-moves", "trace"]),
       scale=st.integers(1, 3))
@example(case="reports", scale=1)
@example(case="reports-overflow", scale=1)
@example(case="moves", scale=1)
@example(case="negative-binomial-moves", scale=1)
@example(case="trace", scale=1)
@counted("useritem")
def test_spec_size_budgets_refuse_at_load_time_naming_the_key(case, scale):
    """The SPEC's own budgets, checked when it is loaded (before PyMC is imported): the sum of the
    column sums (every sampled matrix holds that many ones; huge values must not overflow int64), the
    row-sum sampler's moves over the run, the draws PyMC preallocates (draws x m)."""
    m, value, mode, extra, key = {
        "reports": (100_000, 10_000 * scale, "known", "", "column_sums"),  # sum(c) ~ 1e9
        "reports-overflow": (3, 10**19 * scale, "unknown", "", "column_sums"),
        "moves": (1_000, 1_000 * scale, "known", "[evaluation]\ndraws = 100000\n", "evaluation.draws"),
        "negative-binomial-moves": (MAX_ITEMS, 1, "negative-binomial", f"[evaluation]\ndraws = {400 * scale}\n",
                                    "evaluation.draws"),
        "trace": (MAX_ITEMS // scale, 1, "known", "[evaluation]\ndraws = 20000\n", "evaluation.draws"),
    }[case]
    with tempfile.TemporaryDirectory() as tmp:
        path = user_item_spec(Path(tmp), m, value, mode, extra)
        err, cpu = cpu_timed(lambda: load_spec(path))
    print(f"\n{case}: refused in {cpu:.3f} CPU s: {err}")
    assert isinstance(err, ValueError), f"accepted: {err!r}"
    assert _names(str(err), key), f"{err} does not name {key}"
    assert cpu < CPU


@cfg(6)
@given(name=st.sampled_from(["flights", "favorite-sites"]), draws=st.integers(2, 2_000), chains=st.integers(1, 4))
@counted("useritem")
def test_the_examples_and_sizes_at_the_caps_pass_the_guards(name, draws, chains):
    """The built-in examples pass the guards at any ordinary number of draws; so does a SPEC at the
    caps (m = MAX_ITEMS items, n known, the default evaluation)."""
    path = builtin_example_path(name)
    text = path.read_text().replace("[evaluation]\n", f"[fit]\nchains = {chains}\n\n[evaluation]\n")
    text = re.sub(r"(?m)^draws = \d+$", f"draws = {draws}", text)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "spec.toml").write_text(text)
        spec = accepts(lambda: load_spec(Path(tmp) / "spec.toml"))
        assert spec.column_sums.size in (47, 100)
        big = user_item_spec(Path(tmp), MAX_ITEMS, 1, "known")
        assert accepts(lambda: load_spec(big)).column_sums.size == MAX_ITEMS


@no_shrink(4)
@given(case=st.sampled_from(["dp-million", "dp-range", "n-values", "overflow"]), lo=st.integers(1, 1_000),
       big=st.integers(2**62, 2**63 - 1))
@example(case="dp-million", lo=1, big=2**62)
@example(case="dp-range", lo=1, big=2**62)
@example(case="n-values", lo=1, big=2**62)
@example(case="overflow", lo=1, big=2**62)
@counted("useritem")
def test_user_item_model_refuses_oversized_knowledge_at_once(case, lo, big):
    """The model's own guards, before any array over n or any dynamic programme: the uniform prior's
    count of row sums with n unknown among a million items (today: the cost estimate looped for
    minutes), the number of candidate values of n (the log target of n), sums beyond int64."""
    m = 1_000_000
    if case == "dp-million":
        err, cpu = cpu_timed(lambda: UserItemModel(np.ones(m, dtype=np.int64)))
        names = ("n",)
    elif case == "dp-range":
        err, cpu = cpu_timed(lambda: UserItemModel(np.ones(m, dtype=np.int64), (lo, m)))
        names = ("n",)
    elif case == "n-values":
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ui, "MAX_N_VALUES", 1_000)
            err, cpu = cpu_timed(lambda: UserItemModel(np.ones(5_000 + lo, dtype=np.int64),
                                                       items_prior="negative-binomial"))
        names = ("n",)
    else:
        err, cpu = cpu_timed(lambda: UserItemModel(np.array([big, big, 1], dtype=np.int64)))
        names = ("column_sums",)
    print(f"\n{case}: refused in {cpu:.3f} CPU s: {err}")
    assert isinstance(err, ValueError), f"accepted: {err!r}"
    assert any(_names(str(err), n) for n in names), f"{err} names none of {names}"
    assert cpu < CPU


@no_shrink(4)
@given(m=st.integers(150_000, 400_000))
@example(m=1_000_000)
@counted("useritem")
def test_the_model_of_many_items_builds_without_an_m_by_m_matrix(m):
    """``UserItemModel.build`` wrote the Gale-Ryser conditions with ``np.minimum.outer(k, k)``: 8 m**2
    bytes (7 TiB at a million items, a MemoryError traceback from the CLI).  Now two cumulative sums."""
    model = UserItemModel(np.ones(m, dtype=np.int64), m // 2)
    t0 = time.process_time()
    with time_limit(HANG):
        pm_model = model.build()
    cpu = time.process_time() - t0
    print(f"\nbuild, m = {m:,}: {cpu:.2f} CPU s")
    assert pm_model["h"].ndim == 1 and pm_model.coords["items"][-1] == m
    assert cpu < CPU


@no_shrink(6)
@given(c=st.lists(st.integers(0, 6), min_size=1, max_size=7).filter(lambda c: sum(c) > 0), data=st.data())
@counted("useritem")
def test_the_gale_ryser_potential_is_the_m_by_m_form(c, data):
    """The model's log density (its feasibility potential: two cumulative sums) is finite exactly where
    the histogram meets Gale-Ryser (``histogram_feasible``, the ``sum_k h_k min(k, p)`` form): histograms
    from the feasible start moved by random item swaps between users (n and sum(c) kept)."""
    n = data.draw(st.integers(max(c), sum(c)))
    model = UserItemModel(c, n)
    pm_model = model.build()
    logp = pm_model.compile_logp(mode="FAST_COMPILE")  # the uniform prior on h (finite) plus the potential
    h = initial_histogram(model._c_sorted, n)  # the sampler's start (feasible)
    k = np.arange(1, len(c) + 1)
    seen = set()
    for _ in range(40):
        assert h.sum() == n and (h * k).sum() == sum(c)
        feasible = bool(np.isfinite(logp({"h": h})))
        assert feasible == histogram_feasible(h, c), (c, n, h)
        seen.add(feasible)
        # one user with a items gives one to a user with b items (a - 1 >= 1, b + 1 <= m)
        occupied = np.flatnonzero(h)
        a = int(data.draw(st.sampled_from(occupied.tolist()))) + 1
        h2 = h.copy()
        h2[a - 1] -= 1
        rest = np.flatnonzero(h2).tolist()
        if a == 1 or not rest:
            continue
        b = int(data.draw(st.sampled_from(rest))) + 1
        if b + 1 > len(c):
            continue
        h2[b - 1] -= 1
        h2[a - 2] += 1
        h2[b] += 1
        h = h2
    assert True in seen
