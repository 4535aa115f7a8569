"""A model backend and a judge from another package, found through its entry points (`vlmlens.models`,
`vlmlens.judges`) with nothing in vlmlens edited: a tiny installed distribution (a `.dist-info` folder with
`entry_points.txt`) in a temporary folder on the path, used from Python and from the command line. And the same
without a package: a folder of modules that register a benchmark, a model and a judge, named by `--plugins DIR` or
`VLMLENS_PLUGINS`."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vlmlens.core import RunConfig

PLUGIN = '''
from vlmlens.core import Generation
from vlmlens.judges import open_ended_judge
from vlmlens.models.registry import Backend, ModelSpec

SPEC = ModelSpec("echo-vlm", "echo", "echo/1", languages=("en",))

class Echo(Backend):
    "Answers every question with the same text."
    kind = "echo"
    def __init__(self, name="echo-vlm", reply="Because it rained.", **kw):
        self.name, self.model_id, self.languages, self.reply = name, "echo/1", ("en",), reply
    def generate(self, requests, *, max_new_tokens=64, temperature=0.0, seed=0):
        return [Generation(text=self.reply) for _ in requests]

def from_spec(spec, **kw): return Echo(spec.name)

def make_judge(cfg):
    "A judge whose model always gives 6 out of 10."
    return open_ended_judge(Echo("fair-judge", '{"score": 6, "justification": "fair"}'), cache=None)
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    "The plugin package installed in a folder on sys.path (and on PYTHONPATH for the CLI)."
    site = tmp_path / "site"
    (site / "my_vlmlens_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "my_vlmlens_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (site / "my_vlmlens_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: my-vlmlens-plugin\nVersion: 0.1\n")
    (site / "my_vlmlens_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[vlmlens.models]\necho-vlm = my_vlmlens_plugin:SPEC\n\n[vlmlens.judges]\nfair = my_vlmlens_plugin:make_judge\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    from vlmlens.models import registry
    yield site
    registry._REGISTRY.pop("echo-vlm", None); registry.BACKEND_MODULES.pop("echo", None)
    sys.modules.pop("my_vlmlens_plugin", None)


@pytest.fixture
def open_items(tmp_path):
    rows = [{"id": f"q{i}", "subset": "why", "language": "en", "question": f"Why is the street wet ({i})?",
             "answer": "It rained.", "answer_type": "open"} for i in range(3)]
    path = tmp_path / "open.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_packages_model_and_judge_run_from_python(site, open_items, tmp_path):
    from vlmlens.judges import known_judges
    from vlmlens.models.registry import get_spec
    from vlmlens.runner import run
    assert "fair" in known_judges() and get_spec("echo-vlm").backend == "echo"
    s = run(RunConfig("demo", "echo-vlm", data_path=str(open_items), modality="text", judge="fair",
                      output_root=str(tmp_path / "runs"), run_name="plug", progress=False))
    assert s["overall"]["n"] == 3 and s["overall"]["n_judged"] == 3 and s["overall"]["judge_mean_native"] == 6
    info = json.loads((tmp_path / "runs" / "plug" / "run.json").read_text())
    assert info["model"]["backend"] == "echo" and info["model_id"] == "echo/1"
    judged = [json.loads(l) for l in (tmp_path / "runs" / "plug" / "judgments.jsonl").read_text().splitlines()]
    assert {j["judge_id"] for j in judged} == {s["judge_id"]} and "fair-judge" in s["judge_id"]


def test_a_packages_model_and_judge_run_from_the_command_line(site, open_items, tmp_path):
    out = subprocess.run([sys.executable, "-m", "vlmlens", "run", "--benchmark", "demo", "--model", "echo-vlm",
                          "--data-path", str(open_items), "--modality", "text", "--judge", "fair",
                          "--output-root", str(tmp_path / "runs"), "--run-name", "cli", "--no-progress"],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-2000:]
    s = json.loads((tmp_path / "runs" / "cli" / "summary.json").read_text())
    assert s["overall"]["n_judged"] == 3 and s["overall"]["judge_mean_native"] == 6


ROOT = Path(__file__).resolve().parents[1]
VIDEOMME = ROOT / "tests" / "data" / "videomme" / "videomme.jsonl"
BENCH_REGISTERS = """
from vlmlens.benchmarks.base import register_benchmark
register_benchmark("videomme", VideoMME)
"""
MODEL_REGISTERS = """
import sys
from vlmlens.judges import register_judge
from vlmlens.models.registry import register, register_backend
register_backend("echo", sys.modules[__name__]); register(SPEC, overwrite=True); register_judge("fair", make_judge)
"""


@pytest.fixture
def folder(tmp_path):
    "A plugin folder: the guide's Video-MME benchmark and the echo model and judge, each module registering its own."
    from test_conformance import guide_benchmark_code
    d = tmp_path / "my-plugins"
    d.mkdir()
    (d / "videomme.py").write_text(guide_benchmark_code() + "\n" + BENCH_REGISTERS, encoding="utf-8")
    (d / "echo_models.py").write_text(PLUGIN + MODEL_REGISTERS, encoding="utf-8")
    (d / "_notes.py").write_text("raise RuntimeError('a module whose name starts with _ is not imported')")
    return d


def test_a_folder_named_on_the_command_line_adds_a_benchmark_and_a_model(folder, tmp_path):
    out = subprocess.run([sys.executable, "-m", "vlmlens", "--plugins", str(folder), "run", "--benchmark", "videomme",
                          "--model", "echo-vlm", "--data-path", str(VIDEOMME), "--modality", "text",
                          "--output-root", str(tmp_path / "runs"), "--run-name", "folder", "--no-progress"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "VLMLENS_PLUGINS": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads((tmp_path / "runs" / "folder" / "run.json").read_text())
    assert info["config"]["benchmark"] == "videomme" and info["model"]["backend"] == "echo"
    assert json.loads((tmp_path / "runs" / "folder" / "summary.json").read_text())["overall"]["n"] == 4
    helped = subprocess.run([sys.executable, "-m", "vlmlens", "--plugins", str(folder), "run", "--help-kwargs", "--benchmark",
                             "videomme"], capture_output=True, text=True, timeout=300, env={**os.environ, "VLMLENS_PLUGINS": ""})
    assert helped.returncode == 0 and "video_root" in helped.stdout, helped.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", "vlmlens", "--plugins", str(tmp_path / "nowhere"), "run", "--benchmark",
                          "videomme", "--model", "echo-vlm"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such folder" in bad.stderr, bad.stderr


def test_a_folder_in_VLMLENS_PLUGINS_serves_python_too(folder, tmp_path, monkeypatch):
    from vlmlens.benchmarks.base import BENCHMARKS, known_benchmarks
    from vlmlens.judges import JUDGES, known_judges
    from vlmlens.models import registry
    from vlmlens.runner import run
    monkeypatch.setenv("VLMLENS_PLUGINS", str(folder))
    try:
        assert "videomme" in known_benchmarks() and "fair" in known_judges()
        s = run(RunConfig("videomme", "echo-vlm", data_path=str(VIDEOMME), modality="text", output_root=str(tmp_path / "runs"),
                          run_name="env", progress=False))
        assert s["overall"]["n"] == 4 and s["overall"]["n_invalid"] == 4       # the echo model never names a letter
    finally:
        BENCHMARKS.pop("videomme", None); JUDGES.pop("fair", None); registry._REGISTRY.pop("echo-vlm", None)
        registry.BACKEND_MODULES.pop("echo", None); registry._LOADED_FOLDERS.discard(folder.resolve())
        sys.path.remove(str(folder.resolve()))
        for m in ("videomme", "echo_models"): sys.modules.pop(m, None)
