"""Defects found by an adversarial run and a fresh-clone walkthrough (store, runner and CLI side), each reproduced.

Secrets in ordinary variables, hostile rows and records on disk, two processes on one run, runaway answers, orphan
temporary files, and the first-use errors a user can cause: one line, exit 2, before a run folder exists.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vlmlens.benchmarks import infinibench as ib
from vlmlens.benchmarks.demo import ensure_demo_data
from vlmlens.core import Generation, Prediction, RunConfig, Sample
from vlmlens.runner import run
from vlmlens.secrets import REDACTED
from vlmlens.store import RunStore

MODEL = "tiny-qwen2.5-vl"
CLI = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())"]


def cli(*args, cwd=None, env=None, timeout=600):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def one_line_error(out) -> str:
    "The process failed with exit 2 and exactly one line on stderr, no traceback."
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and len(lines) == 1, out.stderr[-2000:]
    return lines[0]


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory):
    "The demo data copied into a folder of its own (the folder a user launches from)."
    root = tmp_path_factory.mktemp("launch")
    shutil.copytree(ensure_demo_data(progress=False), root / "data")
    return root


# -- 1. ordinary variables are not secrets ------------------------------------------------------------------------

def test_paths_under_the_launch_folder_survive_and_the_run_rescores_and_exports(demo_copy):
    env = {**os.environ, "PWD": str(demo_copy), "OLDPWD": str(demo_copy.parent), "HOME": str(demo_copy)}
    out = cli("run", "--benchmark", "demo", "--model", MODEL, "--data-path", "data/samples.jsonl", "--language", "en",
              "--frames", "2", "--max-new-tokens", "4", "--limit", "3", "--output-root", "out", "--run-name", "r", "--no-progress",
              cwd=demo_copy, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    for f in ("run.json", "summary.json", "predictions.jsonl", "scores.csv"):
        assert REDACTED not in (demo_copy / "out" / "r" / f).read_text(encoding="utf-8"), f
    info = json.loads((demo_copy / "out" / "r" / "run.json").read_text())
    assert info["config"]["data_path"] == "data/samples.jsonl" and info["config"]["output_root"] == "out"
    assert cli("score", "out/r", cwd=demo_copy, env=env).returncode == 0
    rep = cli("report", "out", cwd=demo_copy, env=env)
    assert rep.returncode == 0 and "results in out/r" in rep.stdout and REDACTED not in rep.stdout


def test_infinibench_export_from_a_run_launched_in_its_data_folder(tmp_path):
    ep = ib.make_synthetic_episode(tmp_path / "episode", minutes=1.0, fps=1, size=(96, 54))
    env = {**os.environ, "PWD": str(tmp_path / "episode")}
    out = cli("run", "--benchmark", "infinibench", "--model", MODEL, "--data-path", "rows.jsonl", "--modality", "subtitles",
              "--judge", "none", "--max-new-tokens", "4", "--limit", "6", "--output-root", "out", "--run-name", "ib",
              "--no-progress", cwd=ep["rows"].parent, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    old = os.getcwd()
    os.chdir(ep["rows"].parent)
    try: files = ib.export_official("out/ib", tmp_path / "official")
    finally: os.chdir(old)
    assert files and sum(len(json.loads(p.read_text())) for p in files.values()) == 6


# -- 3. hostile rows and records ----------------------------------------------------------------------------------

def test_bad_rows_are_row_errors_and_the_run_goes_on(demo_copy, tmp_path):
    rows = [json.loads(l) for l in (demo_copy / "data" / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    good = [r for r in rows if r["language"] == "en" and any(m["kind"] == "video" for m in r["media"])][:2]
    for r in good:
        for m in r["media"]: m["path"] = str(demo_copy / "data" / m["path"])
        r["subtitles"] = str(demo_copy / "data" / r["subtitles"])
    bad = [{**good[0], "id": "start-abc", "media": [{**good[0]["media"][0], "start": "abc"}]},
           {**good[0], "id": "start-list", "media": [{**good[0]["media"][0], "start": [1]}]},
           {**good[1], "id": "deep", "metadata": "[" * 100000 + "]" * 100000}]
    data = tmp_path / "data.jsonl"
    data.write_bytes(b"\xef\xbb\xbf" + "\n".join(json.dumps(r, ensure_ascii=False) for r in good + bad).encode() + b"\n")
    s = run(RunConfig("demo", MODEL, data_path=str(data), num_frames=2, max_new_tokens=4, output_root=str(tmp_path),
                      run_name="bad", progress=False, allow_outside_media=True))    # the good rows' media are in demo_copy
    assert s["overall"]["n"] == 2 and s["overall"]["n_errors"] == 0
    errs = s["row_errors"]
    assert any("data.jsonl:3: media" in e and "Media.start" in e for e in errs), errs
    assert any("data.jsonl:4: media" in e for e in errs) and any("data.jsonl:5: metadata" in e and "nested too deeply" in e for e in errs), errs


def test_a_predictions_line_with_null_usage_does_not_break_scoring(demo_copy, tmp_path):
    cfg = RunConfig("demo", MODEL, data_path=str(demo_copy / "data"), language="en", num_frames=2, max_new_tokens=4, limit=2,
                    output_root=str(tmp_path), run_name="nullusage", progress=False)
    run(cfg)
    p = tmp_path / "nullusage" / "predictions.jsonl"
    recs = [json.loads(l) for l in p.read_text().splitlines()]
    recs[0]["usage"] = None
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = cli("score", tmp_path / "nullusage")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((tmp_path / "nullusage" / "summary.json").read_text())["overall"]["n"] == 2


# -- 6. one writer per run ---------------------------------------------------------------------------------------

class _Slow:
    "A backend that takes its time, so that a second process meets the first one's lock."
    name, model_id, revision, languages = "slow", "slow", "r", ("en", "hi", "te")
    def generate(self, reqs, **kw):
        time.sleep(0.5)
        return [Generation("A", {"input_tokens": 1}, finish_reason="stop") for _ in reqs]
    def info(self): return {"name": self.name}
    def close(self): pass


def test_the_same_command_twice_at_once_refuses_the_second(tmp_path):
    items = [Sample(f"s{i}", "demo", question="Q?", options=["a", "b"], answer=0) for i in range(6)]
    cfg = RunConfig("demo", "slow", modality="text", output_root=str(tmp_path), run_name="twice", progress=False)
    code = ("import sys, json; sys.path.insert(0, %r); from test_reliability import _Slow, items_for;"
            "from vlmlens.runner import run; from vlmlens.core import RunConfig;"
            "run(RunConfig.from_dict(json.loads(sys.argv[1])), backend=_Slow(), samples=items_for())") % str(Path(__file__).parent)
    first = subprocess.Popen([sys.executable, "-c", code, json.dumps(cfg.to_dict())], stderr=subprocess.PIPE, text=True)
    lock = tmp_path / "twice" / ".lock"
    deadline = time.time() + 60
    while time.time() < deadline and not (lock.exists() and lock.read_text().strip()): time.sleep(0.05)
    second = subprocess.run([sys.executable, "-c", code, json.dumps(cfg.to_dict())], capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=120) == 0, first.stderr.read()[-2000:]
    assert second.returncode != 0 and "is being run by another process" in second.stderr, second.stderr[-2000:]
    lines = (tmp_path / "twice" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == len(items) and len({json.loads(l)["sample_id"] for l in lines}) == len(items)
    # shards of one run still run at once: each has its own lock
    a = RunStore(tmp_path / "twice", "h", shard="0/2").lock(); b = RunStore(tmp_path / "twice", "h", shard="1/2").lock()
    a.close(); b.close()


def items_for():
    return [Sample(f"s{i}", "demo", question="Q?", options=["a", "b"], answer=0) for i in range(6)]


# -- 11. stored answers are capped ---------------------------------------------------------------------------------

class _Runaway(_Slow):
    def generate(self, reqs, **kw): return [Generation("B " + "x" * 2_000_000, {}, finish_reason="length") for _ in reqs]


def test_a_runaway_answer_is_stored_capped_with_the_cut_recorded(tmp_path):
    s = run(RunConfig("demo", "runaway", modality="text", output_root=str(tmp_path), run_name="cap", max_raw_chars=1000,
                      progress=False), backend=_Runaway(), samples=items_for()[:2])
    p = tmp_path / "cap" / "predictions.jsonl"
    assert p.stat().st_size < 10_000
    recs = [json.loads(l) for l in p.read_text().splitlines()]
    assert all(r["raw_truncated"] and len(r["raw"]) == 1000 and r["finish_reason"] == "length" for r in recs)
    assert s["overall"]["n_truncated"] == 2 and s["overall"]["accuracy"] == 0.0     # parsed before the cut: B is wrong


# -- 12. orphan temporary files ----------------------------------------------------------------------------------

def test_the_next_run_removes_a_killed_writers_temp_files(tmp_path):
    dead = subprocess.Popen(["true"]); dead.wait()
    d = tmp_path / "tmpfiles"; d.mkdir()
    stale = d / f".summary.json.{dead.pid}.0123abcd.tmp"; stale.write_text("{")
    run(RunConfig("demo", "slow", modality="text", output_root=str(tmp_path), run_name="tmpfiles", progress=False),
        backend=_Slow(), samples=items_for()[:1])
    assert not stale.exists() and not list(d.glob(".*.tmp"))


# -- first use: one line, exit 2, nothing created -------------------------------------------------------------------

@pytest.mark.parametrize("args,expect", [
    (("--frames", "0"), "--frames must be a positive integer; got 0"),
    (("--frames", "-3"), "--frames must be a positive integer; got -3"),
    (("--modality", "vidoe"), "argument --modality: invalid choice: 'vidoe'"),
    (("--strategy", "chain"), "argument --strategy: invalid choice: 'chain'"),
    (("--language", "fr"), "tiny-qwen2.5-vl is not run in 'fr' on demo"),
    (("--language", "fr", "--force"), "no demo items match --subset all --language fr; subsets:"),
    (("--subset", "nope"), "no demo items match --subset nope --language all"),
    (("--model", "no-such-model"), "no-such-model"),
])
def test_a_users_mistake_is_one_line_and_exit_2(tmp_path, args, expect):
    base = ["run", "--benchmark", "demo", "--model", MODEL, "--output-root", tmp_path / "out", "--no-progress", "--limit", "2"]
    if args[0] == "--model": base[4] = args[1]; args = ()
    line = one_line_error(cli(*base, *args))
    assert expect in line, line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("bench", ["infinibench", "hintel", "minerva", "curve"])
def test_a_missing_data_path_is_an_error_for_every_benchmark(tmp_path, bench):
    line = one_line_error(cli("run", "--benchmark", bench, "--model", MODEL, "--output-root", tmp_path, "--no-progress"))
    assert "data_path" in line or "--data-path" in line, line


def test_demo_overwrite_and_no_test_reads_outside_the_repository(tmp_path, repo_root):
    assert "--overwrite" in cli("demo", "--help").stdout
    for p in (repo_root / "tests").glob("*.py"):
        text = p.read_text(encoding="utf-8")
        outside = (".." + "/shared", "/work" + "/shared")
        assert not any(o in text for o in outside), p
