"""The same benchmark on an API model by changing only --model (and pointing the client at the loopback server)."""
import json
import subprocess
import sys

import pytest




@pytest.mark.parametrize("model", ["gpt-4o", "gemini-2.5-flash"])
def test_demo_benchmark_on_api_models_via_the_cli(server, model, tmp_path, monkeypatch):
    server.reset(); server.default_text = "The answer is B."
    env = {k: v for k, v in __import__("os").environ.items()}
    env.update(OPENAI_API_KEY="sk-test.not-a-real-key.000000000000", GEMINI_API_KEY="test-gemini-key-0000")
    base = server.openai_base_url if model.startswith("gpt") else server.gemini_base_url
    cmd = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
           "--model", model, "--language", "en", "--frames", "4", "--limit", "6", "--output-root", str(tmp_path),
           "--run-name", "api", "--no-progress", "--model-kwarg", f"base_url={base}",
           "--model-kwarg", f"cache={tmp_path / 'cache.sqlite'}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ALL" in out.stdout
    summary = json.loads((tmp_path / "api" / "summary.json").read_text())
    assert summary["overall"]["n"] == 6 and summary["overall"]["n_errors"] == 0
    assert summary["overall"]["input_tokens"] > 0
    api = "openai" if model.startswith("gpt") else "gemini"
    calls = server.requests(api)
    assert len(calls) == 6 and {c.model for c in calls} == {model}
    # video items reached the API as frames (images) — four per video question
    assert any(json.dumps(c.json).count("image/jpeg") >= 4 for c in calls)
    info = (tmp_path / "api" / "run.json").read_text()
    assert "sk-test.not-a-real-key" not in info and "test-gemini-key" not in info
