"""`pip install vlmlens` without extras runs an API-model evaluation: the local-model, report, curation and scale
stacks are not needed on that path. The test hides those packages from a fresh interpreter (as if they were not
installed) and runs the demo benchmark on an API model behind the loopback server, end to end, through the CLI."""
import json
import subprocess
import sys

from vlmlens.benchmarks.demo import ensure_demo_data

EXTRAS = ("torch", "torchvision", "transformers", "accelerate", "qwen_vl_utils", "datasets", "tokenizers", "matplotlib",
          "papermill", "networkx", "ray", "submitit", "sentence_transformers", "cv2", "sacrebleu", "ipywidgets", "decord", "yt_dlp", "wandb", "selenium")

BLOCK = """
import sys, importlib.abc
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in %r: raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotInstalled())
from vlmlens.cli import main
raise SystemExit(main(sys.argv[1:]))
""" % (EXTRAS,)


def test_an_api_evaluation_runs_without_any_extra(server, tmp_path):
    ensure_demo_data(progress=False)
    server.reset(); server.default_text = "The answer is B."
    import os
    env = {**os.environ, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}
    out = subprocess.run([sys.executable, "-c", BLOCK, "run", "--benchmark", "demo", "--model", "gpt-4o", "--language", "en",
                          "--frames", "2", "--limit", "4", "--output-root", str(tmp_path), "--run-name", "core", "--no-progress",
                          "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path / 'c.sqlite'}"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads((tmp_path / "core" / "summary.json").read_text())
    assert s["overall"]["n"] == 4 and s["overall"]["n_errors"] == 0 and len(server.requests("openai")) == 4


def test_a_local_model_without_the_hf_extra_says_what_to_install(tmp_path):
    out = subprocess.run([sys.executable, "-c", BLOCK, "run", "--benchmark", "demo", "--model", "tiny-qwen2.5-vl", "--limit", "1",
                          "--output-root", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300)
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "vlmlens[hf]" in lines[-1], lines[-1]
