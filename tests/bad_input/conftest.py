"""The autouse fixture of the bad-input tests: every test must run at least MIN_CASES examples."""

import os

import pytest

from _support.bad_input import MIN_CASES, _CURRENT


@pytest.fixture(autouse=True)
def _count_cases(request):
    _CURRENT.update(area="", n=0, failed=False)
    yield
    n, area = _CURRENT["n"], _CURRENT["area"]
    if _CURRENT["failed"]:
        return
    request.node.user_properties.append(("hypothesis_cases", n))
    path = os.environ.get("HYBRIDPRIV_CASES_FILE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{area}\t{request.node.name}\t{n}\n")
    assert n >= MIN_CASES, f"only {n} Hypothesis example(s) ran in {request.node.name}"
