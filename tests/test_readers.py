"""End-to-end tests of vlmlens.readers: every file format, row-level errors, literal safety."""
import json
import os

import pandas as pd
import pytest

from vlmlens.core import Media, Sample
from vlmlens.readers import (DataError, FieldError, RowError, default_mapper, load_samples, parse_literal_list,
                             read_records)

# Records in the canonical layout; every value type a benchmark needs appears once.
RECORDS = [
    {"id": "q1", "subset": "colors", "language": "hi", "question": "कौन सा रंग?", "options": ["लाल", "नीला"],
     "answer": 1, "answer_type": "mcq", "media": [{"kind": "image", "path": "img/q1.png"}],
     "metadata": {"title": "x"}, "align_id": "a1"},
    {"id": "q2", "subset": "order", "question": "Which order?", "options": [["he runs", "he falls"], ["he falls", "he runs"]],
     "answer": 0, "media": [{"kind": "video", "path": "ep.mp4", "start": 1.5, "end": 9.0}], "subtitles": "ep.srt"},
    {"id": "q3", "subset": "jee", "question": "Pick all", "options": ["1", "2", "3", "4"], "answer": [0, 2],
     "answer_type": "mcq_multi"},
    {"id": "q4", "subset": "vqa", "question": "How many?", "answer": "2", "answer_type": "short",
     "reasoning": ["count the cars", "two"]},
]


def expected(base):
    return [Sample("q1", "demo", "colors", "hi", None, "कौन सा रंग?", ["लाल", "नीला"], 1, "mcq",
                   [Media("image", str(base / "img/q1.png"))], None, {"title": "x"}, "a1"),
            Sample("q2", "demo", "order", "en", None, "Which order?", [["he runs", "he falls"], ["he falls", "he runs"]], 0,
                   "mcq", [Media("video", str(base / "ep.mp4"), 1.5, 9.0)], str(base / "ep.srt")),
            Sample("q3", "demo", "jee", question="Pick all", options=["1", "2", "3", "4"], answer=[0, 2], answer_type="mcq_multi"),
            Sample("q4", "demo", "vqa", question="How many?", answer="2", answer_type="short",
                   metadata={"reasoning": ["count the cars", "two"]})]          # a reference chain is the benchmark's own field


def as_text_columns(records):
    """Flatten structured fields to text, as a spreadsheet or a parquet export of InfiniBench does."""
    out = []
    for r in records:
        r = dict(r)
        if not isinstance(r.get("options", ""), str): r["options"] = repr(r["options"])   # Python literal, like InfiniBench
        for k in ("media", "metadata", "reasoning", "answer"):
            if k in r and not isinstance(r[k], str): r[k] = json.dumps(r[k], ensure_ascii=False)
        out.append(r)
    return out


def write_format(tmp_path, fmt, records):
    p = tmp_path / f"data.{fmt}"
    if fmt == "json":
        p.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    elif fmt == "jsonl":
        p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    elif fmt in ("csv", "parquet"):
        df = pd.DataFrame(as_text_columns(records))
        df.to_csv(p, index=False) if fmt == "csv" else df.astype(object).where(df.notna(), None).to_parquet(p)
    return p


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "parquet"])
def test_round_trip_each_format(tmp_path, fmt):
    p = write_format(tmp_path, fmt, RECORDS)
    samples, errors = load_samples(p, benchmark="demo")
    assert errors == []
    assert samples == expected(tmp_path)


def test_read_records_row_numbers(tmp_path):
    rows = [{"id": str(i)} for i in range(3)]
    assert [r for r, _ in read_records(write_format(tmp_path, "jsonl", rows))] == [1, 2, 3]
    assert [r for r, _ in read_records(write_format(tmp_path, "json", rows))] == [1, 2, 3]
    assert [r for r, _ in read_records(write_format(tmp_path, "parquet", rows))] == [1, 2, 3]
    # CSV: the header is line 1, so the first data row is line 2
    assert [r for r, _ in read_records(write_format(tmp_path, "csv", rows))] == [2, 3, 4]


def test_bad_rows_exact_messages_jsonl(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = [json.dumps({"id": f"s{i}", "question": "?", "options": "['red', 'blue']", "answer": "0"}) for i in range(1, 21)]
    lines[16] = json.dumps({"id": "s17", "question": "?", "options": "A) red", "answer": "0"})    # line 17
    lines[4] = '{"id": "s5", "question": "?", "options": ["a"]'                                   # line 5: cut short
    lines[9] = json.dumps({"id": "s10", "question": "?", "answer_type": "essay"})                # line 10
    lines[11] = json.dumps({"id": "s2", "question": "dup"})                                       # line 12
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    samples, errors = load_samples("data.jsonl", benchmark="demo")
    assert [str(e) for e in errors] == [
        "data.jsonl:5: invalid JSON: Expecting ',' delimiter (column 47)",
        "data.jsonl:10: answer_type: expected one of mcq, mcq_multi, integer, numeric, short, open, got 'essay'",
        "data.jsonl:12: id: duplicate sample id 's2' (first seen at row 2)",
        "data.jsonl:17: options: expected a list, got 'A) red'",
    ]
    assert errors[-1] == RowError("data.jsonl", 17, "options", "expected a list, got 'A) red'")
    assert len(samples) == 16 and all(s.options == ["red", "blue"] and s.answer == 0 for s in samples)


def test_bad_rows_csv_json_parquet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = {"id": "a", "question": "?", "options": "['x', 'y']"}
    bad = {"id": "b", "question": "?", "options": "A) red"}
    for fmt, row in [("csv", 3), ("json", 2), ("parquet", 2)]:
        write_format(tmp_path, fmt, [good, bad, {**good, "id": "c"}])
        samples, errors = load_samples(f"data.{fmt}", benchmark="demo")
        assert [s.id for s in samples] == ["a", "c"], fmt
        assert [str(e) for e in errors] == [f"data.{fmt}:{row}: options: expected a list, got 'A) red'"], fmt


def test_csv_multiline_cells_and_ragged_rows(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text('id,question\nq1,"line one\nline two"\nq2,ok,surplus\nq3,fine\n', encoding="utf-8")
    samples, errors = load_samples(p, benchmark="demo")
    assert [(s.id, s.question) for s in samples] == [("q1", "line one\nline two"), ("q3", "fine")]
    assert [str(e) for e in errors] == [f"{p}:4: expected 2 fields (as in the header), got 3"]


def test_mapper_exceptions_become_row_errors(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [
        {"question_id": "a", "options": "['x']", "answer_idx": 0},
        {"options": "['x']", "answer_idx": 0},
        {"question_id": "c", "options": "['x']", "answer_idx": "zero"},
        {"question_id": "d", "options": "['x', 'y']", "answer_idx": 5},
        {"question_id": "e", "options": "['x', 'y']", "answer_idx": 1, "skip": True},
        {"question_id": "f", "options": "['x', 'y']", "answer_idx": 1, "both_languages": True},
    ]) + "\n")

    def mapper(r):
        if r.get("skip"): return None
        opts = parse_literal_list(r["options"])
        opts[int(r["answer_idx"])]                                   # IndexError for an out-of-range answer
        s = Sample(r["question_id"], "ib", options=opts, answer=int(r["answer_idx"]))
        return [s, Sample(s.id + "-hi", "ib", language="hi", options=opts)] if r.get("both_languages") else s

    samples, errors = load_samples(p, mapper)
    assert [s.id for s in samples] == ["a", "f", "f-hi"]
    assert [str(e) for e in errors] == [
        f"{p}:2: question_id: missing field",
        f"{p}:3: invalid literal for int() with base 10: 'zero'",
        f"{p}:4: IndexError: list index out of range",
    ]


def test_mapper_bug_propagates(tmp_path):
    p = write_format(tmp_path, "jsonl", [{"id": "a"}])
    def buggy(r): raise RuntimeError("bug in mapper")
    with pytest.raises(RuntimeError, match="bug in mapper"):
        load_samples(p, buggy)


def test_literal_eval_never_executes(tmp_path, monkeypatch):
    canary = tmp_path / "pwned"
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd) or 0)
    for evil in ["__import__('os').system('echo hi')",
                 f"[__import__('os').system('touch {canary}')]",
                 "[open('/etc/passwd').read()]",
                 "[(lambda: 1)()]"]:
        with pytest.raises(FieldError) as ei:
            parse_literal_list(evil)
        assert ei.value.field == "options" and ei.value.message.startswith("expected a list, got ")
    # and through a whole load with the default mapper
    p = write_format(tmp_path, "jsonl", [{"id": "x", "options": "__import__('os').system('echo hi')"}])
    samples, errors = load_samples(p, benchmark="demo")
    assert samples == [] and [str(e) for e in errors] == [
        f"{p}:1: options: expected a list, got \"__import__('os').system('echo hi')\""]
    assert calls == [] and not canary.exists()


def test_long_values_are_truncated_in_messages():
    value = "A) " + "very long option text " * 20
    with pytest.raises(FieldError) as ei:
        parse_literal_list(value)
    assert ei.value.message == "expected a list, got " + repr(value)[:57] + "..."


def test_missing_file_and_unknown_extension(tmp_path):
    missing = tmp_path / "nowhere" / "data.jsonl"
    with pytest.raises(FileNotFoundError) as ei:
        load_samples(missing, benchmark="demo")
    assert str(missing) in str(ei.value)
    with pytest.raises(FileNotFoundError, match="data file not found"):
        list(read_records(missing))
    odd = tmp_path / "data.xlsx"
    odd.write_bytes(b"PK")
    with pytest.raises(ValueError, match=r"data.xlsx: unsupported file type '.xlsx'; expected one of .json, .jsonl"):
        load_samples(odd, benchmark="demo")


def test_unparseable_json_document(tmp_path):
    p = tmp_path / "data.json"
    p.write_text('[{"id": "a"},\n {"id": "b",]', encoding="utf-8")
    with pytest.raises(DataError, match=r"data.json: invalid JSON at line 2, column 13"):
        load_samples(p, benchmark="demo")


def test_read_records_collect_or_raise(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"id": 1}\nnot json\n[1]\n', encoding="utf-8")
    errors = []
    assert list(read_records(p, errors)) == [(1, {"id": 1})]
    assert [(e.row, e.field) for e in errors] == [(2, None), (3, None)]
    assert str(errors[1]) == f"{p}:3: expected a JSON object, got list"
    with pytest.raises(DataError, match=":2: invalid JSON"):
        list(read_records(p))


def test_default_mapper_unknown_field_and_extra(tmp_path):
    p = write_format(tmp_path, "jsonl", [{"id": "a", "questoin": "?"}])
    _, errors = load_samples(p, benchmark="demo")
    assert str(errors[0]).startswith(f"{p}:1: questoin: unknown field")
    samples, errors = load_samples(p, default_mapper("demo", tmp_path, extra="metadata"))
    assert errors == [] and samples[0].metadata == {"questoin": "?"}


def test_hf_dataset_folder(tmp_path):
    folder = tmp_path / "hf"
    try:
        import datasets
    except ImportError:
        folder.mkdir()
        (folder / "dataset_dict.json").write_text('{"splits": ["test"]}')
        with pytest.raises(ImportError, match=r"needs the optional `datasets` package \(pip install datasets\)"):
            load_samples(folder, benchmark="demo")
        return
    dd = datasets.DatasetDict({"test": datasets.Dataset.from_list([{"id": "a", "question": "?"}, {"id": "b", "question": "!"}])})
    dd.save_to_disk(str(folder))
    samples, errors = load_samples(folder, default_mapper("demo", folder, extra="ignore"))
    assert errors == [] and [s.id for s in samples] == ["a", "b"]


def test_every_reader_of_a_models_json_reply_reads_it_alike():
    """Evidence graphs, generated MCQs, OCR pages and LLM translations read a reply through one rule
    (`readers.json_in_reply`): the first code fence if any, then the first JSON object or list; text after it is ignored."""
    from vlmlens.curation.captions import parse_mcq
    from vlmlens.curation.translate import parse_json_list
    from vlmlens.evidence import parse_alignment
    reply = 'Here you go:\n```json\n{"alignment": [], "first_failure": null, "label": null, "explanation": "ok"}\n```\nHope it helps {x}.'
    assert parse_alignment(reply, []).failed is None                     # before: the outermost braces, which spanned '{x}'
    assert parse_json_list('Sure: ["a", "b"] (two lines) ["c"]', 2) == ["a", "b"]
    mcq = {"en": {"question": "Which colour?", "options": ["red", "blue", "green", "black"]}, "answer": "B"}
    assert parse_mcq("Answer:\n" + json.dumps(mcq) + "\nNote: {none}", "en")["answer_idx"] == 1
    for bad, says in (("no json here", "no JSON object in the answer"), ('{"en": [1,}', "the answer's object is not valid JSON")):
        with pytest.raises(ValueError, match=says): parse_mcq(bad, "en")
