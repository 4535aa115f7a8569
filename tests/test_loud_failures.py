"""Runs that answered nothing exit 3 (after saving); user mistakes are refused before anything is created (exit 2, one
line, nothing on disk); each benchmark's options are one checked schema (`--help-kwargs`, did-you-mean)."""
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from loopback import server_error
from vlmlens.benchmarks import hintel as H
from vlmlens.benchmarks.demo import ensure_demo_data


def _cli(*args, env=None, timeout=600):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", *map(str, args)],
                          capture_output=True, text=True, env=e, timeout=timeout)


def _lines(text: str) -> list[str]:
    return [l for l in text.splitlines() if l.strip()]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return H.build_synthetic_hintel(tmp_path_factory.mktemp("hintel") / "data", n_per_subset=6)


@pytest.fixture(scope="module", autouse=True)
def demo_data():
    ensure_demo_data(progress=False)      # built once, so that a refusal's stderr holds only its one line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- loud failure ---------------------------------------------------------------------------------------------------

def test_a_served_model_at_a_closed_port_is_one_line_before_anything_is_created(data_root, tmp_path):
    "No server there: refused with the address and the remedy (exit 2), no run folder and no response cache left."
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = _cli("run", "--benchmark", "hintel", "--data-path", data_root, "--subset", "realworldqa", "--language", "en", "--limit", 3,
               "--model", f"openai-compatible:m@{url}", "--model-kwarg", f"cache={tmp_path / 'c.sqlite'}",
               "--output-root", tmp_path / "out", "--run-name", "down", "--no-progress")
    assert out.returncode == 2 and _lines(out.stderr) == [_lines(out.stderr)[-1]], out.stderr[-3000:]
    assert f"no server answers at {url}" in out.stderr and "start the server, or fix the address" in out.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "c.sqlite").exists()


def test_a_hintel_run_whose_every_call_fails_exits_3_after_saving(server, data_root, tmp_path):
    server.responder = lambda call: server_error(500)
    url = server.openai_base_url
    args = ["run", "--benchmark", "hintel", "--data-path", data_root, "--subset", "realworldqa", "--language", "en", "--limit", 3,
            "--model", f"openai-compatible:m@{url}", "--model-kwarg", "max_attempts=1", "--model-kwarg", f"cache={tmp_path / 'c.sqlite'}",
            "--output-root", tmp_path / "out", "--run-name", "down", "--no-progress"]
    out = _cli(*args)
    assert out.returncode == 3, out.stderr[-3000:]
    last = _lines(out.stderr)[-1]
    assert last.startswith("vlmlens: error: down: nothing answered (3 items failed; most common error: "), out.stderr[-3000:]
    assert "(3 items))" in last and "Traceback" not in out.stderr
    assert "all items" in out.stdout                                      # the table is printed first
    summary = json.loads((tmp_path / "out" / "down" / "summary.json").read_text())
    assert summary["overall"]["n"] == 3 and summary["overall"]["n_errors"] == 3      # and saved
    again = _cli(*args, "--allow-failures")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing answered" in _lines(again.stderr)[-1]


def test_partial_failure_exits_0_with_the_error_rate(server, data_root, tmp_path):
    server.script(server_error(500))                      # the first request fails, the others are answered
    out = _cli("run", "--benchmark", "hintel", "--data-path", data_root, "--subset", "realworldqa", "--language", "en", "--limit", 3,
               "--model", f"openai-compatible:m@{server.openai_base_url}", "--model-kwarg", "max_attempts=1",
               "--model-kwarg", "concurrency=1", "--model-kwarg", f"cache={tmp_path / 'c.sqlite'}",
               "--output-root", tmp_path / "out", "--run-name", "part", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "part" / "summary.json").read_text())
    assert summary["overall"]["n_errors"] == 1 and summary["overall"]["n_answered"] == 2
    assert "33.3" in out.stdout                                           # the error rate, in the printed table


def test_a_local_model_that_errors_every_item_exits_3_and_score_too(tmp_path):
    out = _cli("run", "--benchmark", "demo", "--model", "tiny-qwen2.5-vl", "--subset", "image_color", "--limit", 2,
               "--model-kwarg", 'generation_kwargs={"num_beams": 0}', "--output-root", tmp_path, "--run-name", "bad",
               "--no-progress")
    assert out.returncode == 3, out.stderr[-3000:]
    assert "bad: nothing answered (2 items failed; most common error: " in _lines(out.stderr)[-1]
    scored = _cli("score", tmp_path / "bad")                               # rescoring it says so too
    assert scored.returncode == 3 and "nothing answered" in _lines(scored.stderr)[-1], scored.stderr[-3000:]
    assert _cli("score", tmp_path / "bad", "--allow-failures").returncode == 0


def test_a_sweep_marks_a_configuration_that_answered_nothing_and_exits_3(tmp_path):
    grid = {"name": "s", "base": {"benchmark": "demo", "subset": "image_color", "limit": 2, "max_new_tokens": 4, "model": "tiny-qwen2.5-vl"},
            "grid": {"model_kwargs": [{}, {"generation_kwargs": {"num_beams": 0}}]}}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    out = _cli("sweep", path, "--output-root", tmp_path / "out")
    assert out.returncode == 3, out.stderr[-3000:]
    t = pd.read_csv(tmp_path / "out" / "s" / "sweep.csv")
    ok, failed = t[t.status == "ok"], t[t.status == "failed"]
    assert len(ok) == 1 and len(failed) == 1, t
    row = failed.iloc[0]
    assert row.error.startswith("NothingAnswered:") and "nothing answered (2 items failed" in row.error
    assert row.n == 2 and row.error_rate == 1.0                          # the summary it wrote, in its row


# -- up-front refusal -----------------------------------------------------------------------------------------------

def _refused(out, root: Path, *needles):
    lines = _lines(out.stderr)
    assert out.returncode == 2, out.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("vlmlens: error: "), out.stderr[-3000:]
    for n in needles: assert n in lines[0], lines[0]
    assert not root.exists() or not any(root.rglob("*")), sorted(root.rglob("*"))     # nothing left on disk


def _run(root, *args, env=None):
    return _cli("run", "--benchmark", "demo", "--limit", 2, "--output-root", root, "--no-progress", *args, env=env)


def test_a_missing_key_leaves_no_run_folder_or_lock(tmp_path):
    root = tmp_path / "out"
    _refused(_run(root, "--model", "gpt-4o"), root, "set OPENAI_API_KEY")


def test_a_missing_judge_key_leaves_no_run_folder(data_root, tmp_path):
    root = tmp_path / "out"                                # VQAv2 misses go to the paper's judge (gpt-4.1): its key is checked first
    out = _cli("run", "--benchmark", "hintel", "--data-path", data_root, "--subset", "vqav2", "--language", "en", "--limit", 2,
               "--model", "tiny-qwen2.5-vl", "--output-root", root, "--no-progress")
    _refused(out, root, "set OPENAI_API_KEY")


def test_a_missing_media_root_is_refused_before_the_run(tmp_path):
    root = tmp_path / "out"
    out = _cli("run", "--benchmark", "infinibench", "--model", "tiny-qwen2.5-vl", "--benchmark-kwarg", "source=real_text",
               "--benchmark-kwarg", f"video_root={tmp_path / 'no-videos'}", "--output-root", root, "--no-progress")
    _refused(out, root, f"video_root: {tmp_path / 'no-videos'} does not exist")


def test_an_unreachable_hub_model_is_one_line_and_nothing_on_disk(tmp_path):
    root = tmp_path / "out"
    _refused(_run(root, "--model", "hf:vlmlens-nobody/no-such-model-7b", env={"HF_HUB_OFFLINE": "1"}), root,
             "vlmlens-nobody/no-such-model-7b: not in the local model cache and HF_HUB_OFFLINE is set")


def test_an_output_root_under_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("x")
    root = tmp_path / "a-file" / "out"
    _refused(_run(root, "--model", "tiny-qwen2.5-vl"), tmp_path / "nothing-here", "is a file, not a folder")
    assert (tmp_path / "a-file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere; a read-only folder cannot stop it")
def test_an_unwritable_output_root_is_refused(tmp_path):
    ro = tmp_path / "ro"; ro.mkdir(); ro.chmod(0o500)
    try: _refused(_run(ro / "out", "--model", "tiny-qwen2.5-vl"), ro / "out", "no permission to write")
    finally: ro.chmod(0o700)


def test_a_missing_model_folder_is_named_as_such(tmp_path):
    root = tmp_path / "out"
    out = _run(root, "--model", "./models/my-qwen")
    _refused(out, root, "model folder ./models/my-qwen does not exist")
    assert "known models" not in out.stderr


def test_a_mistyped_model_kwarg_leaves_no_run_folder(tmp_path):
    root = tmp_path / "out"
    _refused(_run(root, "--model", "tiny-qwen2.5-vl", "--model-kwarg", "max_pixel=200704"), root, "unknown hf backend option(s) ['max_pixel']")


def test_a_local_one_image_checkpoint_is_refused_like_its_registered_name(tmp_path):
    from vlmlens.models.transformers import tiny_checkpoint
    local = tmp_path / "my-llama"
    shutil.copytree(tiny_checkpoint("mllama"), local)
    root = tmp_path / "out"
    for model in ("tiny-mllama", str(local)):
        _refused(_run(root, "--model", model, "--subset", "video_color", "--frames", 4), root, "at most 1 image(s) per request", "--frames 4")


# -- one checked option schema per benchmark -----------------------------------------------------------------------

@pytest.mark.parametrize("bench,model", [("infinibench", "tiny-qwen2.5-vl"), ("minerva", "tiny-qwen2.5-vl"), ("curve", "tiny-qwen2.5-vl"),
                                         ("hintel", "tiny-qwen2.5-vl")])
def test_a_mistyped_benchmark_option_is_refused_with_a_suggestion(tmp_path, bench, model):
    root = tmp_path / "out"
    out = _cli("run", "--benchmark", bench, "--model", model, "--benchmark-kwarg", "video_rot=/videos", "--output-root", root,
               "--data-path", tmp_path / "data.jsonl", "--no-progress")
    valid = "did you mean 'video_root'?" if bench != "hintel" else "valid: prompt_language"
    _refused(out, root, f"{bench}: unknown benchmark_kwargs 'video_rot'", valid)


def test_demo_takes_no_options_and_a_bad_value_is_refused(tmp_path):
    root = tmp_path / "out"
    _refused(_run(root, "--model", "tiny-qwen2.5-vl", "--benchmark-kwarg", "video_root=/v"), root, "demo takes none")
    out = _cli("run", "--benchmark", "infinibench", "--model", "tiny-qwen2.5-vl", "--benchmark-kwarg", "subtitle_mode=fulll",
               "--output-root", root, "--no-progress")
    _refused(out, root, "subtitle_mode must be one of 'per_frame', 'full', got 'fulll'")


@pytest.mark.parametrize("bench,names", [("infinibench", ["video_root", "subtitle_mode", "idk_option", "judge_fence"]),
                                         ("curve", ["video_map", "accuracy", "resource_sets"]), ("minerva", ["reasoning"]),
                                         ("hintel", ["prompt_language", "jee_scoring"]), ("demo", [])])
def test_help_kwargs_prints_each_option(bench, names):
    out = _cli("run", "--help-kwargs", "--benchmark", bench)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{bench}") and all(n in out.stdout for n in names), out.stdout
    if bench == "infinibench": assert "per_frame" in out.stdout and "bool" in out.stdout     # type and default shown


def test_a_sweep_output_root_under_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("x")
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "limit": 1, "model": "tiny-qwen2.5-vl"}}))
    _refused(_cli("sweep", grid, "--output-root", tmp_path / "a-file" / "out"), tmp_path / "nothing-here", "is a file, not a folder")
