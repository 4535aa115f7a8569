"""Data-parallel single runs: `torchrun -m vlmlens run` on CPU (gloo) with the tiny Qwen2.5-VL.

Two ranks give the summary of one process; a rank killed mid-run loses only its item in flight, and the
same command completes the run.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ARGS = ["run", "--benchmark", "demo", "--model", "tiny-qwen2.5-vl", "--frames", "4", "--max-new-tokens", "8",
        "--limit", "16", "--no-progress"]
# one thread per process in every run compared here: torchrun sets OMP_NUM_THREADS=1 for N > 1 processes, and a
# random tiny model's near-tied logits could otherwise differ with the thread count
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _torchrun(n: int, out: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n), "-m", "vlmlens", *ARGS,
            "--output-root", str(out), "--run-name", name]


def _lines(path: Path) -> list[dict]:
    "The complete records of a JSONL file (a line cut by a kill is skipped, as the store's reader does)."
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try: out.append(json.loads(line))
        except json.JSONDecodeError: pass
    return out


def _answers(run_dir: Path) -> dict:
    return {p["sample_id"]: (p["raw"], p["parsed"], p["error"]) for f in sorted(run_dir.glob("predictions*.jsonl")) for p in _lines(f)}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    "The same run in one plain process: what every launch must reproduce."
    out = tmp_path_factory.mktemp("single")
    subprocess.run([sys.executable, "-m", "vlmlens", *ARGS, "--output-root", str(out), "--run-name", "one"], env=ENV,
                   check=True, capture_output=True, timeout=600)
    return out / "one"


@pytest.mark.timeout(900)
def test_two_ranks_give_the_summary_of_one_process(single, tmp_path):
    proc = subprocess.run(_torchrun(2, tmp_path, "two"), env=ENV, capture_output=True, text=True, timeout=800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "two"
    shards = sorted(p.name for p in run_dir.glob("predictions*.jsonl"))
    assert shards == ["predictions.shard-0-of-2.jsonl", "predictions.shard-1-of-2.jsonl"]
    assert all(_lines(run_dir / f) for f in shards)                       # both ranks worked
    one, two = json.loads((single / "summary.json").read_text()), json.loads((run_dir / "summary.json").read_text())
    assert two["overall"] == one["overall"] and two["groups"] == one["groups"]
    assert _answers(run_dir) == _answers(single)
    assert proc.stdout.count("results in") == 1                           # rank 0 prints the merged table, once


@pytest.mark.timeout(900)
def test_a_killed_rank_keeps_the_others_items_and_a_rerun_completes(single, tmp_path):
    run_dir = tmp_path / "killed"
    shard1, lock1 = run_dir / "predictions.shard-1-of-2.jsonl", run_dir / ".lock.shard-1-of-2"
    proc = subprocess.Popen(_torchrun(2, tmp_path, "killed"), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 600
    while time.time() < deadline and len(_lines(shard1)) < 1 and proc.poll() is None: time.sleep(0.05)
    pid = int(lock1.read_text().strip())                                 # the lock names the rank's process
    os.kill(pid, signal.SIGKILL)
    err = proc.communicate(timeout=300)[1].decode(errors="replace")
    assert proc.returncode != 0, err[-2000:]                              # torchrun reports the lost rank and stops the other
    before = _answers(run_dir)
    n_items = len(_answers(single))
    assert 1 <= len(before) < n_items, f"the kill landed after {len(before)} of {n_items} items"
    assert not (run_dir / "summary.json").exists()
    again = subprocess.run(_torchrun(2, tmp_path, "killed"), env=ENV, capture_output=True, text=True, timeout=800)
    assert again.returncode == 0, again.stderr[-3000:]
    after = _answers(run_dir)
    assert {k: after[k] for k in before} == before                        # nothing finished was redone or lost
    assert after == _answers(single)
    one, got = json.loads((single / "summary.json").read_text()), json.loads((run_dir / "summary.json").read_text())
    assert got["overall"] == one["overall"]
