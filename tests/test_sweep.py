"""papermill sweeps: grid expansion into executed notebooks, failures recorded, one combined table."""
import json
import re
import subprocess
import sys

import nbformat
import yaml

from vlmlens.sweep import make_evaluate_notebook, run_sweep


def test_committed_evaluate_notebook_matches_the_generated_one(repo_root):
    committed = nbformat.read(repo_root / "evalnb" / "evaluate.ipynb", as_version=4)
    generated = make_evaluate_notebook()
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in generated.cells]
    assert "parameters" in committed.cells[1].metadata.get("tags", [])


def test_sweep_runs_grid_continues_past_a_failure_and_prints_a_table(tmp_path):
    grid = {"name": "t", "base": {"benchmark": "demo", "limit": 2, "num_frames": 4, "max_new_tokens": 4},
            "grid": {"model": ["tiny-qwen2.5-vl"], "language": ["en", "hi"], "subset": ["video_color", "no-such-subset"]}}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    proc = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "sweep", str(path),
                           "--output-root", str(tmp_path / "out")], capture_output=True, text=True, timeout=500)
    assert proc.returncode == 1, proc.stderr  # two runs failed
    table = (tmp_path / "out" / "t" / "sweep.csv")
    import pandas as pd
    t = pd.read_csv(table)
    assert len(t) == 4
    ok, failed = t[t.status == "ok"], t[t.status == "failed"]
    assert set(ok.model) == {"tiny-qwen2.5-vl"} and len(ok) == 2 and len(failed) == 2
    assert all("no demo items match --subset no-such-subset" in e for e in failed.error)   # found only inside the kernel
    for run in ok.run:
        d = tmp_path / "out" / "t" / run
        assert (d / "evaluate.ipynb").exists() and (d / "summary.json").exists() and (d / "predictions.jsonl").exists()
        nb = nbformat.read(d / "evaluate.ipynb", as_version=4)
        assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    for run in failed.run:  # the executed notebook of a failed run is kept for inspection
        assert (tmp_path / "out" / "t" / run / "evaluate.ipynb").exists()
    assert "tiny-qwen2.5-vl" in proc.stdout and "accuracy" in proc.stdout
    assert "KeyboardInterrupt" not in proc.stderr + proc.stdout                      # successful runs print no kernel error
    assert f"table: {table.resolve()}" in proc.stdout                                 # where sweep.csv went
    same = next(l for l in proc.stdout.splitlines() if l.startswith("every run: "))       # constant columns on one line
    assert set(same[len("every run: "):].split(", ")) == {"benchmark=demo", "limit=2", "max_new_tokens=4", "num_frames=4", "model=tiny-qwen2.5-vl"}
    head = proc.stdout.splitlines()[1]
    assert "benchmark" not in head and "num_frames" not in head and "subset" in head and "language" in head
    assert not re.search(r"\b\d+\.\d{2,}\b", proc.stdout.split("table:")[0].split("\n", 2)[2].replace("%", ""))  # wall_s rounded
    again = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "sweep", str(path),
                            "--output-root", str(tmp_path / "out")], capture_output=True, text=True, timeout=500)
    assert "sweep t: 2 of 4 done" in again.stderr, again.stderr[-2000:]            # a resumed sweep says what is done


def test_shipped_sweep_with_a_placeholder_data_path_is_refused_before_any_kernel(repo_root, tmp_path):
    "evalnb/sweeps/hintel.yaml as shipped (data_path /data/hintel) stops with one line and exit 2; nothing is created."
    proc = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "sweep",
                           str(repo_root / "evalnb" / "sweeps" / "hintel.yaml"), "--output-root", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("vlmlens: error: sweep not started: data_path /data/hintel: no such file or folder")
    assert "(33 of 33 runs" in lines[0]
    assert not (tmp_path / "out").exists()                                          # no sweep folder, no kernel started


def test_sweep_progress_shows_items_answered_of_the_total_the_runner_recorded(tmp_path):
    "While a configuration runs, the bar reads 'N of M items answered': M is in run.json before the first item is generated."
    import time
    from vlmlens.core import Generation, RunConfig, Sample
    from vlmlens.runner import run
    from vlmlens.sweep import _named, _progress

    run_dir, seen = tmp_path / "demo-slow", []

    class Slow:
        name, model_id, revision, languages = "slow", "slow", "r", ("en",)
        def generate(self, reqs, **kw):
            seen.append(_progress(run_dir)); time.sleep(0.2)
            return [Generation("A", {}, finish_reason="stop") for _ in reqs]
        def info(self): return {"name": self.name}
        def close(self): pass

    class Bar:
        shown = []
        def set_postfix_str(self, s, refresh=True): self.shown.append(s)

    items = [Sample(f"s{i}", "demo", question="Q?", options=["a", "b"], answer=0) for i in range(5)]
    cfg = RunConfig("demo", "slow", modality="text", output_root=str(tmp_path), run_name="demo-slow", progress=False, batch_size=1)
    bar = Bar()
    jobs = _named([type("J", (), {"run": {"run_name": "demo-slow"}, "root": tmp_path})()], bar, poll_s=0.05)
    next(jobs)
    run(cfg, backend=Slow(), samples=items)
    time.sleep(0.2); jobs.close()
    assert seen[0] == "0 of 5 items answered" and seen[-1] == "4 of 5 items answered"       # the total before the first item
    assert any(re.fullmatch(r"demo-slow: [0-5] of 5 items answered", s) for s in bar.shown), bar.shown
    assert bar.shown[-1] == "demo-slow: 5 of 5 items answered"
