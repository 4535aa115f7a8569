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
    setup = (Path(__file__).parents[1] / "setup.py").read_text()          # package_data covers vlmlens/data/*.json
    assert '"data/*.json"' in setup and (Path(V.__file__).parent / "data" / fidelity.PAPER_NUMBERS).is_file()


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
    assert {"2", "3", "6", "7", "8", "9"} == set(DOC["not_in_text"][0]["tables"])


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


def _fake_run(root, name, rows, **cfg):
    c = RunConfig(**{"benchmark": "hintel", "model": "gpt-4.1", **cfg}, run_name=name, output_root=str(root))
    st = RunStore(root / name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_scores_csv(rows); st.write_summary({"overall": rates(rows)}); st.close()


def _item(i, subset, lang, score, error=None):
    return {"sample_id": f"{subset}-{lang}-{i}", "subset": subset, "language": lang, "valid": error is None, "error": error,
            "score": None if error else score}


HINTEL_JUDGE = "gpt-4.1-2025-04-14"      # the hybrid evaluation's judge, HinTel-AlignBench §4


@pytest.fixture
def known_runs(tmp_path):
    "GPT-4.1 at exactly 68% on Hindi VQAv2 (paper 68.00) and 20% on Telugu VQAv2 (paper 68.70, 5 of its 100 items errored)."
    _fake_run(tmp_path, "hi", [_item(i, "vqav2", "hi", float(i < 68)) for i in range(100)], language="hi", judge=HINTEL_JUDGE)
    _fake_run(tmp_path, "te", [_item(i, "vqav2", "te", float(i < 20), "timeout" if i >= 95 else None) for i in range(100)], language="te",
              judge=HINTEL_JUDGE)
    return tmp_path


def test_comparison_has_the_difference_and_marks_the_paper_outside_our_ci(known_runs):
    cmp = V.compare(RunSet.discover(known_runs))
    assert sorted(cmp.column) == ["VQAv2 Hi", "VQAv2 Tel"] and not cmp.attrs["unmatched"]
    hi, te = (cmp[cmp.column == c].iloc[0] for c in ("VQAv2 Hi", "VQAv2 Tel"))
    assert (hi.table, hi.model, hi.paper_value, hi.n) == ("4", "GPT-4.1", 68.0, 100)
    assert hi.ours == pytest.approx(68.0) and hi["diff"] == pytest.approx(0.0) and hi.outside == False   # noqa: E712
    assert hi.ci_low < 68 < hi.ci_high and hi.ci_high - hi.ci_low < 25
    assert te.ours == pytest.approx(20.0) and te["diff"] == pytest.approx(-48.7) and te.outside == True  # errors count as wrong
    assert te.ci_high < 68.7


def test_cli_prints_ours_beside_the_paper_and_a_message_for_a_model_no_paper_reports(known_runs, capsys):
    from vlmlens.cli import main
    _fake_run(known_runs, "other", [_item(i, "vqav2", "hi", 1.0) for i in range(4)], model="tiny-qwen2.5-vl", language="hi")
    assert main(["report", str(known_runs), "--vs-paper"]) == 0
    cap = capsys.readouterr()
    line = {m.group(1): l for l in cap.out.splitlines() for m in [re.search(r"(GPT-4\.1\s+VQAv2 Hi|GPT 4\.1\s+VQAv2 Tel)", l)] if m}
    assert len(line) == 2, cap.out
    hi, te = (next(v for k, v in line.items() if k.endswith(c)) for c in ("Hi", "Tel"))
    assert re.search(r"68\.00\s+68\.00\s+\+0\.00\s+\d+\.\d\d–\d+\.\d\d\s+100\s*$", hi)
    assert re.search(r"68\.70\s+20\.00\s+-48\.70\s+\d+\.\d\d–\d+\.\d\d\s+100\s+yes$", te)
    assert "other: tiny-qwen2.5-vl is not a model the hintel paper reports" in cap.err and "Traceback" not in cap.err
    assert main(["report", str(known_runs / "other"), "--vs-paper"]) == 0     # nothing to compare: a message, exit 0
    cap = capsys.readouterr()
    assert "not a model the hintel paper reports" in cap.err and "no run matches a cell" in cap.err
    _fake_run(known_runs, "demo", [_item(0, "vqav2", "hi", 1.0)], benchmark="demo")
    assert main(["report", str(known_runs / "demo"), "--vs-paper"]) == 0
    assert "demo: no published numbers for demo" in capsys.readouterr().err
    assert main(["report", str(known_runs), "--vs-paper", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 2 and set(df.outside) == {True, False} and df.paper_value.tolist() != df.ours.tolist()


def test_cells_without_items_are_left_out_or_blank_never_zero(known_runs):
    assert len(V.compare(RunSet.discover(known_runs))) == 2
    full = V.compare(RunSet.discover(known_runs), full=True)
    empty = full[full.ours.isna()]
    assert len(empty) > 0 and not (full.ours == 0).any()
    assert set(empty.column) >= {"RealWorldQA Hi", "Ours-H Hi", "JEE-T Tel"}   # subsets the runs did not score
    assert not full.column.str.endswith(" En").any()                              # a Hindi or Telugu run is not an English one
    assert "–" in V.render_table(V.vs_paper_table(full), "text")


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
    assert set(got.model) == {"GPT-4.1"} and len(got) >= 3
    assert not got.index.str.startswith(("VQAv2", "CLEVR-Math")).any()      # unjudged: not the paper's hybrid scoring
    assert any("paper cells not compared: the paper judged with GPT-4.1 (2025-04-14), this run with none" in m
               for m in cmp.attrs["unmatched"]), cmp.attrs["unmatched"]
    for col, r in got.iterrows():
        sub = {"VQAv2": "vqav2", "RealWorldQA": "realworldqa", "CLEVR-Math": "clevr_math", "JEE-H": "jee_h", "VAANI-H": "vaani_h"}[col.split()[0]]
        mine = s[(s.subset == sub) & (s.language == "hi")]
        assert r.ours == pytest.approx(100 * rates(mine.astype(object).where(mine.notna(), None).to_dict("records"))["accuracy"])
        assert r["diff"] == pytest.approx(r.ours - r.paper_value)


SKILLS = ["global_appearance", "scene_transitions", "character_actions", "chronological_understanding",
          "summarization", "deep_context_understanding", "spoiler_questions", "linking_multiple_events"]


def test_infinibench_cells_need_the_frames_and_judge_the_paper_used(tmp_path):
    "Table 4 cells match a run at the row's frame count; Table 5 cells the run's judge; reasoning scores on 0-10."
    rows = [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": float(i < 3) if k < 4 else 0.4}
            for k, s in enumerate(SKILLS) for i in range(10)]
    for name, frames, judge in (("q128", 128, "gpt-4o-mini"), ("q8", 8, "gemini-2.0-flash")):
        _fake_run(tmp_path, name, rows, benchmark="infinibench", model="qwen2.5-vl-7b", num_frames=frames, judge=judge)
    q128, q8 = V.compare(RunSet.discover(tmp_path / "q128")), V.compare(RunSet.discover(tmp_path / "q8"))
    assert set(q128.table) == {"4"} and set(q8.table) == {"5"}                       # no Table 4 row has 8 frames
    ga = q128[q128.column == "Global Appearance"].iloc[0]
    assert (ga.paper_value, ga.ours, ga.n) == (32.0, pytest.approx(30.0), 10)       # Table 4, QwenVL2.5 at 128 frames
    summ = q128[q128.column == "Summarization"].iloc[0]
    assert summ.unit == "0-10" and summ.ours == pytest.approx(4.0) and summ["diff"] == pytest.approx(1.1)
    acc = q128[q128.column == "Avg. Acc."].iloc[0]
    assert acc.derived and acc.ours == pytest.approx(30.0) and pd.isna(acc.ci_low)   # a mean of columns: no CI
    assert not (q128.table == "5").any()                                             # the column prints GPT-4o, the run used GPT-4o mini
    assert q128.attrs["unmatched"] == ["q128: 3 paper cells not compared: the paper judged with GPT-4o or Gemini 2.0 Flash or "
                                       "Qwen2.5-VL-7B, this run with GPT-4o mini (--judge-reading compares them, flagged)"]
    assert not q8.attrs["unmatched"]                                                 # its judge has a column
    read = V.compare(RunSet.discover(tmp_path / "q128"), judge_reading=True)        # the §4.2 reading, switched on and flagged
    t5 = read[read.table == "5"]
    assert t5.column.tolist() == ["judge GPT-4o"] and t5.setting.tolist() == ["judge GPT-4o mini, paper prints GPT-4o"]
    assert set(read[read.table == "4"].setting) == {""}
    assert "judge GPT-4o mini, paper prints GPT-4o" in V.render_table(V.vs_paper_table(read), "text")
    assert q8.column.tolist() == ["judge Gemini 2.0"] and q8.paper_value.tolist() == [4.58]


def test_curve_locale_cells_and_the_aggregate(tmp_path):
    rows = [{"sample_id": f"{loc}{i}", "locale": loc, "valid": True, "error": None, "score": float(i < k)}
            for loc, k in (("te-IN", 3), ("ko-KR", 6)) for i in range(10)]
    _fake_run(tmp_path, "pro", rows, benchmark="curve", model="gemini-2.5-pro")
    cmp = V.compare(RunSet.discover(tmp_path)).set_index("column")
    assert cmp.loc["Aggregate", "ours"] == pytest.approx(45.0) and cmp.loc["Aggregate", "n"] == 20
    assert cmp.loc["Aggregate", "paper_value"] == 45.07 and not cmp.loc["Aggregate", "outside"]
    assert cmp.loc["Lowest Region (te-IN)", "ours"] == pytest.approx(30.0)
    assert cmp.loc["Highest Region (ko-KR)", "ours"] == pytest.approx(60.0)
    assert "ta-IN" not in cmp.index and "mr-IN" not in cmp.index                     # locales with no items: left out
    assert not (cmp.table == "ablation").any()                                       # ablation cells name no model


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


def test_cells_that_are_not_scores_are_never_put_beside_a_run(tmp_path):
    "Table 6 (error shares of GPT 4.1 on VAANI-T) names a model a run can be, but a run's accuracy is not an error share."
    _fake_run(tmp_path, "te", [_item(i, "vaani_t", "te", 1.0) for i in range(10)], language="te", judge=HINTEL_JUDGE)
    full = V.compare(RunSet.discover(tmp_path), full=True)
    assert len(full) and set(full.table) == {"3"} and "6" in set(V.paper_cells("hintel").table)


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
    msgs = " | ".join(cmp.attrs["unmatched"])
    assert "mini: " in msgs and "this run with GPT-4o mini" in msgs and "this run with none" in msgs and "this run with no judge" in msgs
    assert set(cmp.setting) == {""}                                               # no reading covers a HinTel judge


def test_a_judge_is_matched_by_the_model_it_resolves_to_and_only_that(tmp_path):
    "HinTel: gpt-4.1 (OpenAI's undated alias) is not the dated judge; InfiniBench: the hub id behind qwen2.5-vl-7b is, a look-alike is not."
    rows = [_item(i, "vqav2", "hi", 1.0) for i in range(5)]
    for name, judge in (("dated", HINTEL_JUDGE), ("alias", "gpt-4.1")):
        _fake_run(tmp_path / "h", name, rows, language="hi", judge=judge)
    summary = tmp_path / "h" / "dated" / "summary.json"                       # the judge id the run recorded
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "judge_id": "hintel-hybrid/gpt-4.1-2025-04-14/t0.7s1"}))
    dated, alias = (V.compare(RunSet.discover(tmp_path / "h" / n)) for n in ("dated", "alias"))
    assert set(dated.column) == {"VQAv2 Hi"} and alias.empty
    assert any("paper judged with GPT-4.1 (2025-04-14), this run with GPT-4.1" in m for m in alias.attrs["unmatched"])
    skills = [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": 0.4} for s in SKILLS for i in range(10)]
    judges = {"hub": "Qwen/Qwen2.5-VL-7B-Instruct", "served": "openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:9/v1",
              "ckpt": "/ckpt/Qwen2.5-VL-7B", "lookalike": "openai-compatible:Qwen2.5-VL-7B@http://127.0.0.1:9/v1"}
    for name, judge in judges.items():
        _fake_run(tmp_path / "i", name, skills, benchmark="infinibench", model="qwen2.5-vl-7b", num_frames=8, judge=judge)
    judged = {n for n in judges if (V.compare(RunSet.discover(tmp_path / "i" / n)).table == "5").any()}
    assert judged == {"hub", "served"}, judged          # the same weights; a checkpoint or served name that only looks alike is not


def test_infinibench_table_3_cells_carry_the_papers_input_settings(tmp_path):
    "§4.3.2's Table 3 numbers: video+subtitles at the §B.7 frames (GPT-4o 450, InternVL3 16 or 128); other settings are not matched."
    rows = [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": float(i < 5) if k < 4 else 0.6}
            for k, s in enumerate(SKILLS) for i in range(10)]
    for name, model, mod, frames in (("g450", "gpt-4o", "video+subtitles", 450), ("g32", "gpt-4o", "video+subtitles", 32),
                                     ("gvid", "gpt-4o", "video", 450), ("i128", "internvl3-8b", "video+subtitles", 128),
                                     ("gem", "gemini-2.0-flash", "video+subtitles", 450)):
        _fake_run(tmp_path, name, rows, benchmark="infinibench", model=model, modality=mod, num_frames=frames, judge="gpt-4o")
    t3 = {n: V.compare(RunSet.discover(tmp_path / n)) for n in ("g450", "g32", "gvid", "i128", "gem")}
    t3 = {n: c[c.table == "3"] for n, c in t3.items()}
    assert sorted(t3["g450"].column) == ["Avg. Acc.", "Avg. Score"]
    assert t3["g450"].set_index("column").loc["Avg. Acc.", "ours"] == pytest.approx(50.0)
    assert t3["g32"].empty and t3["gvid"].empty and t3["gem"].empty                 # other frames, no subtitles, native video
    assert t3["i128"].column.tolist() == ["Avg. Score"] and t3["i128"].ours.tolist() == [pytest.approx(6.0)]
    cells = {c["model"]: c["where"] for c in CELLS if c["paper"] == "infinibench" and c["table"] == "3"}
    assert cells["GPT-4o"]["modality"] == "video+subtitles" and cells["InternVL3"]["num_frames"] == [16, 128]
    assert all(set(w) <= set(DOC["where_keys"]) for w in cells.values())


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


def test_cli_judge_reading_switch(tmp_path, capsys):
    "`vlmlens report --vs-paper` leaves a GPT-4o mini run out of Table 5's 'GPT-4o' column and says so; --judge-reading compares it, flagged."
    from vlmlens.cli import main
    rows = [{"sample_id": f"{s}{i}", "skill": s, "valid": True, "error": None, "score": 0.5} for s in SKILLS for i in range(4)]
    _fake_run(tmp_path, "mini", rows, benchmark="infinibench", model="qwen2.5-vl-7b", num_frames=16, judge="gpt-4o-mini")
    assert main(["report", str(tmp_path), "--vs-paper"]) == 0
    cap = capsys.readouterr()
    assert "infinibench T5" not in cap.out and "--judge-reading compares them, flagged" in cap.err
    assert main(["report", str(tmp_path), "--vs-paper", "--judge-reading"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "infinibench T5" in l)
    assert "judge GPT-4o " in line and "4.56" in line and "judge GPT-4o mini, paper prints GPT-4o" in line
