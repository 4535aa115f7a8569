"""The same benchmark on an API model by changing only --model (and pointing the client at the loopback server)."""
import json
import subprocess
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
    # video items reached the API as frames (images) — four per video question
    assert any(json.dumps(c.json).count("image/jpeg") >= 4 for c in calls)
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
