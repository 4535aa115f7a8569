"""HinTel-AlignBench end to end: a synthetic-image copy of the real examples (+ generated items), runs over
en/hi/te x standard/cot/caption with the loopback OpenAI model (every scoring path, the LLM judge on exact-match
misses only, both JEE response rules), the tiny local model, the paper's rosters and language gating, the
adapters, the paper's prompts verbatim, Tables 3/4 reproduced from their printed cells, and the report notebook
on the run outputs."""
import json
import re
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from vlmlens.benchmarks import hintel as H
from vlmlens.tables import hintel as T
from vlmlens.core import RunConfig
from vlmlens.runner import run, select_samples
from vlmlens.store import RunSet

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[1]
CAPTION_MARKS = ('"This image displays:"', '"यह चित्र दिखाता है:"', '"ఈ చిత్రం చూపిస్తుంది:"')
JEE_COT_MARKS = ("First, think step-by-step", "पहले चरण-दर-चरण", "ముందుగా దశలవారీగా")
EXPLAINED = "Figure shows a circuit"          # the English JEE-T example: answered with an explanation in standard mode


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return H.build_synthetic_hintel(tmp_path_factory.mktemp("hintel") / "data", n_per_subset=6)


def _gold_text(s):
    if s.answer_type == "mcq":
        return (s.metadata.get("option_labels") or "ABCDEFGH")[s.answer]
    if s.answer_type == "mcq_multi":
        return "".join("ABCD"[i] for i in s.answer)
    return str(s.answer)


def _key_map(samples):
    keys = {}
    for s in samples:
        keys.setdefault(H.question_block(s), set()).add(_gold_text(s))
    return keys


def _responder(keys):
    def answer(call):
        t = call.text
        if call.model == "judge":
            if re.search(r"Are the following two (English|Hindi|Telugu) answers", t): return "1"   # the CLEVR-Math judge
            return "1" if "Answer 2: It is fully grown" in t else "0"                           # the VQA judge
        if any(m in t for m in CAPTION_MARKS): return "This image displays: coloured shapes on a plain background."
        hits = [k for k in keys if k in t]
        if not hits: return "I do not know."
        k = max(hits, key=len)
        gold = sorted(keys[k])[0]
        if "Is this a fully grown zebra?" in k: gold = "It is fully grown"      # a VQA miss the judge accepts
        if "ఇది పూర్తిగా పెరిగిన జీబ్రా కాదా?" in k: gold = "ఏమో"                # a VQA miss the judge rejects
        if any(w in k for w in ("How many circles are left", "कितने वृत्त बचे", "ఎన్ని వృత్తాలు మిగిలాయి")): gold = "several"
        if any(m in t for m in JEE_COT_MARKS):                                   # English reasoning in every language
            return f"Because the image shows the values, we can compute the result directly.\n{{ answer: {gold} }}"
        if "### Answer:" in t: return f"### Rationale: Because the image shows it clearly.\n### Answer: {gold}"
        if EXPLAINED in k and "Provide only the final answer" in t and "Context:" not in t:
            return f"Using Ohm's law, the current just after closing is E/R.\n{{ answer: {gold} }}"
        if "{ answer: }" in t: return f"{{ answer: {gold} }}"
        return gold
    return answer


def _expected(row, keys_unique):
    "The score the scripted answers must get (None: the row's question text is ambiguous, skip)."
    if row["subset"] == "clevr_math": return 1.0                       # exact match misses, the judge accepts
    if row["subset"] == "vqav2" and row["align_id"] == "vqav2-real-0":
        return {"en": 1.0, "te": 0.0, "hi": 1.0}[row["language"]]
    if row["subset"] == "jee_h" and row["language"] == "hi" and row["cfg_strategy"] == "cot": return 0.0   # English reasoning
    if row["subset"] == "jee_t" and row["language"] == "en" and row["align_id"] == "jee_t-real-0" and row["cfg_strategy"] == "standard":
        return 0.0                                                     # an explanation in standard mode
    return 1.0 if keys_unique.get(row["sample_id"]) else None


def test_loopback_sweep_exercises_every_scoring_path_and_the_report_renders(server, data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    samples, errors = H.load_hintel(data_root)
    assert errors == [] and {s.subset for s in samples} == set(H.SUBSETS)
    keys = _key_map(samples)
    unique = {s.id: len(keys[H.question_block(s)]) == 1 for s in samples}
    server.responder = _responder(keys)
    out = tmp_path / "out" / "hintel-loopback"
    base = dict(benchmark="hintel", data_path=str(data_root), model=f"openai-compatible:answerer@{server.openai_base_url}",
                judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"retries": 0}, max_new_tokens=64,
                output_root=str(out), progress=False, model_kwargs={"cache": str(tmp_path / "cache.sqlite")},
                benchmark_kwargs={"caption_max_new_tokens": 64})
    summaries = {}
    for lang in ("en", "hi", "te"):
        for strategy in H.STRATEGIES:
            s = run(RunConfig(**base, language=lang, strategy=strategy, run_name=f"{lang}-{strategy}"))
            summaries[lang, strategy] = s
            assert s["overall"]["n_errors"] == 0 and s["overall"]["n"] == sum(1 for x in samples if x.language == lang)
    rules = {k: v["benchmark_summary"]["rules"] for k, v in summaries.items()}
    assert rules["hi", "cot"]["jee_english_rule"] and not rules["te", "cot"]["jee_english_rule"]
    assert rules["hi", "standard"] == {"jee_explanation_rule": True, "jee_english_rule": False}

    runs = RunSet.discover(out)
    scores = runs.scores()
    assert len(runs) == 9 and scores["score"].notna().all()
    checked = set()
    for _, r in scores.iterrows():
        want = _expected(r, unique)
        if want is None: continue                                    # a question text shared by items with other answers
        assert r["score"] == want, (r["sample_id"], r["cfg_strategy"], r["raw"], r["score"])
        checked.add((r["subset"], r["language"], r["cfg_strategy"]))
    assert len(checked) == 3 * sum(len(v) for v in H.SUBSET_LANGS.values())  # every subset x language x strategy checked
    # hybrid scoring: exact match and after-judge scores kept apart; only exact-match misses went to the judge
    zebra = scores[(scores.align_id == "vqav2-real-0") & (scores.cfg_strategy == "standard")].set_index("language")
    assert (zebra.loc["en", "em_score"], zebra.loc["en", "score"]) == (0.0, 1.0)
    assert (zebra.loc["te", "em_score"], zebra.loc["te", "score"], bool(zebra.loc["te", "judge_valid"])) == (0.0, 0.0, True)
    assert zebra.loc["hi", "em_score"] == 1.0
    clevr = scores[scores.subset == "clevr_math"]
    assert (clevr.em_score == 0).all() and (clevr.score == 1).all()
    em_of = {(r.run, r.sample_id): r.em_score for r in scores.itertuples()}
    judged = [(r.name, j.sample_id) for r in runs for j in r.judgments()]
    assert judged and all(em_of[k] == 0 for k in judged)                               # never an exact-match hit
    hits = scores[scores.subset.isin(H.JUDGED_SUBSETS) & (scores.em_score > 0)]
    assert len(hits) and not {(r.run, r.sample_id) for r in hits.itertuples()} & set(judged)
    judge_texts = [c.text for c in server.calls if getattr(c, "model", None) == "judge"]
    assert any("Are the following two Telugu answers semantically similar?" in t for t in judge_texts)   # CLEVR-Math
    assert any(H.VQA_JUDGE_SYSTEM.text in t and "Answer 1: yes\nAnswer 2: It is fully grown" in t for t in judge_texts)
    # JEE: the two response rules, per answer
    jee = scores[scores.subset.isin(H.JEE_SUBSETS)]
    assert set(jee[(jee.language == "hi") & (jee.cfg_strategy == "cot")].jee_rule) == {"english_reasoning"}
    assert jee[(jee.language == "te") & (jee.cfg_strategy == "cot")].jee_rule.isna().all()
    expl = jee[jee.jee_rule == "explanation"]
    assert list(zip(expl.sample_id, expl.cfg_strategy)) == [("jee_t:en:jee_t-real-0", "standard")]
    assert (expl.score_before_rules == 1).all()
    jt = scores[(scores.subset == "jee_t") & (scores.align_id == "jee_t-real-0") & (scores.cfg_strategy != "standard")]
    assert len(jt) == 4 and (jt.score == 1).all()                                      # exam option ids parsed
    caption_pred = json.loads((out / "te-caption" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert caption_pred["extra"]["stages"][0].startswith("This image displays:")
    # units: every HinTel rate in summary.json is a fraction
    for s in summaries.values():
        for g in s["benchmark_summary"]["groups"]:
            assert all(0 <= g[k] <= 1 for k in ("accuracy", "em_accuracy", "invalid_rate", "error_rate") if g.get(k) is not None)

    # tables from the run reader: Table 4 is Hindi, Table 3 Telugu; Ours is the mean of the five subset cells
    t4, t3 = T.table4(runs), T.table3(runs)
    assert ("Ours-H", "Hi") in t4.columns and ("Ours-T", "Tel") in t3.columns and ("JEE-T", "Tel") in t3.columns
    row = t4.iloc[0]
    assert row[("Ours-H", "Hi")] == pytest.approx(sum(row[(H.SUBSET_NAMES[s], "Hi")] for s in H.OURS["hi"]) / 5)
    assert 0 <= t4.min().min() and t4.max().max() <= 1
    paired = T.paired_regression(runs, n_resamples=500)
    rw = paired[(paired.subset == "realworldqa") & (paired.indic == "hi") & (paired.strategy == "standard")]
    assert len(rw) == 1 and rw.iloc[0]["n_pairs"] == 6 and not pd.isna(rw.iloc[0]["mcnemar_p"])
    assert T.strategy_table(runs, scores.cfg_model.iloc[0]).shape[0] == 3
    assert T.jee_rule_report(runs).n_english_reasoning.sum() > 0

    # the report notebook renders every table and plot from these outputs
    pm = pytest.importorskip("papermill")
    import nbformat
    pm.execute_notebook(str(REPO / "evalnb" / "report_hintel.ipynb"), str(tmp_path / "report.ipynb"),
                        parameters={"runs_root": str(out), "n_resamples": 200}, progress_bar=False, cwd=str(tmp_path))
    nb = nbformat.read(tmp_path / "report.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2               # Figure 4 + paired CI plots
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    for want in ("Ours-H", "Ours-T", "McNemar p", "gpt-4.1-2025-04-14", "Visual Grounding Error", "Gemma3-27B"):
        assert want in html, want
    assert (out / "failures.csv").exists()
    # the optional LLM pre-labelling pass fills the sheet for a person to correct; Table 6 reads it
    server.responder = lambda call: "Visual perception failure." if call.model == "labeller" else None
    sheet = pd.read_csv(out / "failures.csv", dtype=str, keep_default_na=False)
    assert len(sheet) > 0 and (sheet.category == "").all()
    counts = T.prelabel_failures(out / "failures.csv", f"openai-compatible:labeller@{server.openai_base_url}", progress=False,
                                 cache=str(tmp_path / "label-cache.sqlite"))
    assert counts == {"n_rows": len(sheet), "n_prelabelled": len(sheet), "n_unparsed": 0}
    t6 = T.failure_table(out / "failures.csv")
    assert (t6["Visual Perception Failure"] == 1.0).all() and t6["n_labelled"].sum() == len(sheet)
    assert set(pd.read_csv(out / "failures.csv", dtype=str).category_source) == {"llm"}


def test_judge_sees_only_the_final_answer_and_the_paper_prompt(server, data_root, tmp_path, monkeypatch):
    "CoT answers: the judge gets the text after '### Answer:'; fence=true is the only way the prompt changes."
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = lambda call: "1" if call.model == "judge" else "### Rationale: The stripes are long.\n### Answer: an adult"
    for fence in (False, True):
        run(RunConfig(benchmark="hintel", data_path=str(data_root), subset="vqav2", language="en", strategy="cot", limit=2,
                      model=f"openai-compatible:answerer@{server.openai_base_url}", judge=f"openai-compatible:judge@{server.openai_base_url}",
                      judge_kwargs={"fence": fence, "cache": False}, output_root=str(tmp_path), run_name=f"fence-{fence}", progress=False,
                      model_kwargs={"cache": str(tmp_path / "c.sqlite")}))
    flat = lambda c: c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
    convs = [[flat(m["content"]) for m in c.json["messages"]] for c in server.calls if c.model == "judge"]
    plain = [m for m in convs if "<<<BEGIN" not in m[-1]]
    assert plain and all(m[-1].endswith("Answer 2: an adult\nRespond with only '1' if they are similar in meaning, or '0' if they are not similar.")
                         and m[0] == H.VQA_JUDGE_SYSTEM.text for m in plain)
    fenced = [m for m in convs if "<<<BEGIN" in m[-1]]
    assert fenced and all("Rationale" not in m[-1] and "an adult" in m[-1] for m in fenced)


def test_tiny_model_runs_all_strategies_and_languages(data_root, tmp_path):
    from vlmlens.models.registry import load_backend
    backend = load_backend("tiny-qwen2.5-vl")
    try:
        for lang, strategy in [("en", "standard"), ("hi", "cot")]:  # te x caption: see the papermill sweep test
            s = run(RunConfig(benchmark="hintel", model="tiny-qwen2.5-vl", data_path=str(data_root), language=lang, strategy=strategy,
                              limit=5, max_new_tokens=3, judge="none", benchmark_kwargs={"caption_max_new_tokens": 3},
                              output_root=str(tmp_path), run_name=f"{lang}-{strategy}", progress=False), backend=backend)
            o = s["overall"]
            assert o["n"] == 5 and o["n_errors"] == 0 and o["n_scored"] == 5, s
            assert len({g["subset"] for g in s["groups"]}) == 5                       # round-robin order covers subsets
        # language gating through the runner: a backend claiming only English runs only the English items
        backend.languages = ("en",)
        s = run(RunConfig(benchmark="hintel", model="tiny-qwen2.5-vl", data_path=str(data_root), subset="vaani_h", limit=4,
                          max_new_tokens=2, judge="none", output_root=str(tmp_path), run_name="gated", progress=False), backend=backend)
        assert s["skipped_languages"] == ["hi"] and {g["language"] for g in s["groups"]} == {"en"}
    finally:
        backend.close()
    scores = RunSet.discover(tmp_path).scores()
    assert set(scores.cfg_strategy) == {"standard", "cot"} and scores.score.notna().all()


def test_paper_roster_and_language_gating(data_root):
    "§4.1: a model runs on the languages the paper evaluates it on (Qwen2.5-VL-7B in Hindi, not Telugu); force overrides."
    from vlmlens.models.registry import get_spec
    rc = H.roster_check()
    assert (rc["missing"].fillna("") == "").all() and (rc["extra"].fillna("") == "").all() and rc["registry name"].notna().all(), rc
    samples, _ = H.load_hintel(data_root, subsets="realworldqa")
    langs = lambda m: get_spec(m).languages_for("hintel")
    kept, notes = select_samples(samples, RunConfig("hintel", "qwen2.5-vl-7b"), langs("qwen2.5-vl-7b"))
    assert {s.language for s in kept} == {"en", "hi"} and notes["skipped_languages"] == ["te"]
    kept, notes = select_samples(samples, RunConfig("hintel", "qwen2.5-vl-7b", force=True), langs("qwen2.5-vl-7b"))
    assert {s.language for s in kept} == {"en", "hi", "te"} and notes["forced_languages"] == ["te"]
    kept, notes = select_samples(samples, RunConfig("hintel", "gemini-2.0-flash"), langs("gemini-2.0-flash"))
    assert notes["skipped_languages"] == ["hi"]
    kept, notes = select_samples(samples, RunConfig("hintel", "gpt-4.1"), langs("gpt-4.1"))
    assert "skipped_languages" not in notes and len(kept) == len(samples)


def test_judge_model_is_pinned(monkeypatch):
    "§4.2: the judge is the gpt-4.1-2025-04-14 snapshot, not the moving alias."
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-real")
    judge = H.HinTelBenchmark().make_judge(RunConfig("hintel", "m", judge_kwargs={"cache": False}))
    try: assert judge.backend.model_id == "gpt-4.1-2025-04-14" and judge.judge_id == "hintel-hybrid/gpt-4.1-2025-04-14"
    finally: judge.close()
    from vlmlens.fidelity import LEDGER
    assert LEDGER["hintel/judge model"].status == "verbatim" and "gpt-4.1-2025-04-14" in LEDGER["hintel/judge model"].note


# --- the paper's prompts, verbatim (HinTel-AlignBench App. A.3 / A.4, as printed) -------------------------------
PAPER_TEXT = {
    "JEE CoT prompt (en)": "You are an expert at solving physics, chemistry and math questions that involve both text and images. Analyze the text and the associated image to answer the question above. First, think step-by-step and provide your detailed reasoning. Explain how you interpret the text and the image, the principles or formulas you are using, and the intermediate calculations or logical steps you take to arrive at the solution. After your reasoning, provide the final answer on a new line. Your entire response, including the reasoning and the final answer, MUST end with the following line exactly: { answer: }",
    "JEE standard prompt (en)": "You are an expert at solving physics, chemistry and math questions that involve both text and images. Analyze the text and the associated image to answer the question above. Provide only the final answer, without any explanations or intermediate steps. Your response MUST end with the following line: { answer: }",
    "VQA judge system prompt": "You are an expert judge evaluating semantic similarity between two answers. Respond only with '1' for similar or '0' for not similar.",
    "VQA judge user prompt": "Are the following two answers semantically similar? Answer 1: {a} Answer 2: {b} Respond with only '1' if they are similar in meaning, or '0' if they are not similar.",
    "CLEVR-Math judge system prompt": "You are an expert judge evaluating semantic similarity between two answers. Respond only with '1' if they are semantically similar, or '0' if they are not.",
    "CLEVR-Math judge user prompt": "Are the following two {lang} answers semantically similar? Answer 1: {ans1} Answer 2: {ans2} Ignore minor differences in phrasing. Respond with '1' if they express the same meaning, or '0' otherwise.",
    "caption-only step 1: dense caption (en)": "Don't forget these rules: 1. Be Direct and Concise: Provide straightforward descriptions without adding interpretative or speculative elements. 2. Use Segmented Details: Break down details about different elements of an image into distinct sentences, focusing on one aspect at a time. 3. Maintain a Descriptive Focus: Prioritize purely visible elements of the image, avoiding conclusions or inferences. 4. Follow a Logical Structure: Begin with the central figure or subject and expand outward, detailing its appearance before addressing the surrounding setting. 5. Avoid Juxtaposition: Do not use comparison or contrast language; keep the description purely factual. 6. Incorporate Specificity: Mention age, gender, race, and specific brands or notable features when present, and clearly identify the medium if it's discernible. When writing descriptions, prioritize clarity and direct observation over embellishment or interpretation. Write a detailed description of this image, do not forget about the texts on it if they exist. Also, do not forget to mention the type/style of the image. No bullet points. Start with the words, \"This image displays:\"",
    "caption-only step 2: answer from the caption (en)": "Context: {generated_caption} Question: {question_text} Answer:",
    "CoT system prompt (en)": "When provided with an image and a question, generate a rationale first and then derive an answer. Your rationale should include detailed visual elements in order to derive the answer.",
    "CoT user prompt, multiple choice (en)": "Answer the question with following instruction: 1. Generate a rationale first and then derive an answer. 2. For your final answer, provide a Correct Option Number Only. Question: {question} # Output Format # ### Answer:",
    "standard prompt, multiple choice (en)": "Question: {question_text_with_options} Instruction: Provide the Correct Option Number Only. Answer:",
}
PLACEHOLDERS = {"{a}": "{reference}", "{b}": "{prediction}", "{ans1}": "{reference}", "{ans2}": "{prediction}",
                "{generated_caption}": "{caption}", "{question_text}": "{question}", "{question_text_with_options}": "{question}",
                "{ answer: }": "{{ answer: }}"}


@pytest.mark.parametrize("what", list(PAPER_TEXT))
def test_paper_prompts_are_verbatim(what):
    "The prompt text equals the paper's, up to whitespace and the mapped placeholders; registered as verbatim."
    from vlmlens.fidelity import LEDGER
    ours = {p.what: p for p in [*H.PROMPTS["en"].values(), H.VQA_JUDGE_SYSTEM, H.VQA_JUDGE_USER, H.CLEVR_JUDGE_SYSTEM, H.CLEVR_JUDGE_USER]}[what]
    paper = PAPER_TEXT[what]
    for k, v in PLACEHOLDERS.items(): paper = paper.replace(k, v)
    assert " ".join(ours.text.split()) == " ".join(paper.split())
    assert LEDGER[f"hintel/{what}"].status == "verbatim" and "App. A." in LEDGER[f"hintel/{what}"].source


def test_translations_and_open_answer_prompts_are_marked_as_readings():
    from vlmlens.fidelity import LEDGER
    for lang in ("hi", "te"):
        for name, p in H.PROMPTS[lang].items():
            assert p.status == "reading" and p.fields == H.PROMPTS["en"][name].fields and "translation" in LEDGER[f"hintel/{p.what}"].note
    assert H.STANDARD_SHORT.status == "reading" and H.COT_USER_SHORT.status == "reading"


def test_prompt_override_must_keep_placeholders(data_root, tmp_path):
    bad = tmp_path / "cot.txt"
    bad.write_text("Answer the question. Output: ### Answer:", encoding="utf-8")
    cfg = RunConfig("hintel", "m", data_path=str(data_root), strategy="cot", benchmark_kwargs={"prompt_files": {"cot_user_mcq": str(bad)}})
    with pytest.raises(ValueError, match=r"drops placeholder\(s\) \{question\}"):
        H.HinTelBenchmark().load(cfg)
    good = tmp_path / "cot2.txt"
    good.write_text("Q: {question}\n### Answer:", encoding="utf-8")
    cfg = RunConfig("hintel", "m", data_path=str(data_root), strategy="cot", benchmark_kwargs={"prompt_files": {"cot_user_mcq": str(good)}})
    samples, _ = H.HinTelBenchmark().load(cfg)
    s = next(x for x in samples if x.subset == "realworldqa" and x.language == "hi")
    assert H.build_hintel_request(s, cfg).messages[1]["content"][-1]["text"].startswith("Q: ")


# --- Tables 3 and 4: the printed "Ours" columns from the printed per-subset cells ------------------------------
ERRATA = {(4, "Gemma3-12B", 1): (Decimal("54.06"), Decimal("54.87"))}   # (table, model, En) -> (from cells, printed)


@pytest.mark.parametrize("number", [3, 4])
def test_published_ours_columns_follow_from_the_printed_cells(number):
    checked = 0
    for model, row in H.PAPER_TABLES[number].items():
        if model == "Model Mean": continue
        vals = row.split()
        for k in (0, 1):                                              # Indic, English
            got, printed = H.ours_from_cells(vals[k:10:2]), Decimal(vals[10 + k])
            if (number, model, k) in ERRATA: assert (got, printed) == ERRATA[number, model, k]
            else: assert got == printed, (number, model, k, got, printed)
            checked += 1
    assert checked == 2 * (len(H.PAPER_TABLES[number]) - 1)


def test_table3_is_telugu_and_rebuilds_from_runs_of_printed_cells():
    "Score rows carrying the printed cells (as fractions) give back Table 3 / Table 4, Ours and the Ours model mean."
    for number in (3, 4):
        lang = H.TABLES[number]
        paper = H.paper_table(number)
        rows = [{"cfg_benchmark": "hintel", "cfg_model": m, "cfg_strategy": "standard", "subset": s, "language": l, "error": None,
                 "valid": True, "score": paper.loc[m, (H.SUBSET_NAMES[s], H.LANG_LABEL[l])]}
                for m in paper.index if m != "Model Mean" for s in H.OURS[lang] for l in (lang, "en")]
        t = T.lang_table(pd.DataFrame(rows), lang)
        for m in t.index.drop("Model Mean"):
            for k, l in enumerate((lang, "en")):
                if (number, m, k) in ERRATA: continue
                col = (H.OURS_NAMES[lang], H.LANG_LABEL[l])
                assert Decimal(str(t.loc[m, col] * 100)).quantize(Decimal("0.01"), "ROUND_HALF_UP") == Decimal(str(round(paper.loc[m, col] * 100, 2))).quantize(Decimal("0.01"))
    t3 = T.table3(pd.DataFrame(rows[:0], columns=["cfg_model", "cfg_strategy", "subset", "language", "score"]))
    assert t3.empty
    mean_ours_te = H.ours_from_cells([H.PAPER_TABLES[3][m].split()[10] for m in H.PAPER_TABLES[3] if m != "Model Mean"])
    assert mean_ours_te == Decimal(H.PAPER_TABLES[3]["Model Mean"].split()[10])           # 59.13


def test_adapters_write_the_canonical_layout(tmp_path):
    import io
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image
    buf = io.BytesIO(); Image.new("RGB", (8, 8), (255, 0, 0)).save(buf, format="PNG")
    png = buf.getvalue()
    img_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({"image": pa.array([{"bytes": png, "path": None}] * 2, type=img_type),
                             "question": ["Which is red? A) left B) right", "Which is blue? A) top B) bottom"], "answer": ["A", "B"]}),
                   tmp_path / "rwqa.parquet")
    pq.write_table(pa.table({"id": ["c1"], "image": pa.array([{"bytes": png, "path": None}], type=img_type),
                             "question": ["Subtract all red things. How many objects are left?"], "label": [3],
                             "template": ["subtraction"]}), tmp_path / "clevr.parquet")
    root = tmp_path / "root"
    H.write_subset(root, "realworldqa", "en", H.hf_records(tmp_path / "rwqa.parquet", "realworldqa"))
    H.write_subset(root, "clevr_math", "en", H.hf_records(tmp_path / "clevr.parquet", "clevr_math"))
    (tmp_path / "vaani.csv").write_text("qid,img,q,gold\nv1,images/v1.png,How many? A) 1 B) 2,B\n", encoding="utf-8")
    (root / "images" / "v1.png").write_bytes(png)
    H.write_subset(root, "vaani_h", "hi", H.csv_records(tmp_path / "vaani.csv", {"qid": "align_id", "img": "image", "q": "question", "gold": "answer"}))
    H.write_subset(root, "jee_h", "en", H.jeebench_records(DATA / "jeebench" / "row0.json", image_dir="images"))
    samples, errors = H.load_hintel(root)
    by = {s.id: s for s in samples}
    assert by["realworldqa:en:1"].answer == 1 and Path(by["realworldqa:en:1"].media[0].path).is_file()
    assert by["clevr_math:en:c1"].answer == "3" and by["clevr_math:en:c1"].metadata["template"] == "subtraction"
    assert by["vaani_h:hi:v1"].options == ["1", "2"] and by["vaani_h:hi:v1"].answer == 1
    assert by["jee_h:en:1"].answer == 1 and by["jee_h:en:1"].metadata["jee_type"] == "MCQ" and by["jee_h:en:1"].options[1].startswith("$6.4")
    # subsets requested but absent are reported, not fatal; bad rows name file, row and field
    assert any("no file for subset 'vqav2'" in str(e) for e in errors)
    (root / "vaani_h" / "hi.jsonl").write_text('{"align_id": "v2", "question": "q", "image": "x.png"}\n', encoding="utf-8")
    _, errors = H.load_hintel(root, subsets="vaani_h")
    assert len(errors) == 1 and errors[0].field == "answer" and "hi.jsonl" in str(errors[0])
    with pytest.raises(FileNotFoundError, match="not a local file"):
        H.hf_records("some-org/not-here", "realworldqa")


def test_real_examples_score_with_the_paper_formats():
    "The transcribed real examples (tests/data) through parse and score: exam option ids, Hindi/Telugu answers."
    ex = json.loads((DATA / "hintel" / "examples_transcribed.json").read_text(encoding="utf-8"))
    jt = ex["JEE-T"]["te"]
    s = H.record_to_sample({"align_id": "1", "question": jt["q"], "image": "i.png", "options": jt["options"],
                            "answer": jt["marked_correct"], "jee_type": "MCQ"}, "jee_t", "te", "/r")
    s.metadata["hintel_run"] = {"strategy": "standard"}
    from vlmlens.core import Prediction
    for text, want in [("{ answer: 70819157131 }", 1.0), ("{ answer: 2.25 A }", 1.0), ("{ answer: 70819157133 }", 0.0),
                       ("సమాధానం 2.25 A, ఎందుకంటే ప్రవాహం E/R.\n{ answer: 70819157131 }", 0.0)]:
        parsed, valid = H.parse_hintel(s, text)
        assert H.score_hintel(s, Prediction(s.id, "m", raw=text, parsed=parsed, valid=valid))["score"] == want, text
    v = ex["VQAv2"]
    for lang in ("hi", "te"):
        s = H.record_to_sample({"align_id": "z", "question": v[lang]["q"], "image": "i.png", "answer": v[lang]["a"]}, "vqav2", lang, "/r")
        assert H.exact_match_score(s, v[lang]["a"] + "।") == 1.0


def test_sweep_file_and_a_papermill_sweep_run(data_root, tmp_path):
    import yaml
    from vlmlens.sweep import expand_grid, run_sweep
    spec = yaml.safe_load((REPO / "evalnb" / "sweeps" / "hintel.yaml").read_text(encoding="utf-8"))
    runs = expand_grid(spec)
    models = {r["params"]["model"] for r in runs}
    assert models == set(H.REGISTRY_NAMES.values())                                    # the paper's roster (§4.1)
    assert {r["params"]["language"] for r in runs} == {"en", "hi", "te"} and spec["base"]["judge"] == H.HINTEL_JUDGE_MODEL
    for r in runs: RunConfig(**r["params"])                                             # every run is a valid config
    # the same file shape, shrunk to one tiny-model run, through papermill
    small = {"name": "hintel-small", "base": {**spec["base"], "data_path": str(data_root), "model": "tiny-qwen2.5-vl", "judge": "none",
                                              "limit": 2, "max_new_tokens": 2, "benchmark_kwargs": {"caption_max_new_tokens": 2}},
             "grid": {"language": ["te"], "strategy": ["caption"]}}
    table = run_sweep(small, output_root=tmp_path, progress=False)
    assert list(table.status) == ["ok"], table.to_dict("records")
    rs = RunSet.discover(tmp_path / "hintel-small")
    scores = rs.scores()
    assert len(scores) == 2 and set(scores.cfg_strategy) == {"caption"} and scores.score.notna().all()
    capt = [json.loads(l) for l in (rs[0].dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(capt) == 2 and all(len(p["extra"]["stages"]) == 1 for p in capt)        # caption stage kept


def test_hf_records_from_a_saved_datasets_folder(tmp_path):
    """A local copy of a Hugging Face dataset (`save_to_disk`), as a user without hub access would have it."""
    datasets = pytest.importorskip("datasets")
    from PIL import Image
    ds = datasets.Dataset.from_dict({"question": ["Which candle is the largest? A) middle B) right C) left"], "answer": ["A"],
                                     "image": [Image.new("RGB", (8, 8), (200, 180, 40))]},
                                    features=datasets.Features({"question": datasets.Value("string"), "answer": datasets.Value("string"),
                                                                "image": datasets.Image()}))
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "rwqa"))
    recs = H.hf_records(tmp_path / "rwqa", "realworldqa", split="test")
    assert len(recs) == 1 and recs[0]["answer"] == "A" and recs[0]["image_bytes"][:4] == b"\x89PNG"
    H.write_subset(tmp_path / "root", "realworldqa", "en", recs)
    samples, errors = H.load_hintel(tmp_path / "root", subsets="realworldqa")
    assert not errors and samples[0].answer == 0 and Path(samples[0].media[0].path).is_file()
