"""CURVE calibration on a small synthetic set: the three shortcut baselines as real runs (Gemini through google-genai
against the loopback server: single frame, the sound over a blank picture via native upload, text only), judged by the
CURVE judge, read back with RunSet; blind auditing in the widget; disagreements, consensus and the human baseline per
locale; the two-skill rule; bad rows named."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from vlmlens.curation.aligned_cli import add_parsers, dispatch
from vlmlens.curation.calibration import (AUDIT_LABELS, AuditWidget, audio_only, audit_items, correctness_calibration,
                                          difficulty_calibration, load_curve_rows, prelabel_sample, skills_check)
from vlmlens.curation.review import VerdictLog

SKILLS = "Visual Cultural Understanding, Temporal Reasoning"
ROWS = [
    {"key": "hi-1", "video_id": "vid_hi1", "locale": "hi-IN", "category": "Festivals", "skills": SKILLS,
     "question": "वीडियो में कौन सा त्योहार मनाया जा रहा है?", "answer": "दिवाली"},
    {"key": "hi-2", "video_id": "vid_hi2", "locale": "hi-IN", "category": "Cuisine", "skills": SKILLS,
     "question": "कौन सा व्यंजन बनाया जा रहा है?", "answer": "जलेबी"},
    {"key": "te-1", "video_id": "vid_te1", "locale": "te-IN", "category": "Rituals", "skills": SKILLS,
     "question": "వీడియోలో ఏ వాయిద్యం వినిపిస్తోంది?", "answer": "నాదస్వరం"},
    {"key": "it-1", "video_id": "https://www.youtube.com/watch?v=vid_it1", "locale": "it-IT", "category": "Sports", "skills": SKILLS,
     "question": "Quale sport si gioca nel video?", "answer": "calcio"},
    {"key": "it-2", "video_id": "vid_it2", "locale": "it-IT", "category": "Cuisine", "skills": "Counting",
     "question": "Quanti piatti ci sono sul tavolo?", "answer": "tre"},
]


def write_av_clip(path: Path, seconds=2, fps=4, size=(64, 48), shade=0, tone=440.0):
    import av
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        v = out.add_stream("libx264", rate=fps); v.width, v.height, v.pix_fmt = size[0], size[1], "yuv420p"
        a = out.add_stream("aac", rate=16000); a.layout = "mono"
        for i in range(seconds * fps):
            frame = np.full((size[1], size[0], 3), (shade + 30 * i) % 255, np.uint8)
            for p in v.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")): out.mux(p)
        for k in range(0, seconds * 16000, 1024):
            fr = av.AudioFrame.from_ndarray((0.3 * np.sin(2 * np.pi * tone * np.arange(k, k + 1024) / 16000)).astype(np.float32)[None],
                                            format="fltp", layout="mono")
            fr.sample_rate, fr.pts = 16000, k
            for p in a.encode(fr): out.mux(p)
        for s in (v, a):
            for p in s.encode(): out.mux(p)
    return path


@pytest.fixture
def curve(tmp_path):
    for k, r in enumerate(ROWS):
        vid = r["video_id"].rsplit("=", 1)[-1]
        write_av_clip(tmp_path / "videos" / f"{vid}.mp4", shade=50 * k, tone=300.0 + 110 * k)   # distinct sound per video
    p = tmp_path / "curve.json"
    p.write_text(json.dumps(ROWS, ensure_ascii=False), encoding="utf-8")
    return p


# the model under test answers from what it is shown: frames (single frame), an uploaded file (audio), or nothing (text)
SOLVES = {"frames": {"कौन सा व्यंजन बनाया जा रहा है?": "जलेबी"}, "file": {"వీడియోలో ఏ వాయిద్యం వినిపిస్తోంది?": "నాదస్వరం"},
          "text": {"Quale sport si gioca nel video?": "calcio"}}


def fenced(text, label):
    m = re.search(rf"<<<BEGIN {label} \w+>>>\n(.*?)\n<<<END {label} \w+>>>", text, re.S)
    return m.group(1).strip() if m else None


def responder(call):
    if call.api == "openai":                                    # the CURVE judge (0/1/2 JSON)
        ref, ans = fenced(call.text, "REFERENCE ANSWER"), fenced(call.text, "ANSWER")
        return json.dumps({"score": 2 if ref and ans and ref.strip() == ans.strip() else 0, "justification": "loopback"})
    parts = [p for c in call.json.get("contents", []) for p in c.get("parts", [])]
    mode = "file" if any("fileData" in p or "file_data" in p for p in parts) else \
        "frames" if any("inlineData" in p or "inline_data" in p for p in parts) else "text"
    return next((a for q, a in SOLVES[mode].items() if q in call.text), "non lo so")


def test_difficulty_calibration_runs_the_three_shortcuts(server, curve, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = responder
    rows, errors = load_curve_rows(curve)
    assert errors == [] and len(rows) == 5
    rep = difficulty_calibration(rows, tmp_path / "cal", "gemini-2.5-flash", video_root=tmp_path / "videos", frac=1.0,
                                 judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"k": 1, "cache": False},
                                 model_kwargs={"base_url": server.gemini_base_url, "cache": False, "poll_interval_s": 0.02})
    assert rep["skipped"] == {} and set(rep["baselines"]) == {"single_frame", "audio_only", "text_only"}
    assert {f["key"]: f["solved_by"] for f in rep["flagged"]} == {"hi-2": ["single_frame"], "te-1": ["audio_only"], "it-1": ["text_only"]}
    assert all(b["n"] == 5 and b["status"] == "finished" for b in rep["baselines"].values())
    assert json.loads((tmp_path / "cal" / "difficulty.json").read_text())["flagged"] == rep["flagged"]
    gem = server.requests("gemini")
    assert server.uploads == 5 and any("fileData" in json.dumps(c.json) or "file_data" in json.dumps(c.json) for c in gem)
    import av
    with av.open(str(tmp_path / "cal" / "audio_only" / "vid_te1.mp4")) as c:
        assert sorted(s.type for s in c.streams) == ["audio", "video"]
    n = len(server.calls)
    again = difficulty_calibration(rows, tmp_path / "cal", "gemini-2.5-flash", video_root=tmp_path / "videos", frac=1.0,
                                   judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"k": 1, "cache": False},
                                   model_kwargs={"base_url": server.gemini_base_url, "cache": False, "poll_interval_s": 0.02})
    assert again["flagged"] == rep["flagged"] and len(server.calls) == n              # resumed runs: no new calls


def test_audio_baseline_needs_an_audio_model_and_the_sample_is_ten_percent(server, curve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    rows, _ = load_curve_rows(curve)
    many = [{**rows[i % 5], "key": f"q{i}"} for i in range(50)]
    smp = prelabel_sample(many)
    assert len(smp) == 5 and sorted(r["locale"] for r in smp) == ["hi-IN"] * 2 + ["it-IT"] * 2 + ["te-IN"]   # 10% per locale
    with pytest.raises(ValueError, match="need the CURVE judge"):
        difficulty_calibration(rows, tmp_path / "none", "gemini-2.5-flash", video_root=tmp_path / "videos", judge="none")
    assert not (tmp_path / "none").exists()
    server.responder = responder
    rep = difficulty_calibration(rows, tmp_path / "cal", f"openai-compatible:student@{server.openai_base_url}", video_root=tmp_path / "videos",
                                 baselines=("audio_only", "text_only"), judge=f"openai-compatible:judge@{server.openai_base_url}",
                                 judge_kwargs={"k": 1, "cache": False}, model_kwargs={"cache": False})
    assert "takes no audio" in rep["skipped"]["audio_only"] and list(rep["baselines"]) == ["text_only"]
    with pytest.raises(ValueError, match="no audio stream"):
        from vlmlens.media import write_video
        from PIL import Image
        write_video(tmp_path / "silent.mp4", [Image.new("RGB", (32, 32))] * 4, fps=4)
        audio_only(tmp_path / "silent.mp4", tmp_path / "x.mp4")


def test_correctness_calibration_blind_audit_consensus_and_human_baseline(server, curve, tmp_path, monkeypatch):
    rows, _ = load_curve_rows(curve)
    log = VerdictLog(tmp_path / "audit" / "verdicts.jsonl", AUDIT_LABELS)
    items = audit_items(rows, video_root=tmp_path / "videos")
    assert all(Path(it["video"]).is_file() for it in items) and all(it["answer"] == "" for it in items)
    answers = {"aud-1": ["दिवाली", "जलेबी", "నాదస్వరం", "Calcio", "tre"], "aud-2": ["दिवाली", "समोसा", "నాదస్వరం", "calcio.", None]}
    for who, ans in answers.items():
        w = AuditWidget(items, log, who, frames=2, window_s=2)
        assert not any(r["answer"] in w.text.value for r in rows)                         # blind: the gold is never shown
        for a in ans:
            if a is None: w.note.value = "cannot count the plates"; w.buttons["cannot_answer"].click()
            else: w.fields["answer"].value = a; w.buttons["answered"].click()
        assert "review finished" in w.header.value
    rep = correctness_calibration(rows, log, tmp_path / "build")
    assert rep["status"] == {"consensus": 3, "revise": 2, "incomplete": 0, "undecided": 0}
    rev = {r["key"]: r for r in rep["revise"]}
    assert set(rev) == {"hi-2", "it-2"} and rev["hi-2"]["gold"] == "जलेबी"
    assert [(a["auditor"], a["answer"], a["agrees"]) for a in rev["hi-2"]["audits"]] == [("aud-1", "जलेबी", True), ("aud-2", "समोसा", False)]
    assert rev["it-2"]["audits"][1]["label"] == "cannot_answer" and rev["it-2"]["audits"][1]["note"] == "cannot count the plates"
    hb = rep["human_baseline"]
    assert hb["overall"] == pytest.approx(8 / 10) and hb["by_locale"]["hi-IN"]["accuracy"] == pytest.approx(3 / 4)
    assert hb["by_locale"]["it-IT"]["accuracy"] == pytest.approx(3 / 4) and hb["paper_overall"] == 0.9522
    log.append("hi-2", "aud-2", "answered", edits={"answer": "जलेबी"})                     # after revision: re-answered
    log.append("it-2", "aud-2", "answered", edits={"answer": "Tre"})
    rep2 = correctness_calibration(rows, log, tmp_path / "build")
    assert rep2["status"]["consensus"] == 5 and rep2["step"] != rep["step"] and rep2["human_baseline"]["overall"] == 1.0
    recs = {r["id"]: r["item"]["status"] for r in __import__("vlmlens.curation.store", fromlist=["open_step"]).open_step(rep2["step"]).items()}
    assert set(recs.values()) == {"consensus"}


def test_correctness_with_the_curve_judge(server, curve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = responder
    rows, _ = load_curve_rows(curve)
    log = VerdictLog(tmp_path / "v.jsonl", AUDIT_LABELS)
    for r in rows: log.append(r["key"], "aud-1", "answered", edits={"answer": r["answer"] if r["key"] != "te-1" else "మృదంగం"})
    rep = correctness_calibration(rows, log, tmp_path / "b", judge=f"openai-compatible:judge@{server.openai_base_url}",
                                  judge_kwargs={"cache": False, "model_kwargs": {"cache": False}}, min_auditors=1)
    assert rep["status"] == {"consensus": 4, "revise": 1, "incomplete": 0, "undecided": 0} and rep["revise"][0]["key"] == "te-1"
    assert len(server.requests("openai")) == 5


def test_skills_rule_and_bad_rows(curve, tmp_path, capsys):
    rows, _ = load_curve_rows(curve)
    assert skills_check(rows) == [{"key": "it-2", "locale": "it-IT", "skills": ["Counting"],
                                   "problems": ["1 skill(s); at least 2 required", "no 'visual cultural understanding' skill"]}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([ROWS[0], {**ROWS[1], "locale": "xx-YY"}, {**ROWS[2], "question": ""}, ROWS[0]], ensure_ascii=False))
    rows, errors = load_curve_rows(bad)
    assert [(e.row, e.field) for e in errors] == [(2, "locale"), (3, "question"), (4, "key")] and len(rows) == 1
    with pytest.raises(ValueError, match="must not show the gold"):
        AuditWidget([{"id": "x", "question": "?", "answer": "दिवाली"}], VerdictLog(tmp_path / "a.jsonl", AUDIT_LABELS), "a")
    import argparse
    ap = argparse.ArgumentParser(); add_parsers(ap.add_subparsers(dest="curate_command"))
    rc = dispatch(ap.parse_args(["calibrate-correctness", "--out", str(tmp_path / "o"), "--data", str(tmp_path / "nope.json"), "--verdicts", "v"]))
    assert rc == 2 and "vlmlens curate calibrate-correctness: error:" in capsys.readouterr().err


def _cli(*argv):
    import argparse
    ap = argparse.ArgumentParser(); add_parsers(ap.add_subparsers(dest="curate_command"))
    return dispatch(ap.parse_args(list(argv)))


def _difficulty_argv(server, out="cal", baselines="single_frame,audio_only,text_only"):
    return ["calibrate-difficulty", "--data", "curve.json", "--video-root", "videos", "--model", "gemini-2.5-flash", "--out", out,
            "--frac", "1.0", "--baselines", baselines, "--judge", f"openai-compatible:judge@{server.openai_base_url}",
            "--judge-kwarg", "k=1", "--judge-kwarg", "cache=false", "--model-kwarg", f"base_url={server.gemini_base_url}",
            "--model-kwarg", "cache=false", "--model-kwarg", "poll_interval_s=0.02", "--model-kwarg", "max_attempts=1"]


def test_relative_out_keeps_the_audio_baseline_and_flags_what_audio_solves(server, curve, tmp_path, monkeypatch, capsys):
    "The curation guide's relative paths: the audio-only copies are found wherever --out is, so the question audio alone answers is flagged."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = responder
    assert _cli(*_difficulty_argv(server)) == 0
    out = capsys.readouterr().out
    assert "audio_only: solved 1 of 5" in out and "te-1 (audio_only)" in out
    rep = json.loads((tmp_path / "cal" / "difficulty.json").read_text())
    assert rep["baselines"]["audio_only"]["n"] == 5 and {f["key"] for f in rep["flagged"]} == {"hi-2", "te-1", "it-1"}


def test_every_call_failing_is_a_failure_and_unknown_baselines_cost_nothing(server, curve, tmp_path, monkeypatch, capsys):
    from loopback import client_error
    from vlmlens.core import NothingAnswered
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = lambda call: client_error(403, "API key not valid")
    assert _cli(*_difficulty_argv(server, "cal2", "text_only,foo")) == 2
    assert "unknown baseline(s) ['foo']" in capsys.readouterr().err and server.calls == [] and not (tmp_path / "cal2").exists()
    with pytest.raises(NothingAnswered) as e: _cli(*_difficulty_argv(server, "cal3", "single_frame,text_only"))
    assert e.value.exit_code == 3 and "API key not valid" in str(e.value) and "0 of 5 single_frame answers valid" in str(e.value)
    out = capsys.readouterr().out
    assert "single_frame: undecided, 0 of 5 answers valid" in out and "flagged for revision" not in out   # the report is printed and saved first
    assert json.loads((tmp_path / "cal3" / "difficulty.json").read_text())["baselines"]["text_only"]["n_errors"] == 5


def test_correctness_with_an_unreachable_judge_is_a_failure_not_all_revise(server, curve, tmp_path, monkeypatch):
    from loopback import client_error
    from vlmlens.core import NothingAnswered
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = lambda call: client_error(401, "judge key rejected")
    rows, _ = load_curve_rows(curve)
    log = VerdictLog(tmp_path / "v.jsonl", AUDIT_LABELS)
    for r in rows: log.append(r["key"], "aud-1", "answered", edits={"answer": r["answer"]})
    with pytest.raises(NothingAnswered, match="judge key rejected"):
        correctness_calibration(rows, log, tmp_path / "b", judge=f"openai-compatible:judge@{server.openai_base_url}",
                                judge_kwargs={"cache": False, "model_kwargs": {"cache": False, "max_attempts": 1}}, min_auditors=1)


@pytest.mark.parametrize("judge_reply", ["http 500", "looks fine to me"])
def test_a_broken_judge_decides_nothing(server, curve, tmp_path, monkeypatch, capsys, judge_reply):
    "The CURVE judge fails (HTTP 500) or answers prose: exit 3 with the count and the cause, never 'solved 0 of 5' or 'flagged: none'."
    from loopback import server_error
    from vlmlens.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    def broken(call):
        if call.api == "openai": return server_error(500) if judge_reply == "http 500" else judge_reply
        return responder(call)
    server.responder = broken
    argv = [*_difficulty_argv(server, "cal", "single_frame,text_only"), "--judge-kwarg", "max_attempts=1", "--judge-kwarg", "retries=0",
            "--judge-kwarg", "progress=false", "--judge-kwarg", 'model_kwargs={"cache": false}']   # the judge's backend: no response cache
    assert main(["curate", *argv]) == 3
    out, err = capsys.readouterr()
    cause = "no judgment (the judge call failed)" if judge_reply == "http 500" else "judge reply unparseable"
    err = [l for l in err.strip().splitlines() if not l.startswith("skills it-2")]      # it-2's one skill is named as before
    assert len(err) == 1 and "calibrate-difficulty: decided nothing: 0 of 5 single_frame answers valid" in err[0] and cause in err[0], err
    assert "solved" not in out and "flagged for revision" not in out
    rep = json.loads((tmp_path / "cal" / "difficulty.json").read_text())
    assert rep["undecided"] == ["single_frame", "text_only"] and rep["baselines"]["text_only"]["decisions"]["top_cause"] == f"{cause} (5 items)"


def test_a_judge_failing_on_some_answers_is_counted_beside_the_result(server, curve, tmp_path, monkeypatch, capsys):
    "One judge reply in five is prose: the baselines still decide, and the invalid share is printed beside each solved count."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.responder = lambda call: "looks fine to me" if call.api == "openai" and "calcio" in call.text else responder(call)
    assert _cli(*_difficulty_argv(server, "cal", "single_frame,text_only"), "--judge-kwarg", "retries=0",
                "--judge-kwarg", 'model_kwargs={"cache": false}') == 0
    out = capsys.readouterr().out
    assert "text_only: solved 0 of 5 (1 of 5 text_only answers invalid (20%; most common: judge reply unparseable (1 item)))" in out
    assert "flagged for revision: hi-2 (single_frame)" in out


def test_an_answer_the_judge_could_not_judge_is_undecided_not_a_disagreement(server, curve, tmp_path, monkeypatch):
    "The judge answers prose for one auditor answer in five: that question is `undecided` (not sent to revision) and out of the human"
    " baseline; prose for most answers: the calibration decided nothing (exit 3); a working judge later makes a new step."
    from vlmlens.curation.store import Undecided
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    rows, _ = load_curve_rows(curve)
    log = VerdictLog(tmp_path / "v.jsonl", AUDIT_LABELS)
    for r in rows: log.append(r["key"], "aud-1", "answered", edits={"answer": r["answer"]})
    kw = {"judge": f"openai-compatible:judge@{server.openai_base_url}", "judge_kwargs": {"cache": False, "retries": 0, "model_kwargs": {"cache": False}},
          "min_auditors": 1}
    server.responder = lambda call: "looks fine to me" if "calcio" in call.text else responder(call)
    rep = correctness_calibration(rows, log, tmp_path / "b", **kw)
    assert rep["status"] == {"consensus": 4, "revise": 0, "incomplete": 0, "undecided": 1} and rep["human_baseline"]["overall"] == 1.0
    assert rep["human_baseline"]["n_answers"] == 4 and rep["judge_decisions"]["n_invalid"] == 1
    server.responder = lambda call: "looks fine to me" if "calcio" not in call.text else responder(call)
    with pytest.raises(Undecided, match=r"decided nothing: 1 of 5 judge replies valid .*judge reply unparseable \(4 items\)"):
        correctness_calibration(rows, log, tmp_path / "b", **kw)
    server.responder = responder
    again = correctness_calibration(rows, log, tmp_path / "b", **kw)
    assert again["status"]["consensus"] == 5 and again["step"] != rep["step"]          # other judgments: not the stale step


def test_a_rerun_after_the_judge_is_fixed_rejudges_the_unparseable_answers(server, curve, tmp_path, monkeypatch, capsys):
    "A judge answering prose: exit 3. The same command once the judge works: the stored unparseable judgments are judged again, so it decides."
    from vlmlens.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "loopback-gemini-key-0000000000")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    argv = ["curate", *_difficulty_argv(server, "cal", "single_frame,text_only"), "--judge-kwarg", "max_attempts=1", "--judge-kwarg", "retries=0",
            "--judge-kwarg", "progress=false", "--judge-kwarg", 'model_kwargs={"cache": false}']
    server.responder = lambda call: "looks fine to me" if call.api == "openai" else responder(call)
    assert main(argv) == 3
    assert "decided nothing: 0 of 5 single_frame answers valid" in capsys.readouterr().err
    server.responder = responder
    n = len(server.calls)
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "single_frame: solved 1 of 5" in out and "text_only: solved 1 of 5" in out    # as a first run with the working judge
    assert "flagged for revision: hi-2 (single_frame), it-1 (text_only)" in out
    assert sum(1 for c in server.calls[n:] if c.api == "openai") == 10       # every stored unparseable judgment judged again
    assert sum(1 for c in server.calls[n:] if c.api != "openai") == 0        # the answers themselves were kept
