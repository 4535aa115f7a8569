"""The mistakes matrix generated from the input schema: every `RunConfig` field's declaration (type, least value,
allowed values), every cross-field rule, every declared environment variable and the sweep file's keys give wrong
values, and each is tried through the command line, a sweep file, a papermill notebook's parameters and the Python
API. Each case asserts one line, exit 2 (or one ValueError from Python), and that the working folder, the output root
and the cache are as they were. In-process: `vlmlens.cli.main([...])`, no subprocess."""
import contextlib
import io
import math
import os
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from vlmlens.benchmarks.demo import ensure_demo_data
from vlmlens.cli import main
from vlmlens.core import ENVIRONMENT, RunConfig, field_kind
from vlmlens.runner import check_config, run
from vlmlens.sweep import SWEEP_KEYS, parameters_cell

MODEL = "tiny-qwen2.5-vl"
FIELDS = {f.name: f for f in fields(RunConfig)}


@pytest.fixture(scope="module", autouse=True)
def demo_data():
    from vlmlens.models.registry import get_spec, resolve_builder
    ensure_demo_data(progress=False)
    resolve_builder(get_spec(MODEL))           # the tiny model built once, so that no case below writes to the cache


def _flag(f) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def wrong_values(f) -> list[tuple[str, object]]:
    "(label, value) pairs the declaration of field `f` refuses, as a user would type or write them."
    kind, lo, ch = field_kind(f), f.metadata.get("lo"), f.metadata.get("choices")
    out = []
    if kind in ("int", "float"):
        out += [("text", "abc"), ("empty", ""), ("nan", "nan"), ("inf", "inf"), ("list", [1, 2])]
        if lo is not None: out.append(("below", lo if f.metadata.get("above") else lo - 1))
        if kind == "int": out.append(("fraction", 2.5))
    elif kind == "str":
        out += [("empty", ""), ("list", ["a", "b"])]
        if ch: out.append(("not-a-choice", ch[0] + "x"))
    elif kind == "dict": out += [("text", "notjson"), ("list", ["k=v"])]
    elif kind == "bool": out += [("word", "maybe"), ("number", 2)]
    return out


CASES = [(name, label, value) for name, f in FIELDS.items() for label, value in wrong_values(f)]
IDS = [f"{n}-{label}" for n, label, _ in CASES]
CLI_CASES = [c for c in CASES if not isinstance(c[2], list)]        # one argument holds no list


def _listing(*folders) -> dict:
    return {str(d): sorted(str(p.relative_to(d)) for p in Path(d).rglob("*")) if Path(d).exists() else None for d in folders}


@pytest.fixture
def where(tmp_path, monkeypatch):
    "The working folder (tmp_path/work), the output root (tmp_path/out), and the listing of both and the cache."
    work = tmp_path / "work"; work.mkdir()
    monkeypatch.chdir(work)
    folders = (work, tmp_path / "out", os.environ["VLMLENS_CACHE"])
    before = _listing(*folders)
    yield work, tmp_path / "out"
    assert _listing(*folders) == before, "something was left on disk"


def _cli(*args) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try: rc = main([str(a) for a in args])
        except SystemExit as e: rc = e.code
    lines = [l for l in err.getvalue().splitlines() if l.strip()]
    return rc, lines


def _one_line(rc, lines, *needles):
    assert rc == 2, (rc, lines)
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    for n in needles: assert n in lines[0], lines[0]


def _python_line(fn, *needles):
    with pytest.raises(ValueError) as e: fn()
    msg = str(e.value)
    assert "\n" not in msg.strip(), msg
    for n in needles: assert n in msg, msg


RUN = ["run", "--benchmark", "demo", "--model", MODEL, "--limit", "1", "--no-progress"]


def _cli_args(name, value, out):
    "The command line that gives field `name` the wrong `value`."
    kind = field_kind(FIELDS[name])
    base = [a for a in RUN if not (name == "limit" and a in ("--limit", "1"))]
    if name in ("benchmark", "model"): base = ["run", "--benchmark", "demo", "--model", MODEL, "--no-progress"]
    if kind == "dict": value = value if "=" in str(value) else str(value)   # KEY=VALUE form refused
    args = [*base, "--output-root", out] if name != "output_root" else base
    if name in ("benchmark", "model"):
        i = args.index("--" + name); args[i + 1] = value
        return args
    return [*args, _flag(FIELDS[name]), value]


# -- every declared field, every wrong value: the command line ------------------------------------------------------

@pytest.mark.parametrize("name, label, value", CLI_CASES, ids=[f"{n}-{label}" for n, label, _ in CLI_CASES])
def test_cli_refuses_each_wrong_value_in_one_line(where, name, label, value):
    "A switch given a value is refused by the parser (`--no-progress maybe`: an argument it does not take)."
    _, out = where
    rc, lines = _cli(*_cli_args(name, value, out))
    _one_line(rc, lines)
    if name not in ("benchmark", "model", "modality", "strategy") and field_kind(FIELDS[name]) not in ("dict", "bool"):
        assert _flag(FIELDS[name]) in lines[0], lines[0]


# -- the same values through a sweep file ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, label, value", CASES, ids=IDS)
def test_sweep_file_refuses_each_wrong_value_in_one_line(where, name, label, value):
    work, out = where
    value = float(value) if value in ("nan", "inf") else value
    grid = work / "g.yaml"
    grid.write_text(yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": MODEL, name: value}}), encoding="utf-8")
    rc, lines = _cli("sweep", grid, "--output-root", out)
    grid.unlink()
    _one_line(rc, lines)
    if name not in ("benchmark", "model"): assert name in lines[0], lines[0]


# -- the same values as a papermill notebook's parameters, and from Python -------------------------------------------

def _notebook_namespace(name, value) -> dict:
    "The evaluation notebook's globals after its parameters cell and papermill's injected `name = value`."
    ns = {}
    exec(parameters_cell(), ns)
    ns[name] = value
    return {k: ns[k] for k in FIELDS}


@pytest.mark.parametrize("name, label, value", CASES, ids=IDS)
def test_papermill_parameter_refuses_each_wrong_value_in_one_line(where, name, label, value):
    _, out = where
    ns = _notebook_namespace(name, value)
    if name != "output_root": ns["output_root"] = str(out)
    _python_line(lambda: run(RunConfig(**ns)), name if name not in ("benchmark", "model") else "")


@pytest.mark.parametrize("name, label, value", CASES, ids=IDS)
def test_python_run_refuses_each_wrong_value_in_one_line(where, name, label, value):
    _, out = where
    cfg = {"benchmark": "demo", "model": MODEL, "limit": 1, "progress": False, "output_root": str(out), name: value}
    _python_line(lambda: run(cfg), name if name not in ("benchmark", "model") else "")


# -- the rules that tie fields together --------------------------------------------------------------------------------

RULES = [
    (["--frames", "8", "--fps", "1"], "give --frames or --fps, not both"),
    (["--run-name", ".."], "--run-name ..: a run's folder must stay inside --output-root"),
    (["--run-name", "../escaped"], "must stay inside"),
    (["--run-name", "/tmp/elsewhere"], "must stay inside"),
    (["--judge", "none", "--judge-kwarg", "votes=3"], "--judge-kwarg needs a judge"),
    (["--judge", "nosuch-judge"], "--judge nosuch-judge: not a known model"),
    (["--split", "test"], "--split test: demo has no splits"),
    (["--strategy", "caption"], "--strategy caption: demo prompts implement standard, cot"),
    (["--benchmark-kwarg", "x=1"], "unknown benchmark_kwargs 'x'"),
    (["--model-kwarg", "novalue"], "--model-kwarg expects KEY=VALUE"),
    (["--model-kwarg", "max_pixels=abc"], "--model-kwarg max_pixels=abc: a value this model cannot read"),
    (["--model-kwarg", "generation_kwargs=notjson"], "--model-kwarg generation_kwargs=notjson: a value this model cannot read"),
]


@pytest.mark.parametrize("extra, needle", RULES, ids=[" ".join(a) for a, _ in RULES])
def test_cli_refuses_each_cross_field_mistake(where, extra, needle):
    _, out = where
    _one_line(*_cli(*RUN, "--output-root", out, *extra), needle)


@pytest.mark.parametrize("kw, needle", [
    ({"num_frames": 8, "fps": 1}, "give num_frames or fps, not both"),
    ({"run_name": ".."}, "run_name ..: a run's folder must stay inside output_root"),
    ({"judge": "none", "judge_kwargs": {"votes": 3}}, "judge_kwargs needs a judge"),
    ({"num_frame": 8}, "unknown RunConfig field 'num_frame' (did you mean 'num_frames'?)"),
], ids=["frames-and-fps", "run-name-escapes", "judge-kwargs-without-judge", "misspelled-field"])
def test_python_run_refuses_each_cross_field_mistake(where, kw, needle):
    _, out = where
    _python_line(lambda: run({"benchmark": "demo", "model": MODEL, "progress": False, "output_root": str(out), **kw}), needle)


def test_a_judge_no_item_needs_is_neither_refused_nor_recorded(tmp_path, caplog):
    "One sweep may give the same judge to a judged benchmark and to the demo (scored by rule): the demo run goes ahead."
    out = tmp_path / "out"
    run({"benchmark": "demo", "model": MODEL, "limit": 1, "progress": False, "output_root": out, "run_name": "judged",  # a Path, as from Python
         "judge": "gpt-4o-mini", "judge_kwargs": {"votes": 3}})
    import json
    config = json.loads((out / "judged" / "run.json").read_text())["config"]
    assert (config["judge"], config["judge_kwargs"]) == (None, {})
    assert "--judge gpt-4o-mini: no item of this demo run goes to a judge" in caplog.text


def test_python_run_refuses_what_is_not_a_configuration(where):
    _python_line(lambda: run("demo"), "must be a RunConfig or a mapping of its fields")


def test_the_checked_benchmark_option_is_the_value_the_run_uses():
    "`idk_option=no` (a word the checker reads as false) reaches InfiniBench as False, as `false` does."
    for word in ("no", "off", "NO", "false"):
        cfg, _, _ = check_config(RunConfig("infinibench", "m", benchmark_kwargs={"idk_option": word}))
        assert cfg.benchmark_kwargs == {"idk_option": False}, word


@pytest.mark.parametrize("bench, kv, needle", [
    ("curve", "human_baseline=95", "human_baseline must be between 0 and 1, got 95"),
    ("curve", "human_baseline=nan", "human_baseline must be a number"),
    ("infinibench", "idk_option=maybe", "idk_option must be true or false"),
])
def test_a_benchmark_option_out_of_its_range_is_refused(where, bench, kv, needle):
    _, out = where
    _one_line(*_cli("run", "--benchmark", bench, "--model", MODEL, "--no-progress", "--output-root", out,
                    "--benchmark-kwarg", kv), needle)


# -- the environment ---------------------------------------------------------------------------------------------------

def _env_wrong(name, kind, tmp) -> list[str]:
    a_file = tmp / "a-file"; a_file.write_text("x", encoding="utf-8")
    return {"bool": ["maybe", "2"], "gb": ["abc", "nan", "-1"], "folder": [str(a_file)],
            "folders": [str(a_file), str(tmp / "no-such-folder")], "file": [str(tmp / "no-such.json")]}[kind]


ENV_CASES = [(n, k) for n, (k, _) in ENVIRONMENT.items()]


@pytest.mark.parametrize("name, kind", ENV_CASES, ids=[n for n, _ in ENV_CASES])
def test_a_wrong_environment_variable_is_one_line_naming_it(tmp_path_factory, where, monkeypatch, name, kind):
    _, out = where
    for bad in _env_wrong(name, kind, tmp_path_factory.mktemp("env")):
        monkeypatch.setenv(name, bad)
        _one_line(*_cli(*RUN, "--output-root", out), f"{name}={bad}")
        _python_line(lambda: run({"benchmark": "demo", "model": MODEL, "progress": False, "output_root": str(out)}), name)
        monkeypatch.delenv(name)


# -- the sweep file itself ---------------------------------------------------------------------------------------------

def _misspelled(key: str) -> str:
    return key[1] + key[0] + key[2:]


@pytest.mark.parametrize("key", list(SWEEP_KEYS))
def test_a_misspelled_sweep_key_is_refused(where, key):
    work, out = where
    spec = {"name": "s", "base": {"benchmark": "demo", "model": MODEL}, "grid": {"limit": [1, 2]}}
    spec[_misspelled(key)] = spec.pop(key, "x")
    grid = work / "g.yaml"; grid.write_text(yaml.safe_dump(spec), encoding="utf-8")
    rc, lines = _cli("sweep", grid, "--output-root", out)
    grid.unlink()
    _one_line(rc, lines, f"unknown key {_misspelled(key)!r}", f"did you mean {key!r}")


@pytest.mark.parametrize("content, needle", [
    (lambda p: p.write_text(yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": MODEL}}), encoding="utf-16"),
     "not UTF-8 text"),
    (lambda p: p.write_text(yaml.safe_dump({"name": "s", "grid": {"limit": [1]}}), encoding="utf-8"),
     "need a benchmark and a model"),
    (lambda p: p.write_text('{"overall": {"n": 3}, "run_dir": "outputs/x"}', encoding="utf-8"), "unknown key 'overall'"),
    (lambda p: p.mkdir(), "a folder; give the sweep's YAML file"),
], ids=["utf-16", "no-base", "a-summary-json", "a-folder"])
def test_a_sweep_file_that_is_not_one_is_refused(where, content, needle):
    work, out = where
    grid = work / "g.yaml"
    content(grid)
    rc, lines = _cli("sweep", grid, "--output-root", out)
    grid.rmdir() if grid.is_dir() else grid.unlink()
    _one_line(rc, lines, needle)


# -- a served model or judge nobody serves ----------------------------------------------------------------------------

def _closed_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("who", ["--model", "--judge"])
def test_a_served_model_or_judge_at_a_closed_port_is_one_line_before_anything_exists(where, tmp_path_factory, monkeypatch,
                                                                                       server, who):
    from test_minerva import make_data
    _, out = where
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    closed = f"openai-compatible:m@http://127.0.0.1:{_closed_port()}/v1"
    model = closed if who == "--model" else f"openai-compatible:answerer@{server.openai_base_url}"
    args = ["run", "--benchmark", "curve", "--data-path", make_data(tmp_path_factory.mktemp("curve"), "curve"), "--model", model,
            "--modality", "text", "--no-progress", "--output-root", out, "--model-kwarg", "cache=false"]
    args += ["--judge", closed] if who == "--judge" else ["--judge", "none"]
    rc, lines = _cli(*args)
    _one_line(rc, lines, f"{who} {closed}: no server answers at http://127.0.0.1:")
    assert server.count() == 0


# -- other commands' counts -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["isolate", "RUN", "--compiler", "a", "--labeller", "b", "--limit", "0"], "--limit must be a positive integer; got 0"),
    (["isolate", "RUN", "--compiler", "a", "--labeller", "b", "--max-rounds", "0"], "--max-rounds must be a positive integer"),
    (["demo", "--frames", "abc", "--no-progress"], "--frames must be a positive integer; got abc"),
    (["demo", "--run-name", "..", "--no-progress"], "--run-name ..: a run's folder must stay inside"),
    (["data", "verify", "hintel"], "hintel has no fetchable release, so there is nothing"),
    (["data", "get", "minerva", "--split", "test"], "--split test: minerva's release is one file with no splits"),
    (["curate", "dedup", "--from", "x", "--out", "OUT", "--threshold", "1.5"], "--threshold must be a cosine similarity between 0 and 1"),
    (["curate", "dedup", "--from", "x", "--out", "OUT", "--threshold", "nan"], "--threshold must be a cosine similarity"),
    (["curate", "dedup", "--from", "x", "--out", "OUT", "--embedding-model", "/nonexistent"], "--embedding-model /nonexistent: no such"),
], ids=["isolate-limit-0", "isolate-max-rounds-0", "demo-frames-text", "demo-run-name-escapes", "data-verify-hintel",
        "data-get-split-of-a-one-file-release", "dedup-threshold-above-1", "dedup-threshold-nan", "dedup-missing-embedding-model"])
def test_other_commands_refuse_by_the_same_rules(where, args, needle):
    work, out = where
    args = [str(work) if a == "RUN" else str(out) if a == "OUT" else a for a in args]
    if args[0] == "demo": args += ["--output-root", str(out)]
    _one_line(*_cli(*args), needle)


@pytest.mark.parametrize("command, needle", [
    (["mcq-report"], "a demo_notes step whose items are not multiple-choice questions"),
    (["back-translate", "--out", "OUT"], "a demo_notes step; this command reads a translate step"),
])
def test_a_curation_step_of_another_kind_is_refused(where, tmp_path_factory, command, needle):
    from vlmlens.curation.store import Step
    _, out = where
    st = Step(tmp_path_factory.mktemp("steps"), "demo_notes", {})
    st.process([("u", None)], lambda p, w: [w.accept("en/0", {"question": "q", "language": "en"})])
    st.close()
    args = ["curate", command[0], "--from", st.dir, *[str(out) if a == "OUT" else a for a in command[1:]]]
    _one_line(*_cli(*args), needle)


def test_a_prompt_file_without_the_prompts_placeholders_is_refused_before_any_item(where, tmp_path_factory):
    from test_minerva import make_data
    _, out = where
    tmp = tmp_path_factory.mktemp("prompt")
    prompt = tmp / "p.txt"; prompt.write_text("Answer briefly.\n", encoding="utf-8")
    _one_line(*_cli("run", "--benchmark", "curve", "--data-path", make_data(tmp, "curve"), "--model", MODEL, "--modality", "text",
                    "--judge", "none", "--no-progress", "--output-root", out, "--benchmark-kwarg", f"prompt_file={prompt}"),
              f"{prompt}: prompt override for curve/answer prompt (direct) drops placeholder(s) {{language}}, {{question}}")


def test_a_rows_file_of_questions_without_options_is_refused_before_the_run(where, tmp_path_factory):
    _, out = where
    rows = tmp_path_factory.mktemp("rows") / "q.csv"
    rows.write_text("id,question\n1,What is this?\n2,How many?\n", encoding="utf-8")
    _one_line(*_cli(*RUN, "--data-path", rows, "--output-root", out), "no readable demo row", "options: a mcq row needs its options")


def test_curate_verify_with_no_readable_verdict_is_refused(where, tmp_path_factory):
    from vlmlens.curation.store import Step
    _, out = where
    tmp = tmp_path_factory.mktemp("verify")
    st = Step(tmp, "demo_notes", {})
    st.process([("u", None)], lambda p, w: [w.accept("en/0", {"question": "q", "language": "en"})])
    st.close()
    verdicts = tmp / "verdicts.jsonl"; verdicts.write_text("not a verdict\n", encoding="utf-8")
    _one_line(*_cli("curate", "verify", "--from", st.dir, "--verdicts", verdicts, "--out", out), f"--verdicts {verdicts}: no readable verdict")


@pytest.mark.parametrize("command, needle", [
    (["filter", "--from", "STEP", "--models", "nosuch-model", "--out", "OUT"], "--models nosuch-model: unknown model 'nosuch-model'"),
    (["ocr", "--pages", "STEP", "--language", "english", "--out", "OUT"], "--language english: not a language code; did you mean en?"),
])
def test_curation_names_are_checked_before_any_step_file(where, tmp_path_factory, command, needle):
    from vlmlens.curation.store import Step
    _, out = where
    st = Step(tmp_path_factory.mktemp("steps"), "demo_notes", {})
    st.process([("u", None)], lambda p, w: [w.accept("en/0", {"question": "q", "language": "en"})])
    st.close()
    args = ["curate", *[str(st.dir) if a == "STEP" else str(out) if a == "OUT" else a for a in command]]
    _one_line(*_cli(*args), needle)


def test_curate_combine_of_one_step_twice_is_refused(where, tmp_path_factory):
    from vlmlens.curation.store import Step
    _, out = where
    st = Step(tmp_path_factory.mktemp("steps"), "demo_notes", {})
    st.process([("u", None)], lambda p, w: [w.accept("en/0", {"question": "q", "language": "en"})])
    st.close()
    _one_line(*_cli("curate", "combine", "--from", f"{st.dir},{st.dir}", "--out", out), "names one step twice")


def test_a_demo_refusal_prints_nothing_but_its_one_line(where):
    "No banner on stdout above the refusal: the whole answer is the one line."
    _, out = where
    so, se = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        rc = main(["demo", "--frames", "0", "--no-progress", "--output-root", str(out)])
    assert rc == 2 and so.getvalue() == "" and se.getvalue().count("\n") == 1, (so.getvalue(), se.getvalue())


def test_papermill_names_a_wrong_parameter_in_the_schemas_words(repo_root, where):
    "One real papermill run (the matrix above runs the same parameters cell in-process): the option and its rule, not Python's words."
    import subprocess
    import sys
    work, out = where
    proc = subprocess.run([sys.executable, "-m", "papermill", str(repo_root / "evalnb" / "evaluate.ipynb"), str(out.parent / "o.ipynb"),
                           "-p", "num_frames", "abc", "-p", "output_root", str(out), "--cwd", str(work)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "num_frames must be a positive integer; got abc" in proc.stderr, proc.stderr[-3000:]
    assert "invalid literal" not in proc.stderr
    (out.parent / "o.ipynb").unlink()


@pytest.mark.parametrize("flag, kind, needle", [
    ("--output-root", "file", "is a file, not a folder"),
    ("--data-path", "missing", "no-such-rows.jsonl"),
    ("--data-path", "folder", "samples.jsonl"),           # the demo reads a folder's samples.jsonl
    ("--data-path", "utf-16", "UTF-16"),
], ids=["output-root-a-file", "data-path-missing", "data-path-a-folder", "data-path-utf-16"])
def test_a_path_of_the_wrong_kind_is_one_line(where, tmp_path_factory, flag, kind, needle):
    _, out = where
    tmp = tmp_path_factory.mktemp("paths")
    path = {"file": tmp / "a-file", "missing": tmp / "no-such-rows.jsonl", "folder": tmp, "utf-16": tmp / "rows.jsonl"}[kind]
    if kind == "file": path.write_text("x", encoding="utf-8")
    if kind == "utf-16": path.write_text('{"id": "1", "question": "q", "options": ["a", "b"], "answer": "a"}\n', encoding="utf-16")
    args = [*RUN, "--output-root", out, flag, path] if flag != "--output-root" else [*RUN, flag, path]
    _one_line(*_cli(*args), needle)


def test_a_full_disk_as_the_run_is_locked_leaves_no_run_folder(where, monkeypatch):
    "The OS refuses the lock file's first bytes: one line saying what to do, and no run folder holding a `.lock`."
    import errno
    _, out = where
    def full(fd, data): raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", full)
    rc, lines = _cli(*RUN, "--output-root", out)
    monkeypatch.undo()
    _one_line(rc, lines, "No space left on device while writing; free disk space")


def test_a_sweep_on_an_executor_this_machine_lacks_leaves_no_sweep_folder(where, monkeypatch):
    import shutil
    work, out = where
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "sbatch" else which(name, *a, **k))
    grid = work / "g.yaml"
    grid.write_text(yaml.safe_dump({"name": "s", "base": {"benchmark": "demo", "model": MODEL, "limit": 1}}), encoding="utf-8")
    rc, lines = _cli("sweep", grid, "--output-root", out, "--executor", "slurm")
    grid.unlink()
    _one_line(rc, lines, "--executor slurm")


def test_view_with_a_port_out_of_range_is_refused_before_the_site_is_written(where):
    work, _ = where
    _one_line(*_cli("view", work, "--serve", "--port", "99999", "--no-progress"), "--port 99999: a port is 1 to 65535")


def test_report_to_wandb_without_a_key_is_one_line(tmp_path, monkeypatch):
    "One line naming the remedy (no traceback); the view it would log is written to a temporary folder only."
    for k in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL"): monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path)); monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    out = tmp_path / "out"
    run({"benchmark": "demo", "model": MODEL, "limit": 1, "progress": False, "output_root": out, "run_name": "r"})
    monkeypatch.chdir(tmp_path)
    rc, lines = _cli("report", out / "r", "--to", "wandb")
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("vlmlens: error: W&B has no API key") and "WANDB_API_KEY" in lines[0], lines
