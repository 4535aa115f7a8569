"""Reasoning models' thinking kept apart from the answer, through the real clients against loopback servers that reply
in each provider's documented form (see tests/loopback.py: vLLM/SGLang `reasoning` / `reasoning_content`, Gemini thought
parts, Claude thinking blocks, and open models' `<think>` tags), and through the runner into `predictions.jsonl`."""
import json

import pytest

from loopback import anthropic_message, gemini_content, openai_chat
from vlmlens.core import Request, RunConfig, message
from vlmlens.models.anthropic import AnthropicBackend
from vlmlens.models.gemini import GeminiBackend
from vlmlens.models.openai import OpenAIBackend
from vlmlens.scoring import THINKING_UNFINISHED

OPTS = dict(timeout_s=5.0, max_attempts=2, retry={"base_delay": 0.05, "max_delay": 0.2}, progress=False, cache=False)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key-0123456789")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key-0123456789")


def backend(kind, server):
    if kind == "vllm": return OpenAIBackend("qwen3-vl-thinking", base_url=server.openai_base_url, compatible=True, **OPTS)
    if kind == "gemini": return GeminiBackend("gemini-2.5-flash", base_url=server.gemini_base_url, thinking_budget=-1, **OPTS)
    return AnthropicBackend("claude-sonnet-4-20250514", base_url=server.anthropic_base_url, **OPTS)


def reply(kind, answer, thinking, finish="stop"):
    "One reply in the provider's documented form, with the thinking in the provider's own field."
    if kind == "vllm":
        return openai_chat(answer, reasoning=thinking, finish_reason=finish, reasoning_field="reasoning")
    if kind == "gemini":
        return gemini_content(answer, thought=thinking, thoughts_tokens=12, finish_reason="STOP" if finish == "stop" else "MAX_TOKENS")
    return anthropic_message(answer, thinking=thinking, stop_reason="end_turn" if finish == "stop" else "max_tokens")


@pytest.mark.parametrize("kind", ["vllm", "gemini", "anthropic"])
def test_each_provider_keeps_the_thinking_apart(server, keys, kind):
    replies = {"q0": reply(kind, "B", "(A) is too short; (C) is too tall."),
               "q1": reply(kind, None, "Frame 3 shows the red car (A)", finish="length")}
    server.responder = lambda call: replies[call.text.split()[-1]]
    b = backend(kind, server)
    g0, g1 = b.generate([Request(f"s{i}", [message("user", f"q{i}")]) for i in range(2)], max_new_tokens=16)
    b.close()
    assert (g0.text, g0.thinking, g0.error) == ("B", "(A) is too short; (C) is too tall.", None)
    assert (g1.text, g1.thinking, g1.error) == ("", "Frame 3 shows the red car (A)", None)     # ended inside its thinking
    if kind == "gemini": assert g0.usage["reasoning_tokens"] == 12 and g0.usage["output_tokens"] == 1 + 12


def test_think_tags_from_a_server_without_reasoning_parser(server, keys):
    "An open model served without a reasoning parser writes `<think>…</think>` into the content (Qwen3: only `</think>`)."
    replies = {"q0": openai_chat("<think>(A)? no.</think>\n\nAnswer: C"), "q1": openai_chat("Frame 2 is red (A)\n</think>\nD"),
               "q2": openai_chat("<think>Looking at (A) and", finish_reason="length")}
    server.responder = lambda call: replies[call.text.split()[-1]]
    b = backend("vllm", server)
    gens = b.generate([Request(f"s{i}", [message("user", f"q{i}")]) for i in range(3)], max_new_tokens=16)
    b.close()
    assert [(g.text, g.thinking) for g in gens] == [("Answer: C", "(A)? no."), ("D", "Frame 2 is red (A)"),
                                                    ("", "Looking at (A) and")]


def test_predictions_keep_thinking_and_never_parse_it(server, keys, tmp_path):
    "Through the runner: the answer is parsed, the thinking stored beside it; unfinished thinking is invalid with its reason."
    from vlmlens.runner import run
    n = {"i": 0}
    def responder(call):
        n["i"] += 1
        if n["i"] % 3 == 0: return openai_chat(None, reasoning="The answer is (A) because", finish_reason="length")
        return openai_chat("B", reasoning="Option (A) looks right... no.")
    server.responder = responder
    cfg = RunConfig("demo", f"openai-compatible:qwen3-vl-thinking@{server.openai_base_url}", modality="text", limit=6,
                    max_new_tokens=16, output_root=str(tmp_path), run_name="think", progress=False,
                    model_kwargs={"cache": False, "progress": False})
    s = run(cfg)
    preds = [json.loads(l) for l in (tmp_path / "think" / "predictions.jsonl").read_text().splitlines() if l.strip()]
    done = [p for p in preds if p["valid"]]
    cut = [p for p in preds if not p["valid"]]
    assert len(done) == 4 and len(cut) == 2 and s["overall"]["n"] == 6
    assert all(p["parsed"] == 1 and p["raw"] == "B" and p["thinking"] == "Option (A) looks right... no." for p in done)
    assert all(p["error"] is None and p["raw"] == "" and p["thinking"] == "The answer is (A) because"
               and p["extra"]["invalid_reason"] == THINKING_UNFINISHED for p in cut)
    assert s["overall"]["n_invalid"] == 2 and s["overall"]["n_errors"] == 0


def test_thinking_switch_reaches_the_server_and_is_refused_where_it_means_nothing(server, keys, tmp_path, monkeypatch, capsys):
    "`thinking=false` goes as vLLM's documented chat-template switch, is in the run hash, and OpenAI's models refuse it."
    from vlmlens.cli import main
    server.responder = lambda call: openai_chat("B")
    b = OpenAIBackend("qwen3-vl-thinking", base_url=server.openai_base_url, compatible=True, thinking="false", **OPTS)
    assert b.generate([Request("s0", [message("user", "q0")])], max_new_tokens=8)[0].text == "B"
    b.close()
    body = server.requests("openai")[-1].json
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and "extra_body" not in body
    on, off = (RunConfig("demo", "openai-compatible:m@http://h/v1", model_kwargs={"thinking": v}) for v in (True, False))
    assert on.hash() != off.hash()
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.0123456789")
    out = tmp_path / "out"
    rc = main(["run", "--benchmark", "demo", "--model", "gpt-5", "--model-kwarg", "thinking=false", "--output-root", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "reasoning_effort" in err[0] and not out.exists()


def test_thinking_cost_is_summed_beside_reasoning_tokens(server, keys, tmp_path):
    "Each row carries its thinking's share of the bill; the summary sums it beside reasoning_tokens (errors billed too)."
    from vlmlens.runner import run
    n = {"i": 0}
    def responder(call):
        n["i"] += 1
        if n["i"] == 3: return openai_chat(None, reasoning="(A) because", reasoning_tokens=40, finish_reason="length")
        return openai_chat("B", reasoning="Option (A) looks right... no.", reasoning_tokens=20, completion_tokens=21)
    server.responder = responder
    cfg = RunConfig("demo", f"openai-compatible:qwen3-vl-thinking@{server.openai_base_url}", modality="text", limit=4,
                    max_new_tokens=64, output_root=str(tmp_path), run_name="cost", progress=False,
                    model_kwargs={"cache": False, "progress": False, "prices": {"input": 1.0, "output": 4.0}})
    s = run(cfg)
    o = s["overall"]
    assert o["n"] == 4 and o["reasoning_tokens"] == 3 * 20 + 40
    assert o["reasoning_cost_usd"] == pytest.approx((3 * 20 + 40) * 4.0 / 1e6)     # thinking billed at the output rate
    assert 0 < o["reasoning_cost_usd"] < o["cost_usd"]                            # (rows carry it: the summary sums rows)


def test_gemini_asks_for_thought_summaries_so_a_cut_off_reply_keeps_its_thinking(server, keys, tmp_path):
    """With a thinking budget the request asks for thought summaries (`thinkingConfig.includeThoughts`, "Thought summaries"
    in ai.google.dev/gemini-api/docs/thinking); a thought-only reply cut off at MAX_TOKENS then keeps its thinking, and
    through the runner it is invalid as unfinished thinking, never read for a letter."""
    from vlmlens.runner import run
    cut = lambda call: gemini_content(None, thought="Frame 3 shows the red car, so (A)", thoughts_tokens=16, candidates_tokens=0,
                                      finish_reason="MAX_TOKENS")
    server.responder = cut
    b = GeminiBackend("gemini-2.5-flash", base_url=server.gemini_base_url, thinking_budget=128, **OPTS)
    [g] = b.generate([Request("s0", [message("user", "q0")])], max_new_tokens=16)
    b.close()
    think = server.requests("gemini")[-1].json["generationConfig"]["thinkingConfig"]
    assert think in ({"thinkingBudget": 128, "includeThoughts": True}, {"thinking_budget": 128, "include_thoughts": True})
    assert (g.text, g.thinking, g.error) == ("", "Frame 3 shows the red car, so (A)", None) and g.usage["reasoning_tokens"] == 16
    off = GeminiBackend("gemini-2.5-flash", base_url=server.gemini_base_url, thinking_budget=0, **OPTS)
    server.responder = lambda call: gemini_content("B")
    off.generate([Request("s1", [message("user", "q1")])], max_new_tokens=16); off.close()
    think = server.requests("gemini")[-1].json["generationConfig"]["thinkingConfig"]
    assert think in ({"thinkingBudget": 0}, {"thinking_budget": 0})                          # thinking off: no summaries asked
    unset = GeminiBackend("gemini-2.5-flash", base_url=server.gemini_base_url, **OPTS)      # no budget: summaries not asked,
    server.responder = cut                                                                   # so the server sends no thought
    [g] = unset.generate([Request("s2", [message("user", "q2")])], max_new_tokens=16); unset.close()
    assert (g.text, g.thinking) == ("", "")                                 # thought (tokens billed), no text: still invalid
    server.responder = cut
    cfg = RunConfig("demo", "gemini-2.5-flash", modality="text", limit=2, max_new_tokens=16, output_root=str(tmp_path),
                    run_name="cut", progress=False, model_kwargs={"base_url": server.gemini_base_url, "thinking_budget": 128,
                                                                  "cache": False, "progress": False})
    s = run(cfg)
    assert s["overall"]["n"] == 2 and s["overall"]["n_invalid"] == 2 and s["overall"]["n_errors"] == 0
    preds = [json.loads(l) for l in (tmp_path / "cut" / "predictions.jsonl").read_text().splitlines() if l.strip()]
    assert len(preds) == 2 and all(not p["valid"] and p["parsed"] is None and p["error"] is None and p["raw"] == ""
                                   and p["thinking"] == "Frame 3 shows the red car, so (A)"
                                   and p["extra"]["invalid_reason"] == THINKING_UNFINISHED for p in preds)
