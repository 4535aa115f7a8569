"""Translation engines through their real clients (boto3, azure-ai-translation-text, google-cloud-translate, openai)
against loopback services: placeholders and numbers checked per item, engine errors failing items for retry with the
engine named, resumable steps, the response cache, back-translation scores, and bad input named by row."""
import json
from pathlib import Path

import pytest

from vlmlens.benchmarks.hintel import build_synthetic_hintel
from vlmlens.curation.translate import (PAPER_ENGINES, back_translate, backtranslation_scores, flag_kind, make_engine,
                                        review_set, translate)
from vlmlens.models.api import MissingAPIKey
from vlmlens.readers import read_records
from loopback import Reply, rate_limited
from loopback_mt import MTLoopback, cipher, decipher, mt_texts

KEYS = {"AWS_ACCESS_KEY_ID": "AKIALOOPBACK00000000", "AWS_SECRET_ACCESS_KEY": "loopback/aws/secret/00000000000000000000",
        "AZURE_TRANSLATOR_KEY": "loopback0azure0key0000000000000000", "GOOGLE_TRANSLATE_API_KEY": "loopback-google-key-000000000000",
        "OPENAI_API_KEY": "test-openai-key.not-real.0000000000", "GOOGLE_CLOUD_PROJECT": "vlmlens-test"}


@pytest.fixture(scope="module")
def _mt():
    with MTLoopback() as s: yield s


@pytest.fixture
def mt(_mt, monkeypatch, tmp_path):
    _mt.reset(); _mt.latency = 0.0
    for k, v in KEYS.items(): monkeypatch.setenv(k, v)
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "cache"))
    yield _mt
    _mt.reset()


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    "The English VQA set: the vendored real HinTel examples and synthetic items, with synthetic images."
    root = build_synthetic_hintel(tmp_path_factory.mktemp("hintel"), n_per_subset=4)
    recs = []
    for subset in ("vqav2", "realworldqa", "clevr_math", "jee_t"):
        recs += [dict(r, subset=subset) for _, r in read_records(root / subset / "en.jsonl")]
    return recs


def opts(mt, **kw):
    return {"endpoint_url": mt.url, "max_attempts": 1, **kw}


def back(text, lang): return decipher(text, lang)


@pytest.mark.parametrize("engine,target", [("aws", "te"), ("azure", "hi"), ("google", "te")])
def test_cloud_engines_over_the_wire(mt, english, tmp_path, engine, target):
    st = translate(english, tmp_path / "build", engine, target, engine_options=opts(mt))
    s = st.summary()
    assert s["n_items"] == len(english) and s["n_failed"] == 0 and s["n_rejected"] == 0
    items = {r["id"]: r["item"] for r in st.items()}
    src = {r["align_id"]: r for r in english}
    zebra = items["vqav2-real-0"]
    assert zebra["question"] == cipher("Is this a fully grown zebra?", "en", target) and zebra["language"] == target
    assert zebra["answers"] == [cipher("yes", "en", target)] * 10 and zebra["source_text"]["question"] == "Is this a fully grown zebra?"
    candles = items["realworldqa-real-0"]
    assert candles["answer"] == "A" and " A) " not in src["realworldqa-real-0"]["question"][:1]
    assert [l for l in ("A)", "B)", "C)") if l in candles["question"]] == ["A)", "B)", "C)"]   # labels survive untouched
    jee = items["jee_t-real-0"]
    assert jee["answer"] == "70819157131" and list(jee["options"]) == list(src["jee_t-real-0"]["options"])  # option ids kept
    assert all(not it["flags"] for it in items.values()), [it["flags"] for it in items.values() if it["flags"]]
    assert back(zebra["question"], target) == "is this a fully grown zebra?"
    calls = mt.requests(engine)
    if engine == "aws":          # one TranslateText per distinct text; SigV4 signed with the env key
        assert all(c.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIALOOPBACK") for c in calls)
        assert sorted(mt_texts(c)[0] for c in calls if "zebra" in mt_texts(c)[0]) == ["Is this a fully grown zebra?"]
    elif engine == "azure":      # one request per item, all its texts; key and region headers
        assert len(calls) == len(english) and calls[0].headers["Ocp-Apim-Subscription-Key"] == KEYS["AZURE_TRANSLATOR_KEY"]
        z = next(c for c in calls if "Is this a fully grown zebra?" in mt_texts(c))
        assert mt_texts(z) == ["Is this a fully grown zebra?", "yes"]                     # ten answers sent once
    else:
        assert len(calls) == len(english) and calls[0].path == "/v3/projects/vlmlens-test/locations/global:translateText"
        assert calls[0].headers["x-goog-api-key"] == KEYS["GOOGLE_TRANSLATE_API_KEY"]
    text = "".join(p.read_text() for p in st.dir.iterdir() if p.is_file())
    assert not any(v in text for k, v in KEYS.items() if "KEY" in k and "PROJECT" not in k)


def test_llm_engine_through_the_openai_client(mt, english, tmp_path):
    def llm(call):
        user = call.json["messages"][1]["content"]
        user = user if isinstance(user, str) else user[0]["text"]
        texts = json.loads(user.rsplit("\n\n", 1)[1])
        return "```json\n" + json.dumps([cipher(t, "en", "hi") for t in texts], ensure_ascii=False) + "\n```"
    mt.responder = llm
    st = translate(english[:6], tmp_path / "b", "llm:gpt-4o", "hi", engine_options={"base_url": mt.openai_base_url, "max_attempts": 1,
                                                                                      "cache": str(tmp_path / "api.sqlite")})
    assert st.summary()["n_items"] == 6
    r = next(r for r in st.items() if r["id"] == "vqav2-real-0")
    assert r["item"]["question"] == cipher("Is this a fully grown zebra?", "en", "hi")
    assert r["provenance"]["prompt_id"] == "hintel/LLM translation prompt (user)" and len(r["provenance"]["prompt_sha256"]) == 64
    call = mt.requests("openai")[0]
    assert "into Hindi" in json.dumps(call.json) and call.json["temperature"] == 0


def test_placeholders_numbers_and_script_are_checked_per_item(mt, tmp_path):
    recs = [{"align_id": "p1", "question": "Planck's constant is $6.6 \\times 10^{-34}$ J s and the gap is 12 cm?", "answer": "yes"},
            {"align_id": "p2", "question": "How many green circles are in the image? There are 5 or 7.", "answer": "5"},
            {"align_id": "p3", "question": "Is this a fully grown zebra?", "answer": "yes"},
            {"align_id": "p4", "question": "Which one? A) left B) right", "answer": "A"}]
    def bad(text, source, target, engine):
        if "[[0]]" in text and "12" in text: return cipher(text.replace("[[0]]", ""), source, target)    # drops the LaTeX
        if "5 or 7" in text: return cipher(text.replace("7", ""), source, target)                          # drops a number
        if "zebra" in text: return text                                                                   # untranslated
        if "[[1]]" in text: return cipher(text.replace("[[1]]", "B"), source, target)                     # mangles a label
        return cipher(text, source, target)
    mt.translator = bad
    st = translate(recs, tmp_path / "b", "azure", "te", engine_options=opts(mt))
    flags = {r["id"]: r["item"]["flags"] for r in st.items()}
    assert flags["p1"] == ["question: dropped placeholder '$6.6 \\\\times 10^{-34}$'".replace("\\\\", "\\")]
    assert flags["p2"] == ["question: dropped number 7"]
    assert flags["p3"] and flag_kind(flags["p3"][0]) == "script" and "expected for Telugu (mostly Latin)" in flags["p3"][0]
    assert flags["p4"] == ["question: dropped placeholder 'B)'", "question: option labels changed (A, B -> A)"]
    s = json.loads((st.dir / "summary.json").read_text())
    assert s["n_flagged"] == 4 and s["flags_by_kind"] == {"dropped placeholder": 2, "dropped number": 1, "script": 1, "option labels changed": 1}


@pytest.mark.parametrize("engine,status", [("azure", 401), ("aws", 429), ("google", 403), ("indictrans", 500)])
def test_engine_errors_fail_the_item_for_retry_naming_the_engine(mt, english, tmp_path, engine, status):
    recs = english[:5]
    hit = {"n": 0}
    def fault(call):
        if "zebra" in json.dumps(call.json) and hit["n"] < 2:
            hit["n"] += 1
            return Reply(status, headers={"Retry-After": "0"})
        return None
    mt.responder = fault
    st = translate(recs, tmp_path / "b", engine, "te", engine_options=opts(mt))
    s = st.summary()
    assert s["n_failed"] == 1 and s["n_items"] == len(recs) - 1
    err = s["failed_units"]["vqav2-real-0"]
    assert err.startswith(f"engine {engine}: ") and f"{engine}: HTTP {status}" in err
    assert {429: "rate_limit", 500: "server_error"}.get(status, "client_error") in err
    assert KEYS["AZURE_TRANSLATOR_KEY"] not in err
    mt.responder, n = None, len(mt.calls)
    again = translate(recs, tmp_path / "b", engine, "te", engine_options=opts(mt))
    assert again.dir == st.dir and again.summary()["n_failed"] == 0 and again.summary()["n_items"] == len(recs)
    assert all("zebra" in json.dumps(c.json) or "yes" in json.dumps(c.json) for c in mt.calls[n:])   # only the failed item re-sent


def test_rate_limit_is_retried_within_a_run(mt, tmp_path):
    mt.script(rate_limited(0), None)
    st = translate([{"align_id": "a", "question": "Is it red?", "answer": "no"}], tmp_path / "b", "azure", "hi",
                   engine_options=opts(mt, max_attempts=3))
    assert st.summary()["n_items"] == 1 and [c.status for c in mt.calls] == [429, 200]


def test_concurrency_resume_and_cache(mt, english, tmp_path):
    mt.latency = 0.05
    st = translate(english, tmp_path / "b1", "google", "hi", engine_options=opts(mt, concurrency=8))
    assert st.summary()["n_items"] == len(english) and mt.max_in_flight == 8
    n = len(mt.calls)
    assert translate(english, tmp_path / "b1", "google", "hi", engine_options=opts(mt, concurrency=8)).dir == st.dir
    assert len(mt.calls) == n                                         # resumed: the step has every item
    other = translate(english, tmp_path / "b2", "google", "hi", engine_options=opts(mt, concurrency=8))
    assert len(mt.calls) == n                                         # a new build: every answer from the cache
    assert {r["id"]: r["item"] for r in other.items()} == {r["id"]: r["item"] for r in st.items()}
    assert all(r["provenance"]["extra"]["cached"] for r in other.items())


def test_back_translation_is_a_signal_per_engine(mt, english, tmp_path):
    def sloppy(text, source, target, engine):
        if engine == "aws" and target != "en": text = " ".join(text.split()[:-1]) or text      # drops the last word
        return cipher(text, source, target)
    mt.translator = sloppy
    scores = {}
    for engine in ("aws", "azure"):
        fwd = translate(english, tmp_path / "b", engine, "te", engine_options=opts(mt))
        bt = back_translate(fwd, tmp_path / "b", engine_options=opts(mt))
        assert {r["item"]["language"] for r in bt.items()} == {"en"}
        scores[engine] = backtranslation_scores(english, bt)
    assert scores["azure"]["chrf_0_100"] > scores["aws"]["chrf_0_100"] and scores["azure"]["bleu_0_100"] > scores["aws"]["bleu_0_100"]
    assert scores["azure"]["n"] == len(english) and "never selected or filtered" in scores["aws"]["note"]
    assert 0 <= scores["aws"]["per_item"]["vqav2-real-0"]["chrf_0_100"] <= 100


def test_bad_input_is_named(mt, tmp_path, monkeypatch):
    recs = [{"align_id": "a", "question": "Is it red?", "answer": "no"}, {"question": "no id"}, {"align_id": "a", "question": "dup"}]
    st = translate(recs, tmp_path / "b", "azure", "hi", engine_options=opts(mt), where="en.jsonl")
    rej = st.rejected()
    assert [r["reason"] for r in rej] == ["en.jsonl: row 1: field align_id: missing", "en.jsonl: row 2: field align_id: duplicate 'a'"]
    assert st.summary()["n_items"] == 1
    with pytest.raises(ValueError, match="unknown translation engine 'deepl'"): translate(recs, tmp_path / "b", "deepl", "hi")
    with pytest.raises(ValueError, match="api_key"): make_engine("aws", api_key="x")
    monkeypatch.delenv("AZURE_TRANSLATOR_KEY")
    with pytest.raises(MissingAPIKey, match="AZURE_TRANSLATOR_KEY"): make_engine("azure")
    mt.script('{"not": "a translation"}')
    st2 = translate([{"align_id": "z", "question": "Is it blue?", "answer": "no"}], tmp_path / "c", "llm:gpt-4o", "hi",
                    engine_options={"base_url": mt.openai_base_url, "max_attempts": 1, "cache": False})
    r = st2.rejected()[0]
    assert r["stage"] == "parse" and r["reason"].startswith("engine llm:gpt-4o: no JSON list") and r["item"]["raw"]


def test_review_set_and_paper_engines(english):
    rs = review_set(english, n=6, key="subset")
    assert len(rs) == 6 and len({r["subset"] for r in rs}) >= 3 and rs == review_set(english, n=6, key="subset")
    assert PAPER_ENGINES == {"hi": "azure", "te": "aws"}


def test_translate_command_whose_every_call_fails_exits_3(mt, english, tmp_path, capsys):
    "`vlmlens curate translate` with a rejected key: every item failed, the step is saved, one line names the count and the error."
    from vlmlens.cli import main
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:3]))
    mt.responder = lambda call: Reply(401)
    argv = ["curate", "translate", "--records", str(tmp_path / "en.jsonl"), "--engine", "azure", "--target", "hi", "--out", str(tmp_path / "b"),
            "--engine-option", f"endpoint_url={mt.url}", "--engine-option", "max_attempts=1"]
    assert main(argv) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("vlmlens: error: curate translate_hi") and "3 items failed" in err and "azure: HTTP 401" in err
    assert json.loads(next((tmp_path / "b").glob("translate*/summary.json")).read_text())["n_failed"] == 3
    assert main([*argv, "--allow-failures"]) == 0


def test_a_missing_mt_sdk_is_named_before_any_work(mt, english, tmp_path, monkeypatch, capsys):
    from vlmlens.cli import main
    from vlmlens.curation import translate as tr
    monkeypatch.setitem(tr.SDKS, "google", ("no_such_google_sdk", "google-cloud-translate"))     # as on a machine without it
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:2]))
    assert main(["curate", "translate", "--records", str(tmp_path / "en.jsonl"), "--engine", "google", "--target", "te",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'vlmlens[curation]' (or pip install google-cloud-translate)" in err[0]
    assert not (tmp_path / "b").exists() and mt.calls == []


@pytest.mark.parametrize("lang_codes,ids", [("iso", ("en", "te")), ("flores", ("eng_Latn", "tel_Telu"))])
def test_indictrans2_engine_through_its_inference_server(mt, english, tmp_path, lang_codes, ids):
    "IndicTrans2 behind AI4Bharat's Triton server (KServe v2 JSON): an item's texts in one request, the server's language ids."
    st = translate(english, tmp_path / "b", "indictrans", "te", engine_options=opts(mt, lang_codes=lang_codes))
    s = st.summary()
    assert s["n_items"] == len(english) and s["n_failed"] == 0 and s["n_rejected"] == 0
    items = {r["id"]: r["item"] for r in st.items()}
    assert items["vqav2-real-0"]["question"] == cipher("Is this a fully grown zebra?", "en", "te")
    assert items["jee_t-real-0"]["answer"] == "70819157131" and all(not it["flags"] for it in items.values())
    calls = mt.requests("indictrans")
    assert len(calls) == len(english) and {c.path for c in calls} == {"/v2/models/nmt/infer"}
    z = next(c for c in calls if "Is this a fully grown zebra?" in mt_texts(c))
    cols = {i["name"]: i for i in z.json["inputs"]}
    assert mt_texts(z) == ["Is this a fully grown zebra?", "yes"] and cols["INPUT_TEXT"]["datatype"] == "BYTES"
    assert cols["INPUT_LANGUAGE_ID"]["data"] == [[ids[0]]] * 2 and cols["OUTPUT_LANGUAGE_ID"]["data"] == [[ids[1]]] * 2
    back = back_translate(st, tmp_path / "b", engine_options=opts(mt, lang_codes=lang_codes))
    assert {r["item"]["question"] for r in back.items() if r["id"] == "vqav2-real-0"} == {"is this a fully grown zebra?"}


def test_indictrans2_without_a_server_url_is_named_before_any_work(mt, english, tmp_path, monkeypatch, capsys):
    from vlmlens.cli import main
    monkeypatch.delenv("INDICTRANS2_URL", raising=False)
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:2]))
    assert main(["curate", "translate", "--records", str(tmp_path / "en.jsonl"), "--engine", "indictrans", "--target", "te",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "INDICTRANS2_URL" in err[0] and "AI4Bharat" in err[0]
    assert not (tmp_path / "b").exists() and mt.calls == []
    monkeypatch.setenv("INDICTRANS2_URL", mt.url)
    assert main(["curate", "translate", "--records", str(tmp_path / "en.jsonl"), "--engine", "indictrans", "--target", "te",
                 "--out", str(tmp_path / "b")]) == 0
    assert len(mt.requests("indictrans")) == 2


def test_an_indictrans2_option_that_changes_the_output_starts_a_new_step(mt, english, tmp_path, capsys):
    "Rerun with other language ids: a new step with the server's FLORES-200 answers, not the ISO step resumed; the same options reuse."
    from vlmlens.cli import main
    from vlmlens.curation.store import list_steps
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:2]))
    cmd = lambda *o: main(["curate", "translate", "--records", str(tmp_path / "en.jsonl"), "--engine", "indictrans", "--target", "te",
                           "--out", str(tmp_path / "b"), "--engine-option", f"endpoint_url={mt.url}", *o])
    steps = lambda: sorted(r["dir"] for r in list_steps(tmp_path / "b") if r.get("step") == "translate_te")
    sent = lambda: [c.json["inputs"][1]["data"][0][0] for c in mt.requests("indictrans")]
    assert cmd() == 0 and len(steps()) == 1 and sent() == ["en", "en"]
    assert cmd("--engine-option", "concurrency=2") == 0 and len(steps()) == 1 and len(sent()) == 2   # transport only: resumed
    assert cmd("--engine-option", "lang_codes=flores") == 0
    assert len(steps()) == 2 and sent() == ["en", "en", "eng_Latn", "eng_Latn"]                         # a new step, asked again
    assert cmd("--engine-option", "lang_codes=flores") == 0 and len(steps()) == 2 and len(sent()) == 4


def test_compare_engines_with_an_engine_that_translates_nothing(mt, english, tmp_path, capsys):
    "AWS rejects the key: Azure is still compared (exit 1, one line naming AWS); with AWS alone nothing was compared (exit 3)."
    from vlmlens.cli import main
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:4]))
    mt.responder = lambda call: Reply(403, headers={}) if call.api == "aws" else None
    cmd = lambda engines, out: main(["curate", "compare-engines", "--records", str(tmp_path / "en.jsonl"), "--target", "hi",
                                     "--engines", engines, "--n", "4", "--out", str(tmp_path / out),
                                     *[o for e in engines.split(",") for o in ("--engine-option", f"{e}:endpoint_url={mt.url}",
                                                                               "--engine-option", f"{e}:max_attempts=1")]])
    assert cmd("aws,azure", "b") == 1
    out, err = capsys.readouterr()
    rows = {r["engine"]: r for r in json.loads((tmp_path / "b" / "compare_hi.json").read_text())}
    assert rows["aws"]["n_items"] == 0 and rows["aws"]["chrf_0_100"] is None and rows["azure"]["n_items"] == 4
    assert rows["azure"]["chrf_0_100"] is not None
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("engine aws: 4 item(s) failed (most common: engine aws: client_error: aws: HTTP 403"), err
    assert cmd("aws", "c") == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vlmlens: error: curate translate_hi") and "HTTP 403" in err[0], err


def test_compare_engines_names_a_missing_engine_library_before_any_call(mt, english, tmp_path, capsys, monkeypatch):
    "The second engine's SDK is missing: refused before the first engine is asked anything, nothing written."
    from vlmlens.cli import main
    from vlmlens.curation import translate as tr
    monkeypatch.setitem(tr.SDKS, "google", ("no_such_sdk_module", "google-cloud-translate"))
    (tmp_path / "en.jsonl").write_text("".join(json.dumps(r) + "\n" for r in english[:4]))
    assert main(["curate", "compare-engines", "--records", str(tmp_path / "en.jsonl"), "--target", "hi", "--engines", "azure,google",
                 "--n", "4", "--out", str(tmp_path / "b"), "--engine-option", f"azure:endpoint_url={mt.url}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'vlmlens[curation]' (or pip install google-cloud-translate)" in err[0], err
    assert mt.calls == [] and not (tmp_path / "b").exists()


LABEL_FORMS = {  # form → (question, gold): every way an option label is written, inline and at line starts, with punctuation
    "(A) inline, trailing ?": ("Which is right: (A) or (B)?", "B"),
    "A) inline, trailing ,": ("Pick one of A), B), or C), then stop.", "C"),
    "(a) at line starts": ("Which is red?\n(a) the cart\n(b) the van", "a"),
    "A. at line starts": ("Which is red?\nA. the cart\nB. the van", "A"),
    "A. inline": ("Choose: A. the cart B. the van", "B"),
    "a) inline": ("Which is red: a) the cart b) the van", "b"),
    "(A) at line starts": ("Which is red?\n(A) the cart.\n(B) the van.", "A"),
}


@pytest.mark.parametrize("form", list(LABEL_FORMS))
def test_option_labels_are_never_translated(mt, tmp_path, form):
    "An MT service that translates every Latin letter (the loopback cipher) sees markers, not labels: labels and the gold survive."
    q, gold = LABEL_FORMS[form]
    st = translate([{"align_id": "q1", "question": q, "answer": gold}], tmp_path / "b", "aws", "te", engine_options=opts(mt))
    (it,) = [r["item"] for r in st.items()]
    sent = mt_texts(mt.requests("aws")[0])[0]
    from vlmlens.curation.translate import option_labels
    labels = option_labels(q)
    assert len(labels) >= 2 and option_labels(it["question"]) == labels and it["answer"] == gold and it["flags"] == [], (it, sent)
    assert "[[0]]" in sent and not any(l in sent.replace("[[", " ").split() for l in ("(A)", "(B)", "A)", "B)", "A.", "(a)", "a)"))


def test_a_translation_that_changes_the_gold_or_the_labels_is_flagged(mt, tmp_path):
    "Without protection the service translates the labels: the gold label and the label count are flagged, not released silently."
    recs = [{"align_id": "q1", "question": "Which is right: (A) or (B)?", "answer": "B"}]
    st = translate(recs, tmp_path / "b", "aws", "te", engine_options=opts(mt), protect_spans=False)
    (it,) = [r["item"] for r in st.items()]
    assert it["answer"] == "B"                                                     # the gold letter is never sent
    assert "question: option labels changed (A, B -> none)" in it["flags"]
    assert any(f.startswith("answer: gold label B is not among the translated question's option labels") for f in it["flags"])
    mt.translator = lambda t, s, tg, e: cipher(t, s, tg).replace("[[1]]", "")      # a service that drops one label's marker
    st = translate(recs, tmp_path / "b2", "aws", "te", engine_options=opts(mt))
    (it,) = [r["item"] for r in st.items()]
    assert "question: option labels changed (A, B -> A)" in it["flags"] and flag_kind(it["flags"][-1]) == "gold label"
    assert st.summary()["n_items"] == 1 and st.store.read_summary()["flags_by_kind"]["option labels changed"] == 1
