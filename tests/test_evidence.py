"""Evidence graphs and iterative error isolation through the real openai client on the loopback server.

The compiler, the labeller and (mostly) the model under test are OpenAI-compatible models whose replies are scripted in
arrival order (`server.script`); one test puts the tiny local Qwen2.5-VL under test on a synthetic video.
"""
import json

import pytest

from loopback import LoopbackServer, client_error
from test_minerva import CURVE_ITEMS, graph_from_chain, make_data, responder
from vlmlens.benchmarks.minerva import curve_mapper
from vlmlens.core import Media, RunConfig
from vlmlens.evidence import (ERROR_TYPES, EvidenceGraph, GraphCompiler, GraphError, Node, compile_graphs, draw_graph, graph_stats,
                              graph_table, isolate, isolate_run, load_graph, load_model, masked_errors, mode_comparison,
                              paper_comparison, read_isolation)

KO = curve_mapper(CURVE_ITEMS[2])          # Korean kimchi item: 2 visual nodes, 1 knowledge, 1 reasoning
KO_GRAPH = graph_from_chain("\n".join(f"{i}. {s}" for i, s in enumerate(KO.metadata["reasoning"], 1)))
TEXT = RunConfig("curve", "student", modality="text", max_new_tokens=64)


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as s:
        yield s


@pytest.fixture
def models(server, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    server.reset()
    kw = {"cache": False, "progress": False, "max_attempts": 1}
    made = {n: load_model(f"openai-compatible:{n}@{server.openai_base_url}", **kw)[0] for n in ("compiler", "labeller", "student")}
    yield made
    for b in made.values(): b.close()


def verdict(node, label):
    return json.dumps({"alignment": [], "first_failure": node, "label": label, "explanation": "scripted"})


def graph(**change):
    return EvidenceGraph.from_dict({**KO_GRAPH, **change}, "c-ko")


# --- graph compilation and validation -------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Glyph")
def test_compiler_output_is_validated_cached_and_editable(server, models, tmp_path):
    comp = GraphCompiler(models["compiler"], cache_dir=tmp_path / "g", retries=0)
    server.script(json.dumps(KO_GRAPH, ensure_ascii=False))
    g = comp.compile(KO, 4.0)
    assert [n.kind for n in g.nodes] == ["visual", "visual", "knowledge", "reasoning"] and g.node("n2").start == 3.0
    assert "00:03 빨간 양념을 바른다" in server.requests("openai")[-1].text          # the chain reached the compiler
    n = server.count("openai")
    assert comp.compile(KO, 4.0) == g and server.count("openai") == n                # cached: no call
    path = comp.cache_path(KO, 4.0)
    d = json.loads(path.read_text())
    d["nodes"][0]["text"] = "edited by hand"
    path.write_text(json.dumps(d, ensure_ascii=False))
    assert comp.compile(KO, 4.0).node("n1").text == "edited by hand" and load_graph(path).node("n1").text == "edited by hand"
    st = graph_stats([g])
    assert st["nodes_per_question"] == 4 and st["share_timestamped"] == 0.5 and st["depth_mean"] == 1
    draw_graph(g).figure.savefig(tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 1000


@pytest.mark.parametrize("bad, message", [
    ({"edges": KO_GRAPH["edges"] + [["n4", "n1"]]}, "cycle: n1 -> n4 -> n1"),
    ({"edges": [["n1", "n9"]]}, "edge n1 -> n9: endpoint 'n9' is not a node"),
    ({"nodes": [{**KO_GRAPH["nodes"][0], "start": 75}] + KO_GRAPH["nodes"][1:]}, "node n1: timestamp 01:15 (start) is past the end of the video (00:04)"),
    ({"nodes": "n1"}, "nodes: expected a list"),
])
def test_compiler_rejects_invalid_graphs_with_named_problems(server, models, tmp_path, bad, message):
    comp = GraphCompiler(models["compiler"], cache_dir=tmp_path / "g", retries=0)
    server.script(json.dumps({**KO_GRAPH, **bad}))
    with pytest.raises(GraphError, match="graph of c-ko: .*" + message.replace("(", r"\(").replace(")", r"\)")):
        comp.compile(KO, 4.0)
    assert not comp.cache_path(KO, 4.0).exists()                                     # an invalid graph is never cached


def test_compiler_repairs_after_reporting_the_problems(server, models, tmp_path):
    comp = GraphCompiler(models["compiler"], cache_dir=tmp_path / "g", retries=1)
    server.script("```json\n" + json.dumps({**KO_GRAPH, "edges": [["n1", "n9"]]}) + "\n```", json.dumps(KO_GRAPH))
    assert len(comp.compile(KO, 4.0).nodes) == 4 and comp.stats["invalid"] == 1
    assert "endpoint 'n9' is not a node" in server.requests("openai")[-1].text


# --- the isolation loop -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("label", ERROR_TYPES)
def test_one_shot_labels_each_error_type(server, models, label):
    server.script(verdict("n1", label.replace("_", " ").capitalize()))   # labels are normalised
    r = isolate(KO, graph(), models["student"], models["labeller"], TEXT, mode="one_shot", first_response="it is bibimbap")
    assert (r["outcome"], r["errors"], r["rounds"][0]["node"]) == ("one_shot", [label], "n1")
    assert "it is bibimbap" in server.requests("openai")[-1].text and server.count("openai") == 1


def test_divergence_then_error_then_hint_leads_to_success(server, models):
    server.script(verdict("n1", "divergence"),                  # round 1: a valid alternative path, no hint
                  "Answer: still wrong",                          # round 2: the model, asked again
                  verdict("n2", "attribute_misrecognition"),      # ... misreads the red paste
                  "00:03 빨간 양념을 바른다 so it is kimchi",         # round 3: with the hint the model gets it
                  verdict(None, None))
    r = isolate(KO, graph(), models["student"], models["labeller"], TEXT, first_response="it is bibimbap")
    assert r["outcome"] == "resolved" and r["errors"] == ["attribute_misrecognition"]
    assert [x["label"] for x in r["rounds"]] == ["divergence", "attribute_misrecognition", None]
    assert r["rounds"][0]["hint"] is None and r["rounds"][1]["hint"] == "At 00:03: 00:03 빨간 양념을 바른다"
    assert r["rounds"][1]["remaining"] == ["n2", "n3", "n4"] and r["rounds"][2]["remaining"] == ["n3", "n4"]
    student = [c.text for c in server.requests("openai") if c.model == "student"]
    assert "Facts you may rely on" not in student[0] and "- At 00:03: 00:03 빨간 양념을 바른다" in student[1]


def test_the_loop_stops_after_five_rounds(server, models):
    g = EvidenceGraph("c-ko", [Node(f"n{i}", "visual", f"fact {i}", float(i % 4)) for i in range(8)], [])
    replies = []
    for i in range(5):
        if i: replies.append(f"answer {i}")
        replies.append(verdict(f"n{i}", "hallucination"))
    server.script(*replies)
    r = isolate(KO, g, models["student"], models["labeller"], TEXT, first_response="x")
    assert (r["outcome"], len(r["rounds"]), r["n_unevaluated"], len(r["errors"])) == ("round_cap", 5, 3, 5)
    assert server.count("openai") == 9                                                # 4 re-asks + 5 labels


def test_every_node_covered_ends_the_loop_and_masked_errors_are_counted(server, models):
    server.script(verdict("n1", "temporal_localization"), "a", verdict("n2", "spatial_localization"), "b",
                  verdict("n3", "missing_knowledge"), "c", verdict("n4", "reasoning"),
                  verdict("n1", "temporal_localization"))            # the one-shot run of the same item
    it = isolate(KO, graph(), models["student"], models["labeller"], TEXT, first_response="x")
    one = isolate(KO, graph(), models["student"], models["labeller"], TEXT, mode="one_shot", first_response="x")
    assert it["outcome"] == "covered" and len(it["rounds"]) == 4
    import pandas as pd
    rows = [{"run": "r", "sample_id": "c-ko", "mode": res["mode"], **x} for res in (it, one) for x in res["rounds"]]
    rounds = pd.DataFrame(rows)
    assert masked_errors(rounds) == 1
    cmp = mode_comparison(rounds)
    assert (cmp.loc["iterative", "total"], cmp.loc["one_shot", "total"], cmp.loc["iterative", "gain_vs_one_shot"]) == (4, 1, 3.0)


def test_invalid_labeller_replies_and_model_failures_stop_the_loop(server, models):
    server.script("no json at all", verdict("n7", "reasoning"))      # a reply and its retry, both unusable
    r = isolate(KO, graph(), models["student"], models["labeller"], TEXT, first_response="x")
    assert r["outcome"] == "labeller_invalid" and "first_failure 'n7' is not among" in r["rounds"][0]["error"]
    server.script(verdict("n1", "hallucination"), client_error(400, "bad request"))
    r = isolate(KO, graph(), models["student"], models["labeller"], TEXT, first_response="x")
    assert r["outcome"] == "model_error" and r["errors"] == ["hallucination"] and r["rounds"][1]["response"] is None


def test_the_tiny_local_model_under_test_sees_the_video_and_the_hints(server, models, tmp_path):
    from vlmlens.models.registry import load_backend
    cpath = make_data(tmp_path, "curve")
    s = curve_mapper(CURVE_ITEMS[2])
    s.media = [Media("video", str(cpath.parent / "videos" / "vko.mp4"))]
    server.script(verdict("n1", "temporal_localization"), verdict("n2", "attribute_misrecognition"))
    cfg = RunConfig("curve", "tiny-qwen2.5-vl", num_frames=2, max_new_tokens=4)
    with load_backend("tiny-qwen2.5-vl") as tiny:
        r = isolate(s, graph(), tiny, models["labeller"], cfg, max_rounds=2)
    assert r["outcome"] == "round_cap" and all(isinstance(x["response"], str) for x in r["rounds"])
    assert r["rounds"][0]["prompt"].startswith("<video vko.mp4>") and "- At 00:01" in r["rounds"][1]["prompt"]


# --- run folders -----------------------------------------------------------------------------------------------

def test_isolate_run_stores_graphs_and_rounds_and_resumes(server, models, tmp_path, monkeypatch):
    from vlmlens.runner import run
    server.responder = responder
    url = server.openai_base_url
    cpath = make_data(tmp_path, "curve")
    s = run(RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(cpath), modality="text", max_new_tokens=64,
                      judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 1, "cache": False}, output_root=str(tmp_path),
                      run_name="r", progress=False, model_kwargs={"cache": False, "progress": False}))
    assert s["overall"]["n"] == 5 and s["overall"]["accuracy"] == pytest.approx(0.2)   # text modality: nothing dropped
    run_dir = tmp_path / "r"
    kw = dict(compiler=GraphCompiler(models["compiler"], cache_dir=tmp_path / "g"), labeller=models["labeller"],
              model=models["student"], progress=False)
    out = isolate_run(run_dir, **kw, modes=("iterative",))
    assert out == {"failed": 4, "iterative": 4}
    lines = (run_dir / "isolation.jsonl").read_text().splitlines()
    with open(run_dir / "isolation.jsonl", "a") as f:                                 # a killed attempt: rounds, no result
        f.write(json.dumps({"type": "round", "sample_id": "c-ta", "mode": "one_shot", "attempt": "dead", "round": 1, "label": "reasoning"}) + "\n")
    again = isolate_run(run_dir, **kw)                                                 # iterative done; one-shot added
    assert again == {"failed": 4, "one_shot": 4}
    rounds, results = read_isolation(run_dir)
    assert len(results) == 8 and "dead" not in set(rounds["attempt"])
    assert isolate_run(run_dir, **kw) == {"failed": 4, "skipped": 4}
    assert len((run_dir / "isolation.jsonl").read_text().splitlines()) > len(lines)
    g = load_graph(run_dir / "evidence_graphs" / "c-te.json")                         # the text-only item without a video
    assert g.duration_s is None and len(g.nodes) == 1


def test_graph_statistics_describe_all_items_when_asked(server, models, tmp_path, monkeypatch):
    """The paper's graph statistics are over every question: `compile_graphs(which="all")` (or `isolate_run(graphs="all")`)
    compiles the graphs of the items that passed too, and `graph_table` labels each set with its coverage."""
    from vlmlens.runner import run
    server.responder = responder
    url = server.openai_base_url
    cpath = make_data(tmp_path, "curve")
    run(RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(cpath), modality="text", max_new_tokens=64,
                  judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 1, "cache": False}, output_root=str(tmp_path),
                  run_name="r", progress=False, model_kwargs={"cache": False, "progress": False}))
    run_dir, comp = tmp_path / "r", GraphCompiler(models["compiler"], cache_dir=tmp_path / "g")
    assert compile_graphs(run_dir, comp, "failed", progress=False) == {"items": 4, "compiled": 4}
    t = graph_table(run_dir).set_index(["run", "set"])
    assert t.loc[("r", "all items"), ["n_graphs", "n_items", "coverage"]].tolist() == [4, 5, 0.8]   # failures only so far
    out = isolate_run(run_dir, compiler=comp, labeller=models["labeller"], model=models["student"], modes=("iterative",),
                      graphs="all", progress=False)
    assert out["graphs"] == {"items": 5, "stored": 4, "compiled": 1} and out["iterative"] == 4
    t = graph_table(run_dir).set_index(["run", "set"])
    assert t.loc[("r", "all items"), ["n_graphs", "coverage"]].tolist() == [5, 1.0]
    assert t.loc[("r", "failed items"), "n_graphs"] == 4 and t.loc[("paper", "all questions"), "nodes_per_question"] == 5.0
    rounds, results = read_isolation(run_dir)
    pc = paper_comparison(rounds, results, graph_stats([load_graph(p) for p in (run_dir / "evidence_graphs").glob("*.json")], "all items", 5))
    pc = pc.set_index("statistic")
    assert pc.loc["share_timestamped", "paper"] == 0.63 and pc.loc["nodes_per_question", "n"] == 5
    n_errors = sum(len(e) for e in results["errors"])
    assert n_errors > 0 and pc.loc["perception_share", "n"] == n_errors and 0 <= pc.loc["perception_share", "measured"] <= 1
    with pytest.raises(ValueError, match="which must be 'all' or 'failed'"):
        compile_graphs(run_dir, comp, "some")


def test_an_invalid_graph_is_recorded_and_its_item_skipped(server, models, tmp_path, monkeypatch):
    from vlmlens.runner import run
    server.responder = responder
    url = server.openai_base_url
    cpath = make_data(tmp_path, "curve")
    run(RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(cpath), modality="text", max_new_tokens=64, limit=2,
                  judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 1, "cache": False}, output_root=str(tmp_path),
                  run_name="r", progress=False, model_kwargs={"cache": False, "progress": False}))
    server.responder = lambda call: '{"nodes": [], "edges": []}' if call.model == "compiler" else responder(call)
    from vlmlens.core import NothingAnswered
    with pytest.raises(NothingAnswered) as e:            # the only item tried got no graph: saved, then loud (exit 3)
        isolate_run(tmp_path / "r", compiler=GraphCompiler(models["compiler"], cache_dir=tmp_path / "g", retries=0),
                    labeller=models["labeller"], model=models["student"], progress=False)
    assert e.value.result == {"failed": 1, "graph_errors": 1}                          # c-ta failed; its graph is empty
    assert "nothing answered (1 item failed; most common error: graph: graph of c-ta: the graph has no nodes" in str(e.value)
    rec = [json.loads(l) for l in (tmp_path / "r" / "isolation.jsonl").read_text().splitlines()]
    assert rec[0]["type"] == "graph_error" and "the graph has no nodes" in rec[0]["error"]
    assert isolate_run(tmp_path / "r", compiler=GraphCompiler(models["compiler"], cache_dir=tmp_path / "g"),
                       labeller=models["labeller"], model=models["student"], progress=False) == {"failed": 1, "skipped": 1}


def test_isolate_command_exits_3_when_no_item_could_be_isolated(server, tmp_path, monkeypatch, capsys):
    "`vlmlens isolate` saves what it tried, prints it, then one line naming the count and the most common error; exit 3."
    from vlmlens.cli import main
    from vlmlens.runner import run
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "cache"))        # the compiler's bad replies stay in this test's cache
    server.reset(); server.responder = responder
    url = server.openai_base_url
    run(RunConfig("curve", f"openai-compatible:student@{url}", data_path=str(make_data(tmp_path, "curve")), modality="text",
                  max_new_tokens=64, limit=2, judge=f"openai-compatible:judge@{url}", judge_kwargs={"k": 1, "cache": False},
                  output_root=str(tmp_path), run_name="r", progress=False, model_kwargs={"cache": False, "progress": False}))
    server.responder = lambda call: '{"nodes": [], "edges": []}' if call.model == "compiler" else responder(call)
    rc = main(["isolate", str(tmp_path / "r"), "--compiler", f"openai-compatible:compiler@{url}",
               "--labeller", f"openai-compatible:labeller@{url}", "--model", f"openai-compatible:student@{url}"])
    out, err = capsys.readouterr()
    assert rc == 3, err[-2000:]
    assert json.loads(out) == {"failed": 1, "graph_errors": 1}
    assert err.strip().splitlines()[-1].startswith("vlmlens: error: isolate r: nothing answered (1 item failed; most common error: graph:")
