"""`vlmlens --plugins DIR sweep grid.yaml` on a benchmark and a model from outside vlmlens, as the own-benchmark guide
prints it: the guide's Video-MME-style benchmark and an echo model in a plugin folder named on the command line only,
so each run's papermill kernel must find them through `VLMLENS_PLUGINS`, which the CLI sets."""
import csv
import json
import os
import subprocess
import sys

from test_conformance import guide_benchmark_code
from test_plugins import BENCH_REGISTERS, MODEL_REGISTERS, PLUGIN, VIDEOMME

GRID = """name: videomme-tokens
base:
  benchmark: videomme
  model: echo-vlm
  modality: text
  data_path: {data}
grid:
  max_new_tokens: [8, 16]
"""


def test_a_plugin_benchmark_sweeps_from_the_command_line(tmp_path):
    plugins = tmp_path / "my_benchmarks"
    plugins.mkdir()
    (plugins / "videomme.py").write_text(guide_benchmark_code() + "\n" + BENCH_REGISTERS, encoding="utf-8")
    (plugins / "echo_models.py").write_text(PLUGIN + MODEL_REGISTERS, encoding="utf-8")
    (tmp_path / "grid.yaml").write_text(GRID.format(data=VIDEOMME), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "VLMLENS_PLUGINS"}
    out = subprocess.run([sys.executable, "-m", "vlmlens", "--plugins", "my_benchmarks", "sweep", "grid.yaml", "--output-root", "out"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = list(csv.DictReader((tmp_path / "out" / "videomme-tokens" / "sweep.csv").open(encoding="utf-8")))
    assert sorted(int(r["max_new_tokens"]) for r in rows) == [8, 16] and {r["status"] for r in rows} == {"ok"}
    for r in rows:
        summary = json.loads((tmp_path / "out" / "videomme-tokens" / r["run"] / "summary.json").read_text())
        assert summary["overall"]["n"] == 4 and summary["benchmark"] == "videomme"
