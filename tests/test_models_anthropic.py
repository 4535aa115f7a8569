"""Claude through the real `anthropic` client against the loopback server's Messages API: the demo benchmark end to end,
frames as timestamped images, the extended-thinking budget, retries (429 with Retry-After, 529 overloaded), final 4xx,
refusals and truncation, the response cache, token and cost accounting, bounded concurrency, and keys from the environment
only."""
import json
import subprocess
import sys

import pytest
from PIL import Image

from loopback import Reply, anthropic_message, anthropic_refusal, client_error, rate_limited
from vlmlens.core import Request, message
from vlmlens.models.anthropic import AnthropicBackend
from vlmlens.models.registry import load_backend

KEY = "test-anthropic-key-0000000000"


@pytest.fixture
def claude(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    b = load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=str(tmp_path / "cache.sqlite"),
                     progress=False, max_attempts=4, jitter_seed=0)
    b.retry.base_delay = 0.01
    yield b
    b.close()


def video_req(sid="v", n=3):
    frames = [Image.new("RGB", (64, 48), (60 * i, 100, 50)) for i in range(n)]
    return Request(sid, [message("system", "Answer with one letter."),
                         message("user", {"type": "video", "path": "clip.mp4", "frames": frames, "timestamps": [0.0, 30.0, 61.0][:n]},
                                 "What changes?")])


def test_demo_benchmark_on_claude_via_the_cli(server, tmp_path):
    server.default_text = "The answer is B."
    env = dict(__import__("os").environ, ANTHROPIC_API_KEY=KEY)
    cmd = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
           "--model", "claude-sonnet-4", "--language", "en", "--frames", "4", "--limit", "6", "--output-root", str(tmp_path),
           "--run-name", "claude", "--no-progress", "--model-kwarg", f"base_url={server.anthropic_base_url}",
           "--model-kwarg", f"cache={tmp_path / 'cache.sqlite'}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads((tmp_path / "claude" / "summary.json").read_text())
    assert summary["overall"]["n"] == 6 and summary["overall"]["n_errors"] == 0 and summary["overall"]["input_tokens"] > 0
    calls = server.requests("anthropic")
    assert len(calls) == 6 and {c.model for c in calls} == {"claude-sonnet-4-20250514"}
    sent = [{k.lower(): v for k, v in c.headers.items()} for c in calls]
    assert all(KEY in (h.get("x-api-key", "") + h.get("authorization", "")) for h in sent)   # the key reached the server ...
    video_calls = [c for c in calls if json.dumps(c.json).count('"type": "image"') >= 4]
    assert video_calls and "[00:00:" in video_calls[0].text                               # frames as timestamped images
    for f in ("run.json", "predictions.jsonl", "summary.json"):                           # ... and nothing else
        assert KEY not in (tmp_path / "claude" / f).read_text()


def test_request_body_and_thinking_budget(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.responder = lambda call: anthropic_message("C", thinking="The second frame shows ...", input_tokens=321, output_tokens=57)
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False,
                      thinking_budget=2048) as b:
        g = b.generate([video_req()], max_new_tokens=16)[0]
    assert (g.text, g.error, g.finish_reason) == ("C", None, "stop")                      # thinking is not the answer
    assert g.thinking == "The second frame shows ..."                                     # ... but it is kept beside it
    assert g.usage["input_tokens"] == 321 and g.usage["output_tokens"] == 57
    body = server.requests("anthropic")[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 16 + 2048
    assert "temperature" not in body and body["system"] == "Answer with one letter."
    blocks = body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "text", "image", "text", "image", "text"]
    assert [b["text"] for b in blocks if b["type"] == "text"][:3] == ["[00:00:00]", "[00:00:30]", "[00:01:01]"]
    assert blocks[1]["source"]["media_type"] == "image/jpeg"


def test_greedy_runs_send_temperature_zero_and_are_cached(claude, server):
    r = Request("t", [message("user", "Which locale is this?")])
    g1 = claude.generate([r], max_new_tokens=8, temperature=0.0)[0]
    g2 = claude.generate([r], max_new_tokens=8, temperature=0.0)[0]
    assert server.count("anthropic") == 1 and server.requests("anthropic")[0].json["temperature"] == 0.0
    assert g1.text == g2.text == "A" and g2.usage["cached"] and claude.stats["cache_hits"] == 1


def test_retries_429_with_retry_after_and_overloaded(claude, server):
    server.script(rate_limited(0.05), Reply(529), None)
    g = claude.generate([Request("r", [message("user", "hi")])], max_new_tokens=4)[0]
    assert g.error is None and g.text == "A" and claude.stats["retries"] == 2
    assert [c.status for c in server.requests("anthropic")] == [429, 529, 200]


def test_client_errors_fail_the_item_without_retry(claude, server):
    server.script(client_error(400, "messages.0.content.1.image.source: invalid base64"))
    g = claude.generate([Request("r", [message("user", "hi")])], max_new_tokens=4)[0]
    assert g.text is None and g.error.startswith("client_error: HTTP 400") and "invalid base64" in g.error
    assert server.count("anthropic") == 1


def test_refusal_and_truncation_are_recorded_not_cached(claude, server):
    server.script(anthropic_refusal(), anthropic_message("Because the", stop_reason="max_tokens"))
    ref, cut = claude.generate([Request("a", [message("user", "a")]), Request("b", [message("user", "b")])], max_new_tokens=3)
    assert ref.text is None and "refusal" in ref.error
    assert cut.text == "Because the" and cut.finish_reason == "length"
    again = claude.generate([Request("b", [message("user", "b")])], max_new_tokens=3)[0]
    assert server.count("anthropic") == 3 and again.text == "A"                           # the truncated answer was not cached


def test_cost_accounting_with_a_price_table(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.responder = lambda call: anthropic_message("B", input_tokens=1000, output_tokens=100)
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False,
                      prices={"input": 3.0, "output": 15.0}) as b:
        g = b.generate([Request("r", [message("user", "hi")])], max_new_tokens=4)[0]
    assert g.usage["cost_usd"] == pytest.approx(1000 * 3 / 1e6 + 100 * 15 / 1e6)


def test_bounded_concurrency(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.latency = 0.15
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False, concurrency=4) as b:
        gens = b.generate([Request(f"r{i}", [message("user", f"q{i}")]) for i in range(12)], max_new_tokens=4)
    assert all(g.error is None for g in gens) and 1 < server.max_in_flight <= 4


def test_key_from_the_environment_only(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        load_backend("claude-sonnet-4", cache=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(ValueError, match="looks like a secret"):
        load_backend("claude-sonnet-4", api_key="anthropic-key-0000", cache=False)
    with pytest.raises(ValueError, match="at least 1024"):
        AnthropicBackend("claude-sonnet-4-20250514", thinking_budget=512, cache=False)


def test_the_three_api_backends_read_sdk_errors_alike(server, tmp_path, monkeypatch):
    """One mapping (`models.api.sdk_error`/`status_error`): the same 429 reads the same from OpenAI, Anthropic and Gemini, and an
    answer of the wrong shape (a pydantic error) is `malformed` for all three, never a final `client_error`."""
    import anthropic
    import httpx2
    import openai
    import pydantic
    from google.genai import errors
    from vlmlens.models.registry import load_backend
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"): monkeypatch.setenv(var, KEY)
    backends = [load_backend(n, cache=str(tmp_path / f"{n}.sqlite"), progress=False) for n in ("gpt-4o", "claude-sonnet-4", "gemini-2.5-flash")]
    resp = httpx2.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "3"},
                           request=httpx2.Request("POST", "http://x/v1"))
    sdk_429 = [openai.RateLimitError("x", response=resp, body={"error": {"message": "slow down"}}),
               anthropic.RateLimitError("x", response=resp, body={"error": {"message": "slow down"}}),
               errors.ClientError(429, {"error": {"code": 429, "message": "slow down"}}, resp)]
    try: pydantic.TypeAdapter(int).validate_python("not a number")
    except pydantic.ValidationError as e: shape = e
    try:
        for b, exc in zip(backends, sdk_429):
            err = b.classify(exc)
            assert (err.kind, err.message, err.status, err.retry_after) == ("rate_limit", "HTTP 429: slow down", 429, 3.0)
            assert b.classify(shape).kind == "malformed" and b.classify(shape).retryable is False
    finally:
        for b in backends: b.close()
