"""Benchmark: a 12-run tiny-model sweep on the local executor (one run after another) and on a local Ray
instance with 2 workers, in the same process, one after the other.

    python benchmarks/sweep_executors.py             # 12 runs: en/hi/te x 2/4 frames x standard/cot, 4 items each
    python benchmarks/sweep_executors.py --limit 2   # quicker

Each run is a papermill execution of evalnb/evaluate.ipynb in a fresh kernel, as `vlmlens sweep` does it (kernel
start, imports, model load, the items). Both sweeps write to fresh folders under a temporary directory and share
one vlmlens cache (tiny model and demo data built before the clock starts). Ray gives each task one CPU and
sets OMP_NUM_THREADS=1 in its workers; the local baseline runs with the default thread count. The table goes
to stdout and to benchmarks/results/sweep_executors.md, with whether the two sweep.csv files hold the same rows
(wall_s aside).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def spec(limit: int) -> dict:
    return {"name": "bench", "base": {"benchmark": "demo", "model": "tiny-qwen2.5-vl", "limit": limit, "max_new_tokens": 8},
            "grid": {"language": ["en", "hi", "te"], "num_frames": [2, 4], "strategy": ["standard", "cot"]},
            "executor": {"ray": {"num_cpus": 2}, "cpus": 1}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=4)
    a = ap.parse_args(argv)
    os.environ.setdefault("VLMLENS_CACHE", str(Path(tempfile.gettempdir()) / "vlmlens-bench-cache"))
    from vlmlens.benchmarks.demo import ensure_demo_data
    from vlmlens.models.registry import load_backend
    from vlmlens.sweep import run_sweep
    import pandas as pd
    ensure_demo_data(); load_backend("tiny-qwen2.5-vl").close()        # build once, outside the timings
    out = Path(tempfile.mkdtemp(prefix="vlmlens-sweep-bench-"))
    load0 = os.getloadavg()[0]
    times, tables = {}, {}
    for kind in ("local", "ray"):
        t0 = time.perf_counter()
        tables[kind] = run_sweep(spec(a.limit), output_root=out / kind, executor=kind, progress=False)
        times[kind] = time.perf_counter() - t0
        print(f"{kind}: {times[kind]:.1f} s, {sum(tables[kind].status == 'ok')}/{len(tables[kind])} runs ok", flush=True)
    same = tables["local"].drop(columns=["wall_s"]).equals(tables["ray"].drop(columns=["wall_s"]))
    ratio = times["ray"] / times["local"]
    n = len(tables["local"])
    lines = ["# Sweep executors: local (sequential) vs Ray (2 workers)", "",
             f"Sweep: {n} runs of evalnb/evaluate.ipynb (papermill, a fresh kernel each) on the tiny Qwen2.5-VL, demo benchmark, "
             f"{a.limit} items per run (en/hi/te x 2/4 frames x standard/cot).",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), load average {load0:.1f} at start, "
             f"{os.getloadavg()[0]:.1f} at end; Python {platform.python_version()}.",
             "Both sweeps run in this process one after the other; ratio = Ray wall time / local wall time.", "",
             "| executor | workers | wall (s) | per run (s) | ratio vs local | runs ok |", "|---|---:|---:|---:|---:|---:|",
             f"| local | 1 | {times['local']:.1f} | {times['local'] / n:.1f} | 1.00 | {sum(tables['local'].status == 'ok')}/{n} |",
             f"| ray | 2 | {times['ray']:.1f} | {times['ray'] / n:.1f} | {ratio:.3f} | {sum(tables['ray'].status == 'ok')}/{n} |", "",
             f"Same sweep.csv rows under both executors (wall_s aside): {'yes' if same else 'NO'}."]
    if not same:
        diff = tables["local"].drop(columns=["wall_s"]).compare(tables["ray"].drop(columns=["wall_s"]))
        lines += ["", "Differences (local = self, ray = other):", "", "```", diff.to_string(), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "sweep_executors.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
