"""wang-subset through the engine: the same numbers in one process and on a 2-worker dask LocalCluster,
after a resume (finished chunks and kept model fits read back, not recomputed), and after SIGKILL
through the CLI."""

import json
import signal
import subprocess
import sys
import time
import warnings

import pytest
import xarray as xr
from hybridpriv.studies import read_study, wang_subset

from hybridpriv.engine import Engine
from hybridpriv.engine.checkpoint import Checkpoint

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

CONFIG = {"study": "wang-subset", "quick": True, "full": False, "seed": 0}


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory):
    """The quick run in one process, keeping its chunks and fits in a resume folder."""
    folder = tmp_path_factory.mktemp("wang-ckpt")
    with warnings.catch_warnings(), Checkpoint(folder, CONFIG) as ckpt:
        warnings.simplefilter("ignore")
        return wang_subset.run(quick=True, seed=0, engine=Engine(checkpoint=ckpt)), folder


def test_two_local_workers_give_the_numbers_of_one_process(checkpointed):
    import distributed  # noqa: F401  (in the test extra: a missing dask fails, never skips)

    from hybridpriv.engine.cluster import local_client

    here, _ = checkpointed
    client = local_client(2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            there = wang_subset.run(quick=True, seed=0, engine=Engine(client))
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    xr.testing.assert_identical(here, there)


def test_a_resumed_run_reads_back_every_chunk_and_fit(checkpointed, monkeypatch):
    here, folder = checkpointed
    stages = sorted((folder / "stages").glob("fit-*.nc"))
    chunks = sorted(folder.glob("*/chunks/*.npz"))
    assert len(stages) == 4  # 2 repeats x 2 models of public knowledge
    assert {f.parent.parent.name for f in chunks} == {"release", "distance", "size", "select-p2-r0-budget_free_public",
                                                      "select-p2-r0-budget_free_summaries",
                                                      "select-p2-r1-budget_free_public",
                                                      "select-p2-r1-budget_free_summaries"}
    written = {f: f.stat().st_mtime_ns for f in [*stages, *chunks]}

    def refuse(*args, **kwargs):
        raise AssertionError("a finished piece of work was recomputed")

    monkeypatch.setattr(wang_subset.WangPrivateModel, "fit", refuse)
    monkeypatch.setattr("hybridpriv.engine.evaluate._evaluate_chunk", refuse)
    with warnings.catch_warnings(), Checkpoint(folder, CONFIG) as ckpt:
        warnings.simplefilter("ignore")
        resumed = wang_subset.run(quick=True, seed=0, engine=Engine(checkpoint=ckpt))
    xr.testing.assert_identical(here, resumed)
    assert {f: f.stat().st_mtime_ns for f in written} == written


@pytest.mark.slow
def test_sigkill_then_resume_through_the_cli_equals_an_uninterrupted_run(tmp_path):
    def study(*args):
        return subprocess.Popen([sys.executable, "-m", "hybridpriv.cli", "study", "run", "wang-subset", "--quick",
                                 "--seed", "1", *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    killed = study("--out", "killed", "--resume", "ckpt")
    ckpt = tmp_path / "ckpt"
    deadline = time.monotonic() + 900
    while killed.poll() is None and time.monotonic() < deadline:
        if len(list(ckpt.glob("select-*/chunks/*.npz"))) >= 6:  # past the first fits, in the middle of selections
            killed.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.read()[-2000:]
    assert not (ckpt / "release" / "manifest.json").exists()  # killed before the last evaluations
    kept = len(json.loads((ckpt / "manifest.json").read_text()).get("stages", {}))
    assert kept >= 1
    for proc in (study("--out", "resumed", "--resume", "ckpt"), study("--out", "whole")):
        _, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err[-2000:]
    a = read_study(tmp_path / "resumed" / "wang-subset.nc")
    b = read_study(tmp_path / "whole" / "wang-subset.nc")
    assert a.attrs["resumed_from"]
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
