"""Reviewing translations in the widget (driven programmatically), the paper's statistics per subset and language, the
engine comparison (reviewers pick, back-translation is a signal), and the aligned release that keeps align_id and
drops rejected items in every language."""
import json
from pathlib import Path

import pytest

from vlmlens.benchmarks.hintel import build_synthetic_hintel, load_hintel
from vlmlens.curation.align import (BASIS, CRITERIA, TranslationLog, TranslationReviewWidget, char_edit_distance,
                                    compare_engines, release, review_items, review_stats)
from vlmlens.curation.review import VerdictLog
from vlmlens.curation.translate import back_translate, translate
from vlmlens.readers import read_records
from loopback_mt import MTLoopback, cipher

KEYS = {"AWS_ACCESS_KEY_ID": "AKIALOOPBACK00000000", "AWS_SECRET_ACCESS_KEY": "loopback/aws/secret/00000000000000000000",
        "AZURE_TRANSLATOR_KEY": "loopback0azure0key0000000000000000"}


@pytest.fixture(scope="module")
def _mt():
    with MTLoopback() as s: yield s


@pytest.fixture
def mt(_mt, monkeypatch, tmp_path):
    _mt.reset()
    for k, v in KEYS.items(): monkeypatch.setenv(k, v)
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "cache"))
    yield _mt
    _mt.reset()


@pytest.fixture(scope="module")
def hintel_root(tmp_path_factory):
    return build_synthetic_hintel(tmp_path_factory.mktemp("hintel"), n_per_subset=4)


def english(root, subsets=("vqav2", "realworldqa")):
    return {s: [dict(r, subset=s) for _, r in read_records(root / s / "en.jsonl")] for s in subsets}


def score(w, k):
    for c in CRITERIA: w.criteria[c].value = k


def test_review_in_the_widget_statistics_and_release(mt, hintel_root, tmp_path):
    src = english(hintel_root)
    steps = {(s, lang): translate(recs, tmp_path / "build", eng, lang, engine_options={"endpoint_url": mt.url, "max_attempts": 1})
             for s, recs in src.items() for lang, eng in (("hi", "azure"), ("te", "aws"))}
    log = TranslationLog(tmp_path / "review" / "verdicts.jsonl")
    items = [it for st in steps.values() for it in review_items(st, images=hintel_root)]
    assert len(items) == 16 and all(Path(it["image"]).is_file() for it in items)
    w = TranslationReviewWidget(items, log, "ann-1")
    assert w.fields["translated_question"].value == items[0]["translated_question"] and items[0]["question"] in w.text.value
    actions = {}
    while w.index < len(w.items):
        it, n = w.item, w.index
        if it["id"] == "realworldqa/hi/realworldqa-real-0":          # a lost option is refused, nothing written
            w.fields["translated_question"].value = it["translated_question"] + " "
            w.fields["translated_question"].value = it["translated_question"][:-3] + "?"
            w.buttons["minor_edit"].click(); actions[it["id"]] = "minor_edit"
        elif it["id"] == "vqav2/te/vqav2-real-0":
            w.note.value = "the answer's meaning is lost"; w.buttons["reject"].click(); actions[it["id"]] = "reject"
        elif it["id"].startswith("vqav2/hi/") and it["id"].endswith("0001"):
            w.fields["translated_answers"].value = "\n".join(["हाँ"] * 9)     # one line short: refused
            w.buttons["major_edit"].click()
            assert "10 lines expected" in w.status.value and w.index == n
            w.fields["translated_answers"].value = "\n".join(["हाँ"] * 10)
            w.fields["translated_question"].value = "क्या चित्र में पीला वृत्त है?"
            w.buttons["major_edit"].click(); actions[it["id"]] = "major_edit"
        else:
            score(w, 5); w.buttons["accept"].click(); actions[it["id"]] = "accept"
        assert w.index > n or w.index == len(w.items)
    vs = log.read()
    assert [v.verdict for v in vs] == [actions[v.item_id] for v in vs] and {v.annotator for v in vs} == {"ann-1"}
    assert TranslationReviewWidget(items, log, "ann-1").index == len(items)          # resumes: nothing left
    rows = {r["stratum"]: r for r in review_stats(log, items)}
    assert set(rows) == {"realworldqa/hi", "realworldqa/te", "vqav2/hi", "vqav2/te", "ALL"}
    assert rows["vqav2/te"]["reject_rate"] == 0.25 and rows["vqav2/te"]["accept_rate"] == 0.75
    assert rows["vqav2/hi"]["edit_rate"] == 0.25 and rows["vqav2/hi"]["major_share_of_edits"] == 1.0
    assert rows["realworldqa/hi"]["minor_share_of_edits"] == 1.0 and rows["realworldqa/hi"]["mean_edit_chars"] == 3
    assert rows["ALL"]["n_reviewed"] == 16 and rows["ALL"]["accept_rate"] == 13 / 16
    assert rows["ALL"]["semantic_accuracy_mean_1_5"] == 5.0
    out = tmp_path / "release"
    reports = {s: release(out, src[s], {"hi": steps[(s, "hi")], "te": steps[(s, "te")]}, log, s, images=hintel_root) for s in src}
    assert reports["vqav2"]["dropped"] == {"vqav2-real-0": "te: rejected: the answer's meaning is lost"}
    samples, errors = load_hintel(out, subsets="vqav2,realworldqa")
    assert errors == []
    ids = {(s.subset, s.language): {x.align_id for x in samples if (x.subset, x.language) == (s.subset, s.language)} for s in samples}
    assert ids[("vqav2", "en")] == ids[("vqav2", "hi")] == ids[("vqav2", "te")] == {"vqav2-syn-0001", "vqav2-syn-0002", "vqav2-syn-0003"}
    assert len(ids[("realworldqa", "en")]) == 4
    edited = next(s for s in samples if s.language == "hi" and s.align_id == "vqav2-syn-0001")
    assert edited.question == "क्या चित्र में पीला वृत्त है?" and edited.metadata["answers"] == ["हाँ"] * 10
    rwq = next(s for s in samples if s.language == "hi" and s.align_id == "realworldqa-real-0")
    assert len(rwq.options) == 3 and rwq.options[1] == cipher("The right candle", "en", "hi")   # inline options, labels kept
    assert (out / "images" / "vqav2-syn-0001.png").is_file()
    rec = json.loads((out / "vqav2" / "te.jsonl").read_text().splitlines()[0])
    assert rec["metadata"]["translation_engine"] == "aws" and rec["metadata"]["annotator"] == "ann-1" and "flags" not in rec


def test_engine_comparison_reviewers_pick_not_back_translation(mt, hintel_root, tmp_path):
    recs = english(hintel_root)["vqav2"] + english(hintel_root)["realworldqa"]
    def engines(text, source, target, engine):          # aws copies word order, azure swaps the first two words
        if engine == "azure" and target != "en": w = text.split(); text = " ".join(w[1:2] + w[:1] + w[2:])
        return cipher(text, source, target)
    mt.translator = engines
    opts = {"endpoint_url": mt.url, "max_attempts": 1}
    runs = {}
    for eng in ("aws", "azure"):
        fwd = translate(recs, tmp_path / "b", eng, "hi", engine_options=opts)
        runs[("hi", eng)] = {"forward": fwd, "back": back_translate(fwd, tmp_path / "b", engine_options=opts)}
    log = TranslationLog(tmp_path / "cmp.jsonl")
    assert all(r["picked"] is False and r["basis"].startswith("not reviewed") for r in compare_engines(recs, runs, log))
    for (lang, eng), run in runs.items():
        items = review_items(run["forward"], with_engine=True)
        w, n = TranslationReviewWidget(items, log, "rev-hi", require_criteria=True), len(log.read())
        w.buttons["accept"].click()
        assert "score the three criteria" in w.status.value and len(log.read()) == n
        while w.index < len(items): score(w, 4 if eng == "azure" else 3); w.buttons["accept"].click()
    rows = {r["engine"]: r for r in compare_engines(recs, runs, log)}
    assert rows["aws"]["chrf_0_100"] > rows["azure"]["chrf_0_100"]                # back-translation favours aws …
    assert rows["azure"]["picked"] and not rows["aws"]["picked"]                  # … reviewers pick azure
    assert rows["azure"]["review_mean_1_5"] == 4.0 and rows["azure"]["basis"] == BASIS and "never used to pick" in BASIS
    assert rows["aws"]["paper_engine"] == "azure" and rows["aws"]["n_reviewed"] == len(recs)


def test_bad_review_input(tmp_path):
    log = TranslationLog(tmp_path / "v.jsonl")
    with pytest.raises(ValueError, match="choose minor_edit"): log.append("hi/1", "a", "accept", edits={"translated_question": "x"})
    with pytest.raises(ValueError, match="nothing was edited"): log.append("hi/1", "a", "minor_edit")
    with pytest.raises(ValueError, match="integer 1-5"): log.append("hi/1", "a", "accept", criteria={"linguistic_style": 7})
    with pytest.raises(ValueError, match="annotator"): log.append("hi/1", " ", "accept")
    with pytest.raises(TypeError, match="TranslationLog"): TranslationReviewWidget([{"id": "x"}], VerdictLog(tmp_path / "o.jsonl"), "a")
    (tmp_path / "v.jsonl").open("a").write('{"item_id": "hi/2", "annotator": "a", "verdict": "maybe"}\n')
    with pytest.warns(UserWarning, match="v.jsonl:1: not a verdict"): assert log.read() == []
    assert char_edit_distance("abc", "abd") == 1


def test_an_edit_in_the_wrong_script_is_not_saved(tmp_path):
    "A reviewer's edit passes the script check the engine's output passes: Hindi typed in Latin letters is refused."
    item = {"align_id": "q1", "subset": "vqav2", "language": "hi", "engine": "aws", "question": "कितनी बिल्लियाँ हैं?", "answer": "दो",
            "flags": [], "source_text": {"question": "How many cats are there?", "answer": "two"}}
    log = TranslationLog(tmp_path / "v.jsonl")
    w = TranslationReviewWidget(review_items([item]), log, "asha")
    w.fields["translated_question"].value = "kitni billiyan hain?"
    w.buttons["minor_edit"].click()
    assert "not saved" in w.status.value and "Devanagari" in w.status.value and log.read() == []
    w.fields["translated_question"].value = "यहाँ कितनी बिल्लियाँ हैं?"
    w.buttons["minor_edit"].click()
    assert [(v.verdict, v.edits) for v in log.read()] == [("minor_edit", {"translated_question": "यहाँ कितनी बिल्लियाँ हैं?"})]
