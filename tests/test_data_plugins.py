"""A benchmark from outside vlmlens declares its own data release beside its class — `register_release` in its
module — and `vlmlens data list | get | verify | prepare` and a run without `--data-path` serve it, with nothing in vlmlens
edited: the guide's Video-MME-style benchmark in a plugin folder (`--plugins`), its rows fetched from a loopback file
server."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from loopback_hub import HubServer
from test_plugins import MODEL_REGISTERS, PLUGIN, VIDEOMME

GUIDE = Path(__file__).resolve().parents[1] / "nbs" / "guide_own_benchmark.ipynb"
RELEASE_MARK = "# videomme.py, continued"                       # the guide's cell declaring the benchmark's release


def guide_release_code() -> str:
    "The guide's cell that declares the benchmark's data release (the rest of the module a user's package would have)."
    cells = json.loads(GUIDE.read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith(RELEASE_MARK))


RELEASE = '\nfrom vlmlens.benchmarks.base import register_benchmark\nregister_benchmark("videomme", VideoMME)\n' + guide_release_code() + "\n"


def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "vlmlens", *args], env=env, capture_output=True, text=True, timeout=300)


def test_a_plugin_benchmark_declares_its_release_and_data_get_list_verify_and_run_serve_it(tmp_path):
    from test_conformance import guide_benchmark_code
    plugins = tmp_path / "my-plugins"
    plugins.mkdir()
    (plugins / "videomme.py").write_text(guide_benchmark_code() + "\n" + RELEASE, encoding="utf-8")
    (plugins / "echo_models.py").write_text(PLUGIN + MODEL_REGISTERS, encoding="utf-8")
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(VIDEOMME, files / "videomme.jsonl")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "VLMLENS_"))},
           "VLMLENS_DATA": str(tmp_path / "data"), "VLMLENS_PLUGINS": str(plugins)}
    listing = _cli(["data", "list"], env)
    assert listing.returncode == 0 and "videomme: https://huggingface.co/datasets/lmms-lab/Video-MME" in listing.stdout, listing.stderr
    assert "videomme" not in _cli(["data", "list"], {**env, "VLMLENS_PLUGINS": ""}).stdout      # declared by the plugin alone
    with HubServer(tmp_path / "empty", "x/y", files_root=files) as srv:
        got = _cli(["data", "get", "videomme", "--no-progress"], {**env, "VLMLENS_VIDEOMME_URL": f"{srv.url}/files/videomme.jsonl"})
    assert got.returncode == 0, got.stderr[-2000:]
    assert _cli(["data", "verify", "videomme"], env).returncode == 0
    shown = _cli(["data", "prepare", "--help"], {**env, "COLUMNS": "300"})                   # the guide's PrepareOption, as a flag
    assert "--video-dir DIR" in shown.stdout and "videomme: the folder you unpacked the <videoID>.mp4 files into" in shown.stdout, shown.stdout
    prep = _cli(["data", "prepare", "videomme", "--video-dir", str(VIDEOMME.parent / "videos")], env)
    assert prep.returncode == 0 and prep.stdout == f"videomme: 2 videos in {tmp_path / 'data' / 'videomme' / 'videos'}\n", prep.stderr
    out = _cli(["run", "--benchmark", "videomme", "--model", "echo-vlm", "--modality", "text", "--output-root",
                str(tmp_path / "runs"), "--run-name", "fetched", "--no-progress"], env)
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads((tmp_path / "runs" / "fetched" / "run.json").read_text())
    lock = json.loads((tmp_path / "data" / "videomme" / "data.lock.json").read_text())
    assert info["config"]["data_path"] == str((tmp_path / "data" / "videomme" / "videomme.jsonl").resolve())
    assert info["dataset"]["digest"] == lock["digest"] and info["dataset"]["benchmark"] == "videomme"
    fidelity = subprocess.run([sys.executable, "-c", "import vlmlens.data as d, vlmlens.fidelity as f; d.releases(); "
                               "print([e.source for e in f.ledger('videomme')])"], env=env, capture_output=True, text=True, timeout=120)
    assert "Video-MME dataset card" in fidelity.stdout, fidelity.stderr[-2000:]
