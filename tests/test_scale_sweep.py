"""Sweeps on Ray (a local instance started by the test) and on Slurm (submitit's local executor).

The runs use an OpenAI-compatible model behind the loopback server (tests/loopback.py), so that each
papermill run costs a kernel start and not a model load; the executors never look inside a run.
"""
import json
import os
import signal
import threading
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest
import yaml
from loopback import server_error

from vlmlens import sweep
from vlmlens.sweep import run_sweep


@pytest.fixture(scope="module", autouse=True)
def demo_data():
    "Build the demo data once, before runs start in parallel."
    from vlmlens.benchmarks.demo import ensure_demo_data
    return ensure_demo_data()


def _answer(call):
    "A deterministic answer that depends on the question, so that runs have non-trivial scores."
    return "ABCD"[zlib.crc32(call.text.encode()) % 4]


def _sweep_file(tmp_path: Path, server, name: str, models: list[str], limit: int = 4, **executor) -> Path:
    spec = {"name": name, "base": {"benchmark": "demo", "limit": limit, "num_frames": 2, "max_new_tokens": 4, "language": "en"},
            "grid": {"model": models}, "executor": executor}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _model(server) -> str:
    return f"openai-compatible:echo@{server.openai_base_url}"


def _rows(csv: Path) -> pd.DataFrame:
    return pd.read_csv(csv).drop(columns=["wall_s"]).sort_values("run").reset_index(drop=True)


@pytest.mark.timeout(900)
def test_local_ray_and_slurm_give_the_same_rows_and_a_failed_run_does_not_stop_the_sweep(server, tmp_path):
    server.responder = lambda call: server_error(400) if call.model == "broken" else _answer(call)   # refused by the API
    path = _sweep_file(tmp_path, server, "same", [_model(server), _model(server).replace("echo@", "broken@")],
                       ray={"num_cpus": 2}, slurm={"cluster": "local", "poll_s": 0.5})
    tables = {}
    for kind in ("local", "ray", "slurm"):
        table = run_sweep(path, output_root=tmp_path / kind, executor=kind, progress=False)
        assert list(table.status) == ["ok", "failed"], table.error.tolist()
        assert table.error[1].startswith("NothingAnswered: "), table.error[1]    # a failure only the kernel meets
        tables[kind] = _rows(tmp_path / kind / "same" / "sweep.csv")
    ok = tables["local"].loc[tables["local"].status == "ok"].iloc[0]
    assert ok.n == 4 and ok.n_errors == 0 and 0 <= ok.accuracy <= 1 and ok.invalid_rate == 0, ok.to_dict()
    pd.testing.assert_frame_equal(tables["local"], tables["ray"])
    pd.testing.assert_frame_equal(tables["local"], tables["slurm"])
    assert list((tmp_path / "slurm" / "same" / "slurm").iterdir()), "submitit's job folders hold the logs"


@pytest.mark.timeout(600)
def test_a_finished_sweep_starts_no_job(server, tmp_path, monkeypatch):
    path = _sweep_file(tmp_path, server, "done", [_model(server)])
    first = run_sweep(path, output_root=tmp_path, progress=False)
    nb = next((tmp_path / "done").glob("*/evaluate.ipynb"))
    stamp = nb.stat().st_mtime_ns

    def no_job(jobs, opts):
        raise AssertionError(f"a finished sweep submitted {jobs}")
        yield
    for kind in ("local", "ray", "slurm"): monkeypatch.setitem(sweep.EXECUTOR_ROWS, kind, no_job)
    again = run_sweep(path, output_root=tmp_path, executor="ray", progress=False)
    assert nb.stat().st_mtime_ns == stamp
    pd.testing.assert_frame_equal(first.drop(columns=["wall_s"]), again.drop(columns=["wall_s"]))


@pytest.mark.parametrize("executor, message", [
    ({"slurm": {"partiton": "gpu"}}, "unknown sweep option 'executor.slurm.partiton'"),
    ({"gpus": -1}, "'executor.gpus' must be >= 0"),
    ({"kind": "kubernetes"}, "unknown executor 'kubernetes'"),
    ({"slurm": {"time": "a while"}}, "'executor.slurm.time'"),
    ({"gpus": {"qwen2.5-vl-72": 4}}, "'executor.gpus.qwen2.5-vl-72': not a model of this sweep"),
])
def test_bad_executor_options_are_refused_before_anything_runs(tmp_path, executor, message):
    spec = {"name": "bad", "base": {"benchmark": "demo"}, "grid": {"model": ["tiny-qwen2.5-vl"]}, "executor": executor}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        run_sweep(spec, output_root=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_a_local_ray_instance_without_the_gpus_a_run_needs_is_refused(tmp_path):
    spec = {"name": "gpu", "base": {"benchmark": "demo"}, "grid": {"model": ["qwen2.5-vl-7b"]}, "executor": {"ray": {"num_cpus": 1}}}
    with pytest.raises(ValueError, match="asks for 1 GPU"):
        run_sweep(spec, output_root=tmp_path, executor="ray", progress=False)
    import ray
    assert not ray.is_initialized()


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _killer(root: Path, kill_worker: bool, killed: list):
    "Once a run has written its first answer, kill its kernel (and, under Ray, the worker process running it)."
    deadline = time.time() + 300
    while time.time() < deadline and not killed:
        for lock in root.glob("*/.lock"):
            preds = lock.parent / "predictions.jsonl"
            if not (preds.exists() and preds.read_text().count("\n") >= 1): continue
            kernel = int(lock.read_text().strip())
            worker = _parent(kernel)
            if kill_worker:
                assert "ray::" in _cmdline(worker), _cmdline(worker)
                os.kill(worker, signal.SIGKILL)
            os.kill(kernel, signal.SIGKILL)
            killed.append((kernel, worker if kill_worker else None))
            return
        time.sleep(0.05)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["local", "ray"])
def test_a_lost_kernel_or_worker_is_retried_and_the_run_resumes_from_its_store(server, tmp_path, kind):
    server.latency = 0.4
    server.responder = _answer
    model = _model(server)
    path = _sweep_file(tmp_path, server, "lost", [model], limit=10, ray={"num_cpus": 1})
    spec = yaml.safe_load(path.read_text())
    spec["base"]["model_kwargs"] = {"concurrency": 1}
    path.write_text(yaml.safe_dump(spec))
    killed: list = []
    t = threading.Thread(target=_killer, args=(tmp_path / "lost", kind == "ray", killed), daemon=True)
    t.start()
    table = run_sweep(path, output_root=tmp_path, executor=kind, progress=False)
    t.join(5)
    assert killed, "the run finished before it could be killed"
    assert list(table.status) == ["ok"], table.error.tolist()
    assert table.n[0] == 10
    ids = []
    for line in next((tmp_path / "lost").glob("*/predictions.jsonl")).read_text().splitlines():
        try: ids.append(json.loads(line)["sample_id"])
        except ValueError: pass                                           # a line cut by the kill
    assert len(ids) == len(set(ids)) == 10, "an item answered before the loss was answered again"
