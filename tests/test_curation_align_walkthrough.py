"""The aligned-set walk-through (nbs/guides/curate_aligned.md), end to end: the vendored
real HinTel examples plus synthetic images become an aligned en/hi/te set through two MT engines behind loopback
services, the engines are compared and reviewed, every translation is reviewed in the widget (driven programmatically),
caption MCQs are generated and filtered, synthetic exam pages are ingested, the release is evaluated with
`vlmlens run --benchmark hintel`, and CURVE calibration runs on a small synthetic set. The `vlmlens curate`
sub-commands are run through this framework's own parsers (`vlmlens.curation.aligned_cli`)."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from vlmlens.benchmarks.hintel import build_synthetic_hintel
from vlmlens.curation.align import CRITERIA, TranslationLog, TranslationReviewWidget, review_items
from vlmlens.curation.aligned_cli import add_parsers, dispatch
from vlmlens.curation.calibration import AUDIT_LABELS, AuditWidget, audit_items, load_curve_rows
from vlmlens.curation.captions import MCQ_LABELS, mcq_review_items
from vlmlens.curation.ocr import FIX_LABELS, OCRFixWidget, fix_items
from vlmlens.curation.review import ReviewWidget, VerdictLog
from vlmlens.curation.store import list_steps, open_step
from vlmlens.store import RunSet
from loopback_mt import MTLoopback, cipher

import test_curation_captions as caps_t
import test_curation_calibration as cal_t
import test_curation_ocr as ocr_t

KEYS = {"AWS_ACCESS_KEY_ID": "AKIALOOPBACK00000000", "AWS_SECRET_ACCESS_KEY": "loopback/aws/secret/00000000000000000000",
        "AZURE_TRANSLATOR_KEY": "loopback0azure0key0000000000000000", "OPENAI_API_KEY": "test-openai-key.not-real.0000000000",
        "GEMINI_API_KEY": "loopback-gemini-key-0000000000", "OPENAI_COMPATIBLE_API_KEY": "EMPTY",
        "GOOGLE_TRANSLATE_API_KEY": "loopback-google-key-000000000000", "GOOGLE_CLOUD_PROJECT": "vlmlens-test"}
FOUR = ("aws", "azure", "google", "indictrans")                    # the engines HinTel §3.2 compared


@pytest.fixture(scope="module")
def svc():
    with MTLoopback() as s: yield s


def curate(*args) -> int:
    ap = argparse.ArgumentParser(prog="vlmlens curate")
    add_parsers(ap.add_subparsers(dest="curate_command", required=True))
    return dispatch(ap.parse_args([str(a) for a in args]))


def step_of(build, name, **inputs):
    "The step folder of `name` in `build` whose inputs contain `inputs`."
    for r in list_steps(build):
        if r.get("step") != name: continue
        st = open_step(r["dir"])
        if all(st.inputs.get(k) == v for k, v in inputs.items()): return st
    raise AssertionError(f"no {name} step with {inputs} in {build}")


def test_walkthrough(svc, tmp_path, monkeypatch, capsys):
    for k, v in KEYS.items(): monkeypatch.setenv(k, v)
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "cache"))
    ml = tmp_path / "ml"
    src = build_synthetic_hintel(ml / "src", n_per_subset=8)
    build, release = ml / "build", ml / "release"
    eng = lambda e: ["--engine-option", f"{e}:endpoint_url={svc.url}"]

    # 1. compare the paper's four engines on the review set; reviewers score them in the widget; the table picks one per language
    def engines(text, source, target, engine):            # azure garbles word order; aws is faithful
        if engine == "azure" and target != "en": w = text.split(); text = " ".join(w[::-1])
        return cipher(text, source, target)
    svc.translator = engines
    for lang in ("hi", "te"):
        assert curate("compare-engines", "--records", src / "vqav2" / "en.jsonl", "--target", lang, "--engines", ",".join(FOUR),
                      "--n", 6, "--out", build, *[o for e in FOUR for o in eng(e)]) == 0
        items = json.loads((build / f"compare_{lang}_review.json").read_text())
        for it in items: it["image"] = str(src / it["image"])
        log = TranslationLog(ml / f"compare_{lang}.jsonl")
        w = TranslationReviewWidget(items, log, f"rev-{lang}", require_criteria=True)
        while w.index < len(items):
            for c in CRITERIA: w.criteria[c].value = 5 if w.item["id"].startswith("aws/") else 2
            w.buttons["accept" if w.item["id"].startswith("aws/") else "reject"].click()
        assert curate("compare-engines", "--records", src / "vqav2" / "en.jsonl", "--target", lang, "--engines", ",".join(FOUR),
                      "--n", 6, "--out", build, "--verdicts", ml / f"compare_{lang}.jsonl", *[o for e in FOUR for o in eng(e)]) == 0
        rows = json.loads((build / f"compare_{lang}.json").read_text())
        assert [r["engine"] for r in rows if r["picked"]] == ["aws"] and all(r["n_items"] == 6 for r in rows)
        assert sorted(r["engine"] for r in rows) == sorted(FOUR) and all(r["n_reviewed"] == 6 for r in rows)
    out = capsys.readouterr().out
    assert "never used to pick or filter" in out

    # 2. translate every subset with the picked engine, review each item in the widget, release the aligned set
    svc.translator = cipher
    subsets = ("vqav2", "realworldqa", "clevr_math")
    for s in subsets:
        for lang in ("hi", "te"):
            assert curate("translate", "--records", src / s / "en.jsonl", "--subset", s, "--engine", "aws", "--target", lang,
                          "--out", build, "--engine-option", f"endpoint_url={svc.url}") == 0
    log = TranslationLog(ml / "review.jsonl")
    steps = {(s, l): step_of(build, f"translate_{l}", target=l, records=_digest(src / s / "en.jsonl", s)) for s in subsets for l in ("hi", "te")}
    items = [it for st in steps.values() for it in review_items(st, images=src)]
    w = TranslationReviewWidget(items, log, "asha")
    while w.index < len(items):
        it = w.item
        if it["id"] == "clevr_math/te/clevr_math-syn-0003": w.note.value = "meaning changed"; w.buttons["reject"].click()
        elif it["id"] == "vqav2/hi/vqav2-real-0":
            w.fields["translated_question"].value = "क्या यह पूरी तरह से विकसित जेब्रा है?"; w.buttons["major_edit"].click()
        else: w.buttons["accept"].click()
    assert len(log.read()) == len(items) == 48
    assert curate("translation-stats", "--from", ",".join(str(st.dir) for st in steps.values()), "--verdicts", ml / "review.jsonl") == 0
    stats = capsys.readouterr().out
    assert "clevr_math/te" in stats and "accept_rate" in stats
    assert curate("translation-stats", "--from", f"{build}/translate_te@latest,{build}/translate_hi@latest", "--verdicts", ml / "review.jsonl") == 0
    latest = capsys.readouterr().out                                   # the steps made last: clevr_math in each language
    assert "clevr_math/te" in latest and "clevr_math/hi" in latest and "vqav2/" not in latest
    assert curate("translation-stats", "--from", f"{build}/translate_ta@latest", "--verdicts", ml / "review.jsonl") == 2
    assert "no step named 'translate_ta'" in capsys.readouterr().err
    for s in subsets:
        assert curate("release-aligned", "--records", src / s / "en.jsonl", "--subset", s, "--images", src, "--release", release,
                      "--translations", f"hi={steps[(s, 'hi')].dir},te={steps[(s, 'te')].dir}", "--verdicts", ml / "review.jsonl") == 0
    assert "dropped clevr_math-syn-0003: te: rejected: meaning changed" in capsys.readouterr().out

    # 3. caption MCQs (Telugu captions), the two-model text-only filter, verification, release as vaani_t
    svc.responder = caps_t.generator
    cap_file = _captions(tmp_path)
    kw = ["--model-kwarg", f"base_url={svc.openai_base_url}", "--model-kwarg", "cache=false"]
    assert curate("caption-mcq", "--captions", cap_file, "--generator", "gpt-4.1", "--out", build, *kw) == 0
    assert curate("text-filter", "--from", "generate_mcq", "--models", f"gpt-4.1,openai-compatible:filter2@{svc.openai_base_url}", "--out", build, *kw) == 0
    flt = step_of(build, "text_only_filter")
    assert curate("mcq-report", "--from", build / "text_only_filter@latest") == 0       # as the guide writes it
    assert "longest option" in capsys.readouterr().out
    mlog = VerdictLog(ml / "mcq_review.jsonl", MCQ_LABELS)
    w = ReviewWidget(mcq_review_items(flt, images=tmp_path), mlog, "ravi", editable=("question",))
    while w.index < len(w.items): w.buttons["valid"].click()
    assert curate("release-mcq", "--from", build / "text_only_filter@latest", "--verdicts", ml / "mcq_review.jsonl", "--subset", "vaani_t", "--images", tmp_path,
                  "--release", release) == 0

    # 4. synthetic exam pages (English and Hindi) read by Gemini, fixed by hand, released as jee_h
    svc.responder = ocr_t.reader
    pages = _pages(tmp_path)
    (ml / "key.json").write_text(json.dumps({"1": "B", "2": "12", "3": "AC"}))
    for lang in ("en", "hi"):
        assert curate("ocr", "--pages", pages[lang][0].parent, "--language", lang, "--answer-key", ml / "key.json", "--out", build,
                      "--model-kwarg", f"base_url={svc.gemini_base_url}", "--model-kwarg", "cache=false") in (0,)
    ocr_steps = {l: step_of(build, f"ocr_{l}", language=l) for l in ("en", "hi")}
    for lang, st in ocr_steps.items():
        flog = VerdictLog(ml / f"fix_{lang}.jsonl", FIX_LABELS)
        w = OCRFixWidget(fix_items(st), flog, f"ann-{lang}")
        while w.index < len(w.items):
            if w.item["kind"] == "page":
                fixed = [ocr_t.q(3, "MCQ(multiple)", "Which of the structures shown are aromatic?", {"A": "I", "B": "II", "C": "III", "D": "IV"},
                                 [ocr_t.FIG3], "chem", "AC")]
                w.fields["row"].value = json.dumps(fixed); w.buttons["fixed"].click()
            else: w.buttons["correct"].click()
    assert curate("release-exam", "--subset", "jee_h", "--from", f"en={build / 'ocr_en@latest'},hi={build / 'ocr_hi@latest'}",
                  "--verdicts", f"en={ml / 'fix_en.jsonl'},hi={ml / 'fix_hi.jsonl'}", "--release", release) == 0
    assert "jee_h: 3 questions in en, hi" in capsys.readouterr().out

    # 5. evaluate the release with the ordinary CLI
    svc.responder = None
    env = {**os.environ, **KEYS, "VLMLENS_CACHE": str(tmp_path / "cache")}
    for lang in ("hi", "te"):
        r = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "hintel",
                            "--data-path", str(release), "--model", "gpt-4.1", "--language", lang, "--judge", "none", "--no-progress",
                            "--model-kwarg", f"base_url={svc.openai_base_url}", "--output-root", str(ml / "outputs"), "--run-name", f"aligned-{lang}"],
                           capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    runs = {r.name: r for r in RunSet.discover(ml / "outputs")}
    hi, te = runs["aligned-hi"], runs["aligned-te"]
    assert hi.status == "finished" and te.status == "finished"
    assert {sid.split(":")[0] for sid in hi.predictions()} == {"vqav2", "realworldqa", "clevr_math", "jee_h"}
    assert len(hi.predictions()) == 8 + 8 + 7 + 3      # the clevr item rejected in Telugu is dropped in every language; jee_h
    assert len(te.predictions()) == 8 + 8 + 7 + 1      # … and vaani_t's one verified item
    assert hi.summary["overall"]["n_errors"] == 0 and hi.summary["overall"]["n"] == 26
    assert [e.split(": ", 1)[1] for e in hi.summary["row_errors"]] == ["no file for subset 'vaani_h' in languages ['hi']"]   # not built here

    # 6. CURVE calibration on a small synthetic set
    for k, row in enumerate(cal_t.ROWS):
        cal_t.write_av_clip(tmp_path / "cv" / "videos" / f"{row['video_id'].rsplit('=', 1)[-1]}.mp4", shade=40 * k, tone=300.0 + 90 * k)
    data = tmp_path / "cv" / "curve.json"
    data.write_text(json.dumps(cal_t.ROWS, ensure_ascii=False), encoding="utf-8")
    svc.responder = cal_t.responder
    assert curate("calibrate-difficulty", "--data", data, "--video-root", tmp_path / "cv" / "videos", "--model", "gemini-2.5-flash",
                  "--judge", f"openai-compatible:judge@{svc.openai_base_url}", "--judge-kwarg", "k=1", "--frac", "1.0",
                  "--model-kwarg", f"base_url={svc.gemini_base_url}", "--model-kwarg", "poll_interval_s=0.02", "--out", tmp_path / "cal") == 0
    out = capsys.readouterr()
    assert "flagged for revision: hi-2 (single_frame), it-1 (text_only), te-1 (audio_only)" in out.out
    assert "skills it-2: 1 skill(s); at least 2 required" in out.err
    rows, _ = load_curve_rows(data)
    alog = VerdictLog(tmp_path / "cal" / "audit.jsonl", AUDIT_LABELS)
    for who in ("aud-1", "aud-2"):
        w = AuditWidget(audit_items(rows, video_root=tmp_path / "cv" / "videos"), alog, who, frames=2, window_s=2)
        for r in rows: w.fields["answer"].value = r["answer"] if (who, r["key"]) != ("aud-2", "te-1") else "మృదంగం"; w.buttons["answered"].click()
    assert curate("calibrate-correctness", "--data", data, "--verdicts", tmp_path / "cal" / "audit.jsonl", "--out", tmp_path / "cal") == 0
    out = capsys.readouterr().out
    assert "'consensus': 4, 'revise': 1, 'incomplete': 0, 'undecided': 0" in out and "human baseline 0.9 over 10 answers (paper 0.9522)" in out
    assert "revise te-1 (gold 'నాదస్వరం'): aud-1: నాదస్వరం; aud-2: మృదంగం" in out


def _digest(path, subset):
    from vlmlens.core import sha256_json
    from vlmlens.readers import read_records
    return sha256_json([dict(r, subset=subset) for _, r in read_records(path)])


def _captions(tmp_path) -> Path:
    for c in caps_t.CAPTIONS:
        (tmp_path / c["image"]).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 32), (120, 80, 40)).save(tmp_path / c["image"])
    p = tmp_path / "captions.jsonl"
    p.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in caps_t.CAPTIONS) + "\n", encoding="utf-8")
    return p


def _pages(tmp_path) -> dict:
    out = {}
    for lang, spec in (("en", ocr_t.EN), ("hi", ocr_t.HI)):
        out[lang] = [ocr_t.draw_page(tmp_path / "pages" / lang / f"p{k + 1}.png", w, [x["question"] for x in qs],
                                     [b for x in qs for b in x["figures"]][:2]) for k, (w, qs) in enumerate(spec.items())]
    return out
