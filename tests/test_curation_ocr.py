"""Exam pages (synthetic, drawn with PIL) read by Gemini through google-genai against the loopback server into JEEBench
rows with figure crops; a page whose output breaks the row schema is rejected with every problem and fixed by hand in the
manual-fix widget; the reviewed rows of English and Hindi load as HinTel's jee_h, aligned by question number."""
import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from vlmlens.benchmarks.hintel import load_hintel
from vlmlens.curation.ocr import FIX_LABELS, OCRFixWidget, fix_items, ocr_pages, release_exam
from vlmlens.curation.review import VerdictLog
from loopback import client_error

FIG1, FIG2, FIG3 = [100, 300, 500, 600], [550, 300, 900, 600], [200, 650, 800, 950]


def draw_page(path: Path, width: int, lines: list[str], boxes: list) -> Path:
    img = Image.new("RGB", (width, 1000), "white")
    d = ImageDraw.Draw(img)
    for i, l in enumerate(lines): d.text((40, 40 + 30 * i), l, fill="black")
    for b in [b for b in boxes if b[0] < b[2] and b[1] < b[3]]:
        x0, y0, x1, y1 = (b[0] * width // 1000, b[1], b[2] * width // 1000, b[3])
        d.rectangle((x0, y0, x1, y1), outline="black", width=5); d.line((x0, y0, x1, y1), fill="black", width=3)
    path.parent.mkdir(parents=True, exist_ok=True); img.save(path)
    return path


def q(index, qtype, text, options=None, figures=None, subject="phy", gold=None):
    return {"index": index, "subject": subject, "type": qtype, "question": text, "options": options or {}, "gold": gold, "figures": figures or []}


EN = {800: [q(1, "MCQ", "The current $i$ just after the switch $S$ is closed is", {"A": "2.25 A", "B": "3.0 A", "C": "3.37 A", "D": "9 A"}, [FIG1]),
            q(2, "Integer", "The number of loops in the circuit shown is", figures=[FIG2], subject="math")],
      810: [q(3, "MCQ(multiple)", "Which of the structures shown are aromatic?", {"A": "I", "B": "II", "C": "III"}, [[900, 10, 100, 50]], "chem")]}
HI = {820: [q(1, "MCQ", "स्विच $S$ बंद करने के ठीक बाद धारा $i$ है", {"A": "2.25 A", "B": "3.0 A", "C": "3.37 A", "D": "9 A"}, [FIG1]),
            q(2, "Integer", "दिखाए गए परिपथ में लूपों की संख्या है", figures=[FIG2], subject="math")],
      830: [q(3, "MCQ(multiple)", "दिखाई गई संरचनाओं में से कौन सी ऐरोमैटिक हैं?", {"A": "I", "B": "II", "C": "III", "D": "IV"}, [FIG3], "chem")]}


def reader(call):
    "The OCR model: recognises each page by its width and answers its questions as JSON."
    part = next(p for c in call.json["contents"] for p in c["parts"] if "inlineData" in p or "inline_data" in p)
    data = (part.get("inlineData") or part.get("inline_data"))["data"]
    width = Image.open(io.BytesIO(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))).size[0]
    return "```json\n" + json.dumps({**EN, **HI}[width], ensure_ascii=False) + "\n```"


@pytest.fixture
def pages(tmp_path):
    out = {}
    for lang, spec in (("en", EN), ("hi", HI)):
        out[lang] = [draw_page(tmp_path / "pages" / lang / f"p{k + 1}.png", w, [x["question"] for x in qs], [b for x in qs for b in x["figures"]][:2])
                     for k, (w, qs) in enumerate(spec.items())]
    return out


def test_ocr_manual_fix_and_release_as_jee_h(server, pages, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    server.responder = reader
    kw = {"base_url": server.gemini_base_url, "cache": False, "max_attempts": 1}
    key = {"1": "B", "2": "12", "3": "AC"}
    steps = {lang: ocr_pages(pages[lang], tmp_path / "build", lang, description="JEE Adv (synthetic)", model_kwargs=kw, answer_key=key)
             for lang in ("en", "hi")}
    en, hi = steps["en"], steps["hi"]
    assert sorted(r["id"] for r in en.items()) == ["en/jee-adv-synthetic/1", "en/jee-adv-synthetic/2"]
    assert sorted(r["id"] for r in hi.items()) == ["hi/jee-adv-synthetic/1", "hi/jee-adv-synthetic/2", "hi/jee-adv-synthetic/3"]
    rej = en.rejected()[0]
    assert rej["stage"] == "schema" and rej["id"] == "page/p2.png"
    assert "question 3: options: MCQ(multiple) needs non-empty options A, B, C, D (got ['A', 'B', 'C'])" in rej["reason"]
    assert "question 3: figure box [900, 10, 100, 50]" in rej["reason"] and rej["item"]["raw"].startswith("```json")
    row = next(r for r in en.items() if r["id"] == "en/jee-adv-synthetic/1")["item"]
    assert row["row"]["question"].endswith("\n\n(D) 9 A") and row["row"]["gold"] == "B" and row["row"]["type"] == "MCQ"
    assert Image.open(row["figure"]).size == (320, 300)                         # 0-1000 box on an 800x1000 page
    call = server.requests("gemini")[0]
    assert "English exam paper" in call.text and call.model == "gemini-2.5-flash"
    logs = {l: VerdictLog(tmp_path / f"fix_{l}.jsonl", FIX_LABELS) for l in ("en", "hi")}
    items = fix_items(en)
    w = OCRFixWidget(items, logs["en"], "ann-en")
    while w.index < len(items):
        it = w.item
        if it["kind"] == "row": w.buttons["correct"].click(); continue
        w.buttons["correct"].click()
        assert "cannot be correct as it is" in w.status.value
        w.fields["row"].value = it["row"].replace("```json", "").replace("```", "")      # still breaks the schema
        w.buttons["fixed"].click()
        assert "not saved" in w.status.value and "needs non-empty options" in w.status.value
        fixed = [q(3, "MCQ(multiple)", "Which of the structures shown are aromatic?", {"A": "I", "B": "II", "C": "III", "D": "IV"}, [FIG3], "chem", "AC")]
        w.fields["row"].value = json.dumps(fixed); w.buttons["fixed"].click()
    assert [v.verdict for v in logs["en"].read()] == ["correct", "correct", "fixed"]
    for r in hi.items(): logs["hi"].append(r["id"], "ann-hi", "correct")
    rep = release_exam(tmp_path / "release", "jee_h", steps, logs)
    assert rep["n_released"] == 3 and rep["dropped"] == {}
    samples, errors = load_hintel(tmp_path / "release", subsets="jee_h")
    assert errors == []
    by = {(s.language, s.align_id): s for s in samples}
    k = lambda i: f"jee-adv-synthetic/{i}"
    assert sorted(by) == [(l, k(i)) for l in ("en", "hi") for i in (1, 2, 3)]
    assert by[("en", k(1))].answer == 1 and by[("en", k(1))].options == ["2.25 A", "3.0 A", "3.37 A", "9 A"]
    assert by[("hi", k(2))].answer == "12" and by[("hi", k(2))].answer_type == "integer"
    assert by[("en", k(3))].answer == [0, 2] and by[("en", k(3))].answer_type == "mcq_multi"
    assert Image.open(by[("en", k(3))].media[0].path).size == (486, 300)            # the fixed row's box on the 810-wide page
    assert Path(by[("hi", k(1))].media[0].path).is_file()


def test_unreviewed_missing_language_and_model_errors(server, pages, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    kw = {"base_url": server.gemini_base_url, "cache": False, "max_attempts": 1}
    server.responder = lambda call: client_error(403, "API key not valid") if "Hindi" in call.text else reader(call)
    hi = ocr_pages(pages["hi"], tmp_path / "b", "hi", model_kwargs=kw)
    s = hi.summary()
    assert s["n_failed"] == 2 and all(v.startswith("RuntimeError: OCR model gemini-2.5-flash: client_error") for v in s["failed_units"].values())
    server.responder = reader
    hi = ocr_pages(pages["hi"], tmp_path / "b", "hi", model_kwargs=kw)
    assert hi.summary()["n_failed"] == 0 and len(hi.items()) == 3                    # the rerun retried the failed pages
    en = ocr_pages(pages["en"], tmp_path / "b", "en", model_kwargs=kw)
    logs = {"en": VerdictLog(tmp_path / "e.jsonl", FIX_LABELS), "hi": VerdictLog(tmp_path / "h.jsonl", FIX_LABELS)}
    logs["en"].append("en/1", "a", "correct"); logs["en"].append("en/2", "a", "reject", note="no diagram needed")   # no description: ids by number
    for r in hi.items(): logs["hi"].append(r["id"], "a", "correct")
    rep = release_exam(tmp_path / "rel", "jee_h", {"en": en, "hi": hi}, logs)
    assert rep["n_released"] == 0
    assert rep["dropped"]["en/2"] == "en: rejected in review" and rep["dropped"]["*/1"] == "no gold answer"
    assert rep["dropped"]["hi/3"] == "missing in en" and rep["dropped"]["page/p2.png"].startswith("en: page not fixed (p2.png: question 3:")
    with pytest.raises(FileNotFoundError, match="nope.png"): ocr_pages([tmp_path / "nope.png"], tmp_path / "b", "en", model_kwargs=kw)
    with pytest.raises(ValueError, match="needs labels"): OCRFixWidget(fix_items(en), VerdictLog(tmp_path / "x.jsonl"), "a")
    with pytest.raises(ValueError, match="subset must be one of"): release_exam(tmp_path / "rel", "vqav2", {"en": en}, logs)


class PaperReader:
    "An offline OCR model for generated papers: each page image's name says which questions it holds."
    model_id = "paper-reader"
    def __init__(self, papers): self.papers = papers
    def generate(self, reqs, **kw):
        from vlmlens.core import Generation
        return [Generation(json.dumps(self.papers[r.sample_id.split("/", 1)[1]], ensure_ascii=False)) for r in reqs]


def test_two_papers_of_two_languages_release_all_192_questions(tmp_path):
    """JEE Advanced has two papers a year, each numbering its questions from 1. Read paper by paper (each its own step, its own
    --description), the 2 x 96 questions of each language are all released, aligned by (paper, number), none colliding."""
    from vlmlens.curation.ocr import question_key
    img = tmp_path / "blank.png"; Image.new("RGB", (200, 200), "white").save(img)
    steps, logs, key = {"en": [], "hi": []}, {}, {}
    for lang in ("en", "hi"):
        logs[lang] = VerdictLog(tmp_path / f"fix_{lang}.jsonl", FIX_LABELS)
        for paper in (1, 2):
            desc = f"JEE Adv 2023 Paper {paper}"
            pages, papers = [], {}
            for pg in range(12):                                                        # 8 questions a page, 96 a paper
                name = f"{lang}-p{paper}-{pg:02d}.png"; pages.append(tmp_path / name)
                (tmp_path / name).write_bytes(img.read_bytes())
                papers[name] = [q(8 * pg + i + 1, "Integer", f"{lang} paper {paper} question {8 * pg + i + 1}", figures=[FIG1]) for i in range(8)]
            st = ocr_pages(pages, tmp_path / "build", lang, description=desc, backend=PaperReader(papers),
                           answer_key={str(i): str(i % 10) for i in range(1, 97)})
            assert len(st.items()) == 96 and st.summary()["n_failed"] == 0
            steps[lang].append(st)
            for r in st.items(): logs[lang].append(r["id"], "ann", "correct")
    rep = release_exam(tmp_path / "release", "jee_h", steps, logs)
    assert rep["n_released"] == 192 and rep["dropped"] == {}
    samples, errors = load_hintel(tmp_path / "release", subsets="jee_h")
    assert errors == [] and len(samples) == 2 * 192
    ids = {s.align_id for s in samples}
    assert len(ids) == 192 and question_key("JEE Adv 2023 Paper 2", 1) in ids and question_key("JEE Adv 2023 Paper 1", 96) in ids
    by = {(s.language, s.align_id): s for s in samples}
    assert "paper 2 question 1" in by[("hi", "jee-adv-2023-paper-2/1")].question


def test_a_question_read_twice_rejects_the_page_instead_of_failing_every_rerun(tmp_path):
    img = tmp_path / "a.png"; Image.new("RGB", (200, 200), "white").save(img)
    (tmp_path / "b.png").write_bytes(img.read_bytes())
    papers = {"a.png": [q(1, "Integer", "one", figures=[FIG1])], "b.png": [q(1, "Integer", "one, continued", figures=[FIG1])]}
    for _ in range(2):                                                                  # the rerun gives the same, finished result
        st = ocr_pages([tmp_path / "a.png", tmp_path / "b.png"], tmp_path / "build", "en", description="P1", backend=PaperReader(papers))
        assert st.summary()["n_failed"] == 0 and [r["id"] for r in st.items()] == ["en/p1/1"]
        assert "question(s) en/p1/1 already read from another page" in st.rejected()[0]["reason"]


def test_a_gold_fixed_in_one_language_is_applied_to_every_language_or_refused(server, pages, tmp_path, monkeypatch, capsys):
    "A reviewer fixes question 1's gold in English (B → C): released C in Hindi too; fixes that disagree are refused in every language."
    from vlmlens.curation.aligned_cli import add_parsers, dispatch
    import argparse
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    server.responder = reader
    kw = {"base_url": server.gemini_base_url, "cache": False, "max_attempts": 1}
    key = {"1": "B", "2": "12", "3": "AC"}
    steps = {l: ocr_pages(pages[l], tmp_path / "build", l, description="JEE Adv (synthetic)", model_kwargs=kw, answer_key=key) for l in ("en", "hi")}
    def review(name, fixes):
        logs = {l: VerdictLog(tmp_path / f"{name}_{l}.jsonl", FIX_LABELS) for l in steps}
        for l, st in steps.items():
            for r in st.items():
                if (l, r["item"]["row"]["index"]) in fixes:
                    logs[l].append(r["id"], f"ann-{l}", "fixed", edits={"row": json.dumps({**r["item"]["row"], "gold": fixes[(l, r["item"]["row"]["index"])]})})
                else: logs[l].append(r["id"], f"ann-{l}", "correct")
        return logs
    logs = review("one", {("en", 1): "C"})
    ap = argparse.ArgumentParser(); add_parsers(ap.add_subparsers(dest="curate_command"))
    argv = ["release-exam", "--subset", "jee_h", "--release", str(tmp_path / "rel"),
            "--from", f"en={steps['en'].dir},hi={steps['hi'].dir}", "--verdicts", f"en={logs['en'].path},hi={logs['hi'].path}"]
    assert dispatch(ap.parse_args(argv)) == 0
    assert "jee-adv-synthetic/1: gold C (fixed in en; was B) applied to hi" in capsys.readouterr().out
    samples, errors = load_hintel(tmp_path / "rel", subsets="jee_h")
    q1 = {s.language: s.answer for s in samples if s.align_id == "jee-adv-synthetic/1"}
    assert errors == [] and q1 == {"en": 2, "hi": 2}                                  # C in both languages, not C in one and B in the other
    logs = review("two", {("en", 1): "C", ("hi", 1): "D"})
    rep = release_exam(tmp_path / "rel2", "jee_h", steps, logs)
    assert rep["dropped"]["*/jee-adv-synthetic/1"] == "cross-language gold mismatch: en C, hi D"
    samples, _ = load_hintel(tmp_path / "rel2", subsets="jee_h")
    assert "jee-adv-synthetic/1" not in {s.align_id for s in samples}


def test_an_ocr_model_that_reads_most_pages_as_junk_decides_nothing(server, tmp_path, monkeypatch, capsys):
    """Two of three pages unusable (one unreadable, one with a malformed figure box: 67% > the stated 50%): `curate ocr` exits 3 with the
    count and the cause, not '1 item'; the unreadable page read again (one of three unusable): the share is printed beside the result."""
    from vlmlens.cli import main
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    folder = tmp_path / "pages"
    for k, w in enumerate((800, 830, 810)): draw_page(folder / f"p{k + 1}.png", w, ["question"], [])
    junk = set()
    server.responder = lambda call: "I could not read this page clearly." if _width(call) in junk else reader(call)
    argv = lambda out: ["curate", "ocr", "--pages", str(folder), "--language", "en", "--out", str(tmp_path / out), "--description", "P1",
                        "--model-kwarg", f"base_url={server.gemini_base_url}", "--model-kwarg", "cache=false", "--model-kwarg", "max_attempts=1", "--model-kwarg", "progress=false"]
    junk.add(800)
    assert main(argv("b1")) == 3
    out, err = capsys.readouterr()
    assert "items" not in out and len(err.strip().splitlines()) == 1, (out, err)
    assert "decided nothing: 1 of 3 OCR model gemini-2.5-flash pages valid (67% invalid, above the 50% allowed)" in err and "schema: p" in err
    junk.clear()
    assert main(argv("b2")) == 0
    out = capsys.readouterr().out
    assert "ocr_en: 3 items, 1 rejected" in out and "1 of 3 OCR model gemini-2.5-flash pages invalid (33%" in out


def _width(call):
    part = next(p for c in call.json["contents"] for p in c["parts"] if "inlineData" in p or "inline_data" in p)
    data = (part.get("inlineData") or part.get("inline_data"))["data"]
    return Image.open(io.BytesIO(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))).size[0]
