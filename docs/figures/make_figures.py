"""Render the README's figures from synthetic runs: `python docs/figures/make_figures.py` (about three minutes on 2 cores).

The runs are the ones the report tests use (tests/test_report_notebooks.py): scripted models on a loopback
OpenAI-compatible server, so the numbers show what each report draws, not how any real model scores. Each benchmark's
report notebook is rendered with papermill and one of its figures is copied here (PNG).
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
os.environ.setdefault("MPLBACKEND", "Agg")

from loopback import LoopbackServer  # noqa: E402
from test_report_notebooks import build_hintel_runs, build_infinibench_runs, build_minerva_runs, isolation_models  # noqa: E402
from vlmlens.sweep import render_report  # noqa: E402

FIGURES = {"hintel": ("figure4.png", "hintel_figure4.png"), "curve": ("curve_per_locale.png", "curve_per_locale.png")}


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="vlmlens-figures-"))
    with LoopbackServer() as server:
        runs = build_hintel_runs(tmp / "hintel", server)
        render_report(REPO / "evalnb" / "report_hintel.ipynb", tmp / "hintel.ipynb",
                      {"runs_root": str(runs), "report_dir": str(tmp / "hintel_report"), "n_resamples": 1000}, cwd=tmp)
        shutil.copy(tmp / "hintel_report" / "figures" / FIGURES["hintel"][0], HERE / FIGURES["hintel"][1])
        runs = build_minerva_runs(tmp / "minerva", server)
        render_report(REPO / "evalnb" / "report_minerva.ipynb", tmp / "minerva.ipynb",
                      {"minerva_root": str(runs / "minerva"), "curve_root": str(runs / "curve"), "report_dir": str(tmp / "curve_report"),
                       "isolation": isolation_models(server)}, cwd=tmp)
        shutil.copy(tmp / "curve_report" / "figures" / FIGURES["curve"][0], HERE / FIGURES["curve"][1])
        shutil.copy(tmp / "curve_report" / "figures" / "curve_evidence_graph.png", HERE / "curve_evidence_graph.png")
        runs = build_infinibench_runs(tmp / "infinibench", server)
        render_report(REPO / "evalnb" / "report_infinibench.ipynb", tmp / "infinibench.ipynb",
                      {"runs_root": str(runs), "report_dir": str(tmp / "infinibench_report")}, cwd=tmp)
        shutil.copy(tmp / "infinibench_report" / "figures" / "frames_curve.png", HERE / "infinibench_frames_curve.png")
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.png"))))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
