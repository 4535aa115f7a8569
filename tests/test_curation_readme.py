"""The curation guides' walk-throughs (nbs/guides/curate_infinibench.md, curate_aligned.md), executed exactly as printed. "Building an InfiniBench-style benchmark": a small release
built from the shipped real IMDb text and the synthetic episode with a scripted generator (the loopback server),
deduplicated, filtered against two model runs, reviewed in the widget (driven here the way a person clicks), certified,
released, evaluated with `vlmlens run` and exported in the official format. The only things the test adds are the
clients' base URLs (`OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`: the loopback server) and the one input file the
guide tells the reader to download or bring (the released outfit file, of which the test copies the vendored slice; the
TVQA episodes its questions name, for which the test puts copies of the synthetic episode under the media root).
"Building an aligned multilingual set and calibrating CURVE": see `test_readme_aligned_walkthrough`."""
import ast
import argparse
import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest

from test_curation_generate import EVENTS, gpt4o_like

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "infinibench_curation"


GUIDE_BLOCKS = [("curate_infinibench.md", None), ("curate_aligned.md", None)]


def _section() -> str:
    "The guide page nbs/guides/curate_infinibench.md."
    import guides
    return guides.section(*GUIDE_BLOCKS[0])


def _blocks(section: str):
    for m in re.finditer(r"```(bash|python)\n(.*?)```", section, re.S):
        yield m.group(1), m.group(2)


def _commands(code: str) -> list[str]:
    lines = code.replace("\\\n", " ").splitlines()
    return [l.split("  #")[0].strip() for l in lines if l.strip() and not l.strip().startswith("#")]


def _vlmlens(argv: list[str]) -> int:
    "The `vlmlens` console script in-process; `curate` through vlmlens.cli when wired there, else the curation CLI itself."
    from vlmlens import cli
    from vlmlens.curation import cli as ccli
    if argv[0] == "curate":
        p = cli.parser()
        try: p.parse_args(["curate", "status", "."]); wired = True
        except SystemExit: wired = False
        if not wired:
            p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
            return ccli.main(p.parse_args(argv))
    return cli.main(argv)


class Answers:
    "The loopback server's replies: the generator's answers, and filter models that know some answers."
    def __init__(self, build: Path): self.build, self.gold = build, None

    def _gold(self) -> dict:
        if self.gold is None:
            self.gold = {}
            for f in (self.build / "filter_runs").glob("candidates-*.jsonl"):
                for l in f.read_text().splitlines():
                    r = json.loads(l)
                    self.gold[r["question"].strip()] = (r["question_id"], r["answer_idx"])
        return self.gold

    def __call__(self, call):
        text = call.text
        if "extract the events" in text: return repr(EVENTS[:4])               # a short episode: four events
        if "##TASK" in text or "You play two roles" in text: return gpt4o_like(call)
        if "Predicted Answer:" in text:                                      # the filters' judge (InfiniBench's gpt-4o-mini)
            pred = text.split("Predicted Answer:", 1)[1].split("\n", 1)[0].strip()
            ref = text.split("Correct Answer:", 1)[1].split("\n", 1)[0].strip()
            return json.dumps({"score": 10 if pred == ref else 2, "justification": "loopback"})
        vision = "using only the subtitles given here" in text
        for q, (qid, gold) in self._gold().items():
            if q in text and gold is not None:
                h = int(hashlib.sha256(qid.encode()).hexdigest(), 16)
                knows = h % 5 == 0 if vision else h % 4 == 0          # both models know the same answers
                return str(gold) if knows else str((gold + 1) % 3)
        return "I don't know."


def _run_cell(code: str) -> dict:
    "Run a notebook cell as Jupyter would: its statements, and its last expression's value kept as `_` (what it shows)."
    tree = ast.parse(code)
    ns: dict = {}
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<readme>", "exec"), ns)
    if last is not None: ns["_"] = eval(compile(ast.Expression(last.value), "<readme>", "eval"), ns)
    return ns


def test_readme_walkthrough(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)            # the only change: where the clients connect
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.gemini_base_url)
    section = _section()
    assert "global_apprerance/tvqa/GPT4o_output/global_appreance.json" in section   # the guide says where the file comes from
    (tmp_path / "global_appreance.json").write_bytes((DATA / "bbt_global_appearance_gpt4o.json").read_bytes())  # a slice of it
    assert "demo_build/src/bbt/season_1/episode_1.mp4" in section                  # where the reader puts the TVQA episodes
    from vlmlens.benchmarks.infinibench import make_synthetic_episode
    ep = make_synthetic_episode(tmp_path / "stand_in")
    for season, eps in json.loads((tmp_path / "global_appreance.json").read_text()).items():
        for e in eps:                                                             # stand-ins for the user's TVQA copies
            (tmp_path / "demo_build" / "src" / "bbt" / season).mkdir(parents=True, exist_ok=True)
            for k in ("video", "subtitles"):
                (tmp_path / "demo_build" / "src" / "bbt" / season / f"{e}{ep[k].suffix}").write_bytes(ep[k].read_bytes())
    server.responder = Answers(tmp_path / "demo_build")
    ran = []
    for lang, code in _blocks(section):
        if lang == "python":
            ns = _run_cell(code)
            _review(dict(ns, w=ns["_"]), tmp_path); ran.append("review"); continue
        for cmd in _commands(code):
            argv = shlex.split(cmd)
            if argv[0] == "python":
                exec(argv[2], {}); ran.append("python"); continue
            assert argv[0] == "vlmlens", cmd
            rc = _vlmlens(argv[1:])
            assert rc == 0, f"{cmd} exited {rc}"
            ran.append(" ".join(argv[1:3]))
    assert ran.count("curate generate") == 1 and "review" in ran and "run --benchmark" in ran and ran.count("python") == 2
    _check(tmp_path, server)


def _review(ns, tmp_path):
    "Alice reviews every sampled item (one rejected, events timed), Bob half of them; both through the widget's controls."
    from vlmlens.curation import ReviewWidget, VerdictLog
    w, items = ns["w"], ns["items"]
    assert len(items) >= 5 and len({it["stratum"] for it in items}) >= 4
    assert w.media.children and "cannot show media" not in str(w.media.children[0])
    for k in range(len(items)):
        for j, box in enumerate(w.event_spans): box.value = f"{30 * j}-{30 * j + 10}"
        w.spans.value = f"{k}-{k + 3}"
        w.note.value = "checked"
        w.buttons["invalid" if k == 1 else "valid"].click()
    assert "review finished" in w.header.value
    bob = ReviewWidget(items, VerdictLog(tmp_path / "demo_build" / "verdicts.jsonl"), "bob")
    for k in range(len(items) // 2 + 1): bob.buttons["invalid" if k in (1, 2) else "valid"].click()


def _check(tmp_path, server):
    from vlmlens.curation.store import find_step
    b = tmp_path / "demo_build"
    gen = find_step(b, "generate").summary()
    assert gen["n_failed"] == 0 and gen["n_items"] > 20
    dd = json.loads((find_step(b, "dedup").dir / "summary.json").read_text())
    assert {r["threshold"] for r in dd["stats"]} == {0.90, 0.95, 0.98} and (find_step(b, "dedup").dir / "figure5.png").exists()
    fs = json.loads((find_step(b, "filter").dir / "summary.json").read_text())
    assert fs["knowledge"]["n_dropped"] > 0 and set(fs["knowledge"]["models"]) == {"gpt-4o", "gemini-2.0-flash"}
    assert any(c.json.get("model") == "gpt-4o-mini" for c in server.requests("openai"))      # open-ended answers were judged
    rej = find_step(b, "filter").rejected()
    assert all("answered correctly by all 2 models" in r["reason"] for r in rej)
    vs = json.loads((find_step(b, "verify").dir / "summary.json").read_text())
    assert vs["agreement"]["n_items"] >= 3 and vs["agreement"]["annotators"] == ["alice", "bob"]
    assert vs["n_rejected"] >= 1 and 0 < vs["validity"][-1]["validity"] < 1
    assert vs["certificates"]["overall"]["mean_count"] >= 1
    rows = [json.loads(l) for l in (tmp_path / "demo_release" / "rows.jsonl").read_text().splitlines()]
    assert rows and all(r["split"] == "validation" for r in rows)
    assert {r["skill_name"] for r in rows} >= {"global_appearance", "chronological_understanding", "spoiler_questions", "summarization"}
    assert (tmp_path / "demo_release" / "official" / "choronological_understanding.json").exists()
    card = (tmp_path / "demo_release" / "README.md").read_text()
    assert "Questions per skill and split" in card and "knowledge filter" in card and "Agreement on" in card
    summ = json.loads((tmp_path / "demo_outputs" / "demo_release" / "summary.json").read_text())
    src = tmp_path / "demo_build" / "src"
    assert all((src / r["video_path_mp4"].lstrip("/")).is_file() and (src / r["video_subtitles"].lstrip("/")).is_file() for r in rows)
    assert any(r["video_path_mp4"].startswith("/bbt/") for r in rows)               # the outfit file's TVQA episodes, found
    ep = lambda r: (r.get("show"), r.get("season"), r.get("episode"))
    summ_bbt = [r for r in rows if r["skill_name"] == "summarization" and r.get("show") == "The Big Bang Theory"]
    assert summ_bbt and all(r["video_path_mp4"] == f"/bbt/season_{r['season']}/episode_{r['episode']}.mp4" for r in summ_bbt)
    for r in summ_bbt:                                                              # one episode, one path, whatever the skill
        assert {x["video_path_mp4"] for x in rows if ep(x) == ep(r)} == {r["video_path_mp4"]}
    assert summ["overall"]["n"] == len(rows) and summ["overall"]["n_errors"] == 0
    off = list((tmp_path / "demo_outputs" / "demo_release" / "official").glob("*.json"))
    assert off and all(isinstance(json.loads(p.read_text()), list) for p in off)


def _aligned_section() -> str:
    "The guide page nbs/guides/curate_aligned.md."
    import guides
    return guides.section(*GUIDE_BLOCKS[1])


class AlignedAnswers:
    """The loopback server's replies for the aligned walk-through: the caption-MCQ generator and the text-only filter
    models (test_curation_captions), the OCR model (test_curation_ocr), the CURVE model and its Gemini judge
    (test_curation_calibration); anything else (the HinTel run) gets the server's default answer."""
    def __init__(self):
        import test_curation_calibration as cal_t
        self.curve_questions = {q for qs in cal_t.SOLVES.values() for q in qs} | {r["question"] for r in cal_t.ROWS}

    def __call__(self, call):
        import test_curation_calibration as cal_t
        import test_curation_captions as caps_t
        import test_curation_ocr as ocr_t
        text = call.text
        if "<<<BEGIN REFERENCE ANSWER" in text:                             # the CURVE judge (gemini-2.5-flash by default)
            ref, ans = cal_t.fenced(text, "REFERENCE ANSWER"), cal_t.fenced(text, "ANSWER")
            return json.dumps({"score": 2 if ref and ans and ref.strip() == ans.strip() else 0, "justification": "loopback"})
        if "Instruction: Provide the Correct Option Number Only." in text or any(k in text for k in caps_t.MCQS):
            return caps_t.generator(call)
        if call.api == "gemini" and "exam paper" in text: return ocr_t.reader(call)
        if any(q in text for q in self.curve_questions): return cal_t.responder(call)
        return None


def _aligned_inputs(root: Path):
    """The input files the guide tells the reader to bring, made here: `captions.jsonl` and its images (Telugu
    captions), `pages/<lang>/` and `key.json` (synthetic exam pages), `curve.json` and `videos/` (a small CURVE set)."""
    import test_curation_calibration as cal_t
    import test_curation_captions as caps_t
    import test_curation_ocr as ocr_t
    from PIL import Image
    for c in caps_t.CAPTIONS:
        (root / c["image"]).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 32), (120, 80, 40)).save(root / c["image"])
    (root / "captions.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in caps_t.CAPTIONS), encoding="utf-8")
    for lang, spec in (("en", ocr_t.EN), ("hi", ocr_t.HI)):
        for k, (w, qs) in enumerate(spec.items()):
            ocr_t.draw_page(root / "pages" / lang / f"p{k + 1}.png", w, [x["question"] for x in qs], [b for x in qs for b in x["figures"]][:2])
    (root / "key.json").write_text(json.dumps({"1": "B", "2": "12", "3": "AC"}))
    for k, row in enumerate(cal_t.ROWS):
        cal_t.write_av_clip(root / "videos" / f"{row['video_id'].rsplit('=', 1)[-1]}.mp4", shade=40 * k, tone=300.0 + 90 * k)
    (root / "curve.json").write_text(json.dumps(cal_t.ROWS, ensure_ascii=False), encoding="utf-8")


def _drive_widget(code: str, ns: dict, tmp_path: Path) -> str:
    "Click through the widget a guide cell shows, as its reviewer would; returns which review it was."
    import test_curation_ocr as ocr_t
    if "compare_te_review.json" in code:                           # the engine comparison: AWS reads better than Azure
        from vlmlens.curation.align import CRITERIA
        w = ns["_"]
        assert {it["id"].split("/")[0] for it in w.items} == {"aws", "azure"} and all(Path(it["image"]).exists() for it in w.items)
        for k in range(len(w.items)):
            good = w.item["id"].startswith("aws/")
            for c in CRITERIA: w.criteria[c].value = 5 if good else 3
            w.buttons["accept"].click()
            assert w.index == k + 1, w.status.value
        return "engine review"
    if "TranslationReviewWidget" in code:
        w = ns["_"]
        assert {it["language"] for it in w.items} == {"hi", "te"} and all(Path(it["image"]).exists() for it in w.items)
        while w.index < len(w.items):
            rejected = w.item["id"].endswith("/te/vqav2-real-0")
            if rejected: w.note.value = "meaning changed"
            w.buttons["reject" if rejected else "accept"].click()
        return "translation review"
    if "mcq_review_items" in code:
        w = ns["_"]
        assert sorted(it["id"] for it in w.items) == ["en/t2", "te/t2"] and all(Path(it["image"]).exists() for it in w.items)
        while w.index < len(w.items): w.buttons["valid"].click()
        return "mcq review"
    if "OCRFixWidget" in code:
        assert ns["_"] is ns["fix"]["en"]
        for lang, w in ns["fix"].items():
            while w.index < len(w.items):
                if w.item["kind"] == "page":                       # the rejected page: the reviewer types its row
                    assert "question 3: options" in w.item["question"]
                    w.fields["row"].value = json.dumps([ocr_t.q(3, "MCQ(multiple)", "Which of the structures shown are aromatic?",
                                                                {"A": "I", "B": "II", "C": "III", "D": "IV"}, [ocr_t.FIG3], "chem", "AC")])
                    w.buttons["fixed"].click()
                else: w.buttons["correct"].click()
        return "ocr fix"
    if "AuditWidget" in code:                                      # each auditor runs the cell with their own id
        for who in ("aud-1", "aud-2"):
            w = _run_cell(code.replace('annotator="aud-1"', f'annotator="{who}"'))["_"] if who != "aud-1" else ns["_"]
            assert w.annotator == who and all(it["answer"] == "" for it in w.items)
            while w.index < len(w.items):
                gold = {r["key"]: r["answer"] for r in json.loads((tmp_path / "curve.json").read_text())}[w.item["id"]]
                w.fields["answer"].value = "మృదంగం" if (who, w.item["id"]) == ("aud-2", "te-1") else gold
                w.buttons["answered"].click()
        return "audit"
    raise AssertionError(f"a guide cell this test does not know: {code[:80]}")


def test_readme_aligned_walkthrough(tmp_path, monkeypatch, capsys):
    """The whole aligned-set walk-through (translation, caption MCQs, the text-only filter, exam OCR, the HinTel run,
    CURVE calibration), executed as printed. The test adds only the input files the guide tells the reader to bring
    and the services' endpoints (`AWS_ENDPOINT_URL`, `AZURE_TRANSLATOR_ENDPOINT`, `OPENAI_BASE_URL`,
    `GOOGLE_GEMINI_BASE_URL`: one loopback server); reviewers click through the widgets the guide's cells show."""
    from loopback_mt import MTLoopback, cipher
    from vlmlens.store import RunSet
    monkeypatch.chdir(tmp_path)
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIALOOPBACK00000000", "AWS_SECRET_ACCESS_KEY": "loopback/aws/secret/00000000000000000000",
                 "AZURE_TRANSLATOR_KEY": "loopback0azure0key0000000000000000", "AWS_REGION": "us-east-1",
                 "OPENAI_API_KEY": "test-openai-key.not-real.0000000000", "GEMINI_API_KEY": "loopback-gemini-key-0000000000"}.items():
        monkeypatch.setenv(k, v)
    _aligned_inputs(tmp_path)
    blocks = list(_blocks(_aligned_section()))
    with MTLoopback() as svc:
        for k in ("AWS_ENDPOINT_URL", "AZURE_TRANSLATOR_ENDPOINT"): monkeypatch.setenv(k, svc.url)
        monkeypatch.setenv("OPENAI_BASE_URL", svc.openai_base_url)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", svc.gemini_base_url)
        svc.responder = AlignedAnswers()
        ran, out = [], {}
        for lang, code in blocks:
            if lang == "python":
                ran.append(_drive_widget(code, _run_cell(code), tmp_path)); continue
            for cmd in _commands(code):
                argv = shlex.split(cmd)
                if argv[0] == "python": exec(argv[2], {}); ran.append("python"); continue
                assert argv[0] == "vlmlens", cmd
                capsys.readouterr()
                assert _vlmlens(argv[1:]) == 0, f"{cmd} failed"
                name = " ".join(argv[1:3]); ran.append(name); o = capsys.readouterr(); out[name] = out.get(name, "") + o.out + o.err
        assert {"aws", "azure", "openai", "gemini"} <= {c.api for c in svc.calls}
    assert ran == ["python", "curate compare-engines", "engine review", "curate compare-engines", "curate translate", "curate translate", "translation review",
                   "curate translation-stats", "curate release-aligned",
                   "curate caption-mcq", "curate text-filter", "curate mcq-report", "mcq review",
                   "curate release-mcq", "curate ocr", "curate ocr", "ocr fix", "curate release-exam", "run --benchmark",
                   "curate calibrate-difficulty", "audit", "curate calibrate-correctness"]
    picked = json.loads((tmp_path / "ml" / "build" / "compare_te.json").read_text())
    assert [r["engine"] for r in picked if r["picked"]] == ["aws"] and all(r["n_reviewed"] == 8 for r in picked)
    rel = tmp_path / "ml" / "release"
    rows = {l: [json.loads(x) for x in (rel / "vqav2" / f"{l}.jsonl").read_text().splitlines()] for l in ("en", "hi", "te")}
    ids = {l: [r["align_id"] for r in rs] for l, rs in rows.items()}
    assert ids["en"] == ids["hi"] == ids["te"] and "vqav2-real-0" not in ids["en"] and len(ids["en"]) == 7   # 8 items, one rejected in te
    assert rows["te"][0]["question"] == cipher(rows["en"][0]["question"], "en", "te")
    # caption MCQs: t3 (Latin script) never sent, t1 answered without the image by both models, t2 kept and verified
    vaani = [json.loads(x) for x in (rel / "vaani_t" / "te.jsonl").read_text().splitlines()]
    assert [r["align_id"] for r in vaani] == ["t2"]
    # exam OCR: the English page read wrong was fixed by hand; both languages' three questions released
    assert "jee_h: 3 questions in en, hi" in out["curate release-exam"]
    jee = {l: [json.loads(x) for x in (rel / "jee_h" / f"{l}.jsonl").read_text().splitlines()] for l in ("en", "hi")}
    assert [r["align_id"] for r in jee["en"]] == [r["align_id"] for r in jee["hi"]] == [f"jee-adv-2023-paper-1/{n}" for n in (1, 2, 3)]
    assert jee["en"][2]["question"].startswith("Which of the structures shown are aromatic?") and jee["en"][2]["answer"] == "AC"
    # the HinTel run over the release
    run = next(iter(RunSet.discover(tmp_path / "outputs")))
    assert run.status == "finished" and run.summary["overall"]["n_errors"] == 0
    assert {sid.split(":")[0] for sid in run.predictions()} == {"vqav2", "jee_h"} and len(run.predictions()) == 7 + 3
    # CURVE calibration: what each shortcut baseline solves is flagged; the two auditors disagree on te-1
    assert [e.split(": ", 1)[1] for e in run.summary["row_errors"]] == [f"no file for subset '{s}' in languages ['hi']"
                                                                         for s in ("realworldqa", "clevr_math", "vaani_h")]
    # CURVE calibration (10% per locale, at least one: hi-1, te-1, it-1): what a shortcut baseline solves is flagged
    diff = out["curate calibrate-difficulty"]
    assert "single_frame: solved 0 of 3" in diff and "flagged for revision: it-1 (text_only), te-1 (audio_only)" in diff
    assert "skills it-2: 1 skill(s); at least 2 required" in diff
    # … and the two auditors disagree on te-1, which is sent back for revision
    assert "revise te-1 (gold 'నాదస్వరం'): aud-1: నాదస్వరం; aud-2: మృదంగం" in out["curate calibrate-correctness"]
