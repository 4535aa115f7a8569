"""The presentation layer (`vlmlens.report`, `vlmlens.figures`): `vlmlens report` headers and formats on real runs,
the pooling rule on a real RunSet, blanks with reasons instead of None/NaN/0.0, one name per model and language, and
figures that render Indic, CJK and Arabic text and pass the reviewer's check."""
import csv
import io
import os
import re
import warnings

import pandas as pd
import pytest

from loopback import LoopbackServer
from vlmlens import report as R
from vlmlens.core import RunConfig
from vlmlens.metrics import rates
from vlmlens.runner import run
from vlmlens.store import RunSet, RunStore


@pytest.fixture(scope="module")
def hintel_runs(tmp_path_factory):
    "Two real HinTel runs (Hindi, Telugu) of a served model that always answers 'A' (judge off)."
    from vlmlens.benchmarks import hintel as H
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    root = tmp_path_factory.mktemp("report-cli")
    data = H.build_synthetic_hintel(root / "data", n_per_subset=2)
    with LoopbackServer() as server:
        for lang in ("hi", "te"):
            run(RunConfig(benchmark="hintel", data_path=str(data), model=f"openai-compatible:Org/Served-VLM-7B@{server.openai_base_url}",
                          language=lang, judge="none", output_root=str(root / "runs"), progress=False,
                          model_kwargs={"cache": False, "progress": False}))
    yield root / "runs"
    mp.undo()


@pytest.mark.parametrize("fmt", ["text", "md", "latex", "csv"])
def test_cli_report_names_each_run_and_writes_each_format(hintel_runs, capsys, fmt):
    from vlmlens.cli import main
    assert main(["report", str(hintel_runs), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "http://" not in out and "openai-compatible" not in out
    assert not re.search(r"\b(None|NaN|nan)\b", out)
    if fmt == "csv": return _check_machine_csv(out)
    for lang in ("Hindi", "Telugu"):          # one caption per run, as a paper writes it: benchmark, model, what differs (language), n
        assert len(re.findall(rf"HinTel-AlignBench, Served-VLM-7B, {lang}, n = \d+\b(?!,)", out)) == 1, out[:3000]
    assert not re.search(r"\b(video|frames?|strategy standard|input)\b", out)     # an image benchmark: no video, no frames
    if fmt == "latex": assert "·" not in out and out.startswith("% Compiles with pdfLaTeX") and "HinTel-AlignBench, Served-VLM-7B" in out
    assert not re.search(r"\d\.\d{4,}", out)
    if fmt == "md": assert "|---|" in out and "| all items |" in out
    if fmt == "latex": assert len(re.findall(r"\\begin\{table\*?\}", out)) == 2 and r"accuracy \%" in out      # one float a run
    if fmt == "text": assert "accuracy %" in out and "Rates in % (1 decimal)" in out


def _check_machine_csv(out):
    "One CSV for all runs: a header row first, the run's settings as columns, fractions as numbers, blanks empty."
    assert out.splitlines()[0].startswith("run,benchmark,model,language,")        # a header row as sweep.csv starts, no comment line
    df = pd.read_csv(io.StringIO(out))                                           # pandas defaults read it
    assert set(df.language) == {"hi", "te"} and set(df.benchmark) == {"hintel"} and set(df.model) == {"Org/Served-VLM-7B"}   # codes
    assert {"accuracy", "accuracy_answered", "invalid_rate", "n_errors", "n", "run", "modality", "num_frames"} <= set(df.columns)
    assert "accuracy %" not in df.columns and "frames" not in df.columns and "input" not in df.columns
    assert pd.api.types.is_float_dtype(df.accuracy) and df.accuracy.between(0, 1).all()
    assert pd.api.types.is_integer_dtype(df.n) and pd.api.types.is_integer_dtype(df.n_errors)
    runs = RunSet.discover(df.run_dir[0])
    mine = df[(df.run_dir == df.run_dir[0]) & (df.subset == "all items")]
    assert mine.run.item() == runs[0].name
    assert mine.accuracy.item() == pytest.approx(runs[0].overall["accuracy"])   # full precision, not a rounded "50.0"


def test_runs_are_labelled_by_what_differs_and_never_pooled_blindly(hintel_runs):
    runs = RunSet.discover(hintel_runs)
    assert list(R.differing_settings(runs)) == ["language"]
    assert sorted(R.run_labels(runs).values()) == ["Hindi", "Telugu"]
    g = R.grouped_rates(runs, ["language", "subset"])
    assert set(g.language) == {"hi", "te"} and (g.n > 0).all() and g.accuracy.between(0, 1).all()
    with pytest.raises(R.PoolingError, match=r"differ in language \(Hindi, Telugu\)"):
        R.grouped_rates(runs, ["subset"], what="a per-subset table")
    ov = R.runs_overview(runs)
    assert ov.title == "2 runs (HinTel-AlignBench, Served-VLM-7B)" and list(ov.frame()["language"]) == ["Hindi", "Telugu"]


def _fake_run(root, name, rows, **cfg):
    c = RunConfig(**{"benchmark": "infinibench", "model": "gpt-4.1", **cfg}, run_name=name, output_root=str(root))
    st = RunStore(root / name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_scores_csv(rows); st.write_summary({"overall": rates(rows)}); st.close()


def _summary_only_run(root, c):
    "A finished InfiniBench run folder with only run.json and a summary (Acc 50%, Score 5.0 over 2 items): enough for labels and captions."
    st = RunStore(root / c.run_name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_summary({"benchmark": "infinibench", "overall": {"n": 2, "n_errors": 0, "accuracy": 0.5},
                      "benchmark_summary": {"acc": 0.5, "score_0_10": 5.0, "overall_0_100": 50.0, "n": 2}})
    st.close()


def test_modality_idk_and_frames_are_never_pooled(tmp_path):
    "The frame curve that pooled metadata, subtitles and no-IDK runs at '4 frames' cannot be built."
    row = lambda i, s: {"sample_id": str(i), "skill": "global_appearance", "valid": True, "error": None, "score": s}
    _fake_run(tmp_path, "v4", [row(0, 1), row(1, 0)], modality="video", num_frames=4)
    _fake_run(tmp_path, "v8", [row(0, 1), row(1, 1)], modality="video", num_frames=8)
    _fake_run(tmp_path, "meta", [row(0, 0), row(1, 0)], modality="metadata", num_frames=4)
    _fake_run(tmp_path, "noidk", [row(0, 1), row(1, 0)], modality="video", num_frames=4, benchmark_kwargs={"idk_option": False})
    runs = RunSet.discover(tmp_path)
    assert R.run_settings(runs.where(modality="metadata")[0])["num_frames"] is None        # a metadata run saw no frames
    with pytest.raises(R.PoolingError) as e: R.grouped_rates(runs, ["num_frames"], what="the frame curve")
    assert "modality (metadata, video)" in str(e.value) and "benchmark_kwargs.idk_option (with the IDK option, without the IDK option)" in str(e.value)
    video = runs.where(modality="video", benchmark_kwargs={})
    curve = R.grouped_rates(video, ["num_frames"])
    assert curve.num_frames.tolist() == [4, 8] and curve.accuracy.tolist() == [0.5, 1.0]
    labels = R.run_labels(runs)
    assert labels["meta"] == "modality metadata, with the IDK option" and labels["v8"].startswith("8 frames")   # unset: the default


def test_an_idk_ablation_reads_with_and_without_the_idk_option_in_labels_legends_and_captions(tmp_path, capsys):
    """Two InfiniBench runs that differ only in the IDK option (one given as the text a command line passes) are named as a
    paper names them in run labels, Table 3's rows, the frame curve's legend and `vlmlens report`'s captions, never `idk_option=...`."""
    from vlmlens.cli import main
    from vlmlens.tables import infinibench as T
    for name, frames, idk in (("idk-4", 4, True), ("idk-8", 8, True), ("noidk-4", 4, "false"), ("noidk-8", 8, "false")):
        c = RunConfig("infinibench", "gpt-4.1", modality="video", num_frames=frames, benchmark_kwargs={"idk_option": idk},
                      run_name=name, output_root=str(tmp_path))
        _summary_only_run(tmp_path, c)
    runs = RunSet.discover(tmp_path)
    four = runs.where(num_frames=4)
    assert R.run_labels(four) == {"idk-4": "with the IDK option", "noidk-4": "without the IDK option"}
    assert list(T.table3(four, random_row=False).index) == ["with the IDK option", "without the IDK option"]
    legend = [t.get_text() for t in T.frames_curve(runs).axes[1].get_legend().get_texts()]
    assert [t.split(" (n=")[0] for t in legend] == ["with the IDK option", "without the IDK option"], legend
    assert main(["report", str(tmp_path / "idk-4"), str(tmp_path / "noidk-4")]) == 0
    out = capsys.readouterr().out
    assert "InfiniBench, GPT-4.1, with the IDK option, n = 2" in out and "InfiniBench, GPT-4.1, without the IDK option, n = 2" in out, out
    assert main(["report", str(tmp_path / "idk-4"), str(tmp_path / "noidk-4"), "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    assert "without the IDK option" in latex and "idk_option=" not in latex and "idk\\_option" not in latex


def test_blanks_carry_reasons_not_none_or_zero():
    "A judge whose 4 judgments were all invalid leaves Score blank for that reason (it showed 0.0)."
    s = {"benchmark": "infinibench", "overall": {"n": 8, "n_judged": 4, "judge_invalid_rate": 1.0, "accuracy": 0.5},
         "groups": [{"skill": "global_appearance", "n": 4, "accuracy": 0.5, "accuracy_answered": 0.5, "invalid_rate": 0.0, "n_errors": 0},
                    {"skill": "summarization", "n": 4, "n_judged": 4, "judge_invalid_rate": 1.0, "score_0_10": None}],
         "benchmark_summary": {"acc": 0.5, "score_0_10": None, "overall_0_100": None}}
    t = R.summary_table(s)
    for fmt in R.FORMATS:
        out = R.render_table(t, fmt)
        assert not re.search(r"\b(None|NaN|nan)\b", out) and "0.0 /10" not in out
    cell = t.frame().set_index("skill").loc["summarization", "score /10"]
    assert cell.startswith("–") and any(n.startswith(cell + " ") and "no valid judgments" in n for n in t.all_notes())
    assert "Paper metrics: Acc 50.0 % · Score –" in R.render_table(t)
    grid = R.rate_grid(pd.DataFrame({"Hindi": [0.25, None]}, index=["a", "b"]), pd.DataFrame({"Hindi": [4, None]}, index=["a", "b"]))
    assert grid.frame()["Hindi"].tolist() == ["25.0 (n=4)", "–"] and grid.all_notes()[-1] == "– not run"


def test_one_name_per_model_and_language():
    assert R.model_name("openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://10.0.0.1:8000/v1") == "Qwen2.5-VL-7B"
    assert R.model_name("openai-compatible:my-org/My-VLM@http://h:1/v1") == "My-VLM"
    assert R.model_name("gpt-4.1") == "GPT-4.1"
    assert [R.language_name(c) for c in ("hi", "te", "ta-IN", "ko-KR", "ar-EG")] == \
        ["Hindi", "Telugu", "Tamil (IN)", "Korean (KR)", "Arabic (EG)"]


SCRIPTS = {"hi": "दिवाली का त्योहार", "te": "సంక్రాంతి పండుగ", "ta": "பொங்கல் உணவு", "ko": "김치를 만든다", "ar": "كرة القدم"}


def test_indic_cjk_and_arabic_text_renders_or_the_missing_font_is_named(tmp_path):
    import matplotlib; matplotlib.use("Agg")
    from vlmlens import figures as A
    fonts = A.use_script_fonts()
    data = pd.DataFrame({"accuracy": [40.0, 55.5, 61.0, 30.0, 47.5]}, index=[f"{v} ({k})" for k, v in SCRIPTS.items()])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ax = A.bar_chart(data["accuracy"], ylabel="accuracy (%)", title="Accuracy per language (hi, te, ta, ko, ar)")
        paths = A.save_figure(ax.figure, tmp_path, "scripts")
    glyphs = [str(x.message) for x in w if "Glyph" in str(x.message)]
    missing = {s: f for s, f in A.SCRIPT_FONTS.items() if s in ("Devanagari", "Telugu", "Tamil", "CJK") and f[1] not in fonts}
    if not missing:
        assert glyphs == [] and A.figure_problems(ax.figure) == []
    else:                                        # no Noto fonts here: one warning names each missing font and the packages
        assert not os.environ.get("CI"), f"CI must install the fonts ({A.FONT_PACKAGES}): missing {missing}"
        named = " ".join(str(x.message) for x in w)
        assert all(f[1] in named for f in missing.values()) and A.FONT_PACKAGES in named
    assert [p.suffix for p in paths] == [".png", ".pdf"]


def test_reviewer_check_finds_what_issue_17_lists():
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from vlmlens import figures as A
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 2.5))
    a.bar([0, 1, 2], [30, 40, 50], yerr=[5, 5, 5], label="model")
    for x, v in zip([0, 1, 2], [30, 40, 50]): a.annotate(f"{v}", (x, v), ha="center")      # labels on the error bars
    a.legend(loc="center"); a.set_title("openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1 accuracy")
    b.plot([1, 2, 4, 8, 16], [1, 2, 3, 4, 5]); b.set_xscale("log", base=2)                  # 2⁰ … 2⁴ ticks, no labels
    problems = " | ".join(A.figure_problems(fig))
    for want in ("title wider than its axes", "legend covers data", "sits on an error bar", "the y axis has no label",
                 "tick labels written as powers", "the x axis has no label"):
        assert want in problems, want
    ax = A.line_chart(pd.DataFrame({"frames": [1, 2, 4, 8, 16], "acc": [1, 2, 3, 4, 5], "n": [9] * 5}), "frames", "acc", n="n",
                      log2=True, xlabel="frames", ylabel="accuracy (%)", title="openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1 accuracy")
    assert A.figure_problems(ax.figure) == [] and [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8", "16"]
    plt.close("all")


def test_rows_that_never_became_items_are_shown_beside_n(tmp_path, capsys):
    "Malformed data rows are in no denominator: the printed table says how many there were, next to n."
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.cli import main
    from vlmlens.core import Generation, Sample
    from vlmlens.runner import write_summary

    class Fixed:
        name, model_id, revision, languages = "fixed", "fixed", "r", ("en",)
        def generate(self, reqs, **kw): return [Generation("A", {}, finish_reason="stop") for _ in reqs]
        def info(self): return {"name": self.name}
        def close(self): pass
    items = [Sample(f"s{i}", "demo", question="Q?", options=["a", "b"], answer=0) for i in range(3)]
    cfg = RunConfig("demo", "fixed", modality="text", output_root=str(tmp_path), run_name="rows", progress=False)
    run(cfg, backend=Fixed(), samples=items)
    write_summary(RunStore.open(cfg), get_benchmark("demo"), items, cfg,
                  {"row_errors": ["data.jsonl:4: options: expected a list", "data.jsonl:9: invalid JSON"]})
    assert main(["report", str(tmp_path / "rows")]) == 0
    out = capsys.readouterr().out
    head = next(l for l in out.splitlines() if "rows not read" in l)
    assert re.search(r"\bn\W+rows not read", head), head                       # the column right after n
    assert re.search(r"all items\W+3\W+2\b", out), out
    assert "2 data rows could not be read and never became items" in out


def _paper_tables(runs):
    "The kinds of table a report emits: a run summary, the runs overview, every fidelity ledger, a wide per-language grid, scripts."
    from vlmlens import fidelity
    from vlmlens.benchmarks import hintel, infinibench, minerva  # noqa: F401  (their ledger entries)
    langs = ["Hindi", "Telugu", "Tamil", "Bengali", "Marathi", "Gujarati", "Kannada", "Malayalam", "Odia"]
    cols = pd.MultiIndex.from_product([["VQAv2", "RealWorldQA"], langs])
    models = pd.Index(["GPT-4.1", "Gemma3-4B", "Qwen2.5-VL-7B"], name="model")
    wide = R.rate_grid(pd.DataFrame([[0.4567] * len(cols)] * 3, index=models, columns=cols),
                       pd.DataFrame([[3] * len(cols)] * 3, index=models, columns=cols), title="Table 3: Accuracy per subset and language")
    scripts = R.Table(pd.DataFrame({"locale": ["Tamil (IN)", "Hindi (IN)", "Telugu (IN)", "Chinese (CN)"],
                                    "question": ["இது என்ன?", "यह क्या है?", "ఇది ఏమిటి?", "这是什么？"], "accuracy %": ["50.0", "25.0", "0.0", "100.0"]}),
                      "CURVE rounds by locale")
    out = {"summary": R.summary_table(runs[0].summary, title=R.run_header(runs[0].summary, runs[0].config.to_dict())), "overview": R.runs_overview(runs),
           "wide": wide, "scripts": scripts,
           "summary-2": R.summary_table(runs[1].summary, title=R.run_header(runs[1].summary, runs[1].config.to_dict())),   # its own caption and label
           "long": R.Table(pd.DataFrame({"run": [f"run {i}" for i in range(150)], "accuracy %": ["41.3"] * 150}), "Accuracy of 150 runs")}
    for b in ("hintel", "infinibench", "curve"):
        out[f"ledger-{b}"] = R.Table(fidelity.ledger_table(b), f"Fidelity ledger ({b})", paper=False)   # the Markdown's, not the paper's
    return out


def test_latex_reads_like_a_paper_table(hintel_runs):
    "Caption without 'Table N:', a label, the Markdown's decimals, prose that wraps, table* when wide, scripts for XeLaTeX."
    tables = _paper_tables(RunSet.discover(hintel_runs))
    wide = R.render_table(tables["wide"], "latex")
    assert r"\caption{Accuracy per subset and language (paper Table 3)}" in wide and "Table 3:" not in wide.split(r"\caption")[1][:20]
    assert r"\label{tab:accuracy-per-subset-and-language-paper-" in wide and r"\begin{table*}" in wide and r"\resizebox" not in wide
    md = R.render_table(tables["wide"], "md")
    shown = set(re.findall(r"(\d+\.\d+) \(n=(\d+)\)", md))                                  # one precision in every format
    assert shown and {v for v, _ in shown} == set(re.findall(r"\d+\.\d+", wide.split(r"\midrule")[1].split(r"\bottomrule")[0]))
    assert all(f"n = {n} items in every cell." in wide for _, n in shown)                  # n once, as the papers' tables
    assert r"\toprule" in wide and r"\midrule" in wide and r"\bottomrule" in wide
    ledger = R.render_table(tables["ledger-hintel"], "latex")
    assert re.search(r"\\begin\{tabular\}\{(@\{\})?[^}]*p\{0\.\d+\\linewidth\}", ledger)      # prose columns wrap
    sc = R.render_table(tables["scripts"], "latex")
    assert "XeLaTeX" in sc.split(r"\begin")[0] and "Noto Sans Tamil" in sc and "Noto Sans CJK" in sc and r"{\tamilfont இது என்ன}?" in sc
    assert "fontspec" not in R.render_table(tables["summary"], "latex")


@pytest.mark.parametrize("engine", ["pdflatex", "xelatex"])
def test_every_emitted_table_compiles_inside_the_text_width(hintel_runs, tmp_path, engine):
    "All tables of one output set together, twice, in ACL, NeurIPS and IEEE pages: no error, overfull box, lost float or label twice."
    from texcheck import ENGINES, compile_tables, engine_for, paper_check
    if not ENGINES[engine]: pytest.skip(f"{engine} is not installed (make install installs TeX Live for this check)")
    texs = {k: R.render_table(t, "latex") for k, t in _paper_tables(RunSet.discover(hintel_runs)).items() if t.paper}
    mine = {k: v for k, v in texs.items() if engine_for(v) == engine}
    assert mine, f"no table for {engine}"
    together = compile_tables(mine, tmp_path / "all")           # one output in ACL, NeurIPS and IEEE papers, twice: labels unique, no float lost
    assert not together, "\n".join(together[:20])
    assert not paper_check.structure_problems("\n".join(mine.values()))


def test_saved_figures_are_paper_ready(tmp_path):
    "TrueType fonts in the PDF (no Type 3), text width and ≥ 8 pt text, and an all-zero accuracy axis without negative ticks."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from vlmlens.figures import COLUMN_IN, TEXT_IN, bar_chart, figure_problems, line_chart, save_figure
    zero = pd.DataFrame({"Hindi": [0.0, 0.0], "Telugu": [0.0, 0.0]}, index=["VQAv2", "RealWorldQA"])
    ax = bar_chart(zero, ylabel="accuracy (%)", title="Accuracy of GPT-4.1 per task (n=3 each)")
    assert ax.get_ylim() == (0, 100) and min(ax.get_yticks()) >= 0 and max(ax.get_yticks()) <= 100
    assert ax.figure.get_size_inches()[0] == pytest.approx(TEXT_IN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                          # a defect would be a FigureWarning
        pdf = [p for p in save_figure(ax.figure, tmp_path, "zero") if p.suffix == ".pdf"][0]
    fonts = set(re.findall(rb"/Subtype\s*/(\w+)", pdf.read_bytes()))
    assert b"Type3" not in fonts and fonts & {b"TrueType", b"CIDFontType2"}, fonts
    gap = bar_chart(pd.Series([0.0, 0.0], index=["VQAv2", "CLEVR-Math"]), ylabel="English − Indic (accuracy points)")
    assert gap.get_ylim()[0] == 0 and min(gap.get_yticks()) >= 0             # all zero: no −0.06…0.06 axis
    curve = line_chart(pd.DataFrame({"frames": [1, 2, 4], "acc": [95.0, 99.0, 100.0], "n": [3, 3, 3]}), "frames", "acc", n="n",
                       ylabel="accuracy (%)", figsize=(COLUMN_IN, 2.4), log2=True, xlabel="frames")
    assert max(curve.get_yticks()) <= 100 and curve.get_ylim()[0] >= 0
    assert not figure_problems(curve.figure)
    small, tiny = plt.subplots(figsize=(9, 2))
    tiny.plot([1, 2], [1, 2]); tiny.set_ylabel("y"); tiny.annotate("n=3", (1, 1), fontsize=6)
    assert {"figure is 9.00 in wide: wider than a paper's text (6.3 in)", "text 'n=3' is 6 pt (under 8 pt)"} <= set(figure_problems(small))
    plt.close("all")


def test_a_relative_and_an_absolute_data_path_are_one_setting(tmp_path, monkeypatch):
    "A run started as `--data-path data/hintel` and a sweep run with its absolute path pool: the guard sees one folder."
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "hintel").mkdir(parents=True)
    row = lambda i: {"sample_id": str(i), "language": "hi", "subset": "vqav2", "valid": True, "error": None, "score": i % 2}
    _fake_run(tmp_path / "runs", "cli", [row(0), row(1)], benchmark="hintel", data_path="data/hintel")
    _fake_run(tmp_path / "runs", "sweep", [row(2), row(3)], benchmark="hintel", data_path=str(tmp_path / "data" / "hintel"))
    runs = RunSet.discover(tmp_path / "runs")
    assert R.differing_settings(runs) == {}
    R.check_pooling(runs, ["language", "subset"], "Table 4")                          # no PoolingError
    assert R.grouped_rates(runs, ["subset"]).n.tolist() == [4]


def test_runs_that_differ_only_in_max_new_tokens_or_in_nothing_get_distinct_labels(tmp_path):
    "Row and column labels tell every run apart: by the setting that differs, else by the run's name."
    from vlmlens.tables import infinibench as T
    for name, tokens in (("short", 64), ("long", 128), ("long-again", 128)):
        c = RunConfig("infinibench", "gpt-4o", modality="metadata", max_new_tokens=tokens, run_name=name, output_root=str(tmp_path))
        st = RunStore(tmp_path / name, c.hash(), config=c.to_dict()).prepare()
        st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
        st.write_summary({"overall": {"n": 1}, "benchmark_summary": {"acc": 0.5, "score_0_10": 5.0, "overall_0_100": 50.0, "n": 1}})
        st.close()
    runs = RunSet.discover(tmp_path)
    labels = R.run_labels(runs)
    assert labels == {"long": "max new tokens 128 (long)", "long-again": "max new tokens 128 (long-again)", "short": "max new tokens 64"}
    assert list(T.table3(runs, random_row=False).index) == [labels["long"], labels["long-again"], labels["short"]]
    assert list(R.runs_overview(runs).frame()["max new tokens"]) == ["128", "128", "64"]


def test_paired_differences_refuse_two_runs_on_one_side(tmp_path):
    "Two English runs of one model (4 and 16 frames) against one Hindi run: which English run to pair is not guessed."
    from vlmlens.tables import hintel as T
    row = lambda lang, i, s: {"sample_id": f"vaani_h:{lang}:{i}", "subset": "vaani_h", "language": lang, "align_id": str(i),
                              "valid": True, "error": None, "score": s}
    _fake_run(tmp_path, "en-4", [row("en", i, 1) for i in range(4)], benchmark="hintel", language="en", num_frames=4)
    _fake_run(tmp_path, "hi", [row("hi", i, i % 2) for i in range(4)], benchmark="hintel", language="hi", num_frames=4)
    assert T.paired_regression(RunSet.discover(tmp_path), n_resamples=100).n_pairs.tolist() == [4]
    _fake_run(tmp_path, "en-16", [row("en", i, 0) for i in range(4)], benchmark="hintel", language="en", num_frames=16)
    with pytest.raises(R.PoolingError, match="en-16, en-4 all answer VAANI-H in English"):
        T.paired_regression(RunSet.discover(tmp_path), n_resamples=100)


def _stored_run(root, name, rows, summary=None, **cfg):
    c = RunConfig(**{"benchmark": "hintel", "model": "gpt-4.1", **cfg}, run_name=name, output_root=str(root))
    st = RunStore(root / name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_scores_csv(rows); st.write_summary({"overall": rates(rows), **(summary or {})}); st.close()


def test_a_run_that_answered_nothing_is_never_a_number_in_any_table(tmp_path, capsys):
    "Every item a MediaError: the report, HinTel Table 4, InfiniBench Table 3 and CURVE's main table show a blank with the reason, never 0."
    from vlmlens.cli import main
    from vlmlens.tables import hintel as TH, infinibench as TI, minerva as TM
    dead = [{"sample_id": f"s{i}", "subset": "vqav2", "language": "hi", "locale": "te-IN", "valid": False, "error": "MediaError: unreadable",
             "score": None} for i in range(10)]
    _stored_run(tmp_path / "h", "dead", dead, language="hi")
    assert main(["report", str(tmp_path / "h" / "dead")]) == 0
    out = capsys.readouterr().out
    assert "nothing answered: every item errored" in out and " 0.0 " not in out and "0.0\n" not in out
    assert TH.table4(RunSet.discover(tmp_path / "h")).iloc[0].isna().all()
    bs = {"benchmark_summary": {"n": 10, "n_errors": 10, "acc": 0.0, "score_0_10": 0.0, "overall_0_100": 0.0,
                                "skills": {"global_appearance": {"accuracy": 0.0, "n": 10}}}}
    _stored_run(tmp_path / "i", "dead", [{**r, "skill": "global_appearance"} for r in dead], bs, benchmark="infinibench", model="gpt-4o")
    t3 = TI.table3(RunSet.discover(tmp_path / "i"), random_row=False)
    assert t3.iloc[0].isna().all(), t3
    _stored_run(tmp_path / "c", "dead", dead, benchmark="curve", model="openai-compatible:gemini-2.5-pro@http://127.0.0.1:9/v1")
    main_t = TM.curve_main_table(RunSet.discover(tmp_path / "c"), human=None)
    assert pd.isna(main_t["aggregate"].iloc[0]) and main_t["paper_aggregate"].iloc[0] == pytest.approx(0.4507)   # a served roster model


def test_rounding_is_half_up_and_one_precision_in_md_latex_and_csv():
    t = R.Table(pd.DataFrame({"model": ["A"], "acc %": [R.pct(23 / 40, 2, n=40)], "score /10": [R.num(4.25, 1)]}))
    md, tex, csv_text = (R.render_table(t, f) for f in ("md", "latex", "csv"))
    assert "57.50" in md and "57.50" in tex and "4.3" in md and "4.3" in tex
    assert csv_text.splitlines()[1].startswith("A,0.575,")                           # the fraction itself, for a machine


def test_markdown_cells_keep_their_row_when_the_text_has_newlines():
    t = R.Table(pd.DataFrame({"round": [1, 2], "reply": ["first line\nsecond line", "one | two"]}))
    lines = R.render_table(t, "md").splitlines()
    assert len(lines) == 4 and lines[2] == "| 1 | first line<br>second line |" and lines[3] == r"| 2 | one \| two |"


def test_a_finished_run_is_never_silently_rewritten_by_a_smaller_or_differently_judged_rerun(tmp_path, capsys, monkeypatch):
    "Rerunning a finished configuration with --limit 3 or --judge none is refused in one line; its own --run-name makes a view."
    import json
    from vlmlens.benchmarks import hintel as H
    from vlmlens.cli import main
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    data = H.build_synthetic_hintel(tmp_path / "data", n_per_subset=2)
    with LoopbackServer() as server:
        base = ["run", "--benchmark", "hintel", "--data-path", str(data), "--model", f"openai-compatible:gpt-4.1@{server.openai_base_url}",
                "--language", "hi", "--output-root", str(tmp_path / "runs"), "--run-name", "full", "--no-progress",
                "--model-kwarg", "cache=false", "--judge", f"openai-compatible:judge@{server.openai_base_url}"]
        assert main(base) == 0
        first = json.loads((tmp_path / "runs" / "full" / "summary.json").read_text())
        assert first["judge_id"] and first["limit"] is None and first["n_items"] == first["overall"]["n"] > 3   # what it covers
        capsys.readouterr()
        assert main(base + ["--limit", "3"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "its summary covers" in err and "this run 3 (--limit 3)" in err and "--run-name" in err
        assert main(base[:-2] + ["--judge", "none"]) == 2
        assert "is not judged" in capsys.readouterr().err
        assert json.loads((tmp_path / "runs" / "full" / "summary.json").read_text()) == first           # untouched
        view = base[:base.index("--run-name") + 1] + ["first3"] + base[base.index("--run-name") + 2:] + ["--limit", "3"]
        assert main(view) == 0
        mine = json.loads((tmp_path / "runs" / "first3" / "summary.json").read_text())
        assert (mine["limit"], mine["n_items"], mine["overall"]["n"]) == (3, 3, 3)


def test_paper_check_tool_lists_each_problem_with_its_file(tmp_path):
    "tools/paper_check.py: exit 0 on tables and figures that fit; a resized table and a too-wide figure are named, exit 1."
    import subprocess
    import sys
    import matplotlib.pyplot as plt
    from texcheck import ENGINES
    if not ENGINES["pdflatex"]: pytest.skip("pdflatex is not installed (make tex)")
    good = tmp_path / "good"
    R.Table(pd.DataFrame({"model": ["GPT-4.1"], "accuracy %": ["41.3"]}), "Accuracy").save(good / "tables", "acc")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ok = subprocess.run([sys.executable, "tools/paper_check.py", str(good)], cwd=repo, capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0 and "0 problems" in ok.stderr, ok.stdout + ok.stderr
    bad = tmp_path / "bad"; (bad / "tables").mkdir(parents=True)
    (bad / "tables" / "shrunk.tex").write_text("\\begin{table}\\resizebox{\\linewidth}{!}{\\begin{tabular}{l}x\\\\\\end{tabular}}\\end{table}\n")
    fig, _ = plt.subplots(figsize=(9, 2)); fig.savefig(bad / "wide.pdf"); plt.close(fig)          # saved without save_figure
    out = subprocess.run([sys.executable, "tools/paper_check.py", str(bad)], cwd=repo, capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "shrunk: " in out.stdout and "text set below 8 pt (\\resizebox)" in out.stdout
    assert "wide.pdf: 9.00 in wide" in out.stdout
    none = subprocess.run([sys.executable, "tools/paper_check.py", str(tmp_path / "nope")], cwd=repo, capture_output=True, text=True)
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", __import__("vlmlens.benchmarks.base", fromlist=["x"]).known_benchmarks())
def test_every_declared_option_word_names_an_option_and_a_value_it_accepts(name):
    """Each benchmark's `option_words` key is an option of its `kwargs_schema`, and each value with words is one the option accepts
    (read back by `Option.coerce` as itself): a misspelled option (`idk_opton`) or value (`leter`) fails here, not silently in a caption."""
    from vlmlens.benchmarks.base import get_benchmark
    b = get_benchmark(name)
    schema = {o.name: o for o in b.kwargs_schema or ()}
    for key, words in (b.option_words or {}).items():
        assert key in schema, f"{name}: option_words names {key!r}, not an option of its schema ({', '.join(schema)})"
        for value, text in words.items():
            assert isinstance(text, str) and text.strip(), (name, key, value)
            assert schema[key].type != "path", f"{name}: words for a path option {key!r}"
            assert schema[key].coerce(value) == value, f"{name}: {key}={value!r} is not a value the option accepts"
            assert b.option_text(key, value) == text


def test_an_option_left_at_its_default_reads_in_the_defaults_words(tmp_path, capsys):
    """An IDK ablation with one run that left `idk_option` unset (the default: the option offered) and one that set it False reads
    'with the IDK option' vs 'without the IDK option' in run labels, the pooling message and `vlmlens report`'s captions; a run that
    set the default and one that left it unset are one setting, never told apart."""
    from vlmlens.cli import main
    for name, kw in (("unset", {}), ("off", {"idk_option": False}), ("on", {"idk_option": True})):
        c = RunConfig("infinibench", "gpt-4.1", modality="video", num_frames=4, benchmark_kwargs=kw, run_name=name, output_root=str(tmp_path))
        _summary_only_run(tmp_path, c)
    runs = RunSet.discover(tmp_path)
    ablation = runs.where(lambda r: r.name in ("unset", "off"))
    assert R.run_labels(ablation) == {"unset": "with the IDK option", "off": "without the IDK option"}
    with pytest.raises(R.PoolingError) as e: R.check_pooling(ablation, ())
    assert "benchmark_kwargs.idk_option (with the IDK option, without the IDK option)" in str(e.value), str(e.value)
    same = runs.where(lambda r: r.name in ("unset", "on"))
    assert R.differing_settings(same) == {} and R.check_pooling(same, ()) is None    # unset = set to the default
    from vlmlens.paired import ablation_comparisons
    by = {r.name: R.effective_settings(r) for r in runs}
    assert by["unset"] == by["on"] != by["off"] and by["unset"]["benchmark_kwargs.idk_option"] is True
    assert ablation_comparisons(same).empty                                           # no "ablation" between one setting
    assert list(R.differing_settings(runs)) == ["benchmark_kwargs.idk_option"]
    assert main(["report", str(tmp_path / "unset"), str(tmp_path / "off")]) == 0
    out = capsys.readouterr().out
    assert "InfiniBench, GPT-4.1, with the IDK option, n = 2" in out and "InfiniBench, GPT-4.1, without the IDK option, n = 2" in out, out
    assert main(["report", str(tmp_path / "unset"), str(tmp_path / "on")]) == 0
    out = capsys.readouterr().out
    assert "IDK" not in out and "idk_option" not in out, out           # the same setting: no caption names it


def test_only_benchmark_options_read_in_a_benchmarks_words():
    """A backend or judge option that shares a benchmark option's name (`model_kwargs.subtitles` on a MINERVA run) is not given the
    benchmark's words: only `benchmark_kwargs.<option>` is."""
    info = R.benchmark_info({"benchmark": "minerva"})
    assert R.option_words(info, "benchmark_kwargs.subtitles", False) == "without subtitles"
    for key in ("model_kwargs.subtitles", "judge_kwargs.subtitles", "subtitles"):
        assert R.option_words(info, key, False) is None
        assert R.option_words(info, key, None) is None
    assert R.setting_text("model_kwargs.subtitles", False, info=info) == "subtitles=False"
    assert R.setting_text("model_kwargs.subtitles", None, info=info) == R.BLANK
    assert R.run_header({"benchmark": "minerva", "overall": {"n": 3}}, {"model": "gpt-4o", "model_kwargs": {"subtitles": False}},
                        differing=["model_kwargs.subtitles"]).endswith("subtitles off, n = 3")
    ib = R.benchmark_info({"benchmark": "infinibench"})
    assert R.option_words(ib, "judge_kwargs.scoring", "strict") is None
    assert R.option_words(ib, "benchmark_kwargs.scoring", "strict").startswith("strict scoring")
