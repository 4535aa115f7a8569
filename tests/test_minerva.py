"""MINERVA and CURVE end to end: loaders (missing videos, CSV maps), prompts, the runner with the tiny local model and
with scripted OpenAI-compatible models and judges on the loopback server, a papermill sweep of each benchmark, error
isolation on the swept runs, and the report notebook executed on the outputs.

The data are synthetic "cultural" videos (coloured scenes with frame codes) and reasoning chains with timestamps written
in Hindi, Tamil, Korean and Arabic (CURVE) and English (MINERVA).
"""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from loopback import LoopbackServer
from vlmlens.core import RunConfig

REPO = Path(__file__).resolve().parents[1]

CURVE_ITEMS = [
    {"key": "c-hi", "video_id": "https://www.youtube.com/watch?v=vhi", "locale": "hi-IN", "category": "Festivals", "subcategory": "Diwali",
     "question": "वीडियो में कौन सा त्योहार मनाया जा रहा है?", "answer": "दिवाली",
     "reasoning_steps": ["00:01 पर दीये जलाए जाते हैं", "दीये जलाना दिवाली की परंपरा है", "इसलिए त्योहार दिवाली है"]},
    {"key": "c-ta", "video_id": "https://youtu.be/vta", "locale": "ta-IN", "category": "Cuisine", "subcategory": "Pongal",
     "question": "வீடியோவில் என்ன உணவு சமைக்கப்படுகிறது?", "answer": "பொங்கல்",
     "reasoning_steps": ["00:02 பானையில் அரிசி பொங்குகிறது", "பொங்கும் அரிசி பொங்கல் உணவு", "ஆகவே உணவு பொங்கல்"]},
    {"key": "c-ko", "video_id": "vko", "locale": "ko-KR", "category": "Cuisine", "subcategory": "Kimchi",
     "question": "영상에서 어떤 음식을 만드나요?", "answer": "김치",
     "reasoning_steps": ["00:01 배추를 소금에 절인다", "00:03 빨간 양념을 바른다", "절인 배추에 양념을 바르면 김치가 된다", "그래서 음식은 김치다"]},
    {"key": "c-ar", "video_id": "var", "locale": "ar-EG", "category": "Sports", "subcategory": "Football",
     "question": "ما الرياضة التي تظهر في الفيديو؟", "answer": "كرة القدم",
     "reasoning_steps": ["00:02 لاعبون يركلون كرة", "ركل الكرة بالقدم هو كرة القدم", "إذن الرياضة كرة القدم"]},
    {"key": "c-te", "video_id": "https://www.youtube.com/watch?v=vgone&t=5s", "locale": "te-IN", "category": "Rituals", "subcategory": "x",
     "question": "ఏ పండుగ?", "answer": "సంక్రాంతి", "reasoning_steps": ["00:01 ముగ్గులు"]},
]
MINERVA_ITEMS = [
    {"key": "yt1:" + "a" * 40, "video_id": "vm1", "question": "What colour is the lamp lit after the dance?",
     **{f"answer_choice_{i}": c for i, c in enumerate(["red", "blue", "green", "yellow", "white"])}, "answer_id": 0, "answer": "red",
     "reasoning": "At 00:01 the dance starts. At 00:02-00:03 a red lamp is lit. So the lamp is red.",
     "question type": "Temporal Reasoning, Color", "split": "test", "category": "Dance"},
    {"key": "yt2:" + "b" * 40, "video_id": "https://www.youtube.com/watch?v=vm2", "question": "How many pots are on the stove?",
     **{f"answer_choice_{i}": c for i, c in enumerate(["1", "2", "3", "4", "5"])}, "answer_id": 2, "answer": "3.",
     "reasoning": "At 00:02 three pots stand on the stove.", "question_type": "Counting", "split": "test", "category": "Cooking"},
    {"key": "yt3:" + "c" * 40, "video_id": "vm_gone", "question": "Gone video?",
     **{f"answer_choice_{i}": c for i, c in enumerate("abcde")}, "answer_id": 1, "reasoning": "00:01",
     "question type": "Counting", "split": "dev", "category": "Cooking"},
]


def write_videos(root: Path, ids, seconds: int = 4, fps: int = 4):
    from vlmlens.benchmarks.minerva import youtube_id
    from vlmlens.media import frame_code_image, write_video
    ids = [youtube_id(v) for v in ids]
    root.mkdir(parents=True, exist_ok=True)
    for k, vid in enumerate(ids):
        frames = []
        for i in range(seconds * fps):
            img = frame_code_image(i, 64, 48).copy()
            img[:, 32:] = [(200, 40, 40), (40, 160, 70), (40, 80, 215), (235, 200, 40)][(i // fps + k) % 4]
            frames.append(img)
        write_video(root / f"{vid}.mp4", frames, fps=fps)


def make_data(tmp: Path, which: str = "curve") -> Path:
    items = CURVE_ITEMS if which == "curve" else MINERVA_ITEMS
    d = tmp / which
    write_videos(d / "videos", [r["video_id"] for r in items if "gone" not in r["video_id"]])
    path = d / f"{which}.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path


# --- scripted loopback models -------------------------------------------------------------------------------

def fenced(text: str, label: str) -> str | None:
    m = re.search(rf"<<<BEGIN {label} \w+>>>\n(.*?)\n<<<END {label} \w+>>>", text, re.S)
    return m.group(1) if m else None


def graph_from_chain(chain: str) -> dict:
    "The compiler's script: timed lines are visual nodes, the last line the conclusion, other lines knowledge."
    from vlmlens.benchmarks.minerva import parse_timestamps
    lines = [re.sub(r"^\d+\.\s*", "", l).strip() for l in re.split(r"\n|(?<=\.)\s+(?=[A-Z])", chain) if l.strip()]
    nodes = []
    for i, l in enumerate(lines):
        ts = parse_timestamps(l)
        kind = "reasoning" if i == len(lines) - 1 and len(lines) > 1 else ("visual" if ts else "knowledge")
        nodes.append({"id": f"n{i + 1}", "kind": kind, "text": l, "start": ts[0][0] if ts and kind == "visual" else None,
                      "end": ts[0][1] if ts and kind == "visual" else None})
    edges = [[n["id"], nodes[-1]["id"]] for n in nodes[:-1]]
    return {"nodes": nodes, "edges": edges}


PERCEPTION_BY_LOCALE = {"hi-IN": "temporal_localization", "ta-IN": "spatial_localization", "ko-KR": "attribute_misrecognition",
                        "ar-EG": "hallucination", "te-IN": "temporal_localization", "en": "attribute_misrecognition"}


def labeller_reply(text: str) -> str:
    "The labeller's script: a node is covered iff the response repeats its text; the first uncovered node gets a label."
    resp = fenced(text, "ANSWER") or ""
    block = text.split("Evidence nodes to check, in order:\n", 1)[1].split("\n\n", 1)[0]
    nodes = [re.match(r"(\S+) \((\w+)[^)]*\): (.*)", l).groups() for l in block.splitlines()]
    q = fenced(text, "QUESTION") or ""
    loc = next((r["locale"] for r in CURVE_ITEMS if r["question"] == q), "en")
    align = []
    for nid, kind, ntext in nodes:
        if ntext in resp:
            align.append({"node": nid, "status": "correct"}); continue
        align.append({"node": nid, "status": "missed"})
        label = {"visual": PERCEPTION_BY_LOCALE[loc], "knowledge": "missing_knowledge", "reasoning": "reasoning"}[kind]
        return json.dumps({"alignment": align, "first_failure": nid, "label": label, "explanation": "scripted"})
    return json.dumps({"alignment": align, "first_failure": None, "label": None, "explanation": "all covered"})


def student_reply(text: str) -> str:
    "The model under test: repeats the hints it is given, answers Hindi correctly and the rest wrongly."
    facts = text.split("Facts you may rely on (they are correct):\n", 1)
    said = facts[1].replace("- ", "") if len(facts) > 1 else "I watched the video."
    if "दिवाली" in text or "त्योहार" in text: return f"{said}\nAnswer: दिवाली"
    if "colour is the lamp" in text: return f"{said}\nAnswer: B"
    return f"{said}\nAnswer: something else"


def judge_reply(call) -> str:
    ref, pred = fenced(call.text, "REFERENCE ANSWER"), fenced(call.text, "ANSWER")
    seed = (call.json or {}).get("seed")
    if seed == 2: return json.dumps({"score": 0, "justification": "a dissenting sample"})   # outvoted by the other two
    score = 2 if pred and ref and ref in pred else (1 if pred and "something" in pred and "김치" in ref else 0)
    return json.dumps({"score": score, "justification": "scripted"})


def responder(call):
    if call.model == "student": return student_reply(call.text)
    if call.model == "judge": return judge_reply(call)
    if call.model == "compiler": return json.dumps(graph_from_chain(fenced(call.text, "REASONING")), ensure_ascii=False)
    if call.model == "labeller": return labeller_reply(call.text)
    return None


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as s:
        s.responder = responder
        yield s


# --- tests ---------------------------------------------------------------------------------------------------

def test_loaders_attach_videos_and_report_missing_ones(tmp_path):
    from vlmlens.benchmarks.minerva import CurveBenchmark, MinervaBenchmark
    cpath = make_data(tmp_path, "curve")
    samples, errors = CurveBenchmark().load(RunConfig("curve", "m", data_path=str(cpath)))
    assert [s.locale for s in samples] == ["hi-IN", "ta-IN", "ko-KR", "ar-EG"]
    assert all(Path(s.media[0].path).is_file() for s in samples)                     # URL video ids found by their id
    vids = cpath.parent / "videos"
    assert [str(e) for e in errors] == [f"{cpath}:5: video_id: video 'https://www.youtube.com/watch?v=vgone&t=5s' not found "
                                        f"in {vids} or {cpath.parent}"]
    assert len(CurveBenchmark().load(RunConfig("curve", "m", data_path=str(cpath), modality="text"))[0]) == 5  # blind: nothing dropped
    mpath = make_data(tmp_path, "minerva")
    (tmp_path / "map.csv").write_text("video_id,path\nvm1,minerva/videos/vm1.mp4\nhttps://youtu.be/vm2,minerva/videos/vm2.mp4\n")
    kw = {"video_map": str(tmp_path / "map.csv")}
    ms, merr = MinervaBenchmark().load(RunConfig("minerva", "m", data_path=str(mpath), benchmark_kwargs=kw))
    assert [s.metadata["video_id"] for s in ms] == ["vm1", "https://www.youtube.com/watch?v=vm2"]   # map by URL or by id
    assert [e.row for e in merr] == [3] and "video 'vm_gone' not found in video_map" in str(merr[0])
    ms, merr = MinervaBenchmark().load(RunConfig("minerva", "m", data_path=str(mpath), split="test"))
    assert [s.answer for s in ms] == [0, 2] and merr == []                           # "3." matches the choice "3"
    assert ms[1].metadata["skills"] == ["Counting"]                                  # the `question_type` spelling
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**MINERVA_ITEMS[0], "answer_id": "x"}, {**MINERVA_ITEMS[0], "key": "k2", "answer": "blue"},
                               {**MINERVA_ITEMS[0], "key": "k3", "video_id": "https://vimeo.com/1"}]))
    ok, berr = MinervaBenchmark().load(RunConfig("minerva", "m", data_path=str(bad)))
    assert ok == [] and [str(e) for e in berr] == [
        f"{bad}:1: answer_id: expected an integer 0-4, got 'x'",
        f"{bad}:2: answer: 'blue' is not answer_choice_0 ('red')",
        f"{bad}:3: video_id: 'https://vimeo.com/1' is neither a bare video id nor a YouTube URL (map it with a video_map CSV)"]


def test_curve_run_judged_by_majority_vote_through_the_openai_client(server, tmp_path, monkeypatch):
    from vlmlens.tables.minerva import curve_main_table, group_table, resource_comparison
    from vlmlens.runner import run
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    cpath = make_data(tmp_path, "curve")
    url = server.openai_base_url
    cfg = RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(cpath), num_frames=2, max_new_tokens=256,
                    judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 3, "retries": 0, "cache": False},
                    benchmark_kwargs={"reasoning": True, "human_baseline": 0.9522}, output_root=str(tmp_path / "out"),
                    run_name="curve", progress=False, model_kwargs={"cache": False, "progress": False})
    s = run(cfg)
    bs = s["benchmark_summary"]
    assert s["overall"]["n"] == 4 and s["row_errors"] and "vgone" in s["row_errors"][0]
    assert bs["metric"] == "share_of_2s" and bs["overall"]["accuracy"] == pytest.approx(0.25)   # only Hindi got a 2
    assert bs["share_of_2s"] == pytest.approx(0.25) and bs["mean_score_half"] == pytest.approx((1 + 0.5) / 4)  # Korean got a 1
    assert bs["by_locale"]["hi-IN"]["accuracy"] == 1.0 and bs["highest_locale"] == "hi-IN"
    assert bs["resource_sets"] == {"low": ["ar-EG", "ta-IN"], "high": ["en-GB", "ja-JP"]}
    assert bs["by_resource"]["low"]["n"] == 2 and "high" not in bs["by_resource"] and bs["human_baseline"] == 0.9522
    import pandas as pd
    sc = pd.read_csv(tmp_path / "out" / "curve" / "scores.csv").set_index("sample_id")
    assert sc.loc["c-ko", "score"] == 0.0 and sc.loc["c-ko", "score_half"] == 0.5 and sc.loc["c-ko", "judge_score"] == 1
    t = curve_main_table(tmp_path / "out")
    assert list(t["model"])[-1] == "Human" and t.iloc[0]["aggregate"] == 0.25 and t.iloc[0]["n"] == 4
    assert (t.iloc[0]["highest_locale"], t.iloc[0]["highest_n"]) == ("hi-IN", 1)
    loc = group_table(tmp_path / "out", "locale").set_index("locale")
    assert sorted(loc.index) == ["ar-EG", "hi-IN", "ko-KR", "ta-IN"] and set(loc["n"]) == {1}
    rc = resource_comparison(tmp_path / "out").iloc[0]
    assert (rc["low"], rc["low_n"], rc["high"]) == (0.0, 2, None)
    prompt = [c for c in server.requests("openai") if c.model == "student" and "김치" not in c.text and "영상" in c.text][0].text
    assert "in Korean" in prompt and "MM:SS" in prompt


def test_curve_headline_switch_and_judge_failures(server, tmp_path, monkeypatch):
    """`accuracy: mean_half` makes the mean vote / 2 the headline; a model call that returns no text is an error: it
    counts as wrong in both readings and is never sent to the judge."""
    from vlmlens.runner import run
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    cpath = make_data(tmp_path, "curve")
    url = server.openai_base_url
    old = server.responder
    server.reset()
    server.responder = lambda call: "" if call.model == "student" and "சமைக்கப்படுகிறது" in call.text else responder(call)
    cfg = RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(cpath), modality="text", max_new_tokens=64,
                    judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 1, "cache": False},
                    benchmark_kwargs={"accuracy": "mean_half"}, output_root=str(tmp_path), run_name="half", progress=False,
                    model_kwargs={"cache": False, "progress": False})
    try: s = run(cfg)
    finally: server.responder = old
    bs = s["benchmark_summary"]
    assert bs["metric"] == "mean_half" and bs["overall"]["accuracy"] == pytest.approx(bs["mean_score_half"])
    assert bs["share_of_2s"] == pytest.approx(1 / 5)                                  # text modality: all five items
    assert bs["by_locale"]["ta-IN"]["n_errors"] == 1 and bs["by_locale"]["ta-IN"]["accuracy"] == 0.0   # no text: wrong
    assert len([c for c in server.requests("openai") if c.model == "judge"]) == 4     # ... and never judged
    import pandas as pd
    sc = pd.read_csv(tmp_path / "half" / "scores.csv").set_index("sample_id")
    assert pd.isna(sc.loc["c-ta", "score"]) and "empty" in sc.loc["c-ta", "error"]
    assert sc.loc["c-ko", "score"] == 0.5 and sc.loc["c-hi", "score"] == 1.0


def test_curve_judge_variants_through_the_openai_client(server, monkeypatch):
    "k samples of one model (temperature 1.0, seeds 0..k-1), a vote of several models, or one greedy judgment."
    from vlmlens.benchmarks.minerva import curve_judge
    from vlmlens.judges import JudgeItem
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.reset()
    server.responder = responder
    j = f"openai-compatible:judge@{server.openai_base_url}"
    item = [JudgeItem("c-ko", "영상에서 어떤 음식을 만드나요?", "김치", "김치를 만든다", "ko")]
    kw = {"cache": False, "model_kwargs": {"cache": False, "progress": False}}
    with curve_judge(j, k=3, **kw) as v:
        out = v.judge(item)[0]
        assert (out.score, out.valid, len(v.judges)) == (2.0, True, 3) and "curve-0-1-2" in v.judge_id
    calls = [c.json for c in server.requests("openai") if c.model == "judge"]
    assert sorted(c.get("seed") for c in calls) == [0, 1, 2] and {c.get("temperature") for c in calls} == {1.0}
    with curve_judge(models=[j, j], **kw) as v2: assert v2.judge(item)[0].score == 2.0 and len(v2.judges) == 2
    with curve_judge(j, k=1, **kw) as one: assert type(one).__name__ == "Judge" and one.temperature == 0.0


def test_minerva_run_on_the_tiny_local_model(tmp_path):
    from vlmlens.runner import run
    mpath = make_data(tmp_path, "minerva")
    s = run(RunConfig("minerva", "tiny-qwen2.5-vl", data_path=str(mpath), num_frames=2, max_new_tokens=4,
                      output_root=str(tmp_path / "out"), run_name="m", progress=False))
    bs = s["benchmark_summary"]
    assert s["overall"]["n"] == 2 and s["overall"]["n_errors"] == 0 and "vm_gone" in s["row_errors"][0]
    assert set(bs["by_skill"]) == {"Temporal Reasoning", "Color", "Counting"} and bs["by_skill"]["Counting"]["n"] == 1
    assert set(bs["by_split"]) == {"test"} and set(bs["by_category"]) == {"Dance", "Cooking"}
    assert 0 <= bs["overall"]["invalid_rate"] <= 1 and bs["overall"]["invalid_rate"] == s["overall"]["invalid_rate"]


def test_sweep_yaml_files_follow_the_papers_roster():
    import yaml
    from vlmlens.benchmarks.minerva import CURVE_ROSTER
    from vlmlens.sweep import expand_grid
    runs = {n: [RunConfig(**r["params"]) for r in expand_grid(yaml.safe_load((REPO / "evalnb" / "sweeps" / f"{n}.yaml").read_text()))]
            for n in ("minerva", "curve")}
    for name, cfgs in runs.items():
        assert {c.benchmark for c in cfgs} == {name} and len({c.hash() for c in cfgs}) == len(cfgs)
    curve = runs["curve"]
    assert sorted(c.model for c in curve) == sorted(CURVE_ROSTER.values())            # the paper's seven models
    assert all(c.language is None and not c.force and c.judge == "gemini-2.5-flash" and c.judge_kwargs == {"k": 3} for c in curve)
    assert {c.num_frames for c in runs["minerva"]} == {1, 8, 32, 128, 256, 512}


def test_roster_models_claim_every_curve_locale():
    "The paper evaluates each of its seven models on all 18 locales, so language gating must keep them all."
    from vlmlens.benchmarks.minerva import CURVE_LOCALES, CURVE_ROSTER
    from vlmlens.models.registry import supports_language
    missing = {m: [l for l in CURVE_LOCALES if not supports_language(m, l)] for m in CURVE_ROSTER.values()}
    assert not {m: ls for m, ls in missing.items() if ls}, missing


def test_report_notebook_is_a_papermill_template():
    import nbformat
    nb = nbformat.read(REPO / "evalnb" / "report_minerva.ipynb", as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "curve_root = None" in params[0].source
    for c in nb.cells:
        if c.cell_type == "code": compile(c.source, "cell", "exec")
        assert not c.get("outputs")


def test_runs_isolation_and_report_end_to_end(server, tmp_path, monkeypatch):
    """Runs of each benchmark (scripted student and judge on the loopback server; MINERVA over 1 and 2 frames), then
    the report notebook, executed by papermill, compiles every item's evidence graph, runs error isolation on every
    run and renders all tables and charts."""
    import nbformat
    import papermill as pm
    from vlmlens.evidence import graph_table, read_isolation
    from vlmlens.runner import run
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    url = server.openai_base_url
    mpath, cpath = make_data(tmp_path, "minerva"), make_data(tmp_path, "curve")
    out = tmp_path / "out"
    common = dict(model=f"openai-compatible:student@{url}", progress=False, model_kwargs={"cache": False, "progress": False},
                  benchmark_kwargs={"reasoning": True})
    mruns = [f"m{n}" for n in (1, 2)]
    for n, name in zip((1, 2), mruns):
        run(RunConfig("minerva", data_path=str(mpath), num_frames=n, max_new_tokens=64, split="test", run_name=name,
                      output_root=str(out / "minerva"), **common))
    s = run(RunConfig("curve", data_path=str(cpath), num_frames=2, max_new_tokens=256, judge=f"openai-compatible:judge@{url}",
                      judge_kwargs={"k": 3, "cache": False}, run_name="c", output_root=str(out / "curve"), **common))
    assert s["benchmark_summary"]["overall"]["accuracy"] == pytest.approx(0.25)
    iso = {"compiler": f"openai-compatible:compiler@{url}", "labeller": f"openai-compatible:labeller@{url}"}
    report = tmp_path / "report.ipynb"
    pm.execute_notebook(str(REPO / "evalnb" / "report_minerva.ipynb"), str(report), cwd=str(tmp_path), progress_bar=False,
                        parameters={"minerva_root": str(out / "minerva"), "curve_root": str(out / "curve"), "isolation": iso,
                                    "graphs": "all"})
    crun = out / "curve" / "c"
    assert sorted(p.name for p in (crun / "evidence_graphs").glob("*.json")) == ["c-ar.json", "c-hi.json", "c-ko.json", "c-ta.json"]
    gt = graph_table(crun).set_index("set")
    assert (gt.loc["all items", "n_graphs"], gt.loc["all items", "coverage"], gt.loc["failed items", "n_graphs"]) == (4, 1.0, 3)
    rounds, results = read_isolation(crun)
    it = results[results["mode"] == "iterative"].set_index("sample_id")
    assert set(it["outcome"]) == {"covered"} and list(it.loc[["c-ar", "c-ko", "c-ta"], "n_rounds"]) == [3, 4, 3]
    ko = rounds[(rounds.sample_id == "c-ko") & (rounds["mode"] == "iterative")].sort_values("round")
    assert list(ko["label"]) == ["attribute_misrecognition", "attribute_misrecognition", "missing_knowledge", "reasoning"]
    assert ko["prompt"].iloc[-1].count("- At 00:0") == 2 and "그래서" not in ko["prompt"].iloc[-1]   # hints for the two visual nodes
    assert list(results[results["mode"] == "one_shot"]["n_rounds"]) == [1, 1, 1]
    import pandas as pd
    for r in mruns:                                                      # both MINERVA items fail (B for A; no letter for C)
        d = out / "minerva" / r
        assert list(pd.read_csv(d / "scores.csv")["score"]) == [0.0, 0.0]
        assert len(read_isolation(d)[1]) == 4 and len(list((d / "evidence_graphs").glob("*.json"))) == 2
    text = "\n".join(o.get("text", "") if o.get("output_type") == "stream" else str(o.get("data", {}).get("text/plain", ""))
                     for c in nbformat.read(report, as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", []))
    for needle in ("Human", "hi-IN", "masked_reasoning", "nodes_per_question", "attribute_misrecognition", "num_frames",
                   "all items", "(n=1)", "low_high_perception_ratio", "accuracy alternative: mean voted score / 2"):
        assert needle in text, needle


def test_frames_ablation_figure_draws_cluster_bootstrap_bars(server, tmp_path, monkeypatch):
    """MINERVA runs over 1 and 2 frames on items that share videos (scripted student on the loopback server): the
    ablation figure, drawn as the report draws it, has one bar per point whose extent is `metrics.mean_interval`'s
    interval over the videos, read from the Axes."""
    import pandas as pd
    from matplotlib.container import ErrorbarContainer
    from vlmlens.figures import line_chart
    from vlmlens.metrics import mean_interval
    from vlmlens.runner import run
    from vlmlens.tables.minerva import ablation_table
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    base = MINERVA_ITEMS[0]                      # the student answers B to every lamp question
    items = [{**base, "key": f"yt{i}:" + "abcde"[i] * 40, "video_id": vid, "answer_id": aid,
              "answer": base[f"answer_choice_{aid}"], "question": f"What colour is the lamp lit after dance {i}?"}
             for i, (vid, aid) in enumerate([("va", 1), ("va", 0), ("vb", 1), ("vb", 1), ("vc", 0)])]
    d = tmp_path / "minerva"
    write_videos(d / "videos", ["va", "vb", "vc"])
    (d / "minerva.json").write_text(json.dumps(items), encoding="utf-8")
    out = tmp_path / "out"
    for n in (1, 2):
        run(RunConfig("minerva", f"openai-compatible:student@{server.openai_base_url}", data_path=str(d / "minerva.json"),
                      num_frames=n, max_new_tokens=64, run_name=f"f{n}", output_root=str(out), progress=False,
                      model_kwargs={"cache": False, "progress": False}))
    t = ablation_table(out, "num_frames", "minerva")
    assert list(t["ci_method"]) == ["cluster-bootstrap"] * 2 and list(t["accuracy"]) == [0.6, 0.6]
    t = t.assign(x=t.num_frames.astype(float), acc=100 * t.accuracy, lo=100 * t.ci_low.astype(float), hi=100 * t.ci_high.astype(float))
    ax = line_chart(t, "x", "acc", n="n", lo="lo", hi="hi", log2=True, xlabel="frames per video", ylabel="accuracy (%)")
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1
    segs = sorted((float(s[0, 0]), float(s[:, 1].min()), float(s[:, 1].max())) for s in bars[0].lines[2][0].get_segments())
    for n, (x, lo, hi) in zip((1, 2), segs):
        sc = pd.read_csv(out / f"f{n}" / "scores.csv")
        assert sc["cluster"].nunique() == 3 and len(sc) == 5               # five questions over three videos
        want = mean_interval(sc["score"].astype(float).tolist(), sc["cluster"].tolist())
        assert want["method"] == "cluster-bootstrap" and want["ci_low"] < want["mean"] < want["ci_high"]
        assert (x, lo, hi) == (float(n), pytest.approx(100 * want["ci_low"]), pytest.approx(100 * want["ci_high"]))
    assert ax.get_legend() is None                                        # one series: no legend, bars never listed
    from vlmlens.figures import bar_chart
    from vlmlens.tables.minerva import group_intervals
    g = group_intervals(out, "category", "minerva").query("run == 'f1'").set_index("category")   # per-group bars, as per locale
    bx = bar_chart(100 * g.accuracy.astype(float), errors=(100 * g.ci_low.astype(float), 100 * g.ci_high.astype(float)))
    (eb,) = [c for c in bx.containers if isinstance(c, ErrorbarContainer)]
    seg = eb.lines[2][0].get_segments()[0]
    sc = pd.read_csv(out / "f1" / "scores.csv")
    want = mean_interval(sc["score"].astype(float).tolist(), sc["cluster"].tolist())   # every item is in category Dance
    assert g.loc["Dance", "ci_method"] == "cluster-bootstrap"
    assert (seg[:, 1].min(), seg[:, 1].max()) == (pytest.approx(100 * want["ci_low"]), pytest.approx(100 * want["ci_high"]))
