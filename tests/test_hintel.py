"""HinTel-AlignBench end to end: a synthetic-image copy of the real examples (+ generated items), runs over
en/hi/te x standard/cot/caption with the loopback OpenAI model (every scoring path, LLM judge included)
and the tiny local model, language gating, the adapters, and the report notebook on the run outputs."""
import json
from pathlib import Path

import pandas as pd
import pytest

from vlmlens.analysis import load_runs
from vlmlens.benchmarks import hintel as H
from vlmlens.core import RunConfig
from vlmlens.runner import run, select_samples

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CAPTION_MARKS = ("'This image displays:'", "'यह चित्र दिखाता है:'", "'ఈ చిత్రం చూపిస్తుంది:'")


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
        keys.setdefault(H.question_block(s, s.language), set()).add(_gold_text(s))
    return keys


def _responder(keys):
    def answer(call):
        t = call.text
        if call.model == "judge":
            if "arithmetic question about an image" in t: return "Yes"          # the CLEVR-Math {lang} judge
            return "Yes" if "fully grown" in t else "No"                         # the general similarity judge
        if any(m in t for m in CAPTION_MARKS): return "This image displays: coloured shapes on a plain background."
        hits = [k for k in keys if k in t]
        if not hits: return "I do not know."
        k = max(hits, key=len)
        gold = sorted(keys[k])[0]
        if "Is this a fully grown zebra?" in k: gold = "It is fully grown"     # a VQA miss the judge accepts
        if "ఇది పూర్తిగా పెరిగిన జీబ్రా కాదా?" in k: gold = "ఏమో"               # a VQA miss the judge rejects
        if any(w in k for w in ("How many circles are left", "कितने वृत्त बचे", "ఎన్ని వృత్తాలు మిగిలాయి")): gold = "several"
        if "### Answer:" in t: return f"### Rationale: Because the image shows it clearly.\n### Answer: {gold}"
        if "{ answer: }" in t: return f"{{ answer: {gold} }}"
        return gold
    return answer


def _expected(row, keys_unique):
    "The score the scripted answers must get (None: the row's question text is ambiguous, skip)."
    if row["subset"] == "clevr_math": return 1.0                       # exact match misses, the judge accepts
    if row["subset"] == "vqav2" and row["align_id"] == "vqav2-real-0":
        return {"en": 1.0, "te": 0.0, "hi": 1.0}[row["language"]]
    if row["subset"] == "jee_h" and row["language"] == "hi" and row["strategy"] == "cot": return 0.0  # English reasoning
    return 1.0 if keys_unique.get(row["sample_id"]) else None


def test_loopback_sweep_exercises_every_scoring_path_and_the_report_renders(server, data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    samples, errors = H.load_hintel(data_root)
    assert errors == [] and {s.subset for s in samples} == set(H.SUBSETS)
    keys = _key_map(samples)
    unique = {s.id: len(keys[H.question_block(s, s.language)]) == 1 for s in samples}
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
    assert summaries["hi", "cot"]["benchmark_summary"]["jee_h_language_rule"] is True
    assert summaries["hi", "standard"]["benchmark_summary"]["jee_h_language_rule"] is False
    assert summaries["te", "cot"]["benchmark_summary"]["jee_h_language_rule"] is False

    scores, runs = load_runs(out)
    assert len(runs) == 9 and scores["score"].notna().all()
    scores["strategy"] = scores["cfg_strategy"]
    checked = set()
    for _, r in scores.iterrows():
        want = _expected(r, unique)
        if want is None: continue                                    # a question text shared by items with other answers
        assert r["score"] == want, (r["sample_id"], r["strategy"], r["raw"], r["score"])
        checked.add((r["subset"], r["language"], r["strategy"]))
    assert len(checked) == 3 * sum(len(v) for v in H.SUBSET_LANGS.values())  # every subset x language x strategy checked
    # hybrid scoring: exact match and after-judge scores are kept apart
    zebra = scores[(scores.align_id == "vqav2-real-0") & (scores.cfg_strategy == "standard")].set_index("language")
    assert (zebra.loc["en", "em_score"], zebra.loc["en", "score"]) == (0.0, 1.0)
    assert (zebra.loc["te", "em_score"], zebra.loc["te", "score"], bool(zebra.loc["te", "judge_valid"])) == (0.0, 0.0, True)
    assert zebra.loc["hi", "em_score"] == 1.0
    clevr = scores[scores.subset == "clevr_math"]
    assert (clevr.em_score == 0).all() and (clevr.score == 1).all()
    judge_texts = [c.text for c in server.calls if getattr(c, "model", None) == "judge"]
    assert any("arithmetic question about an image" in t for t in judge_texts)       # CLEVR-Math variant used
    assert any("Ground-truth answer" in t and "zebra" in t for t in judge_texts)      # general variant used
    jee_hi_cot = scores[(scores.subset == "jee_h") & (scores.language == "hi") & (scores.cfg_strategy == "cot")]
    assert (jee_hi_cot.score == 0).all() and jee_hi_cot.jee_language_rule.astype(str).eq("True").all()
    jt = scores[(scores.subset == "jee_t") & (scores.align_id == "jee_t-real-0")]
    assert len(jt) == 6 and (jt.score == 1).all()                                      # exam option ids parsed
    caption_pred = json.loads((out / "te-caption" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert caption_pred["extra"]["stages"][0].startswith("This image displays:")

    # tables: Ours-H is the plain mean of the five Hindi subset cells
    t3 = H.lang_table(scores, "hi")
    row = t3.iloc[0]
    five = [row[(H.SUBSET_NAMES[s], "Indic")] for s in H.OURS["hi"]]
    assert row[("Ours-H", "Indic")] == pytest.approx(round(sum(five) / 5, 2), abs=0.006)
    assert "Model mean" in t3.index
    paired = H.paired_regression(scores, n_resamples=500)
    rw = paired[(paired.subset == "realworldqa") & (paired.indic == "hi") & (paired.strategy == "standard")]
    assert len(rw) == 1 and rw.iloc[0]["n_pairs"] == 6 and not pd.isna(rw.iloc[0]["mcnemar_p"])
    assert H.strategy_table(scores, scores.cfg_model.iloc[0]).shape[0] == 3

    # the report notebook renders every table and plot from these outputs
    pm = pytest.importorskip("papermill")
    import nbformat
    repo = Path(__file__).resolve().parents[1]
    committed = nbformat.read(repo / "evalnb" / "report_hintel.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in H.report_notebook().cells]
    pm.execute_notebook(str(repo / "evalnb" / "report_hintel.ipynb"), str(tmp_path / "report.ipynb"),
                        parameters={"runs_root": str(out), "n_resamples": 200}, progress_bar=False, cwd=str(tmp_path))
    nb = nbformat.read(tmp_path / "report.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2               # Figure 4 + paired CI plots
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "Ours-H" in html and "Ours-T" in html and "mcnemar_p" in html
    assert (out / "failures.csv").exists()
    # the optional LLM pre-labelling pass fills the sheet for a person to correct; Table 6 reads it
    server.responder = lambda call: "Visual perception failure." if call.model == "labeller" else None
    sheet = pd.read_csv(out / "failures.csv", dtype=str, keep_default_na=False)
    assert len(sheet) > 0 and (sheet.category == "").all()
    counts = H.prelabel_failures(out / "failures.csv", f"openai-compatible:labeller@{server.openai_base_url}", progress=False,
                                 cache=str(tmp_path / "label-cache.sqlite"))
    assert counts == {"n_rows": len(sheet), "n_prelabelled": len(sheet), "n_unparsed": 0}
    t6 = H.failure_table(out / "failures.csv")
    assert (t6["visual perception failure"] == 100.0).all() and t6["n_labelled"].sum() == len(sheet)
    assert set(pd.read_csv(out / "failures.csv", dtype=str).category_source) == {"llm"}


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
    scores, _ = load_runs(tmp_path)
    assert set(scores.cfg_strategy) == {"standard", "cot"} and scores.score.notna().all()


def test_registry_language_gating_and_force(data_root):
    from vlmlens.models.registry import get_spec
    samples, _ = H.load_hintel(data_root, subsets="realworldqa")
    langs = get_spec("qwen2.5-vl-7b").languages                                      # claims neither hi nor te
    kept, notes = select_samples(samples, RunConfig("hintel", "qwen2.5-vl-7b"), langs)
    assert {s.language for s in kept} == {"en"} and notes["skipped_languages"] == ["hi", "te"]
    kept, notes = select_samples(samples, RunConfig("hintel", "qwen2.5-vl-7b", force=True), langs)
    assert {s.language for s in kept} == {"en", "hi", "te"} and notes["forced_languages"] == ["hi", "te"]
    kept, _ = select_samples(samples, RunConfig("hintel", "tiny-qwen2.5-vl"), get_spec("tiny-qwen2.5-vl").languages)
    assert len(kept) == len(samples)


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
    src = SHARED / "jeebench" / "row0.json"
    if src.exists():
        H.write_subset(root, "jee_h", "en", H.jeebench_records(src, image_dir="images"))
    samples, errors = H.load_hintel(root)
    by = {s.id: s for s in samples}
    assert by["realworldqa:en:1"].answer == 1 and Path(by["realworldqa:en:1"].media[0].path).is_file()
    assert by["clevr_math:en:c1"].answer == "3" and by["clevr_math:en:c1"].metadata["template"] == "subtraction"
    assert by["vaani_h:hi:v1"].options == ["1", "2"] and by["vaani_h:hi:v1"].answer == 1
    if src.exists():
        assert by["jee_h:en:1"].answer == 1 and by["jee_h:en:1"].metadata["jee_type"] == "MCQ"
    # subsets requested but absent are reported, not fatal; bad rows name file, row and field
    assert any("no file for subset 'vqav2'" in str(e) for e in errors)
    (root / "vaani_h" / "hi.jsonl").write_text('{"align_id": "v2", "question": "q", "image": "x.png"}\n', encoding="utf-8")
    _, errors = H.load_hintel(root, subsets="vaani_h")
    assert len(errors) == 1 and errors[0].field == "answer" and "hi.jsonl" in str(errors[0])
    with pytest.raises(FileNotFoundError, match="not a local file"):
        H.hf_records("some-org/not-here", "realworldqa")


def test_sweep_file_and_a_papermill_sweep_run(data_root, tmp_path):
    import yaml
    from vlmlens.sweep import expand_grid, run_sweep
    repo = Path(__file__).resolve().parents[1]
    spec = yaml.safe_load((repo / "evalnb" / "sweeps" / "hintel.yaml").read_text(encoding="utf-8"))
    runs = expand_grid(spec)
    assert len(runs) == 27 and {r["params"]["strategy"] for r in runs} == set(H.STRATEGIES)
    assert {r["params"]["language"] for r in runs} == {"en", "hi", "te"}
    for r in runs: RunConfig(**r["params"])                                             # every run is a valid config
    # the same file shape, shrunk to one tiny-model run, through papermill
    small = {"name": "hintel-small", "base": {**spec["base"], "data_path": str(data_root), "model": "tiny-qwen2.5-vl", "judge": "none",
                                              "limit": 2, "max_new_tokens": 2, "benchmark_kwargs": {"caption_max_new_tokens": 2}},
             "grid": {"language": ["te"], "strategy": ["caption"]}}
    table = run_sweep(small, output_root=tmp_path, progress=False)
    assert list(table.status) == ["ok"], table.to_dict("records")
    scores, runs = load_runs(tmp_path / "hintel-small")
    assert len(scores) == 2 and set(scores.cfg_strategy) == {"caption"} and scores.score.notna().all()
    run_dir = Path(runs.run_dir.iloc[0])
    capt = [json.loads(l) for l in (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
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
