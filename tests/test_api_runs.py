"""The same benchmark on an API model by changing only --model (and pointing the client at the loopback server)."""
import json
import subprocess
from collections import Counter
import sys

import pytest




@pytest.mark.parametrize("model", ["gpt-4o", "gemini-2.5-flash"])
def test_demo_benchmark_on_api_models_via_the_cli(server, model, tmp_path, monkeypatch):
    server.reset(); server.default_text = "The answer is B."
    env = {k: v for k, v in __import__("os").environ.items()}
    env.update(OPENAI_API_KEY="test-openai-key.not-real.000000000000", GEMINI_API_KEY="test-gemini-key-0000")
    base = server.openai_base_url if model.startswith("gpt") else server.gemini_base_url
    cmd = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
           "--model", model, "--language", "en", "--frames", "4", "--limit", "6", "--output-root", str(tmp_path),
           "--run-name", "api", "--no-progress", "--model-kwarg", f"base_url={base}",
           "--model-kwarg", f"cache={tmp_path / 'cache.sqlite'}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "all items" in out.stdout
    summary = json.loads((tmp_path / "api" / "summary.json").read_text())
    assert summary["overall"]["n"] == 6 and summary["overall"]["n_errors"] == 0
    assert summary["overall"]["input_tokens"] > 0 and summary["overall"]["n_truncated"] == 0
    preds = [json.loads(l) for l in (tmp_path / "api" / "predictions.jsonl").read_text().splitlines() if l.strip()]
    assert {p["finish_reason"] for p in preds} == {"stop"}                # the backend's finish reason reaches the store
    api = "openai" if model.startswith("gpt") else "gemini"
    calls = server.requests(api)
    assert len(calls) == 6 and {c.model for c in calls} == {model}
    # video items reached the API as frames (images) — four per video question, in the request or in its explicit context cache
    assert any(json.dumps(c.json).count("image/jpeg") >= 4 for c in calls + [c for c in server.requests("caches") if c.method == "POST"])
    info = (tmp_path / "api" / "run.json").read_text()
    assert "test-openai-key.not-real" not in info and "test-gemini-key" not in info


def _cli(*args):
    return [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", *args]


def _env(**kw):
    import os
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(kw)
    return env


@pytest.mark.parametrize("model,var", [("gpt-4o", "OPENAI_API_KEY"), ("gemini-2.5-flash", "GEMINI_API_KEY or GOOGLE_API_KEY")])
def test_a_missing_api_key_is_one_line_and_exit_2(tmp_path, model, var):
    out = subprocess.run(_cli("run", "--benchmark", "demo", "--model", model, "--limit", "2", "--output-root", str(tmp_path),
                              "--no-progress"), capture_output=True, text=True, env=_env(), timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert lines[-1].startswith("vlmlens: error:") and f"set {var}" in lines[-1], out.stderr[-2000:]
    assert "Traceback" not in out.stderr


def test_a_key_typed_as_a_model_option_is_refused_in_one_line(tmp_path):
    out = subprocess.run(_cli("run", "--benchmark", "demo", "--model", "gpt-4o", "--limit", "2", "--output-root", str(tmp_path),
                              "--no-progress", "--model-kwarg", "api_key=key-typed-secret-000"),
                         capture_output=True, text=True, env=_env(OPENAI_API_KEY="test-openai-key.not-real.000000000000"), timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "key-typed-secret-000" not in out.stderr + out.stdout
    assert not list(tmp_path.rglob("run.json"))                            # refused before a run folder is written


def _run_in_a_terminal(cmd, env, timeout=300):
    "Run `cmd` with its stderr on a pseudo-terminal (progress bars draw only there); return (rc, stderr text)."
    import fcntl, os, pty, select, struct, termios, time
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))   # a 0x0 terminal draws empty bars
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks, t0 = [], time.monotonic()
    while time.monotonic() - t0 < timeout:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try: data = os.read(master, 65536)
            except OSError: break                                            # the child closed the terminal
            if not data: break
            chunks.append(data)
        elif p.poll() is not None: break
    os.close(master)
    return p.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


def test_no_progress_silences_every_progress_bar(server, tmp_path):
    server.default_text = "B"
    env = _env(OPENAI_API_KEY="test-openai-key.not-real.000000000000")
    args = ["run", "--benchmark", "demo", "--model", "gpt-4o", "--language", "en", "--frames", "2", "--limit", "6",
            "--output-root", str(tmp_path), "--model-kwarg", f"base_url={server.openai_base_url}",
            "--model-kwarg", f"cache={tmp_path / 'cache.sqlite'}", "--model-kwarg", "concurrency=2"]
    rc, err = _run_in_a_terminal(_cli(*args, "--run-name", "bars"), env)
    assert rc == 0 and "demo:gpt-4o" in err and "%|" in err, err[-2000:]   # on a terminal the run's bar is drawn
    rc, err = _run_in_a_terminal(_cli(*args, "--run-name", "quiet", "--no-progress"), env)
    assert rc == 0, err[-2000:]
    assert "req" not in err and "%|" not in err, err[-2000:]               # --no-progress: no bar at all


def test_truncated_answers_are_counted_recorded_and_asked_again_on_rerun(server, tmp_path):
    "content: null with finish_reason=length is an error with its reason, counted in the summary, and re-asked next run."
    from loopback import openai_chat
    calls = []

    def reply(call):
        calls.append(call)
        if len(calls) == 1: return openai_chat(None, finish_reason="length", completion_tokens=8)      # budget spent, no text
        if len(calls) == 2: return openai_chat("The answer is", finish_reason="length", completion_tokens=8)  # cut short
        return "The answer is B."
    server.responder = reply
    env = _env(OPENAI_API_KEY="test-openai-key.not-real.000000000000")
    args = _cli("run", "--benchmark", "demo", "--model", "gpt-4o", "--language", "en", "--frames", "2", "--limit", "4",
                "--output-root", str(tmp_path), "--run-name", "trunc", "--no-progress", "--model-kwarg", "concurrency=1",
                "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path / 'cache.sqlite'}")
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    run = tmp_path / "trunc"
    preds = [json.loads(l) for l in (run / "predictions.jsonl").read_text().splitlines() if l.strip()]
    cut = sorted((p for p in preds if p["finish_reason"] == "length"), key=lambda p: p["error"] is None)
    assert len(cut) == 2 and cut[0]["error"].startswith("truncated:") and cut[0]["raw"] is None
    assert cut[1]["error"] is None and cut[1]["raw"] == "The answer is"          # an answer, marked as cut short
    summary = json.loads((run / "summary.json").read_text())["overall"]
    assert summary["n_truncated"] >= 1 and summary["n_errors"] == 1 and summary["n"] == 4
    n_before = len(calls)
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)     # rerun: the empty one is asked again
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(calls) == n_before + 1
    summary = json.loads((run / "summary.json").read_text())["overall"]
    assert summary["n_errors"] == 0


# ----------------------------------------------------------------------------- provider prompt caches: the video paid once

from loopback import PromptCache  # noqa: E402

_KEYS = dict(OPENAI_API_KEY="test-openai-key.not-real.000000000000", GEMINI_API_KEY="test-gemini-key-0000",
             ANTHROPIC_API_KEY="test-anthropic-key-0000")
_BASE = {"gpt-4o": "openai_base_url", "gemini-2.5-flash": "gemini_base_url", "claude-sonnet-4": "anthropic_base_url"}


def _run_demo(server, model, out, name, *extra):
    env = _env(**_KEYS)
    env.pop("VLMLENS_PRICES", None)                                   # the dated default price table
    cmd = _cli("run", "--benchmark", "demo", "--model", model, "--language", "en", "--frames", "8", "--limit", "12",
               "--output-root", str(out), "--run-name", name, "--no-progress", "--model-kwarg", "cache=false",
               "--model-kwarg", f"base_url={getattr(server, _BASE[model])}", *extra)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    preds = [json.loads(l) for l in (out / name / "predictions.jsonl").read_text().splitlines() if l.strip()]
    return res.stdout, json.loads((out / name / "summary.json").read_text()), preds


@pytest.mark.parametrize("model,api,extra", [("gpt-4o", "openai", ()), ("gemini-2.5-flash", "gemini", ("--frames", "3"))])
def test_automatic_prompt_caching_is_read_billed_and_printed(server, tmp_path, model, api, extra):
    "The provider's cached-token counts reach every prediction, summary.json and the printed table, priced by the dated table."
    from vlmlens.models.api import DEFAULT_PRICES
    server.default_text = "The answer is B."
    server.prompt_cache = PromptCache(api)
    stdout, summary, preds = _run_demo(server, model, tmp_path, "api", *extra)   # Gemini: 3 frames (774 tokens), implicit caching
    assert server.count("caches") == 0
    calls = server.requests(api)
    read = sum(c.cache_usage["read"] for c in calls)
    assert read > 0                                                   # the later questions about a video shared its frames
    o = summary["overall"]
    assert o["cached_input_tokens"] == read and sum(p["usage"].get("cached_input_tokens", 0) for p in preds) == read
    assert o["input_tokens"] == sum(c.cache_usage["prompt"] for c in calls)
    assert o["cached_input_share"] == pytest.approx(read / o["input_tokens"]) and o["cached_input_share"] > 0.3
    price = DEFAULT_PRICES[model]
    billed = sum(((c.cache_usage["prompt"] - c.cache_usage["read"]) * price["input"] + c.cache_usage["read"] * price["cached_input"]) / 1e6
                 for c in calls) + o["output_tokens"] * price["output"] / 1e6
    assert o["cost_usd"] == pytest.approx(billed, rel=1e-6)
    assert f"cost ${o['cost_usd']:.4f}" in stdout and f"{100 * o['cached_input_share']:.1f} % read from the provider's prompt cache" in stdout
    if api == "openai":                                              # one prompt_cache_key per video, none for image items
        keys = {}
        for c in calls: keys.setdefault(c.json.get("prompt_cache_key"), []).append(c.cache_usage["read"])
        assert all(k is None or k.startswith("vlmlens-") for k in keys) and any(len(v) > 1 for k, v in keys.items() if k)


def test_anthropic_breakpoint_on_the_last_frame_pays_for_the_video_once(server, tmp_path):
    "cache_control on each video request's last frame: later questions read the frames; prompt_cache=false: same answers, full price."
    server.default_text = "The answer is B."
    server.prompt_cache = PromptCache("anthropic")
    _, on, preds_on = _run_demo(server, "claude-sonnet-4", tmp_path, "on")
    calls = server.requests("anthropic")
    asked = Counter(_frames_of(c) for c in calls)
    for c in calls:
        blocks = [b for m in c.json["messages"] for b in m["content"]]
        marked = [i for i, b in enumerate(blocks) if "cache_control" in b]
        images = [i for i, b in enumerate(blocks) if b["type"] == "image"]
        video_asked_again = len(images) > 1 and asked[_frames_of(c)] > 1
        assert marked == ([images[-1]] if video_asked_again else []), marked   # video asked again: the last frame; once or one image: none
    assert sum(c.cache_usage["read"] for c in calls) > 0 and on["overall"]["cache_write_tokens"] > 0
    server.reset(); server.default_text = "The answer is B."; server.prompt_cache = PromptCache("anthropic")
    _, off, preds_off = _run_demo(server, "claude-sonnet-4", tmp_path, "off", "--model-kwarg", "prompt_cache=false")
    assert not any("cache_control" in json.dumps(c.json) for c in server.requests("anthropic"))
    assert off["overall"].get("cached_input_tokens", 0) == 0
    assert sorted((p["sample_id"], p["raw"]) for p in preds_on) == sorted((p["sample_id"], p["raw"]) for p in preds_off)
    assert on["overall"]["accuracy"] == off["overall"]["accuracy"]
    run_hash = lambda n: json.loads((tmp_path / n / "run.json").read_text())["config_hash"]
    assert run_hash("on") == run_hash("off")                                   # billing, not answers: the same run
    assert on["overall"]["cost_usd"] < off["overall"]["cost_usd"]


def _demo_estimate(tmp_path, model, prices=None) -> tuple[int, float]:
    "`(tokens read from the cache, USD with it)` that `--dry-run` prints for the demo's 12 items, cache reads at 1000 $/M and writes at 2000 $/M."
    import re
    path = tmp_path / "prices.json"                                    # the rest free
    path.write_text(json.dumps({model: {"input": 0.0, "cached_input": 1000.0, "cache_write": 2000.0, "output": 0.0, **(prices or {})}}))
    res = subprocess.run(_cli("run", "--benchmark", "demo", "--model", model, "--language", "en", "--frames", "8",
                              "--limit", "12", "--output-root", str(tmp_path / "est"), "--model-kwarg", "base_url=http://127.0.0.1:9",
                              "--dry-run"), capture_output=True, text=True, env={**_env(**_KEYS), "VLMLENS_PRICES": str(path)}, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    read = int(re.search(r"\(([\d,]+) of them read from the provider's prompt cache\)", res.stdout)[1].replace(",", ""))
    return read, float(re.search(r"\$([\d.,]+) with it", res.stdout)[1].replace(",", ""))


def _frames_of(call) -> tuple:
    "The frames (image data) a Messages API request sends: the same tuple for every question on one video."
    return tuple(b["source"]["data"] for m in call.json["messages"] for b in m["content"] if b.get("type") == "image")


def test_claude_writes_no_cache_for_a_video_the_run_asks_about_once_and_the_dry_run_agrees(server, tmp_path):
    "Demo, 12 items: each video asked twice is written to the cache once and read once; scenes_04, asked once, has no breakpoint."
    server.default_text = "The answer is B."
    server.prompt_cache = PromptCache("anthropic")
    _, summary, preds = _run_demo(server, "claude-sonnet-4", tmp_path, "once")
    calls = [c for c in server.requests("anthropic") if len(_frames_of(c)) > 1]
    by_video = {}
    for c in calls: by_video.setdefault(_frames_of(c), []).append(c)
    assert sorted(len(v) for v in by_video.values()) == [1, 2, 2, 2, 2]
    [single] = [v[0] for v in by_video.values() if len(v) == 1]
    assert "cache_control" not in json.dumps(single.json) and single.cache_usage["write"] == 0
    for asked in (v for v in by_video.values() if len(v) == 2):      # one write per video asked twice, read by its other question
        assert sorted(bool(c.cache_usage["write"]) for c in asked) == [False, True] and sum(c.cache_usage["read"] > 0 for c in asked) == 1
    written = sum(c.cache_usage["write"] for c in calls)
    assert summary["overall"]["cache_write_tokens"] == written and summary["overall"]["n_errors"] == 0
    read, cost = _demo_estimate(tmp_path, "claude-sonnet-4", {"cache_write_1h": 2000.0})
    assert read > 0 and cost == pytest.approx(3 * read * 1000.0 / 1e6, rel=1e-3)   # 4 videos written once and read once; scenes_04 not written


def test_an_expired_anthropic_cache_is_written_again_not_an_error(server, tmp_path, monkeypatch):
    "Past its lifetime the cache misses: the item is billed as a write, recorded on the item, and answered normally."
    from PIL import Image
    from vlmlens.core import Request, message
    from vlmlens.models.registry import load_backend
    monkeypatch.setenv("ANTHROPIC_API_KEY", _KEYS["ANTHROPIC_API_KEY"])
    now = [0.0]
    server.prompt_cache = PromptCache("anthropic", clock=lambda: now[0])
    frames = [Image.effect_noise((96, 96), 60 + i).convert("RGB") for i in range(16)]
    req = lambda q: Request(q, [message("user", {"type": "video", "path": "ep.mp4", "frames": frames, "timestamps": list(range(16))}, q)])
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False, concurrency=1) as b:
        first, second = b.generate([req("Who?")])[0], b.generate([req("Where?")])[0]
        now[0] += 301                                                           # the 5-minute lifetime has passed
        third = b.generate([req("When?")])[0]
    assert [g.error for g in (first, second, third)] == [None, None, None]
    assert first.usage["cache_write_tokens"] > 1024 and "cached_input_tokens" not in first.usage
    assert second.usage["cached_input_tokens"] == first.usage["cache_write_tokens"]
    assert third.usage["cache_write_tokens"] == first.usage["cache_write_tokens"] and "cached_input_tokens" not in third.usage
    assert second.usage["cost_usd"] < 0.25 * third.usage["cost_usd"]


def test_dry_run_prints_the_estimated_cost_and_creates_nothing(server, tmp_path):
    "vlmlens run --dry-run: items, tokens and USD with and without prompt caching; no request, no folder; VLMLENS_PRICES overrides."
    out = tmp_path / "outputs"
    cmd = _cli("run", "--benchmark", "demo", "--model", "gpt-4o", "--language", "en", "--frames", "8", "--limit", "12",
               "--output-root", str(out), "--model-kwarg", f"base_url={server.openai_base_url}", "--dry-run")
    env = _env(**_KEYS); env.pop("VLMLENS_PRICES", None)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    import re
    m = re.search(r"estimated cost \$([\d.,]+) without prompt caching, \$([\d.,]+) with it", res.stdout)
    assert m and 0 < float(m[2]) < float(m[1]), res.stdout
    assert "12 items" in res.stdout and "platform.openai.com" in res.stdout
    assert server.count() == 0 and not out.exists()                     # nothing sent, nothing created
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o": {"input": 25.0, "cached_input": 12.5, "output": 100.0}}))
    res10 = subprocess.run(cmd, capture_output=True, text=True, env={**env, "VLMLENS_PRICES": str(prices)}, timeout=300)
    m10 = re.search(r"estimated cost \$([\d.,]+) without", res10.stdout)
    assert m10 and float(m10[1]) == pytest.approx(10 * float(m[1]), rel=0.01), res10.stdout
    local = subprocess.run(_cli("run", "--benchmark", "demo", "--model", "tiny-qwen2.5-vl", "--output-root", str(out), "--dry-run"),
                           capture_output=True, text=True, env=env, timeout=300)
    assert local.returncode == 2 and local.stderr.strip().splitlines()[-1].startswith("vlmlens: error:") and "Traceback" not in local.stderr
    assert not out.exists()


def test_dry_run_bills_cache_writes_and_reads_as_the_backend_will(tmp_path):
    "Claude: cache writes at the one-hour rate when the run's pace picks 1h; Gemini: a video's explicit cache is read by its first question too."
    import re
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"claude-sonnet-4": {"input": 0.0, "cached_input": 0.0, "cache_write": 1000.0, "cache_write_1h": 2000.0,
                                                      "output": 0.0},
                                  "gemini-2.5-flash": {"input": 0.0, "cached_input": 1000.0, "cache_write": 0.0, "output": 0.0}}))
    env = {**_env(**_KEYS), "VLMLENS_PRICES": str(prices)}
    def estimate(model, *extra):
        res = subprocess.run(_cli("run", "--benchmark", "demo", "--model", model, "--language", "en", "--frames", "8",
                                  "--output-root", str(tmp_path / "out"), "--model-kwarg", "base_url=http://127.0.0.1:9", "--dry-run", *extra),
                             capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        read = re.search(r"\(([\d,]+) of them read from the provider's prompt cache\)", res.stdout)
        cost = re.search(r"\$([\d.,]+) with it", res.stdout)
        assert read and cost, res.stdout
        return int(read[1].replace(",", "")), float(cost[1].replace(",", ""))
    _, pace = estimate("claude-sonnet-4", "--limit", "12")                        # 16 in flight at ~20 s an answer: 5-minute entries
    _, slow = estimate("claude-sonnet-4", "--limit", "12", "--model-kwarg", "rpm=10")   # 10 a minute: questions minutes apart, 1h
    assert pace > 0 and slow == pytest.approx(2 * pace, rel=1e-3)                 # the same writes, at the one-hour rate
    assert estimate("gemini-2.5-flash", "--limit", "1") == (0, 0.0)           # one question: no explicit cache, nothing written or read
    assert not (tmp_path / "out").exists()


def test_more_frames_than_a_provider_takes_per_request_is_refused_up_front(server, tmp_path):
    "OpenAI takes 500 images a request: --frames 600 is one line, exit 2, no request and no folder; max_images overrides."
    out = tmp_path / "outputs"
    base = ["run", "--benchmark", "demo", "--model", "gpt-4o", "--language", "en", "--limit", "2", "--output-root", str(out),
            "--no-progress", "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "cache=false"]
    env = _env(**_KEYS)
    res = subprocess.run(_cli(*base, "--frames", "600"), capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert res.stderr.strip().splitlines()[-1].startswith("vlmlens: error: gpt-4o takes at most 500 image(s) per request")
    assert server.count() == 0 and not out.exists()
    est = subprocess.run(_cli(*base, "--frames", "600", "--model-kwarg", "max_images=600", "--dry-run"), capture_output=True,
                         text=True, env=env, timeout=300)
    assert est.returncode == 0 and "estimated cost" in est.stdout, est.stderr[-2000:]      # the override is a known option


# ----------------------------------------------------------------------------- Gemini explicit context caches, Claude's cache lifetime

_FRAMES = []


def _noise_video_request(q, n=16, path="ep.mp4"):
    "A question about one video of `n` noise frames (the same frames every time, as the frame cache gives them)."
    from PIL import Image
    from vlmlens.core import Request, message
    while len(_FRAMES) < n: _FRAMES.append(Image.effect_noise((96, 96), 60 + len(_FRAMES)).convert("RGB"))
    frames = _FRAMES[:n]
    return Request(q, [message("system", "Answer with one letter."),
                       message("user", {"type": "video", "path": path, "frames": frames, "timestamps": list(range(n))}, q)])


def _gemini(server, monkeypatch, **kw):
    from vlmlens.models.registry import load_backend
    monkeypatch.setenv("GEMINI_API_KEY", _KEYS["GEMINI_API_KEY"])
    return load_backend("gemini-2.5-flash", base_url=server.gemini_base_url, cache=False, progress=False, concurrency=1, **kw)


def test_gemini_explicit_cache_is_created_once_per_video_read_by_each_question_and_deleted(server, tmp_path):
    "The demo run on Gemini: one cachedContents per video, every video question names it and sends only its question, caches deleted."
    import hashlib
    answer = lambda call: f"The answer is {'ABCD'[hashlib.sha256(call.text.encode()).digest()[0] % 4]}."   # from all the prompt's text
    server.responder = answer
    server.cache_min_tokens = 64                                       # the demo's frames are tiny; real frames are 258 tokens each
    _, on, preds_on = _run_demo(server, "gemini-2.5-flash", tmp_path, "on")
    creates = [c for c in server.requests("caches") if c.method == "POST"]
    calls = server.requests("gemini")
    named = [c for c in calls if (c.json.get("cachedContent") or c.json.get("cached_content"))]
    videos = {c.cached_content.name for c in named}
    assert creates and len(videos) == len(creates)                     # one cache per video, none created twice
    assert all("inlineData" not in json.dumps(c.json) and "inline_data" not in json.dumps(c.json) for c in named)
    assert all(not (c.json.get("systemInstruction") or c.json.get("system_instruction")) for c in named)
    assert not server.cached_contents and sorted(server.cached_deleted) == sorted(videos)     # deleted at the end of the run
    read = sum(c.cached_content.tokens for c in named)
    written = sum({c.cached_content.name: c.cached_content.tokens for c in named}.values())   # each cache's creation, once
    o = on["overall"]
    assert o["cached_input_tokens"] == read and o["cache_write_tokens"] == written
    assert not any(p["usage"].get("cache_fallback") for p in preds_on)
    server.reset(); server.responder = answer
    _, off, preds_off = _run_demo(server, "gemini-2.5-flash", tmp_path, "off", "--model-kwarg", "prompt_cache=false")
    assert server.count("caches") == 0 and o["cached_input_tokens"] > 0
    assert sorted((p["sample_id"], p["raw"]) for p in preds_on) == sorted((p["sample_id"], p["raw"]) for p in preds_off)
    assert len({p["raw"] for p in preds_on}) > 1                        # the answers depend on the text the model was shown
    assert on["overall"]["accuracy"] == off["overall"]["accuracy"]


def test_gemini_makes_no_explicit_cache_for_a_video_the_run_asks_about_once_and_the_dry_run_agrees(server, tmp_path):
    "Demo, 12 items: four videos asked twice get one cache each; scenes_04, asked once, goes as a plain request; the estimate bills the same."
    from vlmlens import runner
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    server.cache_min_tokens = 64                                       # the demo's frames are tiny
    _, summary, preds = _run_demo(server, "gemini-2.5-flash", tmp_path, "once")
    bench = get_benchmark("demo")
    samples, _ = runner.load_run_samples(bench, RunConfig("demo", "gemini-2.5-flash", language="en", limit=12), ("en",), None)
    per_video = Counter(runner.video_key(s) for s in samples if runner.video_key(s))
    assert sorted(per_video.values()) == [1, 2, 2, 2, 2]
    creates = [c for c in server.requests("caches") if c.method == "POST"]
    calls = server.requests("gemini")
    frames = lambda c: json.dumps(c.json).count("inline_data") + json.dumps(c.json).count("inlineData")
    plain_video = [c for c in calls if frames(c) >= 8 and not (c.json.get("cachedContent") or c.json.get("cached_content"))]
    assert len(creates) == 4 and len(plain_video) == 1                # one cache per video asked twice; the single question plain
    assert summary["overall"]["n_errors"] == 0 and not any(p["usage"].get("cache_fallback") for p in preds)
    read, cost = _demo_estimate(tmp_path, "gemini-2.5-flash")
    assert read > 0 and cost == pytest.approx(2 * read * 1000.0 / 1e6, rel=1e-3)   # each cache written once, read by its 2 questions


def test_a_run_counts_the_items_that_fell_back_from_an_expired_cache_in_its_summary(server, tmp_path):
    "Each Gemini cache expires right after its first read: the later questions are asked plainly, counted in summary.json and printed."
    def expire_after_read(call):
        if call.cached_content is not None: server.expire_cached_contents()
        return "The answer is B."
    server.responder = expire_after_read
    server.cache_min_tokens = 64                                       # the demo's frames are tiny
    stdout, summary, preds = _run_demo(server, "gemini-2.5-flash", tmp_path, "expiring")
    refused = [c for c in server.requests("gemini") if c.status == 403]   # named an expired cache: asked again without it
    fell = [p for p in preds if p["usage"].get("cache_fallback")]
    o = summary["overall"]
    assert refused and len(fell) == len(refused) and o["n_errors"] == 0
    assert o["n_cache_fallback"] == len(fell) and o["n_downsampled"] == 0
    assert f"{len(fell)} item(s) asked without the provider cache (expired or not created)" in stdout, stdout


def test_gemini_explicit_cache_billing_expiry_and_failure_fall_back_to_plain_requests(server, monkeypatch):
    "Creation billed once as input, reads at the cached rate; an expired cache: asked plainly, recorded, created again; no cache: plain."
    from vlmlens.models.api import DEFAULT_PRICES
    price = DEFAULT_PRICES["gemini-2.5-flash"]
    with _gemini(server, monkeypatch) as b:
        first, second = b.generate([_noise_video_request("Who?")])[0], b.generate([_noise_video_request("Where?")])[0]
        [cc] = server.cached_contents.values()
        server.expire_cached_contents()
        third = b.generate([_noise_video_request("When?")])[0]           # 403 for the expired cache: the plain request instead
        fourth = b.generate([_noise_video_request("Why?")])[0]           # a new cache for the video's later questions
    assert [g.error for g in (first, second, third, fourth)] == [None] * 4 and {g.text for g in (first, third)} == {"A"}
    assert first.usage["cache_write_tokens"] == cc.tokens and first.usage["cached_input_tokens"] == cc.tokens
    assert second.usage["cached_input_tokens"] == cc.tokens and "cache_write_tokens" not in second.usage
    fresh = second.usage["input_tokens"] - cc.tokens
    assert first.usage["input_tokens"] == second.usage["input_tokens"] + cc.tokens     # the creation is input, billed once
    assert second.usage["cost_usd"] == pytest.approx((fresh * price["input"] + cc.tokens * price["cached_input"]
                                                      + second.usage["output_tokens"] * price["output"]) / 1e6)
    assert first.usage["cost_usd"] == pytest.approx(second.usage["cost_usd"] + cc.tokens * price["input"] / 1e6)
    assert third.usage.get("cache_fallback") == 1 and "cached_input_tokens" not in third.usage
    assert third.usage["input_tokens"] > cc.tokens                       # the frames were sent again, in full
    assert fourth.usage["cache_write_tokens"] == cc.tokens and "cache_fallback" not in fourth.usage
    assert len([c for c in server.requests("caches") if c.method == "POST"]) == 2 and not server.cached_contents
    server.reset(); server.cache_min_tokens = 10 ** 9                   # the service refuses to create it: plain, recorded, not an error
    with _gemini(server, monkeypatch) as b:
        gens = b.generate([_noise_video_request(q) for q in ("Who?", "Where?", "When?")])
    assert [g.error for g in gens] == [None] * 3 and all(g.usage.get("cache_fallback") == 1 for g in gens)
    assert len([c for c in server.requests("caches") if c.method == "POST"]) == 1      # one refused creation, not one per question
    server.reset(); server.cache_create_faults = [503]                 # a passing fault: the next question creates it
    with _gemini(server, monkeypatch) as b:
        first, second = b.generate([_noise_video_request("Who?")])[0], b.generate([_noise_video_request("Where?")])[0]
    assert first.usage.get("cache_fallback") == 1 and second.usage["cache_write_tokens"] > 0 and "cache_fallback" not in second.usage
    server.reset()
    with _gemini(server, monkeypatch, prompt_cache=False) as b: b.generate([_noise_video_request("Who?")])
    assert server.count("caches") == 0


def test_a_second_process_reuses_the_live_gemini_cache_of_a_video_instead_of_creating_its_own(server, monkeypatch):
    "Two backends (two shards) on one video: one cache created, both name it; only its maker bills and deletes it; an expired one is not reused."
    with _gemini(server, monkeypatch) as a, _gemini(server, monkeypatch) as b:
        ga = a.generate([_noise_video_request("Who?")])[0]
        gb = b.generate([_noise_video_request("Where?")])[0]
        [cc] = server.cached_contents.values()
        named = [c.cached_content.name for c in server.requests("gemini") if c.cached_content is not None]
        assert [g.error for g in (ga, gb)] == [None, None] and named == [cc.name, cc.name]
        assert ga.usage["cache_write_tokens"] == cc.tokens and "cache_write_tokens" not in gb.usage
        assert gb.usage["cached_input_tokens"] == cc.tokens and (a.stats["context_caches"], b.stats["context_caches"]) == (1, 0)
        b.close()
        assert cc.name in server.cached_contents                          # not b's to delete
    assert server.cached_deleted == [cc.name]
    server.reset()
    with _gemini(server, monkeypatch) as a, _gemini(server, monkeypatch) as b:
        a.generate([_noise_video_request("Who?")])
        for c in server.cached_contents.values(): c.expires = server.cache_clock() + 60   # a minute left: not worth reusing
        b.generate([_noise_video_request("Where?")])
    assert len([c for c in server.requests("caches") if c.method == "POST"]) == 2


def test_claude_cache_lifetime_is_chosen_from_the_run_pace_and_billed_at_its_rate(server, monkeypatch):
    "5 minutes at a normal pace; one hour when a video's questions may be more than 4 minutes apart, or when asked; 1h writes at 2× input."
    from vlmlens.models.api import DEFAULT_PRICES
    from vlmlens.models.registry import load_backend
    monkeypatch.setenv("ANTHROPIC_API_KEY", _KEYS["ANTHROPIC_API_KEY"])
    now = [0.0]
    price = DEFAULT_PRICES["claude-sonnet-4"]
    ttls = lambda: [b["cache_control"]["ttl"] for c in server.requests("anthropic") for m in c.json["messages"]
                    for b in m["content"] if "cache_control" in b]
    runs = {}
    for label, kw in (("pace", {}), ("slow", {"window": 100}), ("asked", {"cache_ttl": "1h"})):
        server.reset(); server.prompt_cache = PromptCache("anthropic", clock=lambda: now[0])
        with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False, concurrency=1, **kw) as b:
            first = b.generate([_noise_video_request("Who?")])[0]
            now[0] += 301                                                 # past the 5-minute lifetime
            later = b.generate([_noise_video_request("Where?")])[0]
        runs[label] = (ttls(), first, later)
    assert runs["pace"][0] == ["5m", "5m"] and runs["slow"][0] == ["1h", "1h"] and runs["asked"][0] == ["1h", "1h"]
    assert all(c.headers.get("anthropic-beta") == "extended-cache-ttl-2025-04-11" for c in server.requests("anthropic"))  # the 1h runs
    _, first, later = runs["pace"]
    assert "cached_input_tokens" not in later.usage and later.usage["cache_write_tokens"] == first.usage["cache_write_tokens"]
    for label in ("slow", "asked"):
        _, first, later = runs[label]
        n = first.usage["cache_write_tokens"]
        assert first.usage["cache_write_1h_tokens"] == n and later.usage["cached_input_tokens"] == n     # the 1h entry outlived 5 min
        fresh = first.usage["input_tokens"] - n
        assert first.usage["cost_usd"] == pytest.approx((fresh * price["input"] + n * price["cache_write_1h"]
                                                         + first.usage["output_tokens"] * price["output"]) / 1e6)


def test_a_request_over_the_providers_size_limit_is_scaled_down_and_recorded_not_a_413(server, monkeypatch):
    "Claude takes 32 MB a request (here a 60 kB stand-in): frames that would exceed it are sent smaller, the item says so, nothing fails."
    from loopback import Reply
    from vlmlens.models.registry import load_backend
    monkeypatch.setenv("ANTHROPIC_API_KEY", _KEYS["ANTHROPIC_API_KEY"])
    limit = 60_000
    server.responder = lambda call: Reply(413, json={"_message": "request_too_large"}) if call.body_size > limit else None
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False, max_request_mb=limit / 1e6) as b:
        small, big = b.generate([_noise_video_request("Who?", n=2), _noise_video_request("Where?", n=16)])
    assert (small.error, big.error) == (None, None) and big.text == "A"
    assert big.usage.get("downsampled") is True and "downsampled" not in small.usage
    assert all(c.body_size <= limit and c.status == 200 for c in server.requests("anthropic"))
    with load_backend("claude-sonnet-4", base_url=server.anthropic_base_url, cache=False, progress=False, max_request_mb=1e-3) as b:
        [g] = b.generate([_noise_video_request("Who?", n=16)])
    assert g.error.startswith("request:") and "even with its images at 1/8 size" in g.error and len(server.requests("anthropic")) == 2


def test_more_frames_than_gemini_takes_inline_is_refused_up_front_unless_the_video_goes_native(server, tmp_path):
    "Gemini takes 3,600 inline images a request: --frames 4000 as frames is one line, exit 2; as native video it is fine."
    out = tmp_path / "outputs"
    base = ["run", "--benchmark", "demo", "--model", "gemini-2.5-flash", "--language", "en", "--limit", "2", "--output-root", str(out),
            "--model-kwarg", f"base_url={server.gemini_base_url}", "--frames", "4000"]
    res = subprocess.run(_cli(*base), capture_output=True, text=True, env=_env(**_KEYS), timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert res.stderr.strip().splitlines()[-1].startswith("vlmlens: error: gemini-2.5-flash takes at most 3600 image(s) per request")
    assert server.count() == 0 and not out.exists()
    est = subprocess.run(_cli(*base, "--model-kwarg", "video=native", "--dry-run"), capture_output=True, text=True, env=_env(**_KEYS),
                         timeout=300)
    assert est.returncode == 0, est.stderr[-2000:]
