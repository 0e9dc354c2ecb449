"""Resume: a run killed with SIGKILL and continued with --resume gives the uninterrupted run's
numbers; finished chunks are reused, not recomputed; another configuration is refused."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr
from hybridpriv.studies import read_study

from hybridpriv.cli import main
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.engine import Engine
from hybridpriv.engine.checkpoint import Checkpoint
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.estimators import UniformMean, WeightedMean
from hybridpriv.families.grouped import normal_source

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

STUDY = ["study", "run", "ferrando-means", "--quick", "--seed", "5"]
GROUPS = (Group("a", 30, 1.0), Group("b", 50, 0.2))
BOUNDS = Bounds(0.0, 10.0)


def _study(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "hybridpriv.cli", *STUDY, *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigkill_in_the_middle_then_resume_equals_an_uninterrupted_run(tmp_path):
    # chunk size 1: 600 chunk files, written over a few seconds, so the kill lands in the middle
    killed = _study("--out", "killed", "--resume", "ckpt", "--chunk-size", "1", cwd=tmp_path)
    chunks = tmp_path / "ckpt" / "chunks"
    deadline = time.monotonic() + 120
    found = 0
    while killed.poll() is None and time.monotonic() < deadline:
        found = len(list(chunks.glob("*.npz"))) if chunks.exists() else 0
        if found >= 20:
            killed.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.read()[-2000:]
    manifest = json.loads((tmp_path / "ckpt" / "manifest.json").read_text())
    total = sum(len(sec["chunks"]) for sec in manifest["sections"].values())
    done_before = len(list(chunks.glob("*.npz")))
    assert 20 <= done_before < total == 600
    assert not (tmp_path / "killed" / "ferrando-means.nc").exists()

    resumed = _study("--out", "resumed", "--resume", "ckpt", cwd=tmp_path)  # layout from the manifest
    whole = _study("--out", "whole", cwd=tmp_path)
    for proc in (resumed, whole):
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    assert len(list(chunks.glob("*.npz"))) == total
    assert not list(chunks.glob(".*.tmp"))
    a = read_study(tmp_path / "resumed" / "ferrando-means.nc")
    b = read_study(tmp_path / "whole" / "ferrando-means.nc")
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert a.attrs["resumed_from"] == "ckpt" and a.attrs["seed"] == 5


def test_a_resume_folder_of_another_configuration_is_refused(tmp_path, capsys):
    Checkpoint(tmp_path / "ckpt", {"study": "ferrando-means", "quick": True, "full": False, "seed": 5})
    code = main([*STUDY[:-1], "6", "--resume", str(tmp_path / "ckpt"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: resume folder '{tmp_path / 'ckpt'}' holds a run with another configuration "
                          "(seed: 5 there, 6 here)")
    assert not (tmp_path / "out").exists()


def _ests():
    return [WeightedMean(GROUPS, BOUNDS, 4.0), UniformMean(GROUPS, BOUNDS)]


class _Broken:
    """A source that fails if asked for any dataset: proves finished chunks are read, not redone."""

    def __init__(self, src):
        self.groups, self.bounds, self.shape = src.groups, src.bounds, src.shape
        self.src = src

    def describe_params(self):  # stands in for src in the checkpoint's fingerprint
        from hybridpriv.core.params import describe

        return describe(self.src)

    def generate(self, chain, draw, rng):
        raise RuntimeError(f"dataset ({chain}, {draw}) was generated again")


def test_finished_chunks_are_read_back_and_missing_ones_recomputed(tmp_path):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 30)
    config = {"what": "test", "seed": 4}
    plain = evaluate(_ests(), src, trials=3, seed=4)
    first = evaluate(_ests(), src, trials=3, seed=4,
            engine=Engine(checkpoint=Checkpoint(tmp_path, config), chunk_size=4))
    xr.testing.assert_identical(plain, first)
    files = sorted((tmp_path / "chunks").glob("*.npz"))
    assert len(files) == 8
    again = evaluate(_ests(), _Broken(src), trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, config)))
    xr.testing.assert_identical(plain, again.assign_attrs(source=plain.attrs["source"]))
    for f in files[2:5]:
        f.unlink()
    with pytest.raises(RuntimeError, match=r"dataset \(0, 8\) was generated again"):
        evaluate(_ests(), _Broken(src), trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, config)))
    redone = evaluate(_ests(), src, trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, config)))
    xr.testing.assert_identical(plain, redone)
    assert len(list((tmp_path / "chunks").glob("*.npz"))) == 8


@pytest.mark.parametrize(
    "change, match",
    [
        ({"trials": 2}, r"section 'evaluate-0' was run with other settings \(trials: 3 there, 2 here\)"),
        ({"seed": 9}, r"section 'evaluate-0' was run with other settings \(seed: 4 there, 9 here\)"),
        ({"chunk_size": 5}, r"chunk_size does not match the chunk layout recorded in .*manifest.json"),
    ],
)
def test_other_engine_settings_in_the_same_folder_are_refused(tmp_path, change, match):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 12)
    args = {"trials": 3, "seed": 4, "chunk_size": 4}

    def run(trials, seed, chunk_size):
        return evaluate(_ests(), src, trials=trials, seed=seed,
                        engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1}), chunk_size=chunk_size))

    run(**args)
    with pytest.raises(ValueError, match=match):
        run(**(args | change))


def test_manifest_records_configuration_seed_and_a_layout_covering_every_item_once(tmp_path):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 23)
    evaluate(_ests(), src, trials=2, seed=4,
            engine=Engine(checkpoint=Checkpoint(tmp_path, {"name": "x", "seed": 4}), chunk_size=5))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"] == {"name": "x", "seed": 4} and manifest["seed"] == 4
    chunks = manifest["sections"]["evaluate-0"]["chunks"]
    assert chunks == [[0, 5], [5, 10], [10, 15], [15, 20], [20, 23]]
    with np.load(tmp_path / "chunks" / "evaluate-0-000004.npz") as last:
        assert last["estimate"].shape == (2, 3, 2)


@pytest.mark.parametrize("bad", ["file", "manifest"])
def test_unusable_resume_folders_are_refused(tmp_path, bad):
    target = tmp_path / "x"
    if bad == "file":
        target.write_text("")
        match = "resume folder must be a folder, got the existing file"
    else:
        (target / "chunks").mkdir(parents=True)
        (target / "manifest.json").write_text("{not json")
        match = "has an unreadable manifest.json"
    with pytest.raises(ValueError, match=match):
        Checkpoint(target, {"seed": 0})
    assert os.path.exists(target)


def test_opening_a_folder_removes_a_killed_writers_temporary_files_and_one_run_holds_it(tmp_path):
    first = Checkpoint(tmp_path, {"seed": 1})
    first.save("evaluate", 0, {"x": np.arange(3)})
    orphan = first.chunks / ".evaluate-000001.npz.abc123.tmp"   # what os.replace never got to move
    orphan.write_bytes(b"half a chunk")
    with pytest.raises(ValueError, match="in use by another run"):
        Checkpoint(tmp_path, {"seed": 1})
    assert orphan.exists()                                     # the refused opener touched nothing
    first.close()
    with Checkpoint(tmp_path, {"seed": 1}) as again:
        assert not orphan.exists()
        assert again.load("evaluate", 0)["x"].tolist() == [0, 1, 2]
        assert again.load("evaluate", 1) is None


# -- issue 10: parameters in fingerprints; issue 15 item 4: chunks prove what they are -----------
def test_resuming_with_a_changed_estimator_parameter_is_refused_naming_it(tmp_path):
    # before the redesign the checkpoint fingerprinted estimators by label only, and this resume
    # silently reused chunks computed with sigma2 = 1
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 12)
    evaluate([WeightedMean(GROUPS, BOUNDS, 1.0)], src, trials=2, seed=4,
            engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    with pytest.raises(ValueError, match=r"candidates\.weighted\.params\.sigma2: 1\.0 there, 100\.0 here"):
        evaluate([WeightedMean(GROUPS, BOUNDS, 100.0)], src, trials=2, seed=4,
                engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    with pytest.raises(ValueError, match=r"source\.params\.sampler\.fields\.mu: 5\.0 there, 6\.0 here"):
        evaluate([WeightedMean(GROUPS, BOUNDS, 1.0)], normal_source(GROUPS, BOUNDS, 6.0, 2.0, 12), trials=2, seed=4,
                 engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))


def test_evaluate_takes_a_folder_as_checkpoint(tmp_path):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 6)
    a = evaluate(_ests(), src, trials=2, seed=3, engine=Engine(checkpoint=tmp_path / "ck"))
    b = evaluate(_ests(), _Broken(src), trials=2, seed=3, engine=Engine(checkpoint=str(tmp_path / "ck")))
    xr.testing.assert_identical(a, b.assign_attrs(source=a.attrs["source"]))


def _chunked(tmp_path, draws=12):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, draws)
    plain = evaluate(_ests(), src, trials=3, seed=4)
    evaluate(_ests(), src, trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 2}), chunk_size=3))
    return src, plain, sorted((tmp_path / "chunks").glob("*.npz"))


@pytest.mark.parametrize("damage", ["copied-over", "empty", "truncated", "flipped-byte", "no-identity"])
def test_a_damaged_or_foreign_chunk_is_recomputed_not_used(tmp_path, damage, capsys):
    src, plain, files = _chunked(tmp_path)
    victim = files[1]
    if damage == "copied-over":  # a valid chunk file of another index: same shapes, other numbers
        victim.write_bytes(files[2].read_bytes())
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "truncated":
        victim.write_bytes(victim.read_bytes()[:200])
    elif damage == "flipped-byte":  # an altered number that still loads
        with np.load(victim) as z:
            arrays = {k: z[k].copy() for k in z.files}
        arrays["risk"].flat[0] += 1.0
        np.savez(victim, **arrays)
    else:  # a chunk written without identity (e.g. by an old version)
        with np.load(victim) as z:
            arrays = {k: z[k] for k in z.files if not k.startswith("__")}
        np.savez(victim, **arrays)
    resumed = evaluate(_ests(), src, trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 2})))
    xr.testing.assert_identical(plain, resumed)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and victim.name in err and "recomputing it" in err
    # the recomputed chunk is whole again: a third run reads every chunk back without a word
    evaluate(_ests(), _Broken(src), trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 2})))
    assert capsys.readouterr().err == ""


def test_a_read_only_folder_holding_a_finished_run_can_be_read_back(tmp_path, monkeypatch):
    # The suite runs as root, where chmod cannot make a folder read-only; so the folder is made
    # read-only as the checkpoint sees it (os.access) and every write is made to fail.
    import hybridpriv.engine.checkpoint as ck

    src, plain, files = _chunked(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, _, other_files = _chunked(other)
    other_files[0].unlink()  # a run that is not finished

    def no_write(*args, **kwargs):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(ck.os, "access", lambda path, mode: mode != os.W_OK)
    monkeypatch.setattr(ck, "_write_atomic", no_write)
    monkeypatch.setattr(ck.Path, "unlink", no_write)
    monkeypatch.setattr(ck.Path, "mkdir", no_write)
    back = evaluate(_ests(), _Broken(src), trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 2})))
    xr.testing.assert_identical(plain, back.assign_attrs(source=plain.attrs["source"]))
    # a run that would need to write says so in one line instead of crashing
    with pytest.raises(ValueError, match=r"read-only and this run would need to write to it \(chunk 0"):
        evaluate(_ests(), src, trials=3, seed=4, engine=Engine(checkpoint=Checkpoint(other, {"run": 2})))
