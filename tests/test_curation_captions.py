"""VAANI-style MCQs from captions through the real OpenAI client (loopback): aligned en + native items, wrong-script
captions and malformed output rejected with the reason, the N-model text-only filter (all must succeed to drop),
verification in the review widget, the answer-position and distractor reports, and the release as a vaani_* subset."""
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from vlmlens.benchmarks.hintel import load_hintel
from vlmlens.curation.captions import (MCQ_LABELS, answer_positions, distractor_report, generate_mcqs, load_captions,
                                       mcq_review_items, release_mcqs, text_only_filter)
from vlmlens.curation.review import ReviewWidget, VerdictLog

CAPTIONS = [
    {"id": "t1", "image": "img/t1.png", "language": "te", "caption": "ఒక ఇంటికి మూడు కిటికీలు ఉన్నాయి, ముందు ఒక ఎర్ర బండి ఉంది."},
    {"id": "t2", "image": "img/t2.png", "language": "te", "caption": "పొలంలో ఇద్దరు రైతులు వరి నాటుతున్నారు."},
    {"id": "t3", "image": "img/t3.png", "language": "te", "caption": "oka gudi mundu chala mandi bhaktulu unnaru"},      # Latin script
    {"id": "t4", "image": "img/t4.png", "language": "te", "caption": "దేవాలయం ముందు ముగ్గులు వేశారు."},
    {"id": "t5", "image": "img/t5.png", "language": "te", "caption": "సంతలో అరటిపండ్లు అమ్ముతున్నారు."},
]
MCQS = {  # what the generator writes for each caption (t4: only three options; t5: numbers differ across languages)
    "మూడు కిటికీలు": {"te": {"question": "చిత్రంలో ఇంటికి ఎన్ని కిటికీలు ఉన్నాయి?", "options": ["4 కిటికీలు", "2 కిటికీలు", "3 కిటికీలు", "5 కిటికీలు"]},
                    "en": {"question": "How many windows does the house in the picture have?", "options": ["4 windows", "2 windows", "3 windows", "5 windows"]},
                    "answer": "C"},
    "ఇద్దరు రైతులు": {"te": {"question": "పొలంలో రైతులు ఏం చేస్తున్నారు?", "options": ["వరి నాటుతున్నారు", "కోత కోస్తున్నారు", "నీళ్లు పెడుతున్నారు", "విశ్రాంతి తీసుకుంటున్నారు"]},
                     "en": {"question": "What are the farmers doing in the field?", "options": ["planting rice", "harvesting", "watering", "resting"]},
                     "answer": "A"},
    "ముగ్గులు": {"te": {"question": "దేవాలయం ముందు ఏముంది?", "options": ["ముగ్గులు", "పూలు", "దీపాలు"]},
                 "en": {"question": "What is in front of the temple?", "options": ["rangoli", "flowers", "lamps"]}, "answer": "A"},
    "అరటిపండ్లు": {"te": {"question": "సంతలో ఎన్ని గెలలు ఉన్నాయి?", "options": ["1 గెల", "2 గెలలు", "3 గెలలు", "4 గెలలు"]},
                   "en": {"question": "How many bunches are at the market?", "options": ["1 bunch", "2 bunches", "5 bunches", "4 bunches"]},
                   "answer": "B"},
}


def generator(call):
    text = call.text
    if "Instruction: Provide the Correct Option Number Only." in text:      # the text-only filter, wherever the options were shuffled to
        shown = dict(re.findall(r"^([A-D])\) (.+)$", text, re.M))
        letter = lambda *opts: next(k for k, o in shown.items() if o.strip() in opts)
        if "windows" in text or "కిటికీలు" in text: return letter("3 windows", "3 కిటికీలు")      # every filter model gets the window question
        right = letter("planting rice", "వరి నాటుతున్నారు")                                # only one model guesses the farmers' question
        return right if call.model == "gpt-4.1" else [k for k in shown if k != right][-1]
    cap = next(k for k in MCQS if k in text)
    return "Here you go:\n```json\n" + json.dumps(MCQS[cap], ensure_ascii=False) + "\n```"


@pytest.fixture
def data(tmp_path):
    for c in CAPTIONS:
        (tmp_path / c["image"]).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 32), (120, 80, 40)).save(tmp_path / c["image"])
    p = tmp_path / "captions.jsonl"
    p.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CAPTIONS) + "\n", encoding="utf-8")
    return p


def test_caption_mcqs_filter_review_and_release(server, data, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = generator
    kw = {"base_url": server.openai_base_url, "cache": False, "max_attempts": 1}
    caps, errors = load_captions(data)
    assert errors == [] and len(caps) == 5
    st = generate_mcqs(caps, tmp_path / "build", "gpt-4.1", generator_kwargs=kw, shuffle_options=False)   # the generator's order
    rej = {r["id"]: r for r in st.rejected()}
    assert rej["t3"]["stage"] == "script" and "expected for Telugu (mostly Latin)" in rej["t3"]["reason"]
    assert rej["t4"]["stage"] == "parse" and "te: expected 4 options" in rej["t4"]["reason"] and rej["t4"]["item"]["raw"]
    assert rej["t5"]["stage"] == "parse" and "option C: numbers differ" in rej["t5"]["reason"]
    assert sorted(r["id"] for r in st.items()) == ["en/t1", "en/t2", "te/t1", "te/t2"]
    assert len(server.requests("openai")) == 4                                   # the Latin caption was never sent
    t1 = {r["item"]["language"]: r["item"] for r in st.items() if r["item"]["align_id"] == "t1"}
    assert t1["te"]["answer"] == t1["en"]["answer"] == "C" and t1["te"]["metadata"]["caption"] == CAPTIONS[0]["caption"]
    prov = st.items()[0]["provenance"]
    assert prov["model"] == "gpt-4.1" and prov["prompt_id"] == "hintel/VAANI MCQ generation prompt" and "```json" in prov["raw"]
    flt = text_only_filter(st, tmp_path / "build", ["gpt-4.1", f"openai-compatible:filter2@{server.openai_base_url}"], model_kwargs=kw)
    drop = flt.rejected()
    assert [r["id"] for r in drop] == ["t1"] and drop[0]["stage"] == "text_only"
    assert drop[0]["reason"].startswith("answered without the image by all 2 model(s) in ")
    kept = sorted(r["id"] for r in flt.items())
    assert kept == ["en/t2", "te/t2"]                                          # one model missed it: kept
    ans = flt.items()[0]["provenance"]["extra"]["text_only_answers"]
    assert {m: a["choice"] for m, a in ans.items()} == {"gpt-4.1": "A", f"openai-compatible:filter2@{server.openai_base_url}": "D"}
    items = [r["item"] for r in st.items()]
    pos = {r["language"]: r for r in answer_positions(items)}
    assert (pos["te"]["n_C"], pos["te"]["n_A"], pos["te"]["n"]) == (1, 1, 2)
    dr = distractor_report(items)
    assert dr["en"]["n"] == 2 and dr["en"]["chance"] == 0.25 and "longest_option_accuracy" in dr["en"]
    log = VerdictLog(tmp_path / "review" / "verdicts.jsonl", MCQ_LABELS)
    rv = mcq_review_items(flt, images=tmp_path)
    w = ReviewWidget(rv, log, "ann-te", editable=("question",))
    assert w.item["answer"].startswith("A) ") and len(w.media.children) == 1
    while w.index < len(rv):
        if w.item["id"] == "en/t2": w.fields["question"].value = "What are the two farmers doing in the field?"
        w.buttons["valid"].click()
    rep = release_mcqs(flt, log, tmp_path / "release", "vaani_t", images=tmp_path)
    assert rep["n_released"] == 1 and rep["dropped"] == {}
    samples, errors = load_hintel(tmp_path / "release", subsets="vaani_t")
    assert errors == [] and sorted(s.language for s in samples) == ["en", "te"]
    en = next(s for s in samples if s.language == "en")
    assert en.question == "What are the two farmers doing in the field?" and en.answer == 0 and en.options[0] == "planting rice"


def test_invalid_review_drops_both_languages_and_bad_captions(tmp_path):
    items = [{"align_id": "x", "language": l, "question": "?", "options": list("abcd"), "answer": "B", "image": "i.png"} for l in ("en", "hi")]
    log = VerdictLog(tmp_path / "v.jsonl", MCQ_LABELS)
    log.append("en/x", "a", "valid"); log.append("hi/x", "a", "invalid", note="distractors are not plausible")
    rep = release_mcqs(items, log, tmp_path / "rel", "vaani_h")
    assert rep["n_released"] == 0 and rep["dropped"] == {"x": "hi: marked invalid"}
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "image": "a.png", "caption": "x", "language": "hi"}\n{"id": "a", "image": "b.png", "caption": "y", "language": "hi"}\n'
                 '{"id": "c", "caption": "z", "language": "hi"}\nnot json\n')
    caps, errors = load_captions(p)
    assert len(caps) == 1 and [(e.row, e.field) for e in errors][:2] == [(2, "id"), (3, "image")] and len(errors) == 3
    with pytest.raises(ValueError, match="at least one model"): text_only_filter(items, tmp_path, [])


def test_text_filter_models_of_two_providers_configured_separately(server, data, tmp_path, monkeypatch, capsys):
    "`--model-kwarg MODEL:KEY=VALUE` reaches only that model: GPT-4.1 and Gemini each get their own endpoint; KEY=VALUE reaches both."
    import argparse
    from vlmlens.curation.aligned_cli import add_parsers, dispatch
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    server.responder = generator
    caps, _ = load_captions(data)
    st = generate_mcqs(caps, tmp_path / "build", "gpt-4.1", generator_kwargs={"base_url": server.openai_base_url, "cache": False}, shuffle_options=False)
    ap = argparse.ArgumentParser(); add_parsers(ap.add_subparsers(dest="curate_command"))
    argv = ["text-filter", "--from", str(st.dir), "--out", str(tmp_path / "build"), "--models", "gpt-4.1,gemini-2.5-flash",
            "--model-kwarg", f"gpt-4.1:base_url={server.openai_base_url}", "--model-kwarg", f"gemini-2.5-flash:base_url={server.gemini_base_url}",
            "--model-kwarg", "cache=false", "--model-kwarg", "max_attempts=1"]
    assert dispatch(ap.parse_args(argv)) == 0
    assert "text_only_filter: 2 items, 1 rejected" in capsys.readouterr().out
    gem = [c for c in server.requests("gemini") if "Provide the Correct Option Number Only" in c.text]
    oai = [c for c in server.requests("openai") if "Provide the Correct Option Number Only" in c.text]
    assert len(gem) == 4 and len(oai) == 4                                       # each provider asked every item once


def test_a_generator_option_that_changes_the_output_starts_a_new_step(server, data, tmp_path, monkeypatch):
    "Another image detail (or server) is another step, asked again; a transport option (cache, retries) resumes the same one."
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = generator
    caps, _ = load_captions(data)
    kw = {"base_url": server.openai_base_url, "cache": False}
    a = generate_mcqs(caps, tmp_path / "b", "gpt-4.1", generator_kwargs=kw)
    n = len(server.requests("openai"))
    assert generate_mcqs(caps, tmp_path / "b", "gpt-4.1", generator_kwargs={**kw, "max_attempts": 2}).dir == a.dir
    assert len(server.requests("openai")) == n                                                  # resumed: nothing asked
    b = generate_mcqs(caps, tmp_path / "b", "gpt-4.1", generator_kwargs={**kw, "detail": "low"})
    assert b.dir != a.dir and len(server.requests("openai")) == 2 * n and b.inputs["generator_options"]["detail"] == "low"
    two = ["gpt-4.1", f"openai-compatible:filter2@{server.openai_base_url}"]
    f1 = text_only_filter(a, tmp_path / "b", two, model_kwargs=kw)
    f2 = text_only_filter(a, tmp_path / "b", two, model_kwargs=kw, per_model={two[1]: {"detail": "low"}})
    assert f1.dir != f2.dir and f2.inputs["model_options"][two[1]]["detail"] == "low"


LITERAL = {"te": {"question": "బండి ఏ రంగులో ఉంది?", "options": ["ఎరుపు", "నీలం", "ఆకుపచ్చ", "పసుపు"]},
           "en": {"question": "What colour is the cart?", "options": ["red", "blue", "green", "yellow"]}, "answer": "A"}


def literal_generator(call):
    "A generator that follows the prompt's own example: the answer is always A; caption d0 gets two near-duplicate distractors."
    if "Instruction: Provide the Correct Option Number Only." in call.text: return "A"       # a text-only model that always says A
    if "నకిలీ" in call.text:
        return json.dumps({**LITERAL, "en": {**LITERAL["en"], "options": ["a red cart", "a red carts", "a blue van", "a green bus"]}}, ensure_ascii=False)
    return json.dumps(LITERAL, ensure_ascii=False)


def _literal_captions(tmp_path, n=18):
    caps = [{"id": f"c{i}", "image": f"img/c{i}.png", "language": "te", "caption": f"చిత్రం {i}: ఇంటి ముందు ఒక ఎర్ర బండి ఉంది."} for i in range(n)]
    caps.append({"id": "d0", "image": "img/d0.png", "language": "te", "caption": "నకిలీ: ఇంటి ముందు ఒక ఎర్ర బండి ఉంది."})
    p = tmp_path / "captions.jsonl"
    p.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in caps) + "\n", encoding="utf-8")
    return p


def test_a_literal_generator_gives_balanced_distinct_mcqs_by_default(server, tmp_path, monkeypatch, capsys):
    "Every generator answer at A: the default shuffle balances positions (the same permutation in both languages, seed recorded), the "
    "near-duplicate distractors are rejected, mcq-report passes, and an always-A text-only model drops only the items shuffled to A."
    from vlmlens.cli import main
    from vlmlens.curation.store import open_step
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = literal_generator
    kw = ["--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "cache=false", "--model-kwarg", "max_attempts=1",
          "--model-kwarg", "progress=false"]
    caps, build = _literal_captions(tmp_path), tmp_path / "build"
    assert main(["curate", "caption-mcq", "--captions", str(caps), "--generator", "gpt-4.1", "--out", str(build), "--seed", "7", *kw]) == 0
    st = open_step(build / "generate_mcq@latest")
    rej = {r["id"]: r for r in st.rejected()}
    assert rej["d0"]["stage"] == "parse" and "en: options A and B are near duplicates ('a red cart' / 'a red carts')" in rej["d0"]["reason"]
    items = [r["item"] for r in st.items()]
    en = {r["align_id"]: r for r in items if r["language"] == "en"}
    te = {r["align_id"]: r for r in items if r["language"] == "te"}
    assert len(en) == len(te) == 18
    pos = [en[k]["answer"] for k in en]
    assert sorted(pos.count(x) for x in "ABCD") in ([4, 4, 5, 5], [4, 4, 4, 6], [3, 5, 5, 5]), pos   # not 18/18 A: dealt in turn
    for k in en:                                                                          # the same permutation in both languages
        assert en[k]["answer"] == te[k]["answer"] and en[k]["metadata"]["option_order"] == te[k]["metadata"]["option_order"]
        assert en[k]["options"][ord(en[k]["answer"]) - 65] == "red" and te[k]["options"][ord(te[k]["answer"]) - 65] == "ఎరుపు"
    assert st.items()[0]["provenance"]["seed"] == 7 and st.store.read_summary()["shuffle_options"] is True
    assert main(["curate", "mcq-report", "--from", str(st.dir)]) == 0
    assert main(["curate", "text-filter", "--from", str(st.dir), "--models", "gpt-4.1", "--out", str(build), *kw]) == 0
    flt = open_step(build / "text_only_filter@latest")
    assert len(flt.rejected()) == pos.count("A") < 18 and len(flt.items()) == 2 * (18 - pos.count("A"))

    capsys.readouterr()                                                                   # the paper's order, kept on request
    assert main(["curate", "caption-mcq", "--captions", str(caps), "--generator", "gpt-4.1", "--out", str(tmp_path / "kept"),
                 "--keep-generator-order", *kw]) == 0
    kept = open_step(tmp_path / "kept" / "generate_mcq@latest")
    assert {r["item"]["answer"] for r in kept.items()} == {"A"}
    assert main(["curate", "mcq-report", "--from", str(kept.dir)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "te: answer positions uneven (A 18, B 0, C 0, D 0; chi-square p = 1.1e-11)" in err[0], err


def test_a_generator_or_text_filter_that_decided_nothing_exits_3(server, tmp_path, monkeypatch, capsys):
    "Every generator output junk: exit 3 naming the count and the cause; a text-only model answering junk: exit 3, not '0 dropped'."
    from vlmlens.cli import main
    from vlmlens.curation.store import open_step
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    kw = ["--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "cache=false", "--model-kwarg", "max_attempts=1",
          "--model-kwarg", "progress=false"]
    caps = _literal_captions(tmp_path, n=4)
    server.responder = lambda call: "I would rather describe the photograph in words."
    assert main(["curate", "caption-mcq", "--captions", str(caps), "--out", str(tmp_path / "b1"), *kw]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "curate generate_mcq" in err[0] and "nothing answered (5 items failed" in err[0] and "parse: no JSON object" in err[0], err
    server.responder = literal_generator
    assert main(["curate", "caption-mcq", "--captions", str(caps), "--out", str(tmp_path / "b2"), *kw]) == 0
    st = open_step(tmp_path / "b2" / "generate_mcq@latest")
    server.responder = lambda call: "Hmm, hard to say without the picture."
    capsys.readouterr()
    assert main(["curate", "text-filter", "--from", str(st.dir), "--models", "gpt-4.1", "--out", str(tmp_path / "b2"), *kw]) == 3
    out, err = capsys.readouterr()
    assert "decided nothing: 0 of 8 text-only answers valid" in err and "model answer unparseable (8 items)" in err and "rejected" not in out


def test_near_duplicate_options_are_inflections_not_different_words():
    "Options that are one answer written twice are rejected; options differing by a whole word ('cart' / 'car') are kept."
    from vlmlens.curation.captions import near_duplicate, parse_mcq
    assert near_duplicate("a red cart", "a red carts") and near_duplicate("red", "reds") and near_duplicate("The red cart.", "a red cart")
    assert not near_duplicate("a red cart", "a red car") and not near_duplicate("rice", "mice") and not near_duplicate("3 windows", "4 windows")
    assert near_duplicate("ఎర్ర బండి", "ఎర్ర బండిలు") and not near_duplicate("ఎర్ర బండి", "ఎర్ర బంతి")
    ok = {**LITERAL, "en": {**LITERAL["en"], "options": ["a red cart", "a red car", "a blue van", "a green bus"]}}
    assert parse_mcq(json.dumps(ok, ensure_ascii=False), "te")["en"]["options"][:2] == ["a red cart", "a red car"]
    dup = {**LITERAL, "en": {**LITERAL["en"], "options": ["red", "reds", "blue", "green"]}}
    with pytest.raises(ValueError, match="options A and B are near duplicates"): parse_mcq(json.dumps(dup, ensure_ascii=False), "te")
