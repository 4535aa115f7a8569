"""The mistakes matrix: each command × each kind of mistake a user makes (a path the OS refuses, a typo, nothing to do,
a missing device or key, a broken YAML file, a closed pipe, a misnamed notebook parameter). Each case asserts the one
line on stderr, the exit status, and that nothing was left on disk."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vlmlens.benchmarks.demo import ensure_demo_data

CLI = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())"]
SYSFS = Path("/sys/fs")           # the kernel refuses folders here with EPERM, root included


@pytest.fixture(scope="module", autouse=True)
def demo_data():
    ensure_demo_data(progress=False)      # built once, so that a refusal's stderr holds only its one line


def _cli(*args, cwd, env=None, timeout=300):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e.update(env or {})
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=e, timeout=timeout, cwd=cwd)


def _one_line(proc, status: int, *needles: str):
    "The command printed exactly one line on stderr, holding each of `needles`, and exited with `status`."
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == status, (proc.returncode, proc.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for n in needles: assert n in lines[0], lines[0]
    return lines[0]


def _empty(folder: Path):
    assert not folder.exists() or not any(folder.iterdir()), sorted(map(str, folder.rglob("*")))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


RUN = ["run", "--benchmark", "demo", "--model", "tiny-qwen2.5-vl", "--limit", "1", "--no-progress"]


# -- paths the OS refuses -------------------------------------------------------------------------------------------

@pytest.mark.skipif(not SYSFS.is_dir(), reason="needs /sys/fs")
@pytest.mark.parametrize("args", [
    [*RUN, "--output-root", SYSFS / "x"],
    ["demo", "--limit", "1", "--no-progress", "--output-root", SYSFS / "x"],
    ["sweep", "GRID", "--output-root", SYSFS / "x"],
], ids=["run", "demo", "sweep"])
def test_an_output_folder_the_os_refuses_is_one_line_naming_it(tmp_path, args):
    grid = _write(tmp_path / "g.yaml", yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": "tiny-qwen2.5-vl"}}))
    args = [grid if a == "GRID" else a for a in args]
    out = _cli(*args, cwd=tmp_path)
    _one_line(out, 2, "/sys/fs", "Operation not permitted")
    assert not (SYSFS / "x").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


@pytest.mark.skipif(not SYSFS.is_dir(), reason="needs /sys/fs")
def test_a_curate_build_folder_the_os_refuses_is_one_line_and_calls_no_model(tmp_path):
    records = _write(tmp_path / "recs.jsonl", '{"id": "1", "question": "What colour is the car?"}\n')
    out = _cli("curate", "translate", "--out", SYSFS / "x", "--records", records, "--engine", "llm:gpt-4o", "--target", "te",
               cwd=tmp_path, env={"OPENAI_API_KEY": "test-openai-key.not-real.000000000000", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    _one_line(out, 2, "/sys/fs/x", "Operation not permitted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recs.jsonl"]


def test_curate_translate_to_a_language_name_is_refused_before_any_model_call(tmp_path):
    records = _write(tmp_path / "recs.jsonl", '{"id": "1", "question": "What colour is the car?"}\n')
    out = _cli("curate", "translate", "--out", tmp_path / "build", "--records", records, "--engine", "llm:gpt-4o",
               "--target", "telugu", cwd=tmp_path,
               env={"OPENAI_API_KEY": "test-openai-key.not-real.000000000000", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    _one_line(out, 2, "--target telugu: not a language code; did you mean te?")
    assert not (tmp_path / "build").exists()


@pytest.mark.skipif(not SYSFS.is_dir(), reason="needs /sys/fs")
def test_a_data_folder_the_os_refuses_is_one_line(tmp_path):
    out = _cli("data", "get", "minerva", cwd=tmp_path, env={"VLMLENS_DATA": str(SYSFS / "x"), "HF_HUB_OFFLINE": "0"})
    _one_line(out, 2, "/sys/fs/x")
    _empty(tmp_path)


# -- typos and values that are not one ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    ([*RUN, "--device", "gpu"], "--device gpu: not a device"),
    ([*RUN, "--device", "cuda:7"], "--device cuda:7: this machine has"),
    ([*RUN, "--language", "hindi"], "--language hindi: not a language code; did you mean hi?"),
    ([*RUN, "--subset", "video_colour"], "no demo items match --subset video_colour"),
    (["run", "--benchmark", "demo", "--model", "no-such-model", "--limit", "1"], "no-such-model"),
], ids=["device-gpu", "device-missing", "language-name", "subset-typo", "model-typo"])
def test_a_value_that_is_not_one_is_refused_before_anything_is_created(tmp_path, args, needle):
    out = _cli(*args, "--output-root", tmp_path / "out", cwd=tmp_path)
    _one_line(out, 2, needle)
    assert not (tmp_path / "out").exists()


# -- nothing to do --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bench, name, text, needle", [
    ("minerva", "empty.jsonl", "", "it is empty or holds no row of this benchmark"),
    ("minerva", "scores.csv", "sample_id,score\ns1,1\n", "rows refused, the first:"),
    ("infinibench", "other.jsonl", '{"sample_id": "x", "question": "q"}\n', "no readable infinibench row"),
], ids=["empty-jsonl", "scores-csv", "another-benchmarks-file"])
def test_a_rows_file_with_no_readable_row_is_a_mistake(tmp_path, bench, name, text, needle):
    data = _write(tmp_path / name, text)
    out = _cli("run", "--benchmark", bench, "--model", "tiny-qwen2.5-vl", "--data-path", data, "--output-root",
               tmp_path / "out", "--no-progress", cwd=tmp_path)
    _one_line(out, 2, f"{data}: no readable {bench} row", needle, "nothing to run")
    assert not (tmp_path / "out").exists()


def test_a_utf16_rows_file_names_its_encoding(tmp_path):
    (tmp_path / "h" / "realworldqa").mkdir(parents=True)
    (tmp_path / "h" / "realworldqa" / "hi.jsonl").write_text('{"id": "x"}\n', encoding="utf-16")
    out = _cli("run", "--benchmark", "hintel", "--model", "tiny-qwen2.5-vl", "--data-path", tmp_path / "h", "--language", "hi",
               "--output-root", tmp_path / "out", cwd=tmp_path)
    _one_line(out, 2, "hi.jsonl is UTF-16 encoded; save it as UTF-8")
    assert not (tmp_path / "out").exists()


# -- sweeps: the file, the grid and every configuration checked before any kernel starts ------------------------------

@pytest.mark.parametrize("text, needle", [
    ("name: s\ngrid:\n  model: [a, b\n", "not valid YAML"),
    (yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": "tiny-qwen2.5-vl"}, "grid": {"language": []}}),
     "grid entry 'language' is an empty list: the sweep has no runs"),
    (yaml.safe_dump({"name": "s", "base": {"benchmark": "demo"}, "grid": {"model": ["gpt-4o"]}}),
     "sweep not started: gpt-4o needs an API key: set OPENAI_API_KEY"),
    (yaml.safe_dump({"name": "s", "base": {"benchmark": "demo"}, "grid": {"model": ["no-such-model"]}}), "no-such-model"),
    (yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": "tiny-qwen2.5-vl"}, "grid": {"device": ["gpu"]}}),
     "--device gpu: not a device"),
], ids=["yaml-syntax", "empty-grid", "missing-key", "unknown-model", "bad-device"])
def test_a_sweep_that_cannot_run_is_one_line_and_starts_nothing(tmp_path, text, needle):
    grid = _write(tmp_path / "g.yaml", text)
    out = _cli("sweep", grid, "--output-root", tmp_path / "out", cwd=tmp_path)
    _one_line(out, 2, needle)
    assert not (tmp_path / "out").exists()


def test_a_sweep_of_a_notebook_that_does_not_take_its_parameters_is_refused(repo_root, tmp_path):
    grid = _write(tmp_path / "g.yaml", yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": "tiny-qwen2.5-vl"}}))
    out = _cli("sweep", grid, "--notebook", repo_root / "evalnb" / "report_hintel.ipynb", "--output-root", tmp_path / "out",
               cwd=tmp_path)
    _one_line(out, 2, "report_hintel.ipynb has no parameter benchmark")
    assert not (tmp_path / "out").exists()


def test_papermill_with_a_misnamed_parameter_is_refused(repo_root, tmp_path):
    "`-p modle gpt-4o` would otherwise run the default model and exit 0."
    out = subprocess.run([sys.executable, "-m", "papermill", str(repo_root / "evalnb" / "evaluate.ipynb"), str(tmp_path / "o.ipynb"),
                          "-p", "modle", "gpt-4o", "-p", "output_root", str(tmp_path / "out"), "--cwd", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "unknown parameter 'modle' (did you mean 'model'?)" in out.stderr, out.stderr[-3000:]
    assert not (tmp_path / "out").exists()


# -- no network -----------------------------------------------------------------------------------------------------

def test_a_hub_model_with_the_hub_unreachable_is_one_line_at_once(tmp_path):
    "HF_HUB_OFFLINE unset and the Hub's address refusing connections (a closed loopback port): one line, no retry warnings."
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
    out = _cli("run", "--benchmark", "demo", "--model", "qwen2.5-vl-7b", "--limit", "1", "--no-progress", "--output-root",
               tmp_path / "out", cwd=tmp_path, env=env, timeout=60)
    _one_line(out, 2, "Qwen/Qwen2.5-VL-7B-Instruct: not in the local model cache", "(http://127.0.0.1:9) cannot be reached",
              "hf download Qwen/Qwen2.5-VL-7B-Instruct")
    assert not (tmp_path / "out").exists()


# -- pipes and interrupts -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["data", "list"], ["report", "RUNS"], [*RUN, "--output-root", "RUNS"]],
                         ids=["data-list", "report", "run"])
def test_output_into_a_closed_pipe_ends_quietly(tmp_path, args):
    runs = tmp_path / "runs"
    if "report" in args:
        assert _cli("demo", "--limit", "2", "--no-progress", "--output-root", runs, cwd=tmp_path).returncode == 0
    args = [runs if a == "RUNS" else a for a in args]
    p = subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    p.stdout.close()                                       # `| head -0`: the reader is gone before the first line
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err


# -- unfinished runs: said, not errors ------------------------------------------------------------------------------

def test_a_partial_run_reads_how_far_it_got_and_report_over_a_run_without_summary_is_not_an_error(tmp_path):
    out = _cli(*RUN[:-3], "--limit", "4", "--shard", "0/2", "--no-progress", "--output-root", tmp_path, "--run-name", "half",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(l for l in out.stdout.splitlines() if l.startswith("half: "))
    n = int(line.split()[1])
    assert line == f"half: {n} of 4 items ({4 - n} not run: rerun to finish)", line
    out = _cli(*RUN[:-3], "--limit", "4", "--no-progress", "--output-root", tmp_path / "all", "--run-name", "cut", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp_path / "all" / "cut"
    (run / "summary.json").unlink()                                # killed after 3 of its 4 items, before its summary
    preds = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run / "predictions.jsonl").write_text("".join(preds[:3]))
    rep = _cli("report", tmp_path / "all", cwd=tmp_path)
    _one_line(rep, 0, f"{run}: no summary.json yet, 3 of 4 items (1 not run: rerun to finish)", f"vlmlens score {run}")


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    import signal, time
    p = subprocess.Popen([*CLI, "demo", "--no-progress", "--output-root", str(tmp_path / "out")], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True, cwd=tmp_path)
    t0 = time.time()
    while not (tmp_path / "out").exists() and time.time() - t0 < 240 and p.poll() is None: time.sleep(0.05)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    err = p.stderr.read()
    assert p.wait(timeout=120) == 130, err[-3000:]
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("WARNING")]
    assert lines[-1] == "vlmlens: interrupted; finished items are saved, rerun the same command to resume", err[-3000:]
    assert "Traceback" not in err, err[-3000:]


def test_isolate_on_a_hintel_run_says_isolation_needs_curve_or_minerva(tmp_path):
    import json
    from vlmlens.core import RunConfig
    run = tmp_path / "h"
    run.mkdir()
    cfg = RunConfig("hintel", "tiny-qwen2.5-vl")
    (run / "run.json").write_text(json.dumps({"config": cfg.to_dict(), "config_hash": cfg.hash()}))
    before = sorted(p.name for p in run.iterdir())
    out = _cli("isolate", run, "--compiler", "tiny-qwen2.5-vl", "--labeller", "tiny-qwen2.5-vl", cwd=tmp_path)
    _one_line(out, 2, "isolate needs a run of a benchmark whose items carry reference reasoning chains (curve, minerva)", "is a hintel run")
    assert sorted(p.name for p in run.iterdir()) == before


@pytest.mark.parametrize("args, needle", [
    (["score", "NOWHERE"], "not a run folder (no run.json)"),
    (["report", "NOWHERE"], "no such folder"),
    (["isolate", "NOWHERE", "--compiler", "m", "--labeller", "m"], "not a run folder (no run.json)"),
], ids=["score", "report", "isolate"])
def test_a_folder_that_is_not_a_run_is_one_line(tmp_path, args, needle):
    out = _cli(*[tmp_path / "nowhere" if a == "NOWHERE" else a for a in args], cwd=tmp_path)
    _one_line(out, 2, needle)
    _empty(tmp_path)


@pytest.mark.parametrize("nb,wrong,right", [("report_hintel", "run_root", "runs_root"),
                                            ("report_minerva", "curve_rot", "curve_root"),
                                            ("report_infinibench", "report_directory", "report_dir")])
def test_a_report_notebook_refuses_a_parameter_it_does_not_declare(repo_root, tmp_path, nb, wrong, right):
    "`papermill evalnb/report_hintel.ipynb … -p run_root outputs` would otherwise report the default folder."
    out = subprocess.run([sys.executable, "-m", "papermill", str(repo_root / "evalnb" / f"{nb}.ipynb"), str(tmp_path / "o.ipynb"),
                          "-p", wrong, str(tmp_path / "runs"), "--cwd", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert f"unknown parameter {wrong!r} (did you mean {right!r}?)" in out.stderr, out.stderr[-3000:]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("args, needle", [
    (["data", "get", "curvee"], "no data release known for 'curvee'; known: curve"),
    (["data", "get", "infinibench", "--split", "final"], "infinibench has splits test, validation, train, not 'final'"),
    (["data", "prepare", "minerva-ego", "--videos", "NOWHERE"], "run `vlmlens data get minerva-ego` first"),
    (["data", "verify", "minerva"], "no data.lock.json (fetch it with `vlmlens data get`)"),
    (["view", "NOWHERE"], "no such folder"),
    (["report", "NOWHERE"], "no such folder"),
    (["score", "NOWHERE"], "not a run folder"),
], ids=["data-get-typo", "data-split-typo", "prepare-before-get", "verify-before-get", "view-nowhere", "report-nowhere", "score-nowhere"])
def test_every_command_refuses_a_name_or_folder_that_is_not_one(tmp_path, args, needle):
    "Across commands: one line naming the mistake and its remedy, exit 2, and no data folder or output created."
    args = [tmp_path / "nowhere" if a == "NOWHERE" else a for a in args]
    out = _cli(*args, cwd=tmp_path, env={"VLMLENS_DATA": str(tmp_path / "data")})
    _one_line(out, 2, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
