"""Knowledge and vision filters: ordinary runs through the real OpenAI client (loopback), what each filter sends,
the all-models rule, items a model could not be asked, and Table 8 next to Table 3 from the same runs."""
import json

import pandas as pd
import pytest

from vlmlens.curation.filters import SUBTITLES_ONLY, candidate_rows, filter_step, filter_tables, run_filter_models
from vlmlens.curation.store import Step
from loopback import client_error


@pytest.fixture
def build(tmp_path):
    (tmp_path / "ep.srt").write_text("1\n00:00:01,000 --> 00:00:04,000\nSheldon: We are in the kitchen.\n")
    up = Step(tmp_path / "b", "dedup", {})
    def items(_, w):
        for k in range(8):
            w.accept(f"ep/scene_transitions/{k}", {"skill_name": "scene_transitions", "question": f"Scene order question {k}?",
                                                  "options": [["kitchen", "office"], ["office", "kitchen"], "I don't know"], "answer_idx": k % 2,
                                                  "video_path_mp4": None, "video_subtitles": str(tmp_path / "ep.srt") if k != 7 else None,
                                                  "title": "The Tea Equation", "show": "The Big Bang Theory", "season": 1, "episode": 1})
    up.process([("ep", None)], items)
    return tmp_path, up


def test_filters_send_metadata_or_subtitles_with_the_instruction(build, server, monkeypatch):
    tmp, up = build
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    gold = {f"Scene order question {k}?": k % 2 for k in range(8)}
    def answer(call):
        q = next(q for q in gold if q in call.text)
        k = int(q.split()[-1][:-1])
        vision = SUBTITLES_ONLY.format() in call.text
        return str(gold[q]) if (k in (0, 1) if not vision else k in (2, 3, 7)) else str(1 - gold[q])
    server.responder = answer
    kw = {m: {"base_url": server.openai_base_url, "cache": str(tmp / "c.sqlite")} for m in ("gpt-4o", "gpt-4o-mini")}
    rows = candidate_rows(up, tmp / "runs" / "candidates.jsonl")
    kn = run_filter_models("knowledge", rows, ["gpt-4o", "gpt-4o-mini"], tmp / "runs", model_kwargs=kw)
    vi = run_filter_models("vision", rows, ["gpt-4o", "gpt-4o-mini"], tmp / "runs", model_kwargs=kw)
    sent = server.requests("openai")
    meta = [c for c in sent if SUBTITLES_ONLY.format() not in c.text]
    subs = [c for c in sent if SUBTITLES_ONLY.format() in c.text]
    assert len(meta) == 16 and all("The Big Bang Theory" in c.text and "kitchen." not in c.text for c in meta)
    assert len(subs) == 14 and all(c.json["messages"][0]["role"] == "system" and "We are in the kitchen." in c.text for c in subs)
    assert {r.config.modality for r in kn} == {"metadata"} and {r.config.modality for r in vi} == {"subtitles"}
    assert all("system_instruction" in r.info["model"] for r in vi)
    st = filter_step(tmp / "b", up, kn, vi)
    rej = {r["id"]: r for r in st.rejected()}
    assert set(rej) == {f"ep/scene_transitions/{k}" for k in (0, 1, 2, 3)}
    assert rej["ep/scene_transitions/0"]["stage"] == "knowledge" and rej["ep/scene_transitions/2"]["stage"] == "vision"
    assert "answered correctly by all 2 models (gpt-4o, gpt-4o-mini) with the metadata only" in rej["ep/scene_transitions/0"]["reason"]
    kept = {r["id"]: r["item"]["filters"] for r in st.items()}
    assert kept["ep/scene_transitions/7"] == {"knowledge": "0/2", "vision": "0/2"}      # no subtitles: could not be asked, kept
    s = st.store.read_summary()
    assert s["knowledge"]["n_dropped"] == 2 and s["vision"] == {"n_items": 6, "n_dropped": 2, "share": pytest.approx(1 / 3),
                                                                  "models": ["gpt-4o", "gpt-4o-mini"]}
    tab = filter_tables(kn, set(kept))
    assert list(tab.columns.levels[0]) == ["Table 3: after filtering", "Table 8: before filtering"]
    assert tab[("Table 8: before filtering", "Scene Transitions")].tolist() == [25.0, 25.0]
    assert tab[("Table 3: after filtering", "Scene Transitions")].tolist() == [0.0, 0.0]
    assert tab[("Table 3: after filtering", "n")].tolist() == [4, 4]
    n = len(server.requests("openai"))
    run_filter_models("vision", rows, ["gpt-4o", "gpt-4o-mini"], tmp / "runs", model_kwargs=kw)
    assert len(server.requests("openai")) == n                                         # filter runs resume like any run


def test_bad_filter_inputs(tmp_path):
    with pytest.raises(ValueError, match="kind must be"): run_filter_models("taste", tmp_path / "x.jsonl")
    with pytest.raises(FileNotFoundError, match="candidate rows not found"): run_filter_models("knowledge", tmp_path / "x.jsonl")


OPEN = {"Why does Sheldon knock three times?": "Because of his ritual.", "What did Penny order?": "A cheesecake."}


@pytest.fixture
def open_build(tmp_path):
    (tmp_path / "ep.srt").write_text("1\n00:00:01,000 --> 00:00:04,000\nSheldon: Knock knock knock, Penny.\n")
    up = Step(tmp_path / "b", "dedup", {})
    def items(_, w):
        for k, (q, a) in enumerate(OPEN.items()):
            w.accept(f"ep/deep_context_understanding/{k}", {"skill_name": "deep_context_understanding", "question": q, "answer": a,
                                                           "video_path_mp4": None, "video_subtitles": str(tmp_path / "ep.srt"),
                                                           "title": "The Tea Equation", "show": "The Big Bang Theory", "season": 1, "episode": 1})
    up.process([("ep", None)], items)
    return tmp_path, up


def open_responder(judge_ok=True):
    "Both filter models know the first answer and not the second; the judge (gpt-4o-mini) gives 9 to a right answer, 1 otherwise."
    def answer(call):
        if call.json.get("model") == "gpt-4o-mini":
            if not judge_ok: return client_error(401, "judge key rejected")
            pred = call.text.split("Predicted Answer:", 1)[1].split("\n", 1)[0].strip()
            ref = call.text.split("Correct Answer:", 1)[1].split("\n", 1)[0].strip()
            return json.dumps({"score": 9 if pred == ref else 1, "justification": "loopback"})
        if not judge_ok: return "Unsure, perhaps habit."                  # answers no earlier test had judged (judgments are cached)
        return "Because of his ritual." if "knock three times" in call.text else "A pizza."
    return answer


def test_open_ended_items_are_judged_by_default_and_filtered(open_build, server, monkeypatch):
    tmp, up = open_build
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = open_responder()
    kw = {m: {"base_url": server.openai_base_url, "cache": False} for m in ("gpt-4o", "gpt-4.1")}
    jkw = {"model_kwargs": {"base_url": server.openai_base_url, "cache": False}}
    rows = candidate_rows(up, tmp / "runs" / "candidates.jsonl")
    with pytest.raises(ValueError, match="need a judge for the open-ended skills"):
        run_filter_models("knowledge", rows, ["gpt-4o", "gpt-4.1"], tmp / "runs", judge="none", model_kwargs=kw)
    kn = run_filter_models("knowledge", rows, ["gpt-4o", "gpt-4.1"], tmp / "runs", model_kwargs=kw, judge_kwargs=jkw)   # the default judge
    assert sum(c.json.get("model") == "gpt-4o-mini" for c in server.requests("openai")) >= 2          # open answers went to the judge
    st = filter_step(tmp / "b", up, kn)
    assert [(r["id"], r["stage"]) for r in st.rejected()] == [("ep/deep_context_understanding/0", "knowledge")]
    assert [r["id"] for r in st.items()] == ["ep/deep_context_understanding/1"]
    tab = filter_tables(kn, {r["id"] for r in st.items()})
    assert tab[("Table 8: before filtering", "Deep Context Understanding")].tolist() == [5.0, 5.0]
    assert tab[("Table 3: after filtering", "Deep Context Understanding")].tolist() == [1.0, 1.0]


def test_a_skill_never_judged_shows_no_score(open_build, server, monkeypatch):
    tmp, up = open_build
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = open_responder(judge_ok=False)
    kw = {"gpt-4o": {"base_url": server.openai_base_url, "cache": False}}
    jkw = {"model_kwargs": {"base_url": server.openai_base_url, "cache": False, "max_attempts": 1}}
    rows = candidate_rows(up, tmp / "runs" / "candidates.jsonl")
    kn = run_filter_models("knowledge", rows, ["gpt-4o"], tmp / "runs", model_kwargs=kw, judge_kwargs=jkw)
    tab = filter_tables(kn, {r["id"] for r in up.items()})
    row = tab.iloc[0]
    for side in ("Table 8: before filtering", "Table 3: after filtering"):                # no judged answer: no score, not 0.00
        assert pd.isna(row[(side, "Deep Context Understanding")]) and pd.isna(row[(side, "Score")]) and pd.isna(row[(side, "Overall")])
    st = filter_step(tmp / "b", up, kn)
    assert st.rejected() == []                                                          # nothing judged: nothing can be filtered
    from vlmlens.curation.store import Undecided
    with pytest.raises(Undecided, match=r"0 of 2 knowledge filter answers valid .*no judgment \(the judge call failed\) \(2 items\)"):
        st.raise_if_empty()                                                             # and the step says so


def test_filter_command_without_a_judge_is_refused_before_anything_is_written(open_build, capsys):
    import argparse
    from vlmlens.curation import cli as ccli
    tmp, up = open_build
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    before = sorted(x.name for x in (tmp / "b").iterdir())
    assert ccli.main(p.parse_args(["curate", "filter", "--from", str(up.dir), "--out", str(tmp / "b"), "--judge", "none"])) == 2
    assert "need a judge for the open-ended skills (deep_context_understanding)" in capsys.readouterr().err
    assert sorted(x.name for x in (tmp / "b").iterdir()) == before                    # no filter_runs folder, no step


def _filter_argv(tmp, up, server, *extra):
    return ["curate", "filter", "--from", str(up.dir), "--out", str(tmp / "b"), "--models", "gpt-4o,gpt-4.1", "--kinds", "knowledge",
            "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "cache=false",
            "--judge-kwarg", f"base_url={server.openai_base_url}", "--judge-kwarg", "cache=false", "--judge-kwarg", "max_attempts=1", "--judge-kwarg", "progress=false", *extra]


def test_a_judge_that_answers_prose_decides_nothing_and_a_redone_run_makes_a_new_step(open_build, server, monkeypatch, capsys):
    "Every judge reply unparseable: exit 3 naming the count and the cause, never '0 rejected'; the runs redone with a working judge give a new step."
    from vlmlens.cli import main
    tmp, up = open_build
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    good = open_responder()
    server.responder = lambda call: "looks fine to me" if call.json.get("model") == "gpt-4o-mini" else good(call)
    assert main(_filter_argv(tmp, up, server)) == 3                      # --judge-kwarg max_attempts=1: a backend option, no traceback
    out, err = capsys.readouterr()
    err = err.strip().splitlines()
    assert len(err) == 1 and "decided nothing: 0 of 4 knowledge filter answers valid" in err[0] and "judge reply unparseable (4 items)" in err[0], err
    assert "0 rejected" not in out
    stale = {p.name for p in (tmp / "b").glob("filter-*")}
    import shutil
    shutil.rmtree(tmp / "b" / "filter_runs")                             # the runs redone with a judge that works
    server.responder = good
    assert main(_filter_argv(tmp, up, server)) == 0
    out = capsys.readouterr().out
    fresh = {p.name for p in (tmp / "b").glob("filter-*")} - stale
    assert len(fresh) == 1 and "filter: 1 items, 1 rejected {'knowledge': 1}" in out and next(iter(fresh)) in out


def test_filter_models_answering_nonsense_decide_nothing(build, server, monkeypatch, capsys):
    "Three answers in four unparseable (75% > the stated 50%): exit 3, not '0 filtered'; one in four: the share is printed beside the result."
    from vlmlens.cli import main
    tmp, up = build
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    gold = {f"Scene order question {k}?": k % 2 for k in range(8)}
    def answer(junk):
        def reply(call):
            q = next(q for q in gold if q in call.text)
            return "purple elephants" if int(q.split()[-1][:-1]) in junk else str(gold[q])
        return reply
    server.responder = answer(range(6))
    assert main(_filter_argv(tmp, up, server, "--runs", str(tmp / "r1"))) == 3
    out, err = capsys.readouterr()
    assert "decided nothing: 4 of 16 knowledge filter answers valid (75% invalid, above the 50% allowed)" in err and "model answer unparseable" in err
    assert "rejected" not in out
    assert main(_filter_argv(tmp, up, server, "--runs", str(tmp / "r1"), "--allow-failures")) == 0   # the ledger's switch: kept, with a warning
    err = capsys.readouterr().err
    assert err.startswith("vlmlens: warning:") and "75% invalid, above the 50% allowed" in err
    server.responder = answer(range(2))
    assert main(_filter_argv(tmp, up, server, "--runs", str(tmp / "r2"))) == 0
    out = capsys.readouterr().out
    assert "filter: 2 items, 6 rejected" in out and "4 of 16 knowledge filter answers invalid (25%; most common: model answer unparseable (4 items))" in out
