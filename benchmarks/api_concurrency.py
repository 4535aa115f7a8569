"""Benchmark: API backend throughput under bounded concurrency, and the response cache.

    python benchmarks/api_concurrency.py                      # 500 requests, concurrency 16, 200 ms latency
    python benchmarks/api_concurrency.py --backend gemini     # the same through google-genai

A loopback HTTP server (``tests/loopback.py``, in its own process, as a real API server would be)
answers every chat-completions (or Gemini generateContent) request after a simulated service time
of ``--latency`` seconds. With ``n`` requests
and ``c`` in flight, the ideal wall time is ``n * latency / c`` (500 × 0.2 / 16 = 6.25 s); the backend
must finish within 1.25× of it, through the real client library, with the server never seeing more
than ``c`` requests at once. A second, identical run (a fresh backend on the same cache file, as a
rerun in a new process would be) must make zero requests. Exit status 1 when either check fails.
The table goes to stdout and to ``benchmarks/results/api_concurrency.md``.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from loopback import LoopbackProcess  # noqa: E402

from vlmlens.core import Request, message  # noqa: E402


def make_backend(kind: str, server: LoopbackProcess, cache: Path, concurrency: int):
    common = dict(concurrency=concurrency, cache=str(cache), progress=False, timeout_s=30)
    if kind == "openai":
        from vlmlens.models.openai import OpenAIBackend
        return OpenAIBackend("bench-model", compatible=True, base_url=server.openai_base_url, **common)
    from vlmlens.models.gemini import GeminiBackend
    os.environ.setdefault("GEMINI_API_KEY", "loopback-dummy-key")
    return GeminiBackend("gemini-2.5-flash", base_url=server.gemini_base_url, **common)


def timed_run(kind, server, cache, n, concurrency):
    reqs = [Request(f"item-{i}", [message("user", f"Question number {i}: which option is right?")]) for i in range(n)]
    before = server.count(kind)
    backend = make_backend(kind, server, cache, concurrency)
    t0 = time.perf_counter()
    gens = backend.generate(reqs)
    wall = time.perf_counter() - t0
    backend.close()
    errors = sum(g.error is not None for g in gens)
    cached = sum(bool(g.usage.get("cached")) for g in gens)
    return {"wall_s": wall, "requests": server.count(kind) - before, "errors": errors, "cached": cached}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["openai", "gemini"], default="openai")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--bound", type=float, default=1.25, help="allowed wall time as a multiple of the ideal")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/api_concurrency.md")
    a = ap.parse_args(argv)

    ideal = a.n * a.latency / a.concurrency
    with tempfile.TemporaryDirectory() as d, LoopbackProcess(latency=a.latency) as server:
        cache = Path(d) / "api_cache.sqlite"
        first = timed_run(a.backend, server, cache, a.n, a.concurrency)
        max_in_flight = server.max_in_flight
        second = timed_run(a.backend, server, cache, a.n, a.concurrency)

    ok_time = first["wall_s"] <= a.bound * ideal and first["errors"] == 0 and first["requests"] == a.n
    ok_cache = second["requests"] == 0 and second["cached"] == a.n
    ok_bound = max_in_flight <= a.concurrency
    lines = [
        f"# API concurrency ({a.backend} client → loopback server)",
        "",
        f"{a.n} requests, concurrency {a.concurrency}, simulated latency {a.latency * 1000:.0f} ms; "
        f"ideal {a.n} × {a.latency} / {a.concurrency} = {ideal:.2f} s. "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        "| run | wall s | × ideal | requests sent | cache hits | errors |",
        "|---|---|---|---|---|---|",
        f"| first (cold cache) | {first['wall_s']:.2f} | {first['wall_s'] / ideal:.3f} | {first['requests']} | {first['cached']} | {first['errors']} |",
        f"| second (same requests) | {second['wall_s']:.2f} | {second['wall_s'] / ideal:.3f} | {second['requests']} | {second['cached']} | {second['errors']} |",
        "",
        f"- first run within {a.bound}× of ideal: {'yes' if ok_time else 'NO'} "
        f"(max in flight at the server: {max_in_flight}, limit {a.concurrency}: {'ok' if ok_bound else 'EXCEEDED'})",
        f"- second run made zero requests: {'yes' if ok_cache else 'NO'}",
    ]
    text = "\n".join(lines)
    print(text)
    if not a.no_write and a.n == 500 and a.concurrency == 16 and a.latency == 0.2:
        out = HERE / "results" / "api_concurrency.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text + "\n")
    return 0 if (ok_time and ok_cache and ok_bound) else 1


if __name__ == "__main__":
    raise SystemExit(main())
