"""tools/paper_check.py on saved figures and tables: what fits reports nothing; a figure or table that does not fit is
listed with its file (width after cropping, text under 8 pt at print size, overlapping labels, a table too wide for the
ACL page)."""
import json
import warnings

import pandas as pd
import pytest

from texcheck import ENGINES, check


def _figures(folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from vlmlens.analysis import COLUMN_IN, bar_chart, save_figure
    d = pd.DataFrame({"Hindi": [61.0, 48.5, 70.0], "Telugu": [55.0, 40.0, 66.5]}, index=["VQAv2", "RealWorldQA", "CLEVR-Math"])
    good = save_figure(bar_chart(d, ylabel="accuracy (%)", legend_title="language", title="Accuracy per task").figure, folder, "good")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                       # save_figure warns about each of these defects
        fig, ax = plt.subplots(figsize=(COLUMN_IN, 2)); ax.bar([0, 1, 2], [1, 1, 1]); ax.set_ylabel("acc"); ax.set_ylim(0, 1.4)
        for x in (0, 0.2, 0.4): ax.text(x, 1.05, "100.0", ha="center", fontsize=8)   # labels that run together
        ax.text(2, 0.5, "tiny", fontsize=5)
        bad = save_figure(fig, folder, "bad")
        plt.close("all")
    return good, bad


def test_saved_figures_are_measured(tmp_path):
    good, bad = _figures(tmp_path)
    rec = json.loads(bad[0].with_suffix(".json").read_text())
    assert rec["made_for_in"] == 3.3 and rec["width_in"] <= 3.3 and {"100.0", "tiny"} <= {t["text"] for t in rec["texts"]}
    problems = check([tmp_path], tmp_path / "work")
    assert problems and all(p.startswith(str(bad[1])) for p in problems), problems       # only the bad one, named by its file
    assert any("'100.0' overlaps '100.0'" in p for p in problems) and any("'tiny' is 5 pt" in p for p in problems)


def test_a_figure_without_a_sidecar_is_read_from_the_pdf(tmp_path):
    good, bad = _figures(tmp_path)
    for p in (good + bad): p.with_suffix(".json").unlink(missing_ok=True)
    problems = check([tmp_path], tmp_path / "work")
    assert problems == [f"{bad[1]}: text set in 5.0 pt at print size (under 8 pt)"], problems


def test_a_wide_sidecar_figure_is_listed(tmp_path):
    good, _ = _figures(tmp_path)
    rec = json.loads(good[0].with_suffix(".json").read_text())
    good[0].with_suffix(".json").write_text(json.dumps(dict(rec, width_in=9.2)))   # as a legend to the right made it
    problems = check([good[0].with_suffix(".json")], tmp_path / "work")
    assert any(p.startswith(f"{good[1]}: 9.20 in wide after cropping, more than the 6.9 in") for p in problems), problems
    assert any("at 6.90 in (under 8 pt)" in p for p in problems), problems           # shrunk to fit, its text falls below 8 pt


@pytest.mark.skipif(not ENGINES["pdflatex"], reason="pdflatex is not installed (make tex)")
def test_a_table_too_wide_for_the_acl_page_is_listed(tmp_path):
    from vlmlens import report as R
    ok = R.Table(title="Accuracy per task", label="t-ok"); ok.data = pd.DataFrame({"model": ["a", "b"], "acc": ["1.0", "2.0"]})
    ok.save(tmp_path, "ok")
    wide = "\n".join([r"\begin{table*}[tp]", r"\centering", r"\caption{Too wide for ACL}", r"\label{tab:wide}",
                      r"\begin{tabular}{p{6.5in}}", r"\toprule", "x \\\\", r"\bottomrule", r"\end{tabular}", r"\end{table*}"])
    (tmp_path / "wide.tex").write_text(wide)                                    # fits 6.9 in, not ACL's 16 cm
    problems = check([tmp_path], tmp_path / "work")
    assert problems and all(p.startswith("wide: ") and "acl paper" in p and "Overfull" in p for p in problems), problems


@pytest.mark.skipif(not ENGINES["pdflatex"], reason="pdflatex is not installed (make tex)")
def test_report_check_flag(tmp_path, capfd):
    "`vlmlens report RUNS --check` prints the report, then checks its tables as a paper takes them: none here, exit 0."
    import os
    import subprocess
    import sys
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    run = [sys.executable, "-c", "import sys; from vlmlens.cli import main; sys.exit(main())"]
    demo = subprocess.run(run + ["demo", "--output-root", str(tmp_path), "--limit", "2", "--no-progress"], capture_output=True, text=True, env=env)
    assert demo.returncode == 0, demo.stderr[-2000:]
    p = subprocess.run(run + ["report", str(tmp_path), "--check"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "video_order" in p.stdout, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].endswith("report.tex: 0 problems"), p.stderr
    from texcheck import paper_check
    import vlmlens.report as R
    mp = pytest.MonkeyPatch()
    mp.setattr(R, "COLUMN_PT", 10000.0)                          # a report that sets its wide table in one column
    try: rc = paper_check.report_check([tmp_path], work=tmp_path / "check")
    finally: mp.undo()
    emitted = tmp_path / "check" / "emitted" / "report.tex"
    assert rc == 1 and r"\begin{table}" in emitted.read_text()
    lines = capfd.readouterr().err.strip().splitlines()
    assert any("acl paper" in l and "Overfull" in l for l in lines) and all(l.startswith(str(emitted)) for l in lines[:-1]), lines
    assert lines[-1].startswith(f"paper check of {emitted}: ") and lines[-1].endswith(f"{len(lines) - 1} problems"), lines
