"""Question generation through the real OpenAI client against the loopback server: official prompts sent verbatim,
items with provenance, bad generator output rejected per item with its reason, reruns resume, bad inputs named by file:line."""
import dataclasses
import json
from pathlib import Path

import pytest

from vlmlens.benchmarks import infinibench as ib
from vlmlens.curation.generate import (CONTEXT_SYSTEM, CONTEXT_USER, EVENTS_SYSTEM, EVENTS_USER, LINKING_SYSTEM,
                                       MOVIE_CONTEXT_SYSTEM, MOVIE_CONTEXT_USER, MOVIE_EVENTS_SYSTEM, MOVIE_LINKING_SYSTEM,
                                       SUMMARY_QUESTIONS, GenConfig, generate, load_sources, write_demo_sources)
from loopback import server_error

DATA = Path(__file__).parent / "data" / "infinibench_curation"
EVENTS = [f"{s[2]}, wearing a {s[3]}, {s[5]}" for s in ib.SYN_SCENES]


def gpt4o_like(call, bad=()):
    "Answers each official prompt the way GPT-4o would for the synthetic episode; `bad` names skills to answer badly."
    system = call.json["messages"][0]["content"]
    system = system if isinstance(system, str) else " ".join(p.get("text", "") for p in system)
    if "extract the events" in system:
        return "['this is', 'not closed" if "events" in bad else repr(EVENTS if "order" not in bad else EVENTS[::-1])
    if "scene transitions" in system: return repr(["kitchen", "office", "laundry room", "park", "kitchen", "office"])
    if "character actions" in system:
        return repr([{"Q": "What did Sheldon do through this video?", "A": [s[5] for s in ib.SYN_SCENES if s[2] == "Sheldon"]},
                     {"Q": "What did Penny do?", "A": [s[5] for s in ib.SYN_SCENES if s[2] == "Penny"]}])
    if "deep context" in system:
        qa = [{"Q": "Why does Penny bake a cake?", "A": "To thank Leonard for feeding the ducks."}]
        return repr(qa + ([{"Q": "Why is Sheldon in the office?"}] if "context" in bad else []))
    return json.dumps([{"Q": "How is the phone call related to the laundry?", "A": "It tells Sheldon the laundry room is free."}])


@pytest.fixture
def env(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    kw = {"base_url": server.openai_base_url, "cache": str(tmp_path / "api.sqlite"), "max_attempts": 1}
    sources, errors = load_sources(write_demo_sources(tmp_path / "src", real_root=DATA))
    assert errors == [] and len(sources) == 3
    return sources, kw


def test_generation_with_gpt4o_over_the_wire(env, server, tmp_path):
    sources, kw = env
    server.responder = gpt4o_like
    st = generate(sources, tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    s = st.summary()
    assert s["n_failed"] == 0 and s["n_rejected"] == 0
    items = [r["item"] for r in st.items()]
    by = {}
    for it in items: by.setdefault(it["skill_name"], []).append(it)
    assert set(by) == {"chronological_understanding", "linking_multiple_events", "scene_transitions", "character_actions",
                       "deep_context_understanding", "summarization", "spoiler_questions"}
    calls = server.requests("openai")
    ev_call = next(c for c in calls if "extract the events" in json.dumps(c.json))
    msgs = ev_call.json["messages"]
    text = lambda m: m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
    assert text(msgs[0]) == EVENTS_SYSTEM.format()                                       # the official prompt, verbatim
    assert text(msgs[1]) == EVENTS_USER.format(script=(tmp_path / "src" / "episode_script.txt").read_text())
    whole = next(it for it in by["chronological_understanding"] if len(it["options"]) == 6)
    assert whole["options"][whole["answer_idx"]] == EVENTS and ib.IDK_TEXT in whole["options"]
    assert sum(o == EVENTS for o in whole["options"]) == 1                             # distractors are other orders
    assert all(sorted(o) == sorted(EVENTS) for o in whole["options"] if o != ib.IDK_TEXT)
    assert by["summarization"][0]["question"] in SUMMARY_QUESTIONS
    real_faq = json.loads((DATA / "movienet_spoiler_faq.json").read_text())
    movie = next(s for s in sources if s.kind == "movie")
    assert [it["question"] for it in by["spoiler_questions"]] == [q["question"].strip() for q in real_faq[movie.video_id]["questions"][:5]]
    prov = next(r["provenance"] for r in st.items() if r["item"]["skill_name"] == "scene_transitions")
    assert prov["model"] == "gpt-4o" and prov["model_id"] == "gpt-4o" and prov["prompt_id"] == "infinibench/scene transitions extraction (user)"
    assert len(prov["prompt_sha256"]) == 64 and prov["raw"].startswith("['kitchen'") and prov["seed"] == "72:synthetic_episode/scene_transitions"
    assert prov["extra"]["n_anchored"] == 6
    n = len(calls)
    again = generate(sources, tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    assert again.dir == st.dir and len(server.requests("openai")) == n                # resumed: nothing re-asked
    other = generate(sources, tmp_path / "build2", "gpt-4o", generator_kwargs=kw)       # another build, same seed: same items
    assert [r["item"] for r in other.items()] == [r["item"] for r in st.items()]


def test_a_movie_gets_the_movienet_prompts_and_an_episode_the_tv_ones(env, server, tmp_path):
    sources, kw = env
    ep = next(s for s in sources if s.video_id == "synthetic_episode")
    movie = dataclasses.replace(ep, video_id="synthetic_movie", kind="movie", summary="MOVIE SUMMARY. " + ep.summary)
    server.responder = gpt4o_like
    st = generate([ep, movie], tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    text = lambda m: m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
    sent = [[text(m) for m in c.json["messages"]] for c in server.requests("openai")]
    script = (tmp_path / "src" / "episode_script.txt").read_text()
    movie_calls = [m for m in sent if "MOVIE SUMMARY" in m[1]]
    tv_calls = [m for m in sent if "MOVIE SUMMARY" not in m[1]]
    assert [MOVIE_CONTEXT_SYSTEM.format(), MOVIE_CONTEXT_USER.format(script=script, caption=movie.summary)] in movie_calls
    assert [CONTEXT_SYSTEM.format(), CONTEXT_USER.format(script=script, caption=ep.summary)] in tv_calls
    assert MOVIE_LINKING_SYSTEM.format() in [m[0] for m in movie_calls] and LINKING_SYSTEM.format() in [m[0] for m in tv_calls]
    systems = [m[0] for m in sent]                       # events: same script text, told apart by the system prompt
    assert systems.count(MOVIE_EVENTS_SYSTEM.format()) == 1 and systems.count(EVENTS_SYSTEM.format()) == 1
    items = [r["item"] for r in st.items()]
    chrono = lambda vid: [it["question"] for it in items if it["video_id"] == vid and it["skill_name"] == "chronological_understanding"]
    assert any("this movie" in q for q in chrono("synthetic_movie")) and not any("episode" in q for q in chrono("synthetic_movie"))
    assert any("this episode" in q for q in chrono("synthetic_episode"))
    assert {it["video_id"] for it in items if it["skill_name"] == "scene_transitions"} == {"synthetic_episode"}
    assert {"unit": "synthetic_movie/scene_transitions", "missing": ["MovieNet prompt (the official pipeline has none)"]} in json.loads((st.dir / "summary.json").read_text())["skipped"]


@pytest.mark.parametrize("bad,stage,reason", [("events", "parse", "not a JSON or Python literal"),
                                              ("order", "order", "wrong order"),
                                              ("context", "generate", "missing field(s) 'A'")])
def test_bad_generator_output_is_rejected_per_item(env, server, tmp_path, bad, stage, reason):
    sources, kw = env
    server.responder = lambda call: gpt4o_like(call, bad=(bad,))
    st = generate(sources, tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    rej = st.rejected()
    assert len(rej) == 1 and rej[0]["stage"] == stage and reason in rej[0]["reason"]
    assert rej[0]["item"] is not None and rej[0]["provenance"]["raw"]                   # kept for inspection
    skills = {r["item"]["skill_name"] for r in st.items()}
    assert {"scene_transitions", "character_actions", "summarization"} <= skills        # the rest of the video goes on
    if bad == "context": assert any(r["item"]["skill_name"] == "deep_context_understanding" for r in st.items())


def test_a_failed_call_is_retried_on_the_next_run(env, server, tmp_path):
    sources, kw = env
    server.responder = gpt4o_like
    server.script(server_error(500))                                 # the first generator call fails
    with pytest.warns(UserWarning, match="failed"):
        st = generate(sources, tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    s = st.summary()
    assert s["n_failed"] == 1 and len(s["failed_units"]) == 1
    st = generate(sources, tmp_path / "build", "gpt-4o", generator_kwargs=kw)
    s = st.summary()
    assert s["n_failed"] == 0 and s["n_done"] == s["n_units"]
    ids = [r["id"] for r in st.items()]
    assert len(ids) == len(set(ids))


def test_bad_source_files_are_named_by_line(tmp_path):
    (tmp_path / "script.txt").write_bytes(b"INT. CAFE - DAY\nRoss orders a caf\xe9 latte.\n")
    (tmp_path / "subs.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\n00:00:03,000 -> 00:00:04\nBye.\n\n3\n00:01:75,000 --> 00:01:80,000\nx\n")
    (tmp_path / "ok.txt").write_text("INT. CAFE - DAY\n")
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"video_id": "a", "transcript": "script.txt"}, {"video_id": "b", "transcript": "ok.txt", "subtitles": "subs.srt"},
        {"video_id": "c", "transcript": "missing.txt"}, {"video_id": "d", "kind": "film"}, {"video_id": "e", "transcript": "ok.txt"}]))
    sources, errors = load_sources(tmp_path / "m.jsonl")
    assert [s.video_id for s in sources] == ["e"]
    msgs = [str(e) for e in errors]
    assert f"{tmp_path / 'script.txt'}:2: cannot decode as utf-8" in msgs[0]
    assert f"{tmp_path / 'subs.srt'}:10: broken timestamp line" in msgs[1]
    assert "m.jsonl:3: transcript: file not found" in msgs[2] and "m.jsonl:4: kind" in msgs[3]
    assert load_sources(tmp_path / "m.jsonl", encoding="cp1252")[0][0].video_id == "a"


# sha256 of each official generator prompt (the text sent, braces doubled for str.format) as first copied from the
# official scripts; the texts now live in vlmlens/assets/prompts/infinibench/ and must stay byte-identical.
OFFICIAL_PROMPT_SHA256 = {
    "EVENTS_SYSTEM": "7e048ffa9beb7a3141e40b742c1dcb07fb5d2ed7aea353e1f5b1e2e02c8defb6",
    "EVENTS_USER": "60589d08d960af1821e5da3c47c5bf0ac5a8c4d89f9e86c198a451031a6ad319",
    "SCENES_SYSTEM": "2383b071fff4852bb555330c58f5f2ab058b496dc955c9417e3d8e86fb019e5c",
    "SCENES_USER": "365dcc3669f80f08b7030629fa9bd444c916b431eed6794d64bd46e093e1ac11",
    "ACTIONS_SYSTEM": "0332a4387f875e343c4fcf30cb0ccdb986bf82d06c841e42d0370801b7251c77",
    "ACTIONS_USER": "cec02fe465ce7b420573a6009c3061c26544d05241fcc9ebd81bbc261e83a4bc",
    "CONTEXT_SYSTEM": "da3a74cb97cc039756e62a8b442dc4c9f240f2c2ec2ac33a47eb615210af1728",
    "CONTEXT_USER": "280e07dcd7b2497b8939395a582e3ba736c50fc4b40449c0c2b87495f602ec31",
    "LINKING_SYSTEM": "d49e82986aed3b4ea59962d370fdb42475232932d40481eb48f6e167322b4f4c",
    "LINKING_USER": "f1f5d30b2b36fb06cb78f56994d94b8751a5256734b8e651127c395096956057",
    "MOVIE_EVENTS_SYSTEM": "5cbdef628fbedaeca2ab2ac4bc32ab65646c1db5af5fcf684990e4d026521f90",
    "MOVIE_EVENTS_USER": "60589d08d960af1821e5da3c47c5bf0ac5a8c4d89f9e86c198a451031a6ad319",
    "MOVIE_ACTIONS_SYSTEM": "119d3cd86d55a5ecfdcffd326b1106a5c84ed95796dc6e822b7c31cc5675a99a",
    "MOVIE_ACTIONS_USER": "78fd92c8ca5862b50ca0373818bc2172aa6f1419d0000e89393754ad607a8b9e",
    "MOVIE_CONTEXT_SYSTEM": "28b6bfe1f364a3b3a0e2a7d55a918c229d445866362c58aaaf2b5146be7f2fae",
    "MOVIE_CONTEXT_USER": "cd60b16170fc7c08c0a8ae5523c72b8359dfb22462bd2d2b956ae470338b453f",
    "MOVIE_LINKING_SYSTEM": "1c0e2d1eed299809add52fd9c304b1568a9c2bfd01116db3b8113d5c305ac3ee",
    "MOVIE_LINKING_USER": "29898eb399ef6de78eca7a106023cc82b7cf397fa59f785c097b3af4494255ed",
    "OUTFIT_SYSTEM": "0ef69b2c860629581690eb2ed203db6ee35187067fdf18ad65945a07492d85aa",
    "OUTFIT_USER": "295aecbf30c41a117200a43a40180505de52505360f5e698981b76e0494ce903",
}


def test_the_packaged_generator_prompts_are_the_official_texts_byte_for_byte():
    import hashlib
    from importlib import resources

    from vlmlens import fidelity
    from vlmlens.curation import appearance, generate
    prompts = {k: v for m in (generate, appearance) for k, v in vars(m).items() if isinstance(v, fidelity.PaperPrompt)}
    assert {k: hashlib.sha256(p.text.encode("utf-8")).hexdigest() for k, p in prompts.items()} == OFFICIAL_PROMPT_SHA256
    folder = resources.files("vlmlens").joinpath("assets", "prompts", "infinibench")
    assert sorted(f.name for f in folder.iterdir()) == sorted(f"{k.lower()}.txt" for k in prompts)   # one file each, none unused
    cited = {e.what: e for e in fidelity.ledger("infinibench") if e.kind == "prompt"}                  # each keeps its citation
    assert all(cited[p.what].source.startswith("Vision-CAIR/Infinibench data_genration/") for p in prompts.values())
    assert generate.prompts_for("movie", "linking_multiple_events") == (generate.MOVIE_LINKING_SYSTEM, generate.MOVIE_LINKING_USER)
