"""Knowledge and vision filters: ordinary runs through the real OpenAI client (loopback), what each filter sends,
the all-models rule, items a model could not be asked, and Table 8 next to Table 3 from the same runs."""
import json

import pytest

from vlmlens.curation.filters import SUBTITLES_ONLY, candidate_rows, filter_step, filter_tables, run_filter_models
from vlmlens.curation.store import Step


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
