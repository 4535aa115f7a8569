"""`vlmlens.paper_check` catches what a reviewer catches: each defect planted here (a compile error, floats stuck past
pdfLaTeX's limit, an overfull box, a label defined twice, a table cut by columns, identical captions, a Type 3 font, a
figure too wide or set too small for its venue) is found and named; what fits reports nothing; and every report the
tests emit (`vlmlens report --check`) has zero problems."""
import json
import os
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from texcheck import ENGINES, check, paper_check

needs_tex = pytest.mark.skipif(not ENGINES["pdflatex"], reason="pdflatex is not installed (make tex)")


def _table(caption, label, rows=("GPT-4.1", "Gemini 2.5 Pro"), spec="lr", head="run & acc", env="table"):
    body = [rf"{r} & {40 + i}.0 \\" for i, r in enumerate(rows)]
    return "\n".join([rf"\begin{{{env}}}[tp]", r"\centering", rf"\caption{{{caption}}}", rf"\label{{{label}}}", rf"\begin{{tabular}}{{{spec}}}",
                      r"\toprule", head + r" \\", r"\midrule", *body, r"\bottomrule", r"\end{tabular}", rf"\end{{{env}}}"])


def _figures(folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from vlmlens.figures import bar_chart, get_venue, save_figure
    d = pd.DataFrame({"Hindi": [61.0, 48.5, 70.0], "Telugu": [55.0, 40.0, 66.5]}, index=["VQAv2", "RealWorldQA", "CLEVR-Math"])
    good = save_figure(bar_chart(d, ylabel="accuracy (%)", legend_title="language", title="Accuracy per task").figure, folder, "good")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                       # save_figure warns about each of these defects
        fig, ax = plt.subplots(figsize=(get_venue().column, 2)); ax.bar([0, 1, 2], [1, 1, 1]); ax.set_ylabel("acc"); ax.set_ylim(0, 1.4)
        for x in (0, 0.2, 0.4): ax.text(x, 1.05, "100.0", ha="center", fontsize=8)   # labels that run together
        ax.text(2, 0.5, "tiny", fontsize=5)
        bad = save_figure(fig, folder, "bad")
        plt.close("all")
    return good, bad


@needs_tex
def test_each_planted_table_defect_is_found_and_what_fits_is_not(tmp_path):
    ok = tmp_path / "ok"; ok.mkdir()
    for i in range(3): (ok / f"t{i}.tex").write_text(_table(f"Accuracy of each run on task {i}", f"tab:t{i}"))
    assert check([ok], tmp_path / "w-ok") == []

    bad = tmp_path / "bad"; bad.mkdir()
    (bad / "wide.tex").write_text(_table("Too wide for ACL and NeurIPS", "tab:wide", spec="p{5.9in}r", env="table*"))   # fits IEEE's 7.16 in only
    (bad / "twice-a.tex").write_text(_table("Accuracy per skill", "tab:same"))
    (bad / "twice-b.tex").write_text(_table("Errors per skill", "tab:same", rows=("Qwen2.5-VL-7B",)))          # \ref lands on either
    cut = [_table("Accuracy per locale", "tab:cut", head="run & Tamil"),
           _table("Accuracy per locale (continued, part 2 of 2)", "tab:cut-2", head="run & Telugu")]           # one number column each
    (bad / "cut.tex").write_text("\n".join(cut))
    (bad / "same-a.tex").write_text(_table("Accuracy per frame count", "tab:f8", rows=("8 frames",)))
    (bad / "same-b.tex").write_text(_table("Accuracy per frame count", "tab:f16", rows=("16 frames",)))      # runs the caption cannot tell apart
    (bad / "dot.tex").write_text(_table("Hintel · Served-VLM-7B · n 20", "tab:dot"))
    found = check([bad], tmp_path / "w-bad")
    overfull = [p for p in found if "Overfull" in p]
    assert overfull and {p.split(")")[0] for p in overfull} == {"(acl, pdflatex", "(neurips, pdflatex"}, found
    assert all("wide: Overfull" in p for p in overfull), overfull                                   # named by its table
    assert any("Label `tab:same' multiply defined" in p for p in found), found                       # the second pass says so
    assert any("table 'Accuracy per locale' is cut by columns: 2 floats repeat the same 2 rows (tab:cut, tab:cut-2)" in p for p in found), found
    assert any("2 floats share the caption 'Accuracy per frame count'" in p for p in found), found
    assert any(p.startswith("(neurips, pdflatex) Type 3 font") for p in found), found                # "·" under the default fonts

    err = tmp_path / "err"; err.mkdir()
    (err / "broken.tex").write_text(_table(r"Accuracy \undefinedmacro", "tab:err"))
    stuck = tmp_path / "stuck"; stuck.mkdir()
    (stuck / "many.tex").write_text("\n".join(_table(f"Accuracy of run {i}", f"tab:r{i}") for i in range(60)))  # 60 floats, no text between
    errors = check([err], tmp_path / "w-err", venues=("acl",))
    assert any("broken: ! Undefined control sequence. at line" in p for p in errors), errors
    floats = check([stuck], tmp_path / "w-stuck", venues=("acl",))
    assert any("Too many unprocessed floats" in p for p in floats), floats


def test_saved_figures_are_measured_in_their_venue(tmp_path):
    good, bad = _figures(tmp_path)
    rec = json.loads(bad[0].with_suffix(".json").read_text())
    assert (rec["venue"], rec["made_for_in"]) == ("acl", 3.03) and rec["width_in"] <= 3.03 and {"100.0", "tiny"} <= {t["text"] for t in rec["texts"]}
    problems = check([tmp_path], tmp_path / "work")
    assert problems and all(p.startswith(str(bad[1])) for p in problems), problems       # only the bad one, named by its file
    assert any("'100.0' overlaps '100.0'" in p for p in problems) and any("'tiny' is 5 pt" in p for p in problems)


def test_a_figure_for_another_venue_or_too_wide_is_listed(tmp_path):
    good, _ = _figures(tmp_path)
    side = good[0].with_suffix(".json")
    rec = json.loads(side.read_text())
    assert check([side], tmp_path / "w") == []
    side.write_text(json.dumps(dict(rec, width_in=6.72)))                              # as a legend to the right made it
    problems = check([side], tmp_path / "w")
    assert any(p.startswith(f"{good[1]}: 6.72 in wide after cropping, more than the 6.3 in of the acl text") for p in problems), problems
    assert any("at 6.30 in in the acl text (under 8 pt)" in p for p in problems), problems  # shrunk to fit, its text falls below 8 pt
    for alone in good:                                                                  # the figure named alone is measured by its sidecar
        assert check([alone], tmp_path / "w") == [p for p in problems if "Type 3" not in p], alone
    assert check([tmp_path], tmp_path / "w").count(problems[0]) == 1                    # PDF, PNG and sidecar: each problem once
    side.write_text(json.dumps(rec))
    neurips = check([side], tmp_path / "w", figure_venue="neurips")                      # made for ACL's 6.3 in, printed at 5.5 in
    assert any("in the neurips text (under 8 pt)" in p for p in neurips), neurips
    for p in good: p.with_suffix(".json").unlink(missing_ok=True)
    import matplotlib.pyplot as plt
    fig, _ = plt.subplots(figsize=(9, 2)); fig.savefig(tmp_path / "wide.pdf"); plt.close(fig)   # saved without save_figure
    problems = check([tmp_path / "wide.pdf"], tmp_path / "w")
    assert any("wide.pdf: 9.00 in wide, more than the 6.3 in acl text width" in p for p in problems), problems
    assert any("wide.pdf: Type 3 fonts" in p for p in problems), problems


@needs_tex
def test_the_tool_is_a_thin_wrapper(tmp_path):
    "tools/paper_check.py runs the package's check: exit 0 on what fits, 1 with one line per problem, 2 on a missing path."
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (tmp_path / "t").mkdir(); (tmp_path / "t" / "shrunk.tex").write_text(_table(r"Accuracy \tiny small", "tab:s"))
    out = subprocess.run([sys.executable, "tools/paper_check.py", str(tmp_path / "t")], cwd=repo, capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "text set below 8 pt (\\tiny)" in out.stdout, out.stdout + out.stderr
    none = subprocess.run([sys.executable, "tools/paper_check.py", str(tmp_path / "nope")], cwd=repo, capture_output=True, text=True)
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1


@needs_tex
def test_report_check_flag(tmp_path, capfd):
    "`vlmlens report RUNS --check` (the package's check, no script from a checkout) on a demo run: zero problems in every venue, exit 0."
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    run = [sys.executable, "-c", "import sys; from vlmlens.cli import main; sys.exit(main())"]
    demo = subprocess.run(run + ["demo", "--output-root", str(tmp_path), "--limit", "2", "--no-progress"], capture_output=True, text=True, env=env)
    assert demo.returncode == 0, demo.stderr[-2000:]
    p = subprocess.run(run + ["report", str(tmp_path), "--check"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0 and "video_order" in p.stdout, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].endswith("report.tex: 0 problems"), p.stderr
    from vlmlens.cli import report_check
    import vlmlens.report as R
    mp = pytest.MonkeyPatch()
    mp.setattr(R, "COLUMN_PT", 10000.0)                          # a report that sets its wide table in one column
    try: rc = report_check([tmp_path], venues=("acl",), work=tmp_path / "check")
    finally: mp.undo()
    emitted = tmp_path / "check" / "emitted" / "report.tex"
    assert rc == 1 and r"\begin{table}" in emitted.read_text()
    lines = capfd.readouterr().err.strip().splitlines()
    assert any("(acl, pdflatex)" in l and "Overfull" in l for l in lines) and all(l.startswith(str(emitted)) for l in lines[:-1]), lines
    n = len(lines) - 1
    assert lines[-1] == f"paper check of {emitted}: {n} problem{'s' if n != 1 else ''}", lines


@needs_tex
def test_runs_that_differ_only_in_a_budget_get_their_own_caption_and_label(tmp_path, capfd):
    "Two real HinTel runs (runner, loopback model) that differ only in their token budget: two captions, two labels, zero problems after two passes."
    import re
    from loopback import LoopbackServer
    from vlmlens.benchmarks import hintel as H
    from vlmlens.cli import latex_report, report_check
    from vlmlens.core import RunConfig
    from vlmlens.runner import run
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    data = H.build_synthetic_hintel(tmp_path / "data", n_per_subset=1)
    try:
        with LoopbackServer() as server:
            for budget in (32, 64):
                run(RunConfig(benchmark="hintel", data_path=str(data), model=f"openai-compatible:Org/Served-VLM-7B@{server.openai_base_url}",
                              language="hi", judge="none", max_new_tokens=budget, output_root=str(tmp_path / "runs"), progress=False,
                              model_kwargs={"cache": False, "progress": False}))
    finally: mp.undo()
    capfd.readouterr()
    assert latex_report([tmp_path / "runs"]) == 0
    out = capfd.readouterr().out
    captions, labels = re.findall(r"\\caption\{([^}]*)\}", out), re.findall(r"\\label\{([^}]*)\}", out)
    assert len(captions) == 2 and len(set(captions)) == 2 and len(set(labels)) == 2, captions
    assert all("max new tokens" in c and "HinTel-AlignBench" in c and "·" not in c for c in captions), captions
    assert report_check([tmp_path / "runs"], work=tmp_path / "check") == 0, capfd.readouterr().err


def test_a_figure_made_for_each_venue_fits_it(tmp_path):
    "bar_chart(venue=…) for each venue, text and column: the saved figure passes the check in that venue."
    import matplotlib.pyplot as plt
    from vlmlens.figures import VENUES, bar_chart, save_figure
    d = pd.DataFrame({"Hindi": [61.0, 48.5], "Telugu": [55.0, 40.0]}, index=["VQAv2", "RealWorldQA"])
    for name in VENUES:
        for column in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("error")                                # a defect would be a FigureWarning
                save_figure(bar_chart(d, ylabel="accuracy (%)", title="Accuracy per task", venue=name, column=column).figure,
                            tmp_path, f"{name}-{'column' if column else 'text'}")
            plt.close("all")
    for name in VENUES:
        assert json.loads((tmp_path / f"{name}-column.json").read_text())["venue"] == name
        assert check([tmp_path / f"{name}-text.json", tmp_path / f"{name}-column.json"], tmp_path / "w") == []


@needs_tex
def test_without_pdffonts_a_pdf_it_cannot_read_is_said_not_checked(tmp_path, monkeypatch):
    "No pdffonts: pdfLaTeX's uncompressed PDF is still read (the '·' Type 3 font found); a XeLaTeX PDF, whose fonts are compressed, is named as not checked, never passed."
    from vlmlens import paper_check as pc
    which = pc.shutil.which
    monkeypatch.setattr(pc.shutil, "which", lambda name, *a, **k: None if name == "pdffonts" else which(name, *a, **k))
    dot, _ = pc.compile_paper(_table("Accuracy per task · n 20", "tab:dot"), tmp_path / "pdf", "dot", "neurips", "pdflatex")
    assert any(p.startswith("Type 3 font in the PDF") for p in dot), dot
    if not ENGINES["xelatex"]: pytest.skip("xelatex is not installed (make tex)")
    xe, pdf = pc.compile_paper(_table("Accuracy per task", "tab:xe"), tmp_path / "xe", "xe", "acl", "xelatex")
    assert pdf and b"/ObjStm" in pdf.read_bytes() and xe == [pc.FONTS_UNCHECKED], xe


@needs_tex
def test_the_pdflatex_form_of_indic_tables_compiles_under_pdflatex(tmp_path, capfd):
    "A table of Hindi and Telugu prompts: its default LaTeX names XeLaTeX and fails under pdfLaTeX; its pdfLaTeX form compiles clean, says what it left out, and `--latex-engine pdflatex` prints that form."
    import vlmlens.report as R
    from vlmlens.paper_check import check_latex, compile_paper, engine_for
    t = R.Table(pd.DataFrame({"language": ["Hindi", "Telugu"], "question": ["प्रश्न: यह क्या है?", "ప్రశ్న: ఇది ఏమిటి?"], "n": [20, 20]}),
                "HinTel-AlignBench prompts as the paper prints them", ["n: items."])
    xe = R.render_table(t, "latex")
    assert engine_for(xe) == "xelatex"
    broken, _ = compile_paper(xe, tmp_path / "xe", "xe", "acl", "pdflatex")
    assert broken                                                        # pdfLaTeX cannot set the scripts
    pdf = R.pdflatex_form(xe)
    assert engine_for(pdf) == "pdflatex" and "[Deva]: [Deva]" in pdf and "[Telu]: [Telu]" in pdf
    assert "text in Devanagari and Telugu script" in pdf and "20" in pdf
    emitted, found = check_latex("% Compiles with pdfLaTeX; needs \\usepackage{booktabs}.\n" + pdf, tmp_path / "check")
    assert found == [], found                                            # ACL, NeurIPS and IEEE, two passes each
    saved = t.save(tmp_path / "saved", "prompts")                        # a notebook's table: both forms, each compiled by its engine
    assert [p.name for p in saved] == ["prompts.md", "prompts.tex", "prompts.pdflatex.tex", "prompts.csv"]
    assert check([tmp_path / "saved"], tmp_path / "w-saved") == []
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    run = [sys.executable, "-c", "import sys; from vlmlens.cli import main; sys.exit(main())"]
    wrong = subprocess.run(run + ["report", str(tmp_path), "--latex-engine", "pdflatex"], capture_output=True, text=True, env=env)
    assert wrong.returncode == 2 and "--format latex" in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
