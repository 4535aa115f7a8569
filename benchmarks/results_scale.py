"""Benchmark: reading a sweep's results — `RunSet.scores()` and the viewer's index at 1, 8, 32 and 128 runs, and the viewer on 100,000 items.

    python benchmarks/results_scale.py                      # 128 runs x 10,156 rows (1.3M rows: a CURVE sweep's size)
    python benchmarks/results_scale.py --rows 2000          # quicker
    python benchmarks/results_scale.py --no-browser         # skip the page timing (needs /usr/bin/chromium + chromedriver)

Every run folder is real: `run.json`, `summary.json` and `scores.csv` written by `vlmlens.store.RunStore` (the runner's
writers), with the columns the runner writes (`runner.score_row`: question, raw answer, parsed, tokens, latency …),
answers ~40 characters and questions ~90, as in a CURVE sweep (18 locales x 10 models x 3 frame counts ≈ 1.3M rows).
Each measurement runs in a fresh interpreter, which reports its wall time and its peak memory above the interpreter with
pandas imported (`ru_maxrss` minus the same process's RSS before reading), for

* `RunSet.scores(categorical=False)` — every column, each run's `cfg_*` settings repeated per row as plain values
  (the baseline: what `scores()` gave before its tags were categoricals);
* `RunSet.scores()` — the call with no arguments: every column, the tags as categoricals (one code per row);
* `RunSet.scores(columns=[...], categorical=True)` — the ten columns a table needs, the tags as categoricals
  (what `vlmlens.report`-style tables ask for);
* the viewer's index — `vlmlens view --serve`'s build (`vlmlens.view.build_site(..., pages=False)`): the list of every
  item with each run's outcome, score and judge score, read through `RunSet.scores(columns=view.INDEX_COLUMNS,
  categorical=True)` and written as `data.js` (the pages of details are built when the browser asks for them).

The growth is printed as ratios to the 1-run time and memory, and the no-argument call as ratios to the baseline at
the same size (no timed test: DEVELOPERS.md §Tests). Then a view of
one run of 100,000 items (`vlmlens.view.write_site`, no frames) is built and opened in headless Chromium; the time
from navigation to the first rendered page and the time for a filter to narrow the list are printed.
Results go to stdout and to ``benchmarks/results/results_scale.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SIZES = (1, 8, 32, 128)
COLUMNS = ["run", "sample_id", "subset", "language", "locale", "score", "valid", "error", "cfg_model", "cfg_num_frames"]
LOCALES = [f"l{i:02d}" for i in range(18)]


def make_runs(root: Path, n_runs: int, rows: int, seed: int = 0) -> list[Path]:
    "`n_runs` real run folders with `rows` score rows each (one scores.csv written by the store, copied per run)."
    from vlmlens.core import RunConfig
    from vlmlens.store import RunStore
    rnd, dirs, csv_bytes = random.Random(seed), [], None
    for k in range(n_runs):
        cfg = RunConfig("minerva", f"model-{k % 10}", language=None, num_frames=(8, 16, 32)[k % 3], output_root=str(root), run_name=f"r{k:03d}")
        with RunStore.open(cfg) as st:
            st.write_run_json({"model_id": cfg.model})
            if csv_bytes is None:
                st.write_scores_csv([{"sample_id": f"curve-{i:06d}", "subset": f"skill_{i % 7}", "language": "en", "locale": LOCALES[i % 18],
                                      "answer_type": "open", "align_id": None, "question": "What is the person in the red scarf doing "
                                      f"right after the procession passes the temple gate? ({i})", "gold": "lighting a lamp", "gold_text": "lighting a lamp",
                                      "parsed": "lighting a lamp" if i % 3 else "carrying flowers", "valid": i % 11 != 0, "error": None if i % 97 else "timeout",
                                      "raw": "The person lights a small oil lamp by the gate." if i % 3 else "They carry a basket of flowers.",
                                      "finish_reason": "stop", "input_tokens": 2100 + i % 50, "output_tokens": 12, "cost_usd": 0.0003,
                                      "cached": False, "latency_s": rnd.random(), "score": float(i % 3 != 0)} for i in range(rows)])
                csv_bytes = st.scores_path.read_bytes()
            else: st.scores_path.write_bytes(csv_bytes)
            st.write_summary({"overall": {"n": rows, "accuracy": 0.66, "n_missing": 0}})
        dirs.append(root / cfg.run_name)
    return dirs


MEASURE = r"""
import json, resource, sys, time
import pandas as pd
from vlmlens.store import RunSet
def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1])
dirs, mode, cols, out = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
if mode == "view":
    from vlmlens import view
base = rss_kb()
t = time.perf_counter()
rs = RunSet.discover(*dirs)
if mode == "view":
    page, _ = view.build_site(rs, out, frames=False, progress=False, pages=False)
    dt = time.perf_counter() - t
    ix = json.loads((page.parent / "data.js").read_text(encoding="utf-8")[len("window.VLMLENS_INDEX="):].rstrip().rstrip(";"))
    n = sum(sum(1 for o in r["o"] if o) for r in ix["res"].values())
    print(json.dumps({"rows": n, "cols": len(ix["keys"]), "s": dt, "peak_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024,
                      "frame_mb": (page.parent / "data.js").stat().st_size / 2**20}))
    sys.exit(0)
df = {"all": lambda: rs.scores(categorical=False), "default": lambda: rs.scores()}.get(mode, lambda: rs.scores(columns=cols, categorical=True))()
dt = time.perf_counter() - t
print(json.dumps({"rows": len(df), "cols": df.shape[1], "s": dt, "peak_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024,
                  "frame_mb": df.memory_usage(deep=True).sum() / 2**20}))
"""


def measure(dirs: list[Path], mode: str, out: Path | None = None) -> dict:
    "Time and peak memory of one reading in a fresh interpreter (`mode`: all, default, columns, or view — the viewer's index written to `out`)."
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", MEASURE, json.dumps([str(d) for d in dirs]), mode, json.dumps(COLUMNS), str(out or "")],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def page_timing(root: Path, items: int) -> dict:
    "Build a view of one run of `items` items (predictions + scores, no frames) and time it in headless Chromium."
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import Select, WebDriverWait
    from selenium.webdriver.common.by import By
    from vlmlens import view
    from vlmlens.core import Prediction, RunConfig
    from vlmlens.store import RunStore
    cfg = RunConfig("minerva", "model-x", output_root=str(root), run_name="big")
    with RunStore.open(cfg) as st:
        st.write_run_json({"model_id": "model-x"})
        lines = [json.dumps(Prediction(f"curve-{i:06d}", cfg.hash(), raw="B", parsed=1, valid=i % 11 != 0, question=f"Question {i} about the scene?",
                                       options=["a", "b", "c", "d"], gold=i % 4, score=float(i % 4 == 1)).to_dict()) for i in range(items)]
        st.predictions_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        st.write_scores_csv([{"sample_id": f"curve-{i:06d}", "subset": f"skill_{i % 7}", "language": "en", "locale": LOCALES[i % 18],
                              "valid": i % 11 != 0, "raw": "B", "score": float(i % 4 == 1)} for i in range(items)])
        st.write_summary({"overall": {"n": items, "accuracy": 0.25, "n_missing": 0}})
    t = time.perf_counter()
    page = view.write_site(root / "big", root / "view", frames=False, progress=False)
    build = time.perf_counter() - t
    o = webdriver.ChromeOptions(); o.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", f"--user-data-dir={tempfile.mkdtemp()}", "--window-size=1400,900"):
        o.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    try:
        d.get(page.as_uri())
        WebDriverWait(d, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        opened = d.execute_script("return Number(document.body.dataset.readyMs) / 1000")
        t = time.perf_counter()
        Select(d.find_element(By.ID, "f-locale")).select_by_value("l03")
        WebDriverWait(d, 60).until(lambda d: " of " in d.find_element(By.ID, "count").text)
        filtered = time.perf_counter() - t
    finally: d.quit()
    return {"items": items, "build_s": build, "data_mb": (page.parent / "data.js").stat().st_size / 2**20, "open_s": opened, "filter_s": filtered}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10156, help="score rows per run (default: 10,156; 128 runs = 1.3M rows)")
    ap.add_argument("--items", type=int, default=100_000, help="items in the viewer's page timing")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--only-view", action="store_true", help="measure only the viewer's index (skip RunSet.scores' two readings)")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vlmlens-results-scale-"))
    lines = [f"# Reading results at sweep scale\n", f"{platform.node()} · {os.cpu_count()} CPUs · load {os.getloadavg()[0]:.1f} · "
             f"{a.rows:,} rows per run\n", "| runs | rows | mode | columns | time (s) | peak memory (MB) | frame (MB) | time ÷ 1 run | memory ÷ 1 run |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    try:
        dirs, default_vs_base = make_runs(root / "runs", max(SIZES), a.rows), []
        label = {"all": "every column, tags repeated", "default": "scores() (no arguments)", "columns": "columns + categoricals"}
        base = {}
        for mode in () if a.only_view else ("all", "default", "columns"):
            first = None
            for n in SIZES:
                m = measure(dirs[:n], mode)
                first = first or m
                if mode == "all": base[n] = m
                lines.append(f"| {n} | {m['rows']:,} | {label[mode]} | {m['cols']} | {m['s']:.2f} | "
                             f"{m['peak_mb']:.0f} | {m['frame_mb']:.0f} | {m['s'] / first['s']:.1f}× | {m['peak_mb'] / max(first['peak_mb'], 1):.1f}× |")
                print(lines[-1], flush=True)
                if mode == "default":
                    default_vs_base.append(f"| {n} | {m['rows']:,} | {m['s'] / base[n]['s']:.2f}× | {m['peak_mb'] / max(base[n]['peak_mb'], 1):.2f}× |")
        if default_vs_base:
            lines += ["", "`RunSet.scores()` with no arguments against every column with repeated tags, same runs:", "",
                      "| runs | rows | time ÷ baseline | memory ÷ baseline |", "|---:|---:|---:|---:|", *default_vs_base]
            print("\n".join(lines[-len(default_vs_base) - 2:]), flush=True)
        lines += ["", "The viewer's index (`vlmlens view --serve`: every item's outcome, score and judge score per run, written as data.js):", "",
                  "| runs | score rows listed | items | time (s) | peak memory (MB) | data.js (MB) | time ÷ 1 run | memory ÷ 1 run |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        first = None
        for n in SIZES:
            m = measure(dirs[:n], "view", root / f"view-{n}")
            first = first or m
            lines.append(f"| {n} | {m['rows']:,} | {m['cols']:,} | {m['s']:.2f} | {m['peak_mb']:.0f} | {m['frame_mb']:.1f} | "
                         f"{m['s'] / first['s']:.1f}× | {m['peak_mb'] / max(first['peak_mb'], 1):.1f}× |")
            print(lines[-1], flush=True)
        if not a.no_browser:
            p = page_timing(root / "page", a.items)
            lines += ["", f"Viewer: {p['items']:,} items, one run, no frames: site written in {p['build_s']:.1f} s (data.js {p['data_mb']:.1f} MB); "
                          f"Chromium shows the first page {p['open_s']:.2f} s after navigation; a locale filter narrows the list in {p['filter_s']:.2f} s."]
            print(lines[-1])
    finally: shutil.rmtree(root, ignore_errors=True)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "results_scale.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
