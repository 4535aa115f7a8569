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
    assert sorted(r["id"] for r in en.items()) == ["en/1", "en/2"] and sorted(r["id"] for r in hi.items()) == ["hi/1", "hi/2", "hi/3"]
    rej = en.rejected()[0]
    assert rej["stage"] == "schema" and rej["id"] == "page/p2.png"
    assert "question 3: options: MCQ(multiple) needs non-empty options A, B, C, D (got ['A', 'B', 'C'])" in rej["reason"]
    assert "question 3: figure box [900, 10, 100, 50]" in rej["reason"] and rej["item"]["raw"].startswith("```json")
    row = next(r for r in en.items() if r["id"] == "en/1")["item"]
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
    assert sorted(by) == [("en", "1"), ("en", "2"), ("en", "3"), ("hi", "1"), ("hi", "2"), ("hi", "3")]
    assert by[("en", "1")].answer == 1 and by[("en", "1")].options == ["2.25 A", "3.0 A", "3.37 A", "9 A"]
    assert by[("hi", "2")].answer == "12" and by[("hi", "2")].answer_type == "integer"
    assert by[("en", "3")].answer == [0, 2] and by[("en", "3")].answer_type == "mcq_multi"
    assert Image.open(by[("en", "3")].media[0].path).size == (486, 300)            # the fixed row's box on the 810-wide page
    assert Path(by[("hi", "1")].media[0].path).is_file()


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
    logs["en"].append("en/1", "a", "correct"); logs["en"].append("en/2", "a", "reject", note="no diagram needed")
    for r in hi.items(): logs["hi"].append(r["id"], "a", "correct")
    rep = release_exam(tmp_path / "rel", "jee_h", {"en": en, "hi": hi}, logs)
    assert rep["n_released"] == 0
    assert rep["dropped"]["en/2"] == "en: rejected in review" and rep["dropped"]["*/1"] == "no gold answer"
    assert rep["dropped"]["hi/3"] == "missing in en" and rep["dropped"]["page/p2.png"].startswith("en: page not fixed (p2.png: question 3:")
    with pytest.raises(FileNotFoundError, match="nope.png"): ocr_pages([tmp_path / "nope.png"], tmp_path / "b", "en", model_kwargs=kw)
    with pytest.raises(ValueError, match="needs labels"): OCRFixWidget(fix_items(en), VerdictLog(tmp_path / "x.jsonl"), "a")
    with pytest.raises(ValueError, match="subset must be one of"): release_exam(tmp_path / "rel", "vqav2", {"en": en}, logs)
