"""API backends through the REAL `openai` and `google-genai` clients against a loopback HTTP server.

Covers: request shapes (text, image, timestamped frames, Gemini native video), faults (429 + Retry-After and its
cap, 5xx, 400, hang past the timeout, a slow-drip body past the overall deadline, malformed bodies, refusals, empty
and truncated answers), the concurrency bound, result order and streaming (no batch barrier), the response cache (a
rerun makes zero requests; two processes writing one SQLite file), secrets (in the base URL, echoed by the server,
under a neutral option; secret-looking options refused), missing keys, Gemini upload → ACTIVE → reuse → delete (and an
explicit context cache over the upload, deleted with it),
thinking budget and audio switch, the pixel budget, and `--shard i/n` with two processes against one
OpenAI-compatible server.
"""
import base64
import io
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from loopback import (LoopbackServer, client_error, gemini_blocked, gemini_content, hang, malformed, openai_chat,
                      openai_refusal, rate_limited, server_error, slow_drip)
from vlmlens.core import Request, message
from vlmlens.models.api import MissingAPIKey, ResponseCache


from vlmlens.models.gemini import GeminiBackend, has_audio
from vlmlens.models.openai import OpenAIBackend

FAST = dict(timeout_s=2.0, max_attempts=3, retry={"base_delay": 0.05, "max_delay": 0.2}, progress=False)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.0123456789")
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key-0123456789")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def make(kind, server, tmp_path, **kw):
    "A backend of `kind` ('openai' or 'gemini') pointed at the loopback server, with its own cache file."
    opts = {**FAST, "cache": str(tmp_path / "cache.sqlite"), **kw}
    if kind == "openai": return OpenAIBackend(opts.pop("model", "gpt-4o"), base_url=server.openai_base_url, **opts)
    return GeminiBackend(opts.pop("model", "gemini-2.5-flash"), base_url=server.gemini_base_url, **opts)


def text_requests(n, prefix="q"):
    return [Request(f"s{i}", [message("user", f"{prefix}{i}")]) for i in range(n)]


def img(color):
    return Image.new("RGB", (24, 16), color)


def decode_data_url(url):
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def video_with_audio(path, seconds=1.0, fps=8):
    "A tiny video (mpeg4) with a 440 Hz mono mp2 audio track, written with PyAV."
    import av
    with av.open(str(path), "w") as out:
        vs = out.add_stream("mpeg4", rate=fps)
        vs.width, vs.height, vs.pix_fmt = 64, 48, "yuv420p"
        aus = out.add_stream("mp2", rate=16000, layout="mono")
        for i in range(int(seconds * fps)):
            f = av.VideoFrame.from_ndarray(np.full((48, 64, 3), (i * 30) % 255, np.uint8), format="rgb24")
            f.pts = i
            for p in vs.encode(f): out.mux(p)
        samples = (np.sin(2 * np.pi * 440 * np.arange(int(16000 * seconds)) / 16000) * 8000).astype(np.int16)
        for k in range(0, len(samples) - 1152, 1152):
            af = av.AudioFrame.from_ndarray(samples[None, k:k + 1152], format="s16", layout="mono")
            af.sample_rate, af.pts = 16000, k
            for p in aus.encode(af): out.mux(p)
        for s in (vs, aus):
            for p in s.encode(None): out.mux(p)
    return Path(path)


# ----------------------------------------------------------------------------- happy paths

def test_openai_text_image_and_timestamped_frames(server, keys, tmp_path):
    b = make("openai", server, tmp_path, detail="high", frame_detail="low")
    req = Request("s1", [message("system", "Answer with a letter."),
                         message("user", {"type": "video", "path": "v.mp4", "frames": [img("red"), img("blue")], "timestamps": [3.0, 725.4]},
                                 {"type": "image", "path": "i.png", "image": img("green")}, "Which colour comes first?")])
    server.responder = lambda call: openai_chat("B", prompt_tokens=321, completion_tokens=2)
    [g] = b.generate([req], max_new_tokens=7, seed=5)
    assert g.error is None and g.text == "B"
    assert g.usage == {"input_tokens": 321, "output_tokens": 2, "cached": False, "cost_usd": (321 * 2.50 + 2 * 10.0) / 1e6}   # gpt-4o, dated table
    [call] = server.requests("openai")
    assert call.headers["Authorization"] == "Bearer test-openai-key.0123456789"
    body = call.json
    assert (body["model"], body["max_tokens"], body["temperature"], body["seed"]) == ("gpt-4o", 7, 0.0, 5)
    assert "max_completion_tokens" not in body
    assert body["messages"][0] == {"role": "system", "content": "Answer with a letter."}
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "image_url", "text"]
    assert (parts[0]["text"], parts[2]["text"]) == ("[00:00:03]", "[00:12:05]")
    assert [p["image_url"]["detail"] for p in parts if p["type"] == "image_url"] == ["low", "low", "high"]
    frame = decode_data_url(parts[1]["image_url"]["url"])
    assert frame.size == (24, 16) and frame.getpixel((12, 8))[0] > 200          # the red frame, in order
    assert decode_data_url(parts[4]["image_url"]["url"]).getpixel((12, 8))[1] > 100
    assert parts[5]["text"] == "Which colour comes first?"
    b.close()


def test_openai_reasoning_model_parameters_and_usage(server, keys, tmp_path):
    b = OpenAIBackend("gpt-5-mini", base_url=server.openai_base_url, reasoning_effort="minimal", cache=False, **FAST)
    server.responder = lambda call: openai_chat("C", prompt_tokens=50, completion_tokens=30, reasoning_tokens=28, model="gpt-5-mini-2025-08-07")
    [g] = b.generate(text_requests(1), max_new_tokens=16)
    body = server.requests("openai")[0].json
    assert body["max_completion_tokens"] == 16 + b.reasoning_allowance and body["reasoning_effort"] == "minimal"
    assert "temperature" not in body and "max_tokens" not in body
    assert g.usage == {"input_tokens": 50, "output_tokens": 30, "reasoning_tokens": 28, "cached": False, "cost_usd": (50 * 0.25 + 30 * 2.0) / 1e6,
                       "reasoning_cost_usd": 28 * 2.0 / 1e6}
    assert b.revision == "gpt-5-mini-2025-08-07"
    b.close()


def test_gemini_text_image_frames_and_thinking_budget(server, keys, tmp_path):
    b = make("gemini", server, tmp_path, thinking_budget=512)
    req = Request("s1", [message("system", "Be brief."),
                         message("user", {"type": "video", "path": "v.mp4", "frames": [img("red"), img("blue")], "timestamps": [0.4, 61.0]},
                                 {"type": "image", "path": "i.png", "image": img("green")}, "Q?")])
    server.responder = lambda call: gemini_content("D", prompt_tokens=400, candidates_tokens=1, thoughts_tokens=77)
    [g] = b.generate([req], max_new_tokens=32, seed=9)
    assert g.error is None and g.text == "D"
    assert g.usage == {"input_tokens": 400, "output_tokens": 78, "reasoning_tokens": 77, "cached": False, "cost_usd": (400 * 0.30 + 78 * 2.50) / 1e6,
                       "reasoning_cost_usd": 77 * 2.50 / 1e6}
    [call] = server.requests("gemini")
    assert call.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert call.headers["x-goog-api-key"] == "test-gemini-key-0123456789"
    gc = call.json["generationConfig"]
    assert (gc["temperature"], gc["seed"], gc["maxOutputTokens"]) == (0.0, 9, 32 + 512)
    think = gc.get("thinkingConfig")
    assert think in ({"thinkingBudget": 512, "includeThoughts": True}, {"thinking_budget": 512, "include_thoughts": True})   # budget and thought summaries reached the wire
    si = call.json.get("systemInstruction") or call.json.get("system_instruction")
    assert si["parts"][0]["text"] == "Be brief."
    parts = call.json["contents"][0]["parts"]
    kinds = [("text" if "text" in p else "image") for p in parts]
    assert kinds == ["text", "image", "text", "image", "image", "text"]
    assert (parts[0]["text"], parts[2]["text"]) == ("[00:00:00]", "[00:01:01]")
    blob = parts[1].get("inlineData") or parts[1].get("inline_data")
    mime = blob.get("mimeType") or blob.get("mime_type")
    assert mime == "image/jpeg" and Image.open(io.BytesIO(base64.urlsafe_b64decode(blob["data"]))).getpixel((12, 8))[0] > 200
    b.close()


# ----------------------------------------------------------------------------- faults (both clients)

@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_429_waits_for_retry_after(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path)
    server.script(rate_limited(retry_after=1))
    [g] = b.generate(text_requests(1))
    assert g.error is None and g.text == "A"
    calls = server.requests(kind)
    assert len(calls) == 2 and calls[0].status == 429
    gap = calls[1].t_start - calls[0].t_end
    assert 0.95 <= gap < 1.6, f"retried after {gap:.3f} s, Retry-After was 1 s"
    assert b.stats["retries"] == 1
    b.close()


def test_gemini_429_retry_delay_from_the_error_body(server, keys, tmp_path):
    b = make("gemini", server, tmp_path)
    server.script(rate_limited(retry_after=None, retry_info=0.8))      # Gemini puts the delay in google.rpc.RetryInfo
    [g] = b.generate(text_requests(1))
    calls = server.requests("gemini")
    assert g.text == "A" and len(calls) == 2
    assert 0.75 <= calls[1].t_start - calls[0].t_end < 1.4
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_5xx_is_retried_then_succeeds(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path)
    server.script(server_error(500), server_error(503))
    [g] = b.generate(text_requests(1))
    assert g.error is None and g.text == "A"
    assert [c.status for c in server.requests(kind)] == [500, 503, 200]
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_5xx_gives_up_after_max_attempts(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path, max_attempts=2)
    server.responder = lambda call: server_error(502)
    gens = b.generate(text_requests(2))
    assert all(g.text is None and g.error.startswith("server_error: HTTP 502") and "gave up after 2 attempts" in g.error for g in gens)
    assert server.count(kind) == 4 and b.stats["failures"] == 2
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_400_is_not_retried(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path)
    server.responder = lambda call: client_error(400, "Invalid image") if "q0" in call.text else None
    bad, ok = b.generate(text_requests(2))
    assert bad.text is None and bad.error.startswith("client_error: HTTP 400") and "Invalid image" in bad.error
    assert ok.error is None and ok.text == "A"                     # the other item is unaffected
    assert server.count(kind) == 2
    b.close()


def test_a_refused_connection_says_so_not_timeout(keys, tmp_path):
    "Nothing listens at the base URL: the error names the refused host at once, not a timeout that never happened."
    import socket
    with socket.socket() as s:                                        # a loopback port that was free a moment ago: closed
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    b = OpenAIBackend("gpt-4o", base_url=f"http://127.0.0.1:{port}/v1", **{**FAST, "timeout_s": 30.0, "max_attempts": 1}, cache=False)
    t0 = time.monotonic()
    [g] = b.generate(text_requests(1))
    took = time.monotonic() - t0
    b.close()
    assert g.text is None and g.error.startswith(f"connection: connection refused by 127.0.0.1:{port}"), g.error
    assert "timeout" not in g.error and took < 10.0


def test_a_host_that_does_not_resolve_is_offline_at_once_not_retried(keys, tmp_path):
    "No network (or a misspelt host): the name lookup fails; the item says so on its first attempt instead of retrying for half a minute."
    b = OpenAIBackend("gpt-4o", base_url="http://vlmlens-no-such-host.invalid/v1", **{**FAST, "max_attempts": 5}, cache=False)
    [g] = b.generate(text_requests(1))
    b.close()
    assert g.text is None and g.error.startswith("offline: cannot resolve vlmlens-no-such-host.invalid"), g.error
    assert "gave up after" not in g.error                                        # one attempt: a lookup that failed is not retried


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "claude-sonnet-4"])
def test_a_refused_connection_names_the_host_for_gemini_and_claude(keys, monkeypatch, model):
    "Their SDKs say 'Cannot connect to host … ssl:<SSLContext …>' and 'Connection error.': the item error names the refused host."
    import socket
    from vlmlens.models.registry import load_backend
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key-0123456789")
    with socket.socket() as s:                                        # a loopback port that was free a moment ago: closed
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    b = load_backend(model, base_url=f"http://127.0.0.1:{port}", **{**FAST, "timeout_s": 30.0, "max_attempts": 1}, cache=False)
    t0 = time.monotonic()
    [g] = b.generate(text_requests(1))
    took = time.monotonic() - t0
    b.close()
    assert g.text is None and g.error == f"connection: connection refused by 127.0.0.1:{port}", g.error
    assert took < 10.0


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_hang_past_timeout_is_retried_then_recorded_as_error(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path, timeout_s=0.4, max_attempts=2, cache=False)
    b.generate(text_requests(1, "warm-up"))                          # the client's first-use set-up is not what is timed
    server.reset()
    server.responder = lambda call: hang()
    t0 = time.monotonic()
    [g] = b.generate(text_requests(1))
    took = time.monotonic() - t0
    assert g.text is None and g.error.startswith("timeout") and "gave up after 2 attempts" in g.error, g.error
    assert server.count(kind) == 2 and 0.8 <= took < 10.0                 # a hang would last until the server gives up
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_malformed_body_is_an_error(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path)
    server.script(malformed())
    [g] = b.generate(text_requests(1))
    assert g.text is None and g.error.startswith("malformed:"), g.error
    assert server.count(kind) == 1                                  # not retried
    assert b.generate(text_requests(1))[0].text == "A"               # not cached either: a rerun asks again
    assert server.count(kind) == 2
    b.close()


def test_refusals_are_recorded_as_such_and_not_cached(server, keys, tmp_path):
    o = make("openai", server, tmp_path)
    server.responder = lambda call: openai_refusal("I can't help with that.") if "q0" in call.text else openai_chat("x", finish_reason="content_filter")
    g0, g1 = o.generate(text_requests(2))
    assert (g0.text, g0.error) == (None, "refusal: I can't help with that.")
    assert (g1.text, g1.error) == (None, "refusal: finish_reason=content_filter")
    assert o.stats["refusals"] == 2 and o.stats["failures"] == 0
    o.generate(text_requests(2))
    assert server.count("openai") == 4                              # asked again: refusals are not cached
    server.reset()
    server.responder = lambda call: client_error(400, "Your request was rejected: content_policy_violation")
    [g] = o.generate(text_requests(1, "other"))
    assert g.error.startswith("refusal:") and server.count("openai") == 1
    o.close()

    gm = make("gemini", server, tmp_path)
    server.reset()
    server.responder = lambda call: gemini_blocked("PROHIBITED_CONTENT") if "q0" in call.text else gemini_content(None, finish_reason="SAFETY")
    g0, g1 = gm.generate(text_requests(2))
    assert g0.error == "refusal: prompt blocked (PROHIBITED_CONTENT)" and g1.error == "refusal: finish_reason=SAFETY"
    gm.close()


def test_keys_never_leak_into_errors_or_info(server, keys, tmp_path):
    b = make("openai", server, tmp_path)
    server.responder = lambda call: client_error(401, f"Incorrect API key provided: {os.environ['OPENAI_API_KEY']}")
    [g] = b.generate(text_requests(1))
    assert g.error.startswith("client_error: HTTP 401") and "0123456789" not in g.error
    assert "0123456789" not in json.dumps(b.info()) and b.info()["key_env"] == ["OPENAI_API_KEY"]
    b.close()


# ----------------------------------------------------------------------------- concurrency, order, rate

@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_concurrency_bound_and_order(server, keys, tmp_path, kind):
    server.latency = 0.05
    server.responder = lambda call: "ans-" + call.text.split()[-1]
    b = make(kind, server, tmp_path, concurrency=4, cache=False)
    t0 = time.monotonic()
    gens = b.generate(text_requests(24))
    took = time.monotonic() - t0
    assert [g.text for g in gens] == [f"ans-q{i}" for i in range(24)]
    assert server.max_in_flight == 4                                 # used, never exceeded
    assert took >= 24 / 4 * 0.05 * 0.95
    b.close()


def test_requests_per_minute_limit(server, keys, tmp_path):
    b = make("openai", server, tmp_path, rpm=600, cache=False)      # one start per 100 ms
    b.generate(text_requests(1, "warm-up"))                          # connection set-up would blur the first gap
    server.reset()
    b.generate(text_requests(5))
    starts = sorted(c.t_start for c in server.requests("openai"))
    assert starts[-1] - starts[0] >= 0.35                             # 4 gaps of 100 ms (unlimited: ~10 ms in all)
    b.close()


def test_generate_works_inside_a_running_event_loop(server, keys, tmp_path):
    "Jupyter and papermill run cells inside an event loop; generate must still work there."
    import asyncio
    b = make("openai", server, tmp_path, cache=False)

    async def cell():
        return b.generate(text_requests(3))

    assert [g.text for g in asyncio.run(cell())] == ["A", "A", "A"]
    b.close()


# ----------------------------------------------------------------------------- cache and accounting

@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_rerun_is_served_from_the_cache(server, keys, tmp_path, kind):
    prices = {"gpt-4o": {"input": 2.5, "output": 10.0}, "gemini-2.5-flash": {"input": 0.3, "output": 2.5}}
    b = make(kind, server, tmp_path, prices=prices)
    first = b.generate(text_requests(6))
    n = server.count(kind)
    assert n == 6 and all(g.usage["cached"] is False and g.usage["cost_usd"] > 0 for g in first)
    b.close()
    b2 = make(kind, server, tmp_path, prices=prices)                 # a new process would see the same file
    again = b2.generate(text_requests(6))
    assert server.count(kind) == n, "a rerun must make zero requests"
    assert [g.text for g in again] == [g.text for g in first]
    assert all(g.usage["cached"] is True and g.usage["cost_usd"] == 0.0 for g in again)
    assert [g.usage["input_tokens"] for g in again] == [g.usage["input_tokens"] for g in first]
    b2.generate(text_requests(2), temperature=0.7)                   # not deterministic: always asked
    b2.generate(text_requests(2), max_new_tokens=9)                  # other parameters: another key
    assert server.count(kind) == n + 4
    b2.close()


def test_duplicates_in_one_call_each_ask_whichever_finishes_first(server, keys, tmp_path):
    "Within one call the cache is read as it was when the call began, so the number of requests never depends on timing."
    import time as _time
    b = make("openai", server, tmp_path)
    def spaced():                                   # each duplicate submitted after the previous one was answered
        for r in text_requests(1) * 3:
            yield r
            _time.sleep(0.3)
    out = list(b.generate_iter(spaced()))
    assert server.count("openai") == 3 and len({g.text for _, g in out}) == 1
    assert all(g.usage["cached"] is False for _, g in out)
    b.generate(text_requests(1))                    # a later call is served from the cache
    assert server.count("openai") == 3
    b.close()


def test_cache_survives_concurrent_writers_from_two_processes(tmp_path):
    db = tmp_path / "shared.sqlite"
    script = textwrap.dedent(f"""
        import sys
        from vlmlens.models.api import ResponseCache
        c = ResponseCache({str(db)!r})
        me = int(sys.argv[1])
        for i in range(400):
            k = f"k{{i}}" if i % 2 else f"p{{me}}-{{i}}"          # odd keys are written by both processes
            c.put(k, f"text-{{i}}", {{"input_tokens": i, "output_tokens": me}}, "test", "m")
            assert c.get(k)["text"] == f"text-{{i}}"
        c.close()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], stderr=subprocess.PIPE) for i in (1, 2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
    con = sqlite3.connect(str(db))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = dict(con.execute("SELECT key, text FROM responses").fetchall())
    assert len(rows) == 200 + 2 * 200
    assert all(rows[f"k{i}"] == f"text-{i}" for i in range(1, 400, 2))
    assert all(rows[f"p{m}-{i}"] == f"text-{i}" for m in (1, 2) for i in range(0, 400, 2))


# ----------------------------------------------------------------------------- keys

def test_missing_keys_fail_at_construction_naming_the_variable(monkeypatch, tmp_path):
    from vlmlens.models.registry import load_backend
    for v in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "MY_SERVER_KEY"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(ValueError, match="gpt-4o needs an API key: set OPENAI_API_KEY in the environment"):
        load_backend("gpt-4o", cache=False)                          # a ValueError: the CLI prints one line, exits 2
    with pytest.raises(MissingAPIKey, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        load_backend("gemini-2.5-flash", cache=False)
    with pytest.raises(MissingAPIKey, match="MY_SERVER_KEY"):
        OpenAIBackend("m", compatible=True, base_url="http://127.0.0.1:9/v1", api_key_env="MY_SERVER_KEY", cache=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "gemini-alt-key")
    b = load_backend("gemini-2.5-flash", cache=False)                # either Gemini variable works
    assert b._api_key == "gemini-alt-key"
    b.close()
    local = OpenAIBackend("m", compatible=True, base_url="http://127.0.0.1:9/v1", cache=False)
    assert local._api_key == "EMPTY"                                  # a local server needs no real key
    local.close()


# ----------------------------------------------------------------------------- Gemini native video

def test_gemini_native_video_upload_active_reuse_delete(server, keys, tmp_path):
    video = video_with_audio(tmp_path / "episode.mp4")
    server.processing_polls = 3                                       # PROCESSING for the first two reads
    b = make("gemini", server, tmp_path, video="native", fps=0.5, audio=False, poll_interval_s=0.05, concurrency=4)
    qs = [Request(f"s{i}", [message("user", {"type": "video", "path": str(video), "start": 2, "end": 30}, f"question {i}")]) for i in range(3)]
    gens = b.generate(qs)
    assert all(g.error is None and g.text == "A" for g in gens), [g.error for g in gens]
    assert server.uploads == 1 and b.stats["uploads"] == 1          # one upload for three questions
    gets = [c for c in server.requests("files") if c.method == "GET"]
    assert len(gets) >= 2                                             # waited through PROCESSING
    uris = set()
    for call in server.requests("gemini"):
        part = call.json["contents"][0]["parts"][0]
        fd = part.get("fileData") or part.get("file_data")
        uris.add(fd.get("fileUri") or fd.get("file_uri"))
        vm = part.get("videoMetadata") or part.get("video_metadata")
        assert vm["fps"] == 0.5 and (vm.get("startOffset") or vm.get("start_offset")) == "2s"
        assert (vm.get("endOffset") or vm.get("end_offset")) == "30s"
    assert len(uris) == 1
    [f] = server.files.values()
    up = tmp_path / "uploaded.mp4"
    up.write_bytes(f.data)
    assert has_audio(video) and not has_audio(up)                    # audio=False uploaded a silent copy
    name = f.name
    b.close()
    assert server.deleted == [name] and not server.files


def test_gemini_audio_on_uploads_the_original_and_keep_uploads_reuses(server, keys, tmp_path):
    video = video_with_audio(tmp_path / "episode.mp4")
    b = make("gemini", server, tmp_path, video="native", audio=True, keep_uploads=True, poll_interval_s=0.02)
    q = lambda text: [Request("s", [message("user", {"type": "video", "path": str(video)}, text)])]
    assert b.generate(q("first"))[0].text == "A"
    [f] = server.files.values()
    assert f.data == video.read_bytes()                              # audio on: the file as it is
    b.close()
    assert server.deleted == [] and len(server.files) == 1          # kept
    b2 = make("gemini", server, tmp_path, video="native", audio=True, keep_uploads=True, poll_interval_s=0.02)
    assert b2.generate(q("second"))[0].text == "A"                   # a new question: a call, but no new upload
    assert server.uploads == 1 and server.count("gemini") == 2
    b2.close()


def test_gemini_upload_failure_is_an_item_error(server, keys, tmp_path):
    video = video_with_audio(tmp_path / "episode.mp4")
    b = make("gemini", server, tmp_path, video="native", poll_interval_s=0.02, upload_timeout_s=0.2)
    server.processing_polls = 10 ** 6                                 # never becomes ACTIVE
    [g] = b.generate([Request("s", [message("user", {"type": "video", "path": str(video)}, "q")])])
    assert g.text is None and g.error.startswith("upload:") and "still" in g.error
    assert server.count("gemini") == 0
    b.close()
    assert len(server.deleted) == 1                                   # the half-processed upload is still cleaned up


# ----------------------------------------------------------------------------- shards against one served model

SHARD_SCRIPT = """
import json, sys
from vlmlens.core import RunConfig
from vlmlens.runner import run
cfg = RunConfig(**json.loads(sys.argv[1]))
print(json.dumps(run(cfg)["overall"]))
"""


def test_two_shard_processes_against_one_openai_compatible_server_then_merge(server, tmp_path, monkeypatch):
    from vlmlens.core import RunConfig
    from vlmlens.runner import run
    server.latency = 0.02
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    model = f"openai-compatible:served-vlm@{server.openai_base_url}"
    base = dict(benchmark="demo", model=model, language="en", num_frames=4, max_new_tokens=8, output_root=str(tmp_path),
                run_name="sharded", batch_size=8, progress=False,
                model_kwargs={"cache": str(tmp_path / "api_cache.sqlite"), "concurrency": 4})
    procs = [subprocess.Popen([sys.executable, "-c", SHARD_SCRIPT, json.dumps({**base, "shard": f"{i}/2"})],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert all(o["n_errors"] == 0 for o in outs)
    run_dir = tmp_path / "sharded"
    ids = [{json.loads(l)["sample_id"] for l in (run_dir / f"predictions.shard-{i}-of-2.jsonl").read_text().splitlines() if l.strip()}
           for i in range(2)]
    assert ids[0] and ids[1] and not ids[0] & ids[1]                   # each shard did its own part
    n = len(ids[0] | ids[1])
    assert all(0 < o["n"] <= n for o in outs)    # each shard's summary merges whatever the shards have written so far
    assert server.count("openai") == n                                # one request per item, none repeated
    assert {c.json["model"] for c in server.requests("openai")} == {"served-vlm"}
    assert server.max_in_flight <= 2 * 4
    # merge: the unsharded configuration sees every item done and only scores (it must not even load the backend)
    import vlmlens.models.registry as reg
    monkeypatch.setattr(reg, "load_backend", lambda *a, **k: pytest.fail("merging must not load the model"))
    merged = run(RunConfig(**base))
    assert merged["overall"]["n"] == n and merged["overall"]["n_errors"] == 0 and merged["overall"].get("n_missing", 0) == 0
    tokens = sum(json.loads(l)["usage"]["input_tokens"] for i in range(2)
                 for l in (run_dir / f"predictions.shard-{i}-of-2.jsonl").read_text().splitlines() if l.strip())
    assert merged["overall"]["input_tokens"] == tokens > 0
    assert server.count("openai") == n


# ----------------------------------------------------------------------------- deadline, empty answers, streaming, caps

@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_slow_drip_body_hits_the_overall_deadline(server, keys, tmp_path, kind):
    "A body dripped one byte every 1.5 s never trips a per-read timeout; timeout_s=2 is a deadline for the whole answer."
    b = make(kind, server, tmp_path, timeout_s=2.0, max_attempts=1, cache=False)
    b.generate(text_requests(1, "warm-up"))
    server.script(slow_drip(1.5, nbytes=8))                          # 12 s of dripping, then the rest of the body
    t0 = time.monotonic()
    [g] = b.generate(text_requests(1))
    took = time.monotonic() - t0
    assert g.text is None and g.error.startswith("timeout: no complete answer within 2 s"), g.error
    assert 1.9 <= took < 8.0, took                                    # the drip alone lasts 12 s
    b.close()


def test_slow_drip_then_retry_succeeds(server, keys, tmp_path):
    b = make("openai", server, tmp_path, timeout_s=1.0, max_attempts=2)
    server.script(slow_drip(1.5, nbytes=4))
    [g] = b.generate(text_requests(1))
    assert g.error is None and g.text == "A" and server.count("openai") == 2 and b.stats["retries"] == 1
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_empty_and_truncated_answers_are_recorded_and_never_cached(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path)
    if kind == "openai":
        replies = {"q0": openai_chat(None, finish_reason="length", completion_tokens=64), "q1": openai_chat("", finish_reason="stop"),
                   "q2": openai_chat("The answer is", finish_reason="length", completion_tokens=64)}
    else:
        replies = {"q0": gemini_content(None, finish_reason="MAX_TOKENS", candidates_tokens=64), "q1": gemini_content("", finish_reason="STOP"),
                   "q2": gemini_content("The answer is", finish_reason="MAX_TOKENS")}
    server.responder = lambda call: replies.get(call.text.split()[-1])
    g0, g1, g2, g3 = b.generate(text_requests(4))
    assert (g0.text, g0.finish_reason) == (None, "length") and g0.error.startswith("truncated: the output token limit"), g0.error
    assert g0.usage["output_tokens"] > 0                             # the tokens spent are still counted
    assert (g1.text, g1.finish_reason) == (None, "stop") and g1.error.startswith("empty: the model returned no text")
    assert (g2.text, g2.error, g2.finish_reason) == ("The answer is", None, "length")   # cut short, but an answer
    assert (g3.text, g3.finish_reason) == ("A", "stop")
    assert (b.stats["empty"], b.stats["truncated"]) == (1, 2)
    b.close()
    server.responder = None
    b2 = make(kind, server, tmp_path)                                # a rerun (same cache file) asks again
    again = b2.generate(text_requests(4))
    assert server.count(kind) == 4 + 3 and [g.text for g in again] == ["A", "A", "A", "A"]
    assert again[3].usage["cached"] is True and again[3].finish_reason == "stop"
    b2.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_results_stream_as_they_complete_with_no_batch_barrier(server, keys, tmp_path, kind):
    "One slow request does not hold back the others; at most `concurrency` in flight; each result comes as it completes."
    b = make(kind, server, tmp_path, concurrency=4, cache=False, timeout_s=15)
    b.generate(text_requests(1, "warm-up"))
    server.reset()
    server.responder = lambda call: Reply_delay(4.0) if call.text == "q0" else None
    t0, arrivals = time.monotonic(), {}
    for i, g in b.generate_iter(text_requests(40)):
        arrivals[i] = time.monotonic() - t0
        assert g.error is None and g.text == "A"
    assert sorted(arrivals) == list(range(40))
    assert max(t for i, t in arrivals.items() if i) < 3.0 < 4.0 <= arrivals[0], arrivals   # 39 items done while q0 was slow
    assert server.max_in_flight <= 4
    b.close()


def Reply_delay(seconds):
    from loopback import Reply
    return Reply(text="A", delay=seconds)


def test_generate_iter_takes_a_lazy_iterable_and_bounds_the_window(server, keys, tmp_path):
    b = make("openai", server, tmp_path, concurrency=2, window=4, cache=False)
    pulled = []

    def requests():
        for r in text_requests(12):
            pulled.append(r.sample_id)
            yield r

    seen = []
    for i, g in b.generate_iter(requests()):
        seen.append(i)
        assert len(pulled) - len(seen) <= 4                          # never more than `window` requests ahead
    assert sorted(seen) == list(range(12)) and server.max_in_flight <= 2
    b.close()


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_retry_after_beyond_the_cap_fails_the_item_instead_of_stalling(server, keys, tmp_path, kind):
    b = make(kind, server, tmp_path, max_attempts=5)
    server.script(rate_limited(retry_after=120))
    t0 = time.monotonic()
    g, ok = sorted(b.generate(text_requests(2)), key=lambda x: x.text is not None)   # whichever request arrived first got the 429
    assert time.monotonic() - t0 < 30.0                              # far below the 120 s it was told to wait (client start-up included)
    assert g.text is None and g.error.startswith("rate_limit: HTTP 429") and "more than max_retry_after_s=60" in g.error, g.error
    assert ok.text == "A"
    assert b.generate(text_requests(1))[0].text == "A"               # not cached as anything: asked again
    b.close()
    short = make(kind, server, tmp_path, max_retry_after_s=0.5)
    server.script(rate_limited(retry_after=1))
    [g] = short.generate(text_requests(1, "other"))
    assert "more than max_retry_after_s=0.5" in g.error
    short.close()


# ----------------------------------------------------------------------------- secrets

def test_key_in_the_base_url_never_reaches_names_info_cache_or_errors(server, monkeypatch, tmp_path):
    secret = "pw-url-secret-123456"
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    url = server.openai_base_url.replace("http://", f"http://user:{secret}@")
    from vlmlens.models.registry import load_backend
    b = load_backend(f"openai-compatible:served@{url}", cache=str(tmp_path / "c.sqlite"), progress=False, timeout_s=2)
    assert [g.text for g in b.generate(text_requests(2))] == ["A", "A"]
    server.script(client_error(400, f"bad request to {url}"))
    [g] = b.generate(text_requests(1, "again"))
    assert g.error.startswith("client_error") and secret not in g.error
    assert secret not in b.name and secret not in json.dumps(b.info()) and secret not in repr(b)
    b.close()
    rows = sqlite3.connect(str(tmp_path / "c.sqlite")).execute("SELECT backend, model, text, usage FROM responses").fetchall()
    assert rows and all(secret not in json.dumps(r) for r in rows)
    assert rows[0][0].startswith("openai-compatible@http://<redacted>@127.0.0.1")


def test_a_key_echoed_back_in_a_200_answer_is_scrubbed(server, keys, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-neutral-987654321")
    key = os.environ["OPENAI_API_KEY"]
    b = make("openai", server, tmp_path, extra_body={"user_note": os.environ["MY_SERVICE_TOKEN"]})
    server.responder = lambda call: openai_chat(f"B. (you sent {call.headers['Authorization']})", model=f"gpt-4o-{key}")
    [g] = b.generate(text_requests(1))
    assert key not in g.text and g.text.startswith("B. (you sent Bearer <redacted>")
    assert b.revision is not None and key not in b.revision
    server.responder = lambda call: openai_chat(f"B. note={call.json['user_note']}")
    [g] = b.generate(text_requests(1, "neutral"))                   # a secret under a neutrally named option
    assert "tok-neutral-987654321" not in g.text
    b.close()
    rows = sqlite3.connect(str(tmp_path / "cache.sqlite")).execute("SELECT backend, text FROM responses").fetchall()
    assert rows and not any(key in json.dumps(r) or "tok-neutral-987654321" in json.dumps(r) for r in rows)


@pytest.mark.parametrize("model", ["gpt-4o", "gemini-2.5-flash", "openai-compatible:m@http://127.0.0.1:9/v1"])
def test_secret_looking_model_options_are_refused_with_one_line(keys, model):
    from vlmlens.models.registry import load_backend
    for opt in ({"api_key": "key-typed-on-the-command-line"}, {"extra_body": {"access_token": "x"}}, {"password": "x"}):
        with pytest.raises(ValueError) as ei:
            load_backend(model, cache=False, **opt)
        msg = str(ei.value)
        assert "looks like a secret and is refused" in msg and "environment" in msg and "\n" not in msg
        assert "key-typed" not in msg
    load_backend(model, cache=False, api_key_env="OPENAI_API_KEY" if "gemini" not in model else "GEMINI_API_KEY").close()


# ----------------------------------------------------------------------------- pixels

def test_a_huge_pre_decoded_image_is_downscaled_before_encoding(server, keys, tmp_path):
    from vlmlens.media import DEFAULT_MAX_PIXELS
    b = make("openai", server, tmp_path, cache=False)
    big = Image.new("RGB", (5000, 4000), (200, 30, 30))             # 20 MP, handed over already decoded
    [g] = b.generate([Request("s", [message("user", {"type": "image", "path": "x.png", "image": big}, "colour?")])])
    assert g.error is None
    sent = decode_data_url(server.requests("openai")[0].json["messages"][0]["content"][0]["image_url"]["url"])
    assert sent.size[0] * sent.size[1] <= DEFAULT_MAX_PIXELS and abs(sent.size[0] / sent.size[1] - 1.25) < 0.01
    b.close()


def test_progress_bar_is_silent_when_asked(server, keys, tmp_path, capsys):
    b = make("openai", server, tmp_path, cache=False, progress=True)
    list(b.generate_iter(text_requests(5), progress=False))
    assert "req" not in capsys.readouterr().err
    list(b.generate_iter(text_requests(5), progress=True))
    assert "req" in capsys.readouterr().err
    b.close()


def test_gemini_native_video_gets_one_explicit_cache_over_its_upload_and_both_are_deleted(server, keys, tmp_path):
    "Native video: one upload, one context cache naming it (with the system instruction); each question sends only itself."
    video = video_with_audio(tmp_path / "episode.mp4")
    server.cache_min_tokens = 16                                       # a tiny test video; a real one is 258+ tokens a second
    b = make("gemini", server, tmp_path, video="native", poll_interval_s=0.02, concurrency=4, cache=False)
    qs = [Request(f"s{i}", [message("system", "Answer briefly."), message("user", {"type": "video", "path": str(video)}, f"question {i}")])
          for i in range(3)]
    gens = b.generate(qs)
    assert [g.error for g in gens] == [None] * 3 and all(g.usage["cached_input_tokens"] > 0 for g in gens)
    assert sum("cache_write_tokens" in g.usage for g in gens) == 1       # the cache's creation billed once
    [create] = [c for c in server.requests("caches") if c.method == "POST"]
    assert "fileData" in json.dumps(create.json) or "file_data" in json.dumps(create.json)
    assert server.uploads == 1 and b.stats["context_caches"] == 1
    calls = server.requests("gemini")
    assert all("fileData" not in json.dumps(c.json) and "file_data" not in json.dumps(c.json) for c in calls)
    assert sorted(c.text.rsplit("\n", 1)[-1] for c in calls) == ["question 0", "question 1", "question 2"]
    [name] = list(server.cached_contents)
    b.close()
    assert server.cached_deleted == [name] and not server.cached_contents and len(server.deleted) == 1


def test_a_typo_in_prompt_cache_is_refused_before_the_run(tmp_path):
    "`--model-kwarg prompt_cache=flase` used to run with caching on; now one line, exit 2, nothing on disk."
    env = dict(os.environ, OPENAI_API_KEY="test-openai-key.not-real.000000000000")
    out = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
                          "--model", "gpt-4o", "--limit", "2", "--output-root", str(tmp_path / "runs"), "--no-progress",
                          "--model-kwarg", "base_url=http://127.0.0.1:9", "--model-kwarg", "prompt_cache=flase"],
                         capture_output=True, text=True, env=env, timeout=300)
    lines = [l for l in out.stderr.splitlines() if l.startswith("vlmlens:")]   # (a first use also builds the demo data)
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "prompt_cache must be true or false" in lines[0] and "'flase'" in lines[0]
    assert not (tmp_path / "runs").exists()                                 # refused before a run folder is made


def test_gemini_encodes_a_videos_frames_once_and_hashes_each_question_once(keys, tmp_path, monkeypatch):
    """Two questions on one 8-frame video, given the same frame objects (as the frame cache hands them): the frames are
    JPEG-encoded once in all; the second question hashes its frames once (its answer-cache key), the explicit context key
    (the name every process finds the cache by) being hashed at the video's first question only, with its usual value."""
    import vlmlens.core as core
    import vlmlens.models.api as api
    import vlmlens.models.gemini as gm
    hashed, encoded = [], []
    def sha(x):
        hashed.append(core.canonical_json(x).count('"inline_data"'))
        return core.sha256_json(x)
    def enc(im, q):
        encoded.append(im)
        return api.encode_jpeg(im, q)
    monkeypatch.setattr(api, "sha256_json", sha); monkeypatch.setattr(gm, "sha256_json", sha); monkeypatch.setattr(gm, "encode_jpeg", enc)
    g = GeminiBackend("gemini-2.5-flash", base_url="http://127.0.0.1:9", cache=str(tmp_path / "c.sqlite"), **FAST)
    frames = [img((i * 30, 0, 0)) for i in range(8)]
    def ask(q):
        hashed.clear()
        req = Request("s", [message("user", {"type": "video", "frames": frames, "timestamps": list(range(8))}, q)],
                      meta={"video_questions": 2})
        gen, (payload, key, _) = g._start(req, 8, 0.0, 0)
        assert gen is None and key is not None
        return payload["_context"], list(hashed)
    (ctx1, h1), (ctx2, h2) = ask("What colour first?"), ask("What colour last?")
    assert (h1, h2) == ([8, 8], [8])                        # frames hashed: answer key + context key, then the answer key only
    assert len(encoded) == 8                                 # each frame encoded once for both questions
    assert ctx1["key"] == ctx2["key"] == core.sha256_json({k: v for k, v in ctx2.items() if k != "key"})
