"""Every ```python block in docs/*.md and README.md runs (in a temporary folder), so the docs stay true."""

import os
import re
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    pytest.param(textwrap.dedent(code), id=f"{page.name}:{k}")  # blocks inside list items are indented
    for page in [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]
    for k, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


def test_docs_have_runnable_examples():
    pages = {p.values[0] and p.id.split(":")[0] for p in BLOCKS}
    assert {"tutorial.md", "add-a-mechanism.md", "models.md"} <= pages


def test_add_a_mechanism_example_is_at_most_20_lines():
    code = re.findall(r"```python\n(.*?)```", (DOCS / "add-a-mechanism.md").read_text(), re.S)[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 20


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_block_runs(code, tmp_path, capsys):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "<docs>", "exec"), {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out  # every example prints something a reader can check
