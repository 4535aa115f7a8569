"The papers' numbers as data (checked against the paper text) and `vlmlens report --vs-paper`."
import io
import json
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from loopback import LoopbackServer
from vlmlens import fidelity, vs_paper as V
from vlmlens.core import RunConfig
from vlmlens.metrics import rates
from vlmlens.runner import run
from vlmlens.store import RunSet, RunStore

PAPERS = Path(__file__).parent / "data" / "papers"
DOC = fidelity.paper_file()
CELLS = DOC["cells"]


def _lines(name): return (PAPERS / name).read_text(encoding="utf-8").splitlines()


def _table(paper, table): return next(t for t in DOC["tables"] if t["paper"] == paper and t["table"] == table)


def _grid(paper, table):
    "{row: {column: cell}} of one table."
    g = defaultdict(dict)
    for c in CELLS:
        if c["paper"] == paper and c["table"] == table: g[c["row"]][c["column"]] = c
    return g


def test_data_file_is_versioned_names_its_papers_and_ships_in_the_wheel():
    assert re.fullmatch(r"\d{4}\.\d+\.\d+", DOC["version"])
    assert DOC["papers"]["infinibench"]["id"] == "arXiv:2406.19875" and DOC["papers"]["curve"]["id"] == "arXiv:2601.10649"
    keys = {"paper", "section", "table", "model", "row", "column", "metric", "value", "text", "unit", "where"}
    assert all(keys <= set(c) for c in CELLS) and all(float(c["text"]) == c["value"] for c in CELLS)
    setup = (Path(__file__).parents[1] / "setup.py").read_text()          # package_data covers vlmlens/assets/**/*.json
    folder = Path(V.__file__).parent / fidelity.PACKAGE_DATA / fidelity.PAPER_NUMBERS
    assert f'"{fidelity.PACKAGE_DATA}/**/*.json"' in setup
    assert sorted(f.stem for f in folder.glob("*.json")) == ["curve", "hintel", "infinibench"]   # one file per benchmark, naming its paper
    assert all(set(json.loads(f.read_text(encoding="utf-8"))["papers"]) == {f.stem} for f in folder.glob("*.json"))


def test_hintel_tables_3_to_5_are_the_printed_rows_cell_for_cell():
    text = _lines("hintel_tables.txt")
    for tid in ("3", "4", "5"):
        t, g = _table("hintel", tid), _grid("hintel", tid)
        head = text.index(f"{t['row_header']} " + " ".join(dict.fromkeys(c.split()[0] for c in t["columns"])))
        cap = next(i for i in range(head, len(text)) if text[i].startswith(f"Table {tid}:"))
        body = text[head + 2:cap]
        assert len(body) == len(t["rows"]) and len(t["columns"]) == 12          # row and column counts as printed
        for line, row in zip(body, t["rows"]):
            printed = " ".join(g[row][c]["text"] if c in g[row] else "–" for c in t["columns"])
            assert line == f"{row} {printed}", (tid, row)
    assert sum(1 for c in CELLS if c["paper"] == "hintel" and c["table"] == "5") == 3 * 12 - 4   # Caption-Only's 4 blanks


def test_infinibench_table_4_is_the_printed_sequence_and_its_16_frame_rows_are_named_in_the_text():
    text = _lines("infinibench_tables.txt")
    body = text[text.index("Baseline Random"):text.index("Table 4: Impact of varying frame rates on model performance.")]
    t, g = _table("infinibench", "4"), _grid("infinibench", "4")
    assert len(t["rows"]) == 16 and len(t["columns"]) == 11
    seq, model = ["Baseline Random", "N/A", g["Baseline Random"]["Grounding Skills"]["text"], "N/A",
                  g["Baseline Random"]["Avg. Acc."]["text"], "N/A"], None
    for row in t["rows"][1:]:
        name, frame = row.rsplit(" ", 1)
        if name != model: seq.append(name); model = name
        if frame != "(16)": seq.append(frame)
        seq += [g[row][c]["text"] for c in t["columns"][1:]]
    assert body == seq
    assert "from 16 to 128" in text[1] and "factor of 62" in text[1]       # §4.3.5: the unlabelled rows are 16 frames
    assert {c["where"]["num_frames"] for c in CELLS if c["row"].endswith("(16)")} == {16}


def test_infinibench_table_5_and_the_table_3_numbers_quoted_in_section_4_3_2():
    text = _lines("infinibench_tables.txt")
    t, g = _table("infinibench", "5"), _grid("infinibench", "5")
    head = text.index("Model / Judge\t" + "\t".join(t["columns"]))
    body = text[head + 1:text.index("Table 5: Ablation study demonstrates our LLM-based judge robustness.")]
    assert [l.split("\t")[0] for l in body] == t["rows"] and len(body) == 13
    for line in body:
        row = line.split("\t")[0]
        assert line == "\t".join([row] + [g[row][f"judge {j}"]["text"] for j in t["columns"]])
    quoted = [c for c in CELLS if c["paper"] == "infinibench" and c["table"] == "3"]
    assert len(quoted) == 4 and all(c["text"] in text[0] and c["model"] in text[0] for c in quoted)
    assert "reaches only 47.1% accuracy" in text[0]
    assert {"2", "3", "6", "7", "8", "9"} == set(next(x for x in DOC["not_in_text"] if x["paper"] == "infinibench")["tables"])


def test_curve_main_ablation_and_key_findings_numbers():
    text = _lines("curve_tables.txt")
    t, g = _table("curve", "main"), _grid("curve", "main")
    head = text.index("Model\tAggregate\tHighest Region\tLowest Region")
    body = text[head + 1:head + 1 + len(t["rows"])]
    assert len(body) == 8 and text[head + 1 + len(t["rows"])].startswith("Ablation")
    for line, row in zip(body, t["rows"]):
        cells = g[row]
        hi = next(c for k, c in cells.items() if k.startswith("Highest")); lo = next(c for k, c in cells.items() if k.startswith("Lowest"))
        assert line == f"{row}\t{cells['Aggregate']['text']}\t{hi['where']['locale']} ({hi['text']})\t{lo['where']['locale']} ({lo['text']})"
    for c in (c for c in CELLS if c["paper"] == "curve" and c["table"] == "ablation"):
        line = next(l for l in text if l.startswith(c["row"] + "\t"))
        assert c["text"] in line and c["where"].get("locale", "") in line
    for c in (c for c in CELLS if c["paper"] == "curve" and c["table"] == "key findings"):
        assert any(f"{c['column']} ({c['text']}%)" in l or f"{c['column']}, {c['text']}%" in l for l in text), c
    assert len(_table("curve", "ablation")["rows"]) == 3


# Printed means that do not equal the mean of their printed cells (within rounding), as the paper prints them.
HINTEL_MEAN_DEVIATIONS = {
    ("3", "Model Mean", "VQAv2 Tel"), ("3", "Model Mean", "JEE-T Tel"), ("3", "Model Mean", "Ours-T Tel"),
    ("4", "Gemma3-12B", "Ours-H En"), ("4", "Model Mean", "VQAv2 Hi"), ("4", "Model Mean", "VQAv2 En"),
    ("4", "Model Mean", "RealWorldQA Hi"), ("4", "Model Mean", "RealWorldQA En"), ("4", "Model Mean", "CLEVR-Math Hi"),
    ("4", "Model Mean", "CLEVR-Math En"), ("4", "Model Mean", "JEE-H Hi"), ("4", "Model Mean", "JEE-H En"),
    ("4", "Model Mean", "VAANI-H Hi"), ("4", "Model Mean", "VAANI-H En"), ("4", "Model Mean", "Ours-H Hi"),
    ("4", "Model Mean", "Ours-H En")}


def test_printed_averages_match_the_cells_except_the_papers_own_listed_deviations():
    off = set()
    for tid in ("3", "4", "5"):
        g = _grid("hintel", tid)
        for row, cols in g.items():
            for col, c in cols.items():
                if "mean_of" in c:                                           # Ours-H/T: the five subsets of that language
                    parts = [x["value"] for k, x in cols.items() if k.endswith(col[-3:]) and "mean_of" not in x]
                    if len(parts) == 5 and abs(sum(parts) / 5 - c["value"]) > 0.01: off.add((tid, row, col))
                if c.get("mean_over_rows"):
                    parts = [g[r][col]["value"] for r in g if r != row]
                    if abs(sum(parts) / len(parts) - c["value"]) > 0.01: off.add((tid, row, col))
    assert off == HINTEL_MEAN_DEVIATIONS
    g = _grid("infinibench", "4")
    for row, cols in g.items():
        for c in (c for c in cols.values() if "mean_of" in c):
            parts = [x["value"] for x in cols.values() if x["where"].get("skill") in c["mean_of"]]
            assert len(parts) == 4 and abs(sum(parts) / 4 - c["value"]) <= 0.1, (row, c["column"])


def _fake_run(root, name, rows, dataset=None, **cfg):
    c = RunConfig(**{"benchmark": "hintel", "model": "gpt-4.1", **cfg}, run_name=name, output_root=str(root))
    st = RunStore(root / name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_scores_csv(rows); st.write_summary({"overall": rates(rows), **({"dataset": dataset} if dataset else {})}); st.close()


def _curve_item(i, score, video=None):
    return {"sample_id": f"q{i}", "cluster": f"video:{i if video is None else video}", "locale": "te-IN", "valid": True, "error": None,
            "score": score}


CURVE_RELEASE = {"benchmark": "curve", "source": "https", "location": "https://storage.googleapis.com/neptunedata/curve.json",
                 "digest": "0f" * 32}     # what a run on `vlmlens data get curve` records (data.provenance)


def _item(i, subset, lang, score, error=None):
    return {"sample_id": f"{subset}-{lang}-{i}", "subset": subset, "language": lang, "valid": error is None, "error": error,
            "score": None if error else score}


HINTEL_JUDGE = "gpt-4.1-2025-04-14"      # the hybrid evaluation's judge, HinTel-AlignBench §4
IB = {"benchmark": "infinibench", "modality": "video+subtitles"}      # InfiniBench's protocol: video with subtitles (§B.7)


@pytest.fixture
def known_runs(tmp_path):
    "GPT-4.1 at exactly 68% on the 1,000 Hindi VQAv2 items (paper 68.00), 20% on the 1,000 Telugu ones (paper 68.70, 50 errored)."
    _fake_run(tmp_path, "hi", [_item(i, "vqav2", "hi", float(i < 680)) for i in range(1000)], language="hi", judge=HINTEL_JUDGE)
    _fake_run(tmp_path, "te", [_item(i, "vqav2", "te", float(i < 200), "timeout" if i >= 950 else None) for i in range(1000)],
              language="te", judge=HINTEL_JUDGE)
    return tmp_path


def test_local_hintel_items_get_the_difference_and_a_wilson_interval_but_never_a_verdict(known_runs):
    "HinTel has no fetchable release: 1,000 local items a subset are counted like the paper's, but are not its items."
    cmp = V.compare(RunSet.discover(known_runs))
    assert sorted(cmp.column) == ["VQAv2 Hi", "VQAv2 Tel"] and not cmp.attrs["unmatched"]
    hi, te = (cmp[cmp.column == c].iloc[0] for c in ("VQAv2 Hi", "VQAv2 Tel"))
    assert (hi.table, hi.model, hi.paper_value, hi.n, hi.paper_n, hi.coverage) == ("4", "GPT-4.1", 68.0, 1000, 1000, "not papers")
    assert hi.ours == pytest.approx(68.0) and hi["diff"] == 0.0 and hi.verdict == "not papers" and pd.isna(hi.outside)
    assert (round(hi.ci_low, 2), round(hi.ci_high, 2), hi.ci_method) == (65.04, 70.82, "wilson")   # Wilson, 680 of 1,000 images
    assert te.ours == pytest.approx(20.0) and te["diff"] == -48.7 and te.verdict == "not papers"   # errors count as wrong
    assert te.ci_high < 68.7


def test_a_subset_of_the_papers_items_is_labelled_with_its_coverage_and_gets_no_verdict(tmp_path, capsys):
    from vlmlens.cli import main
    _fake_run(tmp_path, "four", [_item(i, "vqav2", "hi", 1.0) for i in range(4)], language="hi", judge=HINTEL_JUDGE, limit=4)
    _fake_run(tmp_path, "few", [_item(i, "vaani_h", "hi", 1.0) for i in range(945)], language="hi", judge=HINTEL_JUDGE, limit=945)
    _fake_run(tmp_path, "cut", [_curve_item(i, 1.0) for i in range(100)], benchmark="curve", model="gemini-2.5-pro",
              judge="gemini-2.5-flash", limit=100, dataset=CURVE_RELEASE)
    cmp = V.compare(RunSet.discover(tmp_path)).set_index("column")
    assert (cmp.loc["VQAv2 Hi", "coverage"], cmp.loc["VQAv2 Hi", "verdict"]) == ("not papers", "not papers") and pd.isna(cmp.loc["VQAv2 Hi", "outside"])
    assert cmp.loc["VAANI-H Hi", "verdict"] == "not papers"                         # local items: never the paper's, whatever n
    assert (cmp.loc["Aggregate", "coverage"], cmp.loc["Aggregate", "verdict"]) == ("subset", "subset")   # the release, cut by --limit
    assert main(["report", str(tmp_path / "cut"), "--vs-paper"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "Aggregate" in l)
    assert "100 of 2,400" in line and "none: subset of items" in line and "paper outside CI" not in line and "within" not in line
    assert main(["report", str(tmp_path / "four"), "--vs-paper"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "VQAv2 Hi" in l)
    assert "none: not the paper's items" in line and "paper outside CI" not in line and "within" not in line
    assert "100.00" in line and "51.01–100.00" in line                               # Wilson: 4 of 4 is not 100–100


def test_too_few_items_get_no_verdict_and_intervals_never_collapse():
    assert V.cell_value([1.0], "%")["ci_low"] < 25 and V.cell_value([1.0] * 4, "%")["ci_high"] == 100
    scores = V.cell_value([0.7] * 3, "0-10")                                         # three identical 0-10 judge scores
    assert scores["ci_high"] - scores["ci_low"] > 5 and scores["ours"] == pytest.approx(7.0)
    assert V._verdict([], "full", V.MIN_ITEMS - 1, 10.0, True) == "too few"
    assert V._verdict([], "full", V.MIN_ITEMS, 10.0, False) == "outside"


def test_cli_prints_ours_beside_the_paper_and_a_message_for_a_model_no_paper_reports(known_runs, capsys):
    import csv
    from vlmlens.cli import main
    _fake_run(known_runs, "other", [_item(i, "vqav2", "hi", 1.0) for i in range(4)], model="tiny-qwen2.5-vl", language="hi")
    assert main(["report", str(known_runs), "--vs-paper"]) == 0
    cap = capsys.readouterr()
    line = {m.group(1): l for l in cap.out.splitlines() for m in [re.search(r"(GPT-4\.1\s+VQAv2 Hi|GPT 4\.1\s+VQAv2 Tel)", l)] if m}
    assert len(line) == 2, cap.out
    hi, te = (next(v for k, v in line.items() if k.endswith(c)) for c in ("Hi", "Tel"))
    assert "HinTel Table 4" in hi and "HinTel Table 3" in te and "hintel T" not in cap.out
    assert re.search(r"68\.00\s+68\.00\s+\+0\.00\s+65\.04–70\.82\s+1,000\s+none: not the paper's items\s*$", hi)
    assert re.search(r"68\.70\s+20\.00\s+-48\.70\s+\d+\.\d\d–\d+\.\d\d\s+1,000\s+none: not the paper's items\s*$", te)
    assert "other: tiny-qwen2.5-vl is not a model the hintel paper reports" in cap.err and "Traceback" not in cap.err
    assert main(["report", str(known_runs / "other"), "--vs-paper"]) == 0     # nothing to compare: a message, exit 0
    cap = capsys.readouterr()
    assert "not a model the hintel paper reports" in cap.err and "no run matches a cell" in cap.err
    _fake_run(known_runs, "demo", [_item(0, "vqav2", "hi", 1.0)], benchmark="demo")
    assert main(["report", str(known_runs / "demo"), "--vs-paper"]) == 0
    assert "demo: no published numbers for demo" in capsys.readouterr().err
    assert main(["report", str(known_runs), "--vs-paper", "--format", "csv"]) == 0
    text = capsys.readouterr().out
    back = list(csv.DictReader(io.StringIO(text), quoting=csv.QUOTE_NONNUMERIC))     # text quoted, numbers bare
    assert len(back) == 2 and {r["verdict"] for r in back} == {"not papers"} and {r["ci_method"] for r in back} == {"wilson"}
    assert {r["paper_text"] for r in back} == {"68.00", "68.70"} and all(r["n"] == 1000 for r in back)
    assert ",1000," in text and "1000.0" not in text                                # counts are integers
    df = pd.read_csv(io.StringIO(text))
    assert str(df.n.dtype) == "int64" and str(df.paper_n.dtype) == "int64" and df.setting.isna().all()


def test_cells_without_items_are_left_out_or_blank_never_zero(known_runs):
    assert len(V.compare(RunSet.discover(known_runs))) == 2
    full = V.compare(RunSet.discover(known_runs), full=True)
    empty = full[full.ours.isna()]
    assert len(empty) > 0 and not (full.ours == 0).any()
    assert set(empty.column) >= {"RealWorldQA Hi", "Ours-H Hi", "JEE-T Tel"}   # subsets the runs did not score
    assert not full.column.str.endswith(" En").any()                              # a Hindi or Telugu run is not an English one
    assert "–" in V.render_table(V.vs_paper_table(full), "text")


def test_a_run_that_answered_nothing_is_never_compared_or_printed_as_a_number(tmp_path, capsys):
    "GPT-4o on InfiniBench, every item a MediaError (the run exited 3): no row, no 0.00, one line on stderr."
    from vlmlens.cli import main
    rows = [{"sample_id": f"{s}{i}", "skill": s, "valid": False, "error": "MediaError: no video", "score": None} for s in SKILLS for i in range(2)]
    _fake_run(tmp_path, "dead", rows, model="gpt-4o", num_frames=450, judge="gpt-4o", **IB)
    half = [{**r, "error": None, "valid": True, "score": 0.0} if r["skill"] == "global_appearance" else r for r in rows]
    _fake_run(tmp_path, "half", half, model="gpt-4o", num_frames=450, judge="gpt-4o", **IB)
    cmp = V.compare(RunSet.discover(tmp_path), full=True)
    assert "dead: answered nothing (16 items, every one errored): never compared" in cmp.attrs["unmatched"]
    assert set(cmp.run) <= {"half"} and not cmp[cmp.ours.notna()].column.isin(["Scene Transitions", "Avg. Acc."]).any()
    assert any(m.startswith("half: ") and "every one of their items errored" in m for m in cmp.attrs["unmatched"])
    assert main(["report", str(tmp_path / "dead"), "--vs-paper"]) == 0
    cap = capsys.readouterr()
    assert "0.00" not in cap.out and "answered nothing" in cap.err


def test_a_real_hintel_run_of_a_served_paper_model(tmp_path, monkeypatch):
    "A run through the runner (served `gpt-4.1` that always answers 'A'): every cell it has items for, at its own accuracy."
    from vlmlens.benchmarks import hintel as H
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    data = H.build_synthetic_hintel(tmp_path / "data", n_per_subset=2)
    with LoopbackServer() as server:
        run(RunConfig(benchmark="hintel", data_path=str(data), model=f"openai-compatible:gpt-4.1@{server.openai_base_url}",
                      language="hi", judge="none", output_root=str(tmp_path / "runs"), progress=False,
                      model_kwargs={"cache": False, "progress": False}))
    runs = RunSet.discover(tmp_path / "runs")
    cmp = V.compare(runs)
    s = runs[0].scores()
    got = cmp[~cmp.derived].set_index("column")
    assert set(got.model) == {"GPT-4.1"} and len(got) >= 3 and set(got.verdict) == {"not papers"}   # synthetic items: never the paper's
    assert not got.index.str.startswith(("VQAv2", "CLEVR-Math")).any()      # unjudged: not the paper's hybrid scoring
    assert any("paper cells left out, setting differs: judge none (paper GPT-4.1 (2025-04-14))" in m
               for m in cmp.attrs["unmatched"]), cmp.attrs["unmatched"]
    assert len(cmp.run.iloc[0]) <= V.LABEL_CHARS and "/" not in cmp.run.iloc[0]
    for col, r in got.iterrows():
        sub = {"VQAv2": "vqav2", "RealWorldQA": "realworldqa", "CLEVR-Math": "clevr_math", "JEE-H": "jee_h", "VAANI-H": "vaani_h"}[col.split()[0]]
        mine = s[(s.subset == sub) & (s.language == "hi")]
        assert r.ours == pytest.approx(100 * rates(mine.astype(object).where(mine.notna(), None).to_dict("records"))["accuracy"])
        assert r["diff"] == pytest.approx(round(r.ours, 2) - r.paper_value)


SKILLS = ["global_appearance", "scene_transitions", "character_actions", "chronological_understanding",
          "summarization", "deep_context_understanding", "spoiler_questions", "linking_multiple_events"]


def _ib_rows(n=10, right=3, score=0.4):
    return [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": float(i < right) if k < 4 else score}
            for k, s in enumerate(SKILLS) for i in range(n)]


def test_infinibench_cells_need_the_frames_and_judge_the_paper_used(tmp_path):
    "Table 4 cells match a run at the row's frame count; Table 5 cells the run's judge and the model's §B.7 frames; reasoning scores on 0-10."
    for name, frames, judge in (("q128", 128, "gpt-4o-mini"), ("q8", 8, "gemini-2.0-flash"), ("q768", 768, "gemini-2.0-flash")):
        _fake_run(tmp_path, name, _ib_rows(), model="qwen2.5-vl-7b", num_frames=frames, judge=judge, **IB)
    q128, q8, q768 = (V.compare(RunSet.discover(tmp_path / n)) for n in ("q128", "q8", "q768"))
    assert set(q128.table) == {"4"} and q8.empty and set(q768.table) == {"4", "5"}
    ga = q128[q128.column == "Global Appearance"].iloc[0]
    assert (ga.paper_value, ga.ours, ga.n, ga.verdict) == (32.0, pytest.approx(30.0), 10, "items unknown")   # the test split is not released
    summ = q128[q128.column == "Summarization"].iloc[0]
    assert summ.unit == "0-10" and summ.ours == pytest.approx(4.0) and summ["diff"] == pytest.approx(1.1)
    acc = q128[q128.column == "Avg. Acc."].iloc[0]
    assert acc.derived and acc.ours == pytest.approx(30.0) and pd.isna(acc.ci_low)   # a mean of columns: no CI
    assert not q128.row if hasattr(q128, "row") else True
    assert q768[q768.table == "5"].column.tolist() == ["judge Gemini 2.0"] and q768[q768.table == "5"].paper_value.tolist() == [4.58]
    assert q768[(q768.table == "4") & (q768.column == "Summarization")].empty       # 0-10 cells: judged by GPT-4o mini or GPT-4o (§4.2, §B)
    assert any("judge Gemini 2.0 Flash (paper GPT-4o mini or GPT-4o)" in m for m in q768.attrs["unmatched"])
    assert "frames 8 (paper 768)" in " ".join(q8.attrs["unmatched"])                # no Table 4 row, no §B.7 setting has 8 frames


def test_cli_judge_reading_switch(tmp_path, capsys):
    "`vlmlens report --vs-paper` leaves a GPT-4o mini run out of Table 5's 'GPT-4o' column and says so; --judge-reading compares it, flagged."
    from vlmlens.cli import main
    rows = [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": 0.5} for s in SKILLS for i in range(4)]
    _fake_run(tmp_path, "mini", rows, model="qwen2.5-vl-7b", num_frames=768, judge="gpt-4o-mini", **IB)
    assert main(["report", str(tmp_path), "--vs-paper"]) == 0
    cap = capsys.readouterr()
    assert "InfiniBench Table 5" not in cap.out and "--judge-reading compares the judge, flagged" in cap.err
    assert main(["report", str(tmp_path), "--vs-paper", "--judge-reading"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "InfiniBench Table 5" in l)
    assert "judge GPT-4o " in line and "4.56" in line and "judge GPT-4o mini, paper prints GPT-4o" in line


def test_infinibench_runs_off_the_papers_protocol_are_left_out_and_counted(tmp_path, capsys):
    "Video only, strict scoring, no IDK option, lettered options, a fenced judge: each a departure; --include-departures lists them."
    from vlmlens.cli import main
    off = {"idk_option": False, "answer_format": "letter", "scoring": "strict", "judge_fence": True}
    _fake_run(tmp_path, "off", _ib_rows(), benchmark="infinibench", model="qwen2.5-vl-7b", num_frames=128, judge="gpt-4o-mini",
              modality="video", benchmark_kwargs=off)
    cmp = V.compare(RunSet.discover(tmp_path))
    assert cmp.empty
    msg = cmp.attrs["unmatched"][0]
    for d in ("modality video (paper video+subtitles)", "idk option False (paper True)", "answer format letter (paper number)",
              "scoring strict (paper official)", "judge fence True (paper False)"):
        assert d in msg, msg
    assert msg.startswith("off: 13 paper cells left out, setting differs: ") and "--include-departures shows them" in msg
    assert "frames 128 (paper 768)" in msg and "--judge-reading" not in msg     # Table 5's row; the judge alone would not bring it in
    shown = V.compare(RunSet.discover(tmp_path), include_departures=True)
    assert len(shown) == 13 and set(shown.table) == {"4", "5"} and set(shown.verdict) == {"setting differs"} and shown.outside.isna().all()
    assert all("scoring strict (paper official)" in s and "modality video" in s for s in shown.setting)
    assert main(["report", str(tmp_path), "--vs-paper", "--include-departures"]) == 0
    out = capsys.readouterr().out
    assert "none: setting differs" in out and "scoring strict (paper official)" in out


def test_hintel_runs_off_the_papers_protocol_are_left_out(tmp_path):
    "English prompts leave every cell out; the vlmlens JEE scoring and a dropped explanation rule leave only the JEE cells out."
    rows = [_item(i, s, "hi", 1.0) for s in ("realworldqa", "jee_h") for i in range(5)]
    _fake_run(tmp_path / "en", "en", rows, language="hi", judge=HINTEL_JUDGE, benchmark_kwargs={"prompt_language": "en"})
    _fake_run(tmp_path / "jee", "jee", rows, language="hi", judge=HINTEL_JUDGE,
              benchmark_kwargs={"jee_scoring": "vlmlens", "jee_explanation_rule": False})
    en, jee = V.compare(RunSet.discover(tmp_path / "en")), V.compare(RunSet.discover(tmp_path / "jee"))
    assert en.empty and "prompt language en (paper item): 2 cells" in en.attrs["unmatched"][0]
    assert jee.column.tolist() == ["RealWorldQA Hi"]
    assert "jee scoring vlmlens (paper official): 1 cell; jee explanation rule False (paper True): 1 cell" in jee.attrs["unmatched"][0]


def test_curve_locale_cells_the_aggregate_and_one_comparison_per_number(tmp_path):
    rows = [{"sample_id": f"{loc}{i}", "locale": loc, "valid": True, "error": None, "score": float(i < k)}
            for loc, k in (("te-IN", 3), ("ko-KR", 6)) for i in range(10)]
    _fake_run(tmp_path, "pro", rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash")
    cmp = V.compare(RunSet.discover(tmp_path)).set_index("column")
    assert cmp.loc["Aggregate", "ours"] == pytest.approx(45.0) and cmp.loc["Aggregate", "n"] == 20
    assert (cmp.loc["Aggregate", "paper_n"], cmp.loc["Aggregate", "verdict"]) == (2400, "not papers")    # no release lock recorded
    assert cmp.loc["Lowest Region (te-IN)", "ours"] == pytest.approx(30.0)
    assert cmp.loc["Lowest Region (te-IN)", "table"] == "main, key findings"          # 28.00 printed twice: one comparison
    assert cmp.loc["Highest Region (ko-KR)", "table"] == "main, key findings" and "ko-KR" not in cmp.index
    assert "ta-IN" not in cmp.index and "mr-IN" not in cmp.index                     # locales with no items: left out
    assert not (cmp.table == "ablation").any()                                       # ablation cells name no model
    text = V.render_table(V.vs_paper_table(V.compare(RunSet.discover(tmp_path))), "text")
    assert "MINERVA-Cultural main results, key findings" in text


def test_curve_needs_the_papers_judge_and_accuracy(tmp_path):
    rows = [{"sample_id": f"te{i}", "locale": "te-IN", "valid": True, "error": None, "score": float(i < 3)} for i in range(10)]
    _fake_run(tmp_path, "claude", rows, benchmark="curve", model="gemini-2.5-pro", judge="claude-sonnet-4")
    _fake_run(tmp_path, "half", rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash",
              benchmark_kwargs={"accuracy": "mean_half"})
    cmp = V.compare(RunSet.discover(tmp_path))
    assert cmp.empty
    msgs = " | ".join(cmp.attrs["unmatched"])
    assert "judge Claude" in msgs and "(paper Gemini 2.5 Flash)" in msgs and "accuracy mean_half (paper share_of_2s)" in msgs


def test_the_same_number_in_two_hintel_tables_is_one_comparison(tmp_path):
    "Gemma3-27B's standard-prompt Hindi cells are printed in Table 4 and again in Table 5 (Gemma-27B, Standard)."
    rows = [_item(i, "realworldqa", "hi", float(i % 2)) for i in range(20)]
    _fake_run(tmp_path, "g", rows, model="gemma3-27b", language="hi", judge=HINTEL_JUDGE)
    cmp = V.compare(RunSet.discover(tmp_path))
    rw = cmp[cmp.column == "RealWorldQA Hi"]
    t4 = next(c for c in CELLS if c["table"] == "4" and c["row"] == "Gemma3-27B" and c["column"] == "RealWorldQA Hi")
    t5 = next(c for c in CELLS if c["table"] == "5" and c["row"] == "Standard" and c["column"] == "RealWorldQA Hi")
    assert len(rw) == (1 if t4["value"] == t5["value"] else 2)
    if t4["value"] == t5["value"]: assert rw.table.tolist() == ["4, 5"]
    assert not cmp.duplicated(["run", "column", "paper_value"]).any()


def test_run_labels_are_short_and_name_no_path(tmp_path):
    rows = [_item(i, "realworldqa", "hi", 1.0) for i in range(5)]
    for name, d in (("a", "/very/long/absolute/path/to/some/data/folder/one"), ("b", "/very/long/absolute/path/to/other/data/two")):
        _fake_run(tmp_path, name, rows, language="hi", judge=HINTEL_JUDGE, data_path=d, max_new_tokens=64 if name == "a" else 128)
    cmp = V.compare(RunSet.discover(tmp_path))
    assert set(cmp.run) == {"max new tokens 64", "max new tokens 128"}


def test_cells_that_are_not_scores_are_never_put_beside_a_run(tmp_path):
    "Table 6 (error shares of GPT 4.1 on VAANI-T) names a model a run can be, but a run's accuracy is not an error share."
    _fake_run(tmp_path, "te", [_item(i, "vaani_t", "te", 1.0) for i in range(10)], language="te", judge=HINTEL_JUDGE)
    full = V.compare(RunSet.discover(tmp_path), full=True)
    assert len(full) and set(full.table) == {"3"} and "6" in set(V.paper_cells("hintel").table)


def test_hintel_judged_cells_need_the_papers_judge(tmp_path):
    "VQAv2/CLEVR-Math (hybrid exact match + gpt-4.1-2025-04-14) are compared only with runs that judge as the paper did."
    rows = [_item(i, s, "hi", 1.0) for s in ("vqav2", "clevr_math", "realworldqa") for i in range(5)]
    for name, judge in (("paper", HINTEL_JUDGE), ("mini", "gpt-4o-mini"), ("none", "none"), ("unset", None)):
        _fake_run(tmp_path, name, rows, language="hi", judge=judge)
    cmp = V.compare(RunSet.discover(tmp_path))
    by_run = {r: set(g.column) for r, g in cmp.groupby("run")}
    paper_run = next(r for r in by_run if "2025-04-14" in r)
    assert {"VQAv2 Hi", "CLEVR-Math Hi", "RealWorldQA Hi"} <= by_run[paper_run]
    for r, cols in by_run.items():
        if r != paper_run: assert cols.isdisjoint({"VQAv2 Hi", "CLEVR-Math Hi"}) and "RealWorldQA Hi" in cols, r
    msgs = cmp.attrs["unmatched"]
    assert any(m.startswith("mini: 2 paper cells left out") and "judge GPT-4o mini (paper GPT-4.1 (2025-04-14))" in m for m in msgs)
    assert sum("judge none (paper GPT-4.1 (2025-04-14))" in m for m in msgs) == 2        # 'none' and no judge at all
    assert set(cmp.setting) == {""}                                                     # no reading covers a HinTel judge


def test_a_judge_is_matched_by_the_model_it_resolves_to_and_only_that(tmp_path):
    "HinTel: gpt-4.1 (OpenAI's undated alias) is not the dated judge; InfiniBench: the hub id behind qwen2.5-vl-7b is, a look-alike is not."
    rows = [_item(i, "vqav2", "hi", 1.0) for i in range(5)]
    for name, judge in (("dated", HINTEL_JUDGE), ("alias", "gpt-4.1")):
        _fake_run(tmp_path / "h", name, rows, language="hi", judge=judge)
    summary = tmp_path / "h" / "dated" / "summary.json"                       # the judge id the run recorded
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "judge_id": "hintel-hybrid/gpt-4.1-2025-04-14/t0.7s1"}))
    dated, alias = (V.compare(RunSet.discover(tmp_path / "h" / n)) for n in ("dated", "alias"))
    assert set(dated.column) == {"VQAv2 Hi"} and alias.empty
    assert any("judge GPT-4.1 (paper GPT-4.1 (2025-04-14))" in m for m in alias.attrs["unmatched"])
    judges = {"hub": "Qwen/Qwen2.5-VL-7B-Instruct", "served": "openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:9/v1",
              "ckpt": "/ckpt/Qwen2.5-VL-7B", "lookalike": "openai-compatible:Qwen2.5-VL-7B@http://127.0.0.1:9/v1"}
    for name, judge in judges.items():
        _fake_run(tmp_path / "i", name, _ib_rows(score=0.4), model="qwen2.5-vl-7b", num_frames=768, judge=judge, **IB)
    judged = {n for n in judges if (V.compare(RunSet.discover(tmp_path / "i" / n)).table == "5").any()}
    assert judged == {"hub", "served"}, judged          # the same weights; a checkpoint or served name that only looks alike is not


def test_infinibench_table_3_cells_carry_the_papers_input_settings(tmp_path):
    "§4.3.2's Table 3 numbers: video+subtitles at the §B.7 frames (GPT-4o 450, InternVL3 16 or 128); other settings are not matched."
    rows = _ib_rows(right=5, score=0.6)
    for name, model, mod, frames in (("g450", "gpt-4o", "video+subtitles", 450), ("g32", "gpt-4o", "video+subtitles", 32),
                                     ("gvid", "gpt-4o", "video", 450), ("i128", "internvl3-8b", "video+subtitles", 128),
                                     ("gem", "gemini-2.0-flash", "video+subtitles", 450)):
        _fake_run(tmp_path, name, rows, benchmark="infinibench", model=model, modality=mod, num_frames=frames, judge="gpt-4o")
    t3 = {n: V.compare(RunSet.discover(tmp_path / n)) for n in ("g450", "g32", "gvid", "i128", "gem")}
    t3 = {n: c[c.table.str.contains("3")] for n, c in t3.items()}
    assert sorted(t3["g450"].column) == ["Avg. Acc.", "Avg. Score"]
    assert t3["g450"].set_index("column").loc["Avg. Acc.", "ours"] == pytest.approx(50.0)
    assert t3["g32"].empty and t3["gvid"].empty and t3["gem"].empty                 # other frames, no subtitles, native video
    assert t3["i128"].column.tolist() == ["Avg. Score"] and t3["i128"].ours.tolist() == [pytest.approx(6.0)]
    cells = {c["model"]: c["where"] for c in CELLS if c["paper"] == "infinibench" and c["table"] == "3"}
    assert cells["GPT-4o"]["modality"] == "video+subtitles" and cells["InternVL3"]["num_frames"] == [16, 128]
    assert all(set(w) <= set(DOC["where_keys"]) for w in cells.values())


def test_protocols_are_the_ones_the_papers_state():
    "Item counts (HinTel Table 2, CURVE's 2,400), InfiniBench's unreleased test split, §B.7 frames and CURVE's judge, from the text."
    q = _lines("protocols.txt")
    protos = {(p["paper"], tuple(p["tables"])): p for p in DOC["protocols"]}
    hin = protos[("hintel", ("3", "4", "5"))]
    head = q[0].split()[1:]
    names = {"VQAv2": "vqav2", "RealWorldQA": "realworldqa", "CLEVR-Math": "clevr_math", "JEE-H": "jee_h", "JEE-T": "jee_t",
             "VAANI-H": "vaani_h", "VAANI-T": "vaani_t"}
    printed = {names[h]: int(v.replace(",", "")) for line in q[1:4] for h, v in zip(head, line.split()[1:]) if v != "-"}
    assert hin["items"]["counts"] == printed
    ib = protos[("infinibench", ("3", "4", "5"))]
    assert ib["items"] is None and "test split" in q[4] and "will not release the test set" in q[5]
    assert ib["settings"]["modality"] == "video+subtitles"
    frames = protos[("infinibench", ("5",))]["model_settings"]
    assert "768 input frames" in q[6] and frames["Qwen2.5VL"] == frames["Qwen2VL"] == {"num_frames": 768}
    assert "1,000 frames" in q[7] and frames["Video-Flash"] == {"num_frames": 1000}
    assert "512 frames" in q[8] and frames["LongVU"] == {"num_frames": 512}
    cv = protos[("curve", ("main", "key findings"))]
    assert "(Gemini-2.5-Flash)" in q[9] and cv["settings"]["judge"] == "gemini-2.5-flash"
    assert "2,400 questions" in q[10] and cv["items"] == {"total": 2400}
    from vlmlens.benchmarks import hintel as H, infinibench as I, minerva as M
    options = {"hintel": H.KWARGS_SCHEMA, "infinibench": I.KWARGS_SCHEMA, "curve": M.CURVE_KWARGS}
    for p in DOC["protocols"]:                                   # every option a protocol names exists, with a value it accepts
        names_ = {o.name: o for o in options[p["paper"]]}
        for part in [p.get("settings", {}), *p.get("subset_settings", {}).values()]:
            for k, v in part.items():
                if k.startswith("benchmark_kwargs."):
                    o = names_[k.split(".", 1)[1]]
                    assert not getattr(o, "choices", None) or v in o.choices, (k, v)


def test_hintel_table_6_is_the_printed_error_category_table():
    text = _lines("hintel_tables.txt")
    t, g = _table("hintel", "6"), _grid("hintel", "6")
    head = text.index(f"{t['row_header']} English Telugu")
    body = text[head + 1:head + 1 + len(t["rows"])]
    assert text[head + 1 + len(t["rows"])].startswith("Table 6: Error category distribution for GPT 4.1 on VAANI-T")
    assert body == [f"{row} {g[row]['English']['text']}% {g[row]['Telugu']['text']}%" for row in t["rows"]]
    assert {c["model"] for c in CELLS if c["table"] == "6"} == {"GPT 4.1"} and {c["section"] for c in _grid("hintel", "6")["Visual Grounding Error"].values()} == {"§5.6"}
    assert {(c["column"], c["where"]["language"], c["where"]["subset"]) for row in g.values() for c in row.values()} == \
        {("English", "en", "vaani_t"), ("Telugu", "te", "vaani_t")}


def test_curve_evidence_statistics_are_quoted_in_the_text():
    "Each cell with an id (what vlmlens.evidence reads) carries the sentence it comes from, and the sentence is in the paper."
    text = "\n".join(_lines("curve_tables.txt"))
    ids = {c["id"]: c for c in CELLS if c.get("id")}
    assert set(ids) == {"nodes_per_question", "share_timestamped", "divergence_share", "resolved_within_cap", "iterative_gain",
                        "masked_reasoning", "perception_share", "low_high_perception_ratio"}
    for cid, c in ids.items():
        assert c["paper"] == "curve" and c["quote"] in text, cid
        assert re.search(rf"(?<![\d.]){re.escape(c['text'])}(?![\d])", c["quote"]), cid        # the number as printed
    assert "Statistically, each question requires an average of 5.0 atomic nodes" in text


def test_published_numbers_live_only_in_the_data_file():
    "The benchmarks' and evidence's published tables are read from the file, in the shapes their callers use."
    import inspect
    from vlmlens import evidence as E
    from vlmlens.benchmarks import hintel as H, minerva as M
    for mod, printed in ((H, ["72.00 61.05", "0.17, 0.49"]), (M, ["0.1275", "0.6429"]), (E, ["0.997", "0.63,"])):
        src = inspect.getsource(mod)
        assert not [p for p in printed if p in src], mod.__name__
    for tid, rows in H.PAPER_TABLES.items():                                   # {3|4: {row: "12 printed cells"}}
        assert list(rows) == _table("hintel", str(tid))["rows"] and {len(r.split()) for r in rows.values()} == {12}
    assert H.PAPER_TABLES[3]["GPT 4.1"].split()[0] == _grid("hintel", "3")["GPT 4.1"]["VQAv2 Tel"]["text"]
    assert H.paper_table(4).shape == (10, 12)
    assert set(H.PAPER_TABLE6) == {"en", "te"} and all(len(v) == len(H.FAILURE_CATEGORIES) for v in H.PAPER_TABLE6.values())
    assert H.PAPER_TABLE6["te"][1] == _grid("hintel", "6")["Visual Grounding Error"]["Telugu"]["value"] / 100
    assert [len(r) for r in M.CURVE_MAIN_TABLE] == [6] * 8 and M.CURVE_MAIN_TABLE[-1][0] == "Human"
    assert M.CURVE_MAIN_TABLE[-1][1] == pytest.approx(_grid("curve", "main")["Human Baseline"]["Aggregate"]["value"] / 100)
    assert list(M.paper_main_table().columns) == ["model", "registry_name", "aggregate", "highest_locale", "highest", "lowest_locale", "lowest"]
    assert all(isinstance(v, (int, float)) and isinstance(d, str) for v, d in E.EVIDENCE_PAPER.values())
    ids = {c["id"]: c["value"] for c in CELLS if c.get("id")}
    assert E.EVIDENCE_PAPER["share_timestamped"][0] == pytest.approx(ids["share_timestamped"] / 100)      # percent -> fraction
    assert E.EVIDENCE_PAPER["masked_reasoning"][0] == ids["masked_reasoning"] and E.EVIDENCE_PAPER["nodes_per_question"][0] == ids["nodes_per_question"]


def test_judge_and_input_settings_are_the_ones_the_papers_state():
    "Each `where` judge/frames/modality of the judged HinTel cells, InfiniBench Table 3 and Table 5's GPT-4o column is in the quoted text."
    q = _lines("judge_and_input_settings.txt")
    hybrid = next(l for l in q if l.startswith("We adopt a hybrid evaluation strategy."))
    judged = [c for c in CELLS if c["paper"] == "hintel" and c["table"] in "345" and "judge" in c["where"]]
    assert len(judged) == 100 and {c["where"]["judge"] for c in judged} == {HINTEL_JUDGE} and f"“{HINTEL_JUDGE}”" in hybrid
    assert all(c["where"].get("subset") in (None, "vqav2", "clevr_math") for c in judged)            # MCQ subsets need no judge
    assert {c["column"].split()[0] for c in judged} >= {"VQAv2", "CLEVR-Math", "Ours-H", "Ours-T"}
    assert "Model / Judge\tGPT-4o\tGemini 2.0\tQwen 2.5" in q                                        # the header prints GPT-4o
    assert "using a GPT-4o mini" in q[1] and q[2].startswith("The main results in Table 3 use GPT-4o as the judge model")
    gpt4o = [c for c in CELLS if c["paper"] == "infinibench" and c["where"].get("judge") == "gpt-4o"]
    assert {(c["table"], c["column"]) for c in gpt4o} == {("5", "judge GPT-4o"), ("3", "Avg. Score")}
    assert all(c["judge_as_read"] == "gpt-4o-mini" for c in gpt4o)
    t3 = {(c["model"], c["column"]): c["where"] for c in CELLS if c["paper"] == "infinibench" and c["table"] == "3"}
    line = {k: next(l for l in q if l.startswith(k)) for k in ("GPT-4o OpenAI", "Gemini-Flash 2.0", "InternVL3.0")}
    assert "up to 450 frames" in line["GPT-4o OpenAI"] and t3[("GPT-4o", "Avg. Acc.")] == {"modality": "video+subtitles", "num_frames": 450}
    assert "both 16 and 128 frames" in line["InternVL3.0"] and t3[("InternVL3", "Avg. Score")]["num_frames"] == [16, 128]
    assert "native video input" in line["Gemini-Flash 2.0"] and t3[("Gemini-2", "Avg. Score")]["video_input"] == "native"
    assert all(w["modality"] == "video+subtitles" for w in t3.values()) and "subtitle" in line["GPT-4o OpenAI"]


def test_report_csv_and_vs_paper_csv_share_one_schema(known_runs, capsys):
    "`run`, `model`, `language`, `n` mean the same in `report --format csv`, `--vs-paper --format csv` and sweep.csv: codes and integers."
    import csv
    from vlmlens.cli import main
    from vlmlens.sweep import sweep_row
    assert main(["report", str(known_runs), "--format", "csv"]) == 0
    rep = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main(["report", str(known_runs), "--vs-paper", "--format", "csv"]) == 0
    vs_text = capsys.readouterr().out
    vs = pd.read_csv(io.StringIO(vs_text))
    assert set(rep.run) == set(vs.run) == {"hi", "te"} and set(rep.model) == {"gpt-4.1"} and set(rep.language) == {"hi", "te"}
    assert str(rep.n.dtype) == str(vs.n.dtype) == "int64" and "paper_model" in vs.columns and "model" not in vs.columns
    row = sweep_row({"run_name": "hi", "params": {"model": "gpt-4.1", "language": "hi"}}, "ok", known_runs / "hi", None)
    assert set(row) >= {"run", "n", "accuracy", "accuracy_answered", "invalid_rate", "n_errors"}
    assert {"accuracy", "accuracy_answered", "invalid_rate", "n_errors"} <= set(rep.columns)
    assert rep[rep.run == "hi"].n.iloc[-1] == row["n"] == vs[vs.run == "hi"].n.item() == 1000          # the "all items" row
    first = next(csv.reader(io.StringIO(vs_text.splitlines()[1]), quoting=csv.QUOTE_NONNUMERIC))
    assert all(isinstance(v, str) for v in first[:2])                               # text fields quoted


def _curve_2400(right_videos=((0, 100, 5), (240, 370, 4))):
    "2,400 CURVE questions over 540 videos (240 with 5, 300 with 4), every question about a video answered alike: 1,021 right (42.54%)."
    sizes = [5] * 240 + [4] * 300
    right = {v: k for a, b, k in right_videos for v in range(a, b)}
    right[100] = 1
    return [_curve_item(f"{v}-{j}", float(j < right.get(v, 0)), video=v) for v, m in enumerate(sizes) for j in range(m)]


def test_a_verdict_on_the_papers_release_uses_an_interval_over_videos(tmp_path, capsys):
    "Gemini 2.5 Pro at 42.54% on CURVE's 2,400 questions (paper 45.07): outside a Wilson interval, inside the one over videos."
    import numpy as np
    from vlmlens.cli import main
    rows = _curve_2400()
    _fake_run(tmp_path, "pro", rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash", dataset=CURVE_RELEASE)
    agg = V.compare(RunSet.discover(tmp_path)).set_index("column").loc["Aggregate"]
    assert (agg.n, agg.n_clusters, agg.coverage, agg.ci_method, agg.verdict) == (2400, 540, "full", "cluster-bootstrap", "within")
    assert round(agg.ours, 2) == 42.54 and agg["diff"] == -2.53
    by_video = {}
    for r in rows: by_video.setdefault(r["cluster"], []).append(r["score"])
    groups, rng = list(by_video.values()), np.random.default_rng(3)
    means = [sum(map(sum, p)) / sum(map(len, p)) for p in ([groups[i] for i in rng.integers(0, 540, 540)] for _ in range(3000))]
    lo, hi = 100 * np.quantile(means, [0.025, 0.975])
    assert agg.ci_low == pytest.approx(lo, abs=0.3) and agg.ci_high == pytest.approx(hi, abs=0.3) and lo < 45.07 < hi
    wlo, whi = V.wilson(1021 / 2400, 2400)
    assert 100 * whi < 45.07                                                     # independent items would say "outside"
    assert main(["report", str(tmp_path), "--vs-paper"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if "Aggregate" in l)
    assert "45.07" in line and "42.54" in line and "paper within CI (cluster bootstrap over videos)" in line
    assert "percentile bootstrap over videos (whole videos resampled) (2,000 resamples, seed 0)" in " ".join(out.split())


def test_a_run_on_a_fetched_copy_of_the_release_gets_a_verdict_through_its_lock(tmp_path, monkeypatch):
    "The dataset a run records (data.provenance) for the fetched release, locked by data.write_lock from another mirror: a verdict; the same file copied elsewhere: none."
    import shutil
    from vlmlens import data
    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    folder = data.release_dir("curve")
    folder.mkdir(parents=True)
    rows = _curve_2400()
    (folder / "curve.json").write_text(json.dumps([{"key": r["sample_id"], "video_id": r["cluster"]} for r in rows]), encoding="utf-8")
    lock = data.write_lock(folder, data.RELEASES["curve"], '"etag-1"', address="http://127.0.0.1:1/mirror/curve.json")
    fetched = data.provenance(folder / "curve.json")
    assert fetched["digest"] == lock["digest"] and fetched["address"].startswith("http://127.0.0.1")      # a mirror, not the bucket
    shutil.copy(folder / "curve.json", tmp_path / "copy.json")
    elsewhere = data.provenance(tmp_path / "copy.json")
    assert elsewhere["source"] == "local"
    for name, ds in (("fetched", fetched), ("copied", elsewhere)):
        _fake_run(tmp_path / "out", name, rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash", dataset=ds)
    agg = V.compare(RunSet.discover(tmp_path / "out")).query("column == 'Aggregate'").set_index("run_name")
    assert (agg.loc["fetched", "coverage"], agg.loc["fetched", "verdict"]) == ("full", "within")
    assert (agg.loc["copied", "coverage"], agg.loc["copied", "verdict"]) == ("not papers", "not papers")
    (folder / "curve.json").write_text(json.dumps([{"key": r["sample_id"], "video_id": r["cluster"]} for r in rows[:-1]]), encoding="utf-8")
    edited = data.provenance(folder / "curve.json")                     # the release, edited after the download
    assert edited["digest"] == lock["digest"] and edited["edited"][0].startswith("curve.json: size ")
    _fake_run(tmp_path / "out", "edited", rows[:-1] + [rows[-1]], benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash", dataset=edited)
    agg = V.compare(RunSet.discover(tmp_path / "out")).query("column == 'Aggregate'").set_index("run_name")
    assert (agg.loc["edited", "coverage"], agg.loc["edited", "verdict"]) == ("not papers", "not papers")


def test_synthetic_data_and_more_items_than_the_paper_had_get_no_verdict(tmp_path):
    rows = _curve_2400()
    _fake_run(tmp_path, "synthetic", rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash",
              dataset={"source": "local", "path": "/data/curve_synthetic.json"})
    _fake_run(tmp_path, "more", rows + [_curve_item(f"x{i}", 0.0) for i in range(2600)], benchmark="curve", model="gemini-2.5-pro",
              judge="gemini-2.5-flash", dataset=CURVE_RELEASE)
    cmp = V.compare(RunSet.discover(tmp_path))
    agg = cmp[cmp.column == "Aggregate"].set_index("run_name")
    assert agg.loc["synthetic", "verdict"] == "not papers" and agg.loc["more", "verdict"] == "not papers"
    assert agg.loc["more", "n"] == 5000 and agg.loc["more", "coverage"] != "subset"   # more than the paper's 2,400: never a subset
    text = V.render_table(V.vs_paper_table(cmp), "text")
    assert "none: not the paper's items" in text and "of 2,400" not in text and "paper outside CI" not in text


def test_a_run_written_before_clusters_were_recorded_is_told_to_rescore(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "cluster"} for r in _curve_2400()]
    _fake_run(tmp_path, "old", rows, benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash", dataset=CURVE_RELEASE)
    cmp = V.compare(RunSet.discover(tmp_path))
    assert cmp[cmp.column == "Aggregate"].ci_method.iloc[0] == "wilson"
    assert any("names no cluster" in m and "vlmlens score" in m for m in cmp.attrs["unmatched"])


TOY_PLUGIN = '''from pathlib import Path
from vlmlens.benchmarks.base import Benchmark, register_benchmark

class ToyPaper(Benchmark):
    "A benchmark from outside vlmlens whose paper printed one table: its numbers ship beside it."
    name = "toypaper"
    published = str(Path(__file__).with_name("toypaper_numbers.json"))
    paper_item_keys = ("task",)

register_benchmark("toypaper", ToyPaper)
'''
TOY_NUMBERS = {
    "version": "2026.1.0", "papers": {"toy": {"benchmark": "toypaper", "title": "A toy paper", "short": "Toy"}},
    "aliases": {"toy": {"Toy-VLM": ["gpt-4.1"]}},
    "tables": [{"paper": "toy", "table": "1", "section": "§4", "caption": "Accuracy per task", "rows": ["Toy-VLM"],
                "columns": ["counting", "colours", "Avg."]}],
    "cells": [{"paper": "toy", "section": "§4", "table": "1", "model": "Toy-VLM", "row": "Toy-VLM", "column": c, "metric": "accuracy",
               "value": v, "text": f"{v:.1f}", "unit": "%", "where": w, **({"mean_of": ["counting", "colours"]} if c == "Avg." else {})}
              for c, v, w in (("counting", 52.5, {"task": "counting"}), ("colours", 70.0, {"task": "colours"}), ("Avg.", 61.3, {}))],
    "protocols": [{"paper": "toy", "tables": ["1"], "settings": {"strategy": "standard"},
                   "items": {"by": "task", "counts": {"counting": 40, "colours": 40}}}]}


def test_a_plugin_benchmark_ships_its_own_published_numbers(tmp_path):
    "A benchmark from a plugin folder names its own numbers file (`published`) and item key; --vs-paper compares with it, vlmlens untouched."
    import subprocess, sys
    from vlmlens.benchmarks import base
    from vlmlens.models import registry
    folder = tmp_path / "plugins"; folder.mkdir()
    (folder / "toypaper.py").write_text(TOY_PLUGIN, encoding="utf-8")
    (folder / "toypaper_numbers.json").write_text(json.dumps(TOY_NUMBERS), encoding="utf-8")
    rows = [{"sample_id": f"{t}{i}", "task": t, "language": "en", "valid": True, "error": None, "score": float(i < k)}
            for t, k in (("counting", 20), ("colours", 28)) for i in range(40)]
    _fake_run(tmp_path / "runs", "toy", rows, benchmark="toypaper")
    try:
        registry.load_plugin_folders([folder])
        assert V.published_papers()["toy"]["benchmark"] == "toypaper" and V.item_keys("toy") == ("task",)
        cmp = V.compare(RunSet.discover(tmp_path / "runs")).set_index("column")
        assert cmp.loc["counting", "ours"] == pytest.approx(50.0) and cmp.loc["colours", "ours"] == pytest.approx(70.0)
        assert cmp.loc["Avg.", "ours"] == pytest.approx(60.0) and cmp.loc["Avg.", "derived"]        # the mean of its columns, by `task`
        assert int(cmp.loc["counting", "paper_n"]) == 40 and cmp.loc["counting", "verdict"] == "not papers"   # no release: no verdict
        assert "Toy Table 1" in V.vs_paper_report(RunSet.discover(tmp_path / "runs"))[0]
    finally:
        base.BENCHMARKS.pop("toypaper", None); registry._LOADED_FOLDERS.discard(folder.resolve())
    out = subprocess.run([sys.executable, "-m", "vlmlens", "--plugins", str(folder), "report", str(tmp_path / "runs" / "toy"), "--vs-paper"],
                         capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "VLMLENS_PLUGINS": ""})
    assert out.returncode == 0, out.stderr
    assert "Toy Table 1" in out.stdout and "Toy version 2026.1.0" in out.stdout and "-2.5" in out.stdout


def test_our_values_stay_in_the_table_and_the_note_names_only_settings(tmp_path, capsys):
    "Two cells that our run measures alike (Aggregate, Lowest Region: all items te-IN) keep 'ours' and its CI in the table, beside the paper's value; "
    "a column empty in every row (no setting differs) is dropped without a note like 'setting differs .'."
    from vlmlens.cli import main
    _fake_run(tmp_path, "pro", _curve_2400(), benchmark="curve", model="gemini-2.5-pro", judge="gemini-2.5-flash", dataset=CURVE_RELEASE)
    assert main(["report", str(tmp_path), "--vs-paper", "--format", "latex"]) == 0
    tex = capsys.readouterr().out.split("Ours beside the papers")[1]
    body, note = tex.split("\\bottomrule")
    assert re.search(r"^ours & .*42\.\S*54 & 42\.54 \\\\$", body, re.M) and re.search(r"^our 95\\% CI & ", body, re.M), body
    assert "Every row:" in note and "unit \\%." in note and "42.54" not in note and "setting differs ." not in note
