"""Benchmark: the translation step's concurrency against its ideal, and the rerun that makes zero engine calls.

    python benchmarks/translate.py                       # 10,000 items, Azure Translator client, 50 ms latency
    python benchmarks/translate.py --engine aws          # the same through boto3 (one call per distinct text)
    python benchmarks/translate.py --n 1000              # a quicker look (results file not written)

Loopback MT services (``tests/loopback_mt.py``, in their own process, as a real service would be) answer every
request after ``--latency`` seconds. ``vlmlens.curation.translate.translate`` translates ``n`` one-question items
(question + answer) with the engine's real client at the default concurrency (16): requests go through the API
layer's pool, results are written to the step as they arrive (items, then their units' done lines, a batch per
fsync) and every response is cached.

1. **first run** — wall time against the ideal ``calls × latency / concurrency``, where ``calls`` is what the server
   counted (one per item for Azure and Google, one per distinct text for AWS); target within 1.3× of it.
   A bare aiohttp client sending the same requests is timed in the same run: its ratio is the floor that the server,
   the loopback network and the timers set without any client work.
2. **rerun, same build** — the step resumes: nothing pending, zero engine calls.
3. **rerun, new build folder** — a new step over the same records: every answer comes from the response cache,
   zero engine calls.

The ideal is computed in the same run from the server's own count. Exit status 1 when a target is missed. The table
goes to stdout and, for the default parameters, to ``benchmarks/results/translate.md``.
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
sys.path.insert(0, str(HERE))

from loopback_mt import MTLoopbackProcess  # noqa: E402
from bare_client import bare_post_wall  # noqa: E402

DEFAULTS = dict(n=10_000, latency=0.05, engine="azure")
KEYS = {"AWS_ACCESS_KEY_ID": "AKIALOOPBACKBENCH000", "AWS_SECRET_ACCESS_KEY": "loopback-bench-secret-000000000000000000",
        "AZURE_TRANSLATOR_KEY": "loopback0bench0azure0key0000000000", "GOOGLE_TRANSLATE_API_KEY": "loopback-bench-google-key-0000",
        "GOOGLE_CLOUD_PROJECT": "vlmlens-bench"}


def records(n: int) -> list[dict]:
    return [{"align_id": f"q{i:05d}", "question": f"How many red circles are in image {i}?", "answer": "none"} for i in range(n)]


def run(server, recs, root, engine: str, concurrency: int | None) -> tuple[float, int, dict]:
    from vlmlens.curation.translate import translate
    opts = {"endpoint_url": server.url, **({"concurrency": concurrency} if concurrency else {})}
    before = server.count()
    t0, c0 = time.perf_counter(), time.process_time()
    st = translate(recs, root, engine, "hi", engine_options=opts)
    run.cpu_s = time.process_time() - c0
    return time.perf_counter() - t0, server.count() - before, st.summary()


def bare_client(url: str, n: int, concurrency: int, latency: float) -> float:
    "Wall time / ideal of a bare aiohttp client sending the same Azure requests: what the server and the OS add alone."
    bodies = [{"inputs": [{"text": t, "language": "en", "targets": [{"language": "hi"}]}
                          for t in (f"How many red circles are in image {i}?", "none")]} for i in range(n)]
    return bare_post_wall(url + "/translate?api-version=bare", bodies, concurrency) / (n * latency / concurrency)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=DEFAULTS["n"])
    ap.add_argument("--latency", type=float, default=DEFAULTS["latency"])
    ap.add_argument("--engine", default=DEFAULTS["engine"], choices=["azure", "aws", "google"])
    ap.add_argument("--concurrency", type=int, default=None, help="default: the engine's default (16)")
    a = ap.parse_args(argv)
    os.environ.update(KEYS)
    tmp = Path(tempfile.mkdtemp(prefix="vlmlens-bench-translate-"))
    os.environ["VLMLENS_CACHE"] = str(tmp / "cache")
    from vlmlens.curation.translate import MTBackend
    import inspect
    conc = a.concurrency or inspect.signature(MTBackend.__init__).parameters["concurrency"].default
    recs = records(a.n)
    with MTLoopbackProcess(latency=a.latency) as server:
        t1, calls1, s1 = run(server, recs, tmp / "build", a.engine, a.concurrency)
        cpu1 = run.cpu_s
        ideal = calls1 * a.latency / conc
        peak = server.max_in_flight
        t2, calls2, s2 = run(server, recs, tmp / "build", a.engine, a.concurrency)
        t3, calls3, s3 = run(server, recs, tmp / "build2", a.engine, a.concurrency)
        bare = bare_client(server.url, min(a.n, 3000), conc, a.latency)
    ok1 = t1 <= 1.3 * ideal and s1["n_items"] == a.n and s1["n_failed"] == 0
    ok2, ok3 = calls2 == 0 and s2["n_items"] == a.n, calls3 == 0 and s3["n_items"] == a.n
    lines = [f"# Translation step ({a.engine} client → loopback service)", "",
             f"{a.n:,} items (question + answer), default concurrency {conc}, simulated latency {a.latency * 1000:.0f} ms; "
             f"ideal = engine calls × {a.latency} / {conc}. Python {platform.python_version()}, {os.cpu_count()} CPUs.", "",
             "| run | wall s | × ideal | engine calls | items |", "|---|---|---|---|---|",
             f"| first (cold cache) | {t1:.2f} | {t1 / ideal:.3f} | {calls1:,} | {s1['n_items']:,} |",
             f"| rerun, same build (resumes) | {t2:.2f} | {t2 / ideal:.3f} | {calls2} | {s2['n_items']:,} |",
             f"| rerun, new build (cache) | {t3:.2f} | {t3 / ideal:.3f} | {calls3} | {s3['n_items']:,} |", "",
             f"- first run within 1.3× of ideal ({ideal:.2f} s): {'yes' if ok1 else 'NO'} (max in flight at the server: {peak}, limit {conc})",
             f"- baseline measured in the same run: a bare aiohttp client sending the same requests ({min(a.n, 3000):,} of them) at the "
             f"same concurrency takes {bare:.3f}× the ideal (what the loopback server, the loopback network and the timers add alone)",
             f"- client CPU time of the first run: {cpu1:.1f} s = {cpu1 / max(calls1, 1) * 1000:.2f} ms per engine call (SDK, cache, checks, "
             f"writes); the ideal leaves {a.latency / conc * 1000:.2f} ms of wall time per call, so a run whose CPU per call exceeds "
             f"that is CPU-bound (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs during the run)",
             f"- rerun of the same step made zero engine calls: {'yes' if ok2 else 'NO'}",
             f"- a new step over the same records made zero engine calls (all cached): {'yes' if ok3 else 'NO'}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if (a.n, a.latency, a.engine, a.concurrency) == (DEFAULTS["n"], DEFAULTS["latency"], DEFAULTS["engine"], None):
        (HERE / "results" / "translate.md").write_text(text, encoding="utf-8")
    return 0 if ok1 and ok2 and ok3 else 1


if __name__ == "__main__":
    sys.exit(main())
