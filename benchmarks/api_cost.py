"""Benchmark: what provider prompt caching saves on an API evaluation (the video paid for once).

    python benchmarks/api_cost.py                             # 4 videos x 20 questions x 64 frames, concurrency 16
    python benchmarks/api_cost.py --videos 2 --questions 5 --frames 16     # a quicker look (results file not written)

An InfiniBench-shaped load — a few long videos, many multiple-choice questions each, the video sent as timestamped
frames — goes through the real run path (`vlmlens.runner.run`: video-first order, a video's first question asked
before its others, frames decoded once per video) to the real OpenAI, Anthropic and Gemini clients, pointed at the
loopback server (``tests/loopback.py``). Its ``PromptCache`` implements each provider's documented cache: OpenAI's
automatic prefix caching (1024-token minimum, 128-token steps, ``cached_tokens``), Anthropic's ``cache_control``
breakpoints (reads and writes reported separately, 5-minute or 1-hour entries), Gemini's explicit context caches
(``cachedContents``, created once per video, named by each question; ``cachedContentTokenCount``).

For each provider the same run is made as **uncached** (a server whose cache never hits, ``prompt_cache=false``) and
**cached** (the provider's cache, vlmlens's cache controls on). After one warm-up run (it decodes the frames), the two
are run ``--repeats`` times as back-to-back pairs, the order alternating (uncached first, then cached first) so that
drift on a shared machine falls on both; the wall-time ratio reported is the **median of the pairs' cached/uncached
ratios**, with their range. Billed input cost is priced with vlmlens's dated price table
(``vlmlens.models.api.DEFAULT_PRICES``) from the usage the server reported; the ratio is cached / uncached, computed in
the same process (it is deterministic). Targets: input cost <= 0.35x (OpenAI), <= 0.25x (Anthropic), <= 0.35x (Gemini);
identical answers and scores in every run; median wall-time ratio <= 1.1x. The CPU time of this process (client and
loopback server together) is reported beside it: the same work gives a CPU ratio near 1 whatever the machine's load. Every answer takes ``--latency`` s. Exit
status 1 when a target is missed. The table goes to stdout and, for the default parameters, to
``benchmarks/results/api_cost.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from loopback import LoopbackServer, PromptCache  # noqa: E402

from vlmlens.core import Media, RunConfig, Sample  # noqa: E402
from vlmlens.models.api import DEFAULT_PRICES, PRICES_AS_OF  # noqa: E402

DEFAULTS = dict(videos=4, questions=20, frames=64, concurrency=16)
TARGETS = {"openai": 0.35, "anthropic": 0.25, "gemini": 0.35}
MODELS = {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4", "gemini": "gemini-2.5-flash"}


def make_videos(root: Path, n: int, seconds: int = 64) -> list[Path]:
    "Synthetic episodes (320x180 at 1 fps: a coloured scene with a moving block, a new scene every 16 s), one file each."
    import numpy as np
    from vlmlens.media import write_video
    out = []
    for v in range(n):
        frames = []
        for t in range(seconds):
            f = np.full((180, 320, 3), ((37 * v + 60 * (t // 16)) % 256, (90 + 11 * v) % 256, 140), dtype="uint8")
            x = (t * 9) % 280
            f[60:120, x:x + 40] = (250, 250 - 3 * t % 250, 30)
            frames.append(f)
        out.append(write_video(root / f"episode{v}.mp4", frames, fps=1))
    return out


def make_samples(videos: list[Path], questions: int) -> list[Sample]:
    return [Sample(f"v{v}q{q}", "demo", "video_color", question=f"Episode {v}, question {q}: what happens after the scene change?",
                   options=["the door opens", "the light goes out", "a car arrives", "nothing"], answer=q % 4,
                   media=[Media("video", str(p))], language="en")
            for v, p in enumerate(videos) for q in range(questions)]


def backend(api: str, server, concurrency: int, prompt_cache: bool):
    from vlmlens.models.registry import load_backend
    base = {"openai": server.openai_base_url, "anthropic": server.anthropic_base_url, "gemini": server.gemini_base_url}[api]
    return load_backend(MODELS[api], base_url=base, cache=False, progress=False, concurrency=concurrency, prompt_cache=prompt_cache)


def one_run(api: str, server, samples, cfg: dict, cached: bool, out: Path) -> dict:
    from vlmlens.runner import run
    server.reset(); server.latency = cfg["latency"]; server.default_text = "B"
    server.prompt_cache = PromptCache(api) if cached else PromptCache(api, min_tokens=10 ** 12)   # same server work, never a hit
    b = backend(api, server, cfg["concurrency"], cached)
    rc = RunConfig("demo", MODELS[api], num_frames=cfg["frames"], output_root=str(out), run_name=f"{api}-{'on' if cached else 'off'}",
                   progress=False, allow_outside_media=True, max_new_tokens=8)
    t0, c0 = time.perf_counter(), time.process_time()
    try: summary = run(rc, backend=b, samples=samples)
    finally: b.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    preds = [json.loads(l) for l in (Path(summary["run_dir"]) / "predictions.jsonl").read_text().splitlines() if l.strip()]
    price, o = DEFAULT_PRICES[MODELS[api]], summary["overall"]
    input_usd = o["cost_usd"] - o["output_tokens"] * price["output"] / 1e6
    return {"wall": wall, "cpu": cpu, "input_usd": input_usd, "share": o["cached_input_share"] or 0.0, "errors": o["n_errors"],
            "answers": {p["sample_id"]: p["raw"] for p in preds}, "accuracy": o["accuracy"], "input_tokens": o["input_tokens"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for k, v in DEFAULTS.items(): ap.add_argument(f"--{k}", type=int, default=v)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per answer")
    ap.add_argument("--apis", default="openai,anthropic,gemini")
    ap.add_argument("--repeats", type=int, default=5, help="back-to-back (uncached, cached) pairs per provider")
    a = ap.parse_args(argv)
    for k, v in (("OPENAI_API_KEY", "loopback-openai-key-0000"), ("ANTHROPIC_API_KEY", "loopback-anthropic-0000"),
                 ("GEMINI_API_KEY", "loopback-gemini-key-0000")): os.environ.setdefault(k, v)
    os.environ.pop("VLMLENS_PRICES", None)
    cfg = {"frames": a.frames, "concurrency": a.concurrency, "latency": a.latency}
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as server:
        samples = make_samples(make_videos(Path(tmp) / "videos", a.videos), a.questions)
        for api in a.apis.split(","):
            runs = [one_run(api, server, samples, cfg, False, Path(tmp) / f"{api}-warm")]        # decodes the frames: not timed
            pairs = []
            for i in range(a.repeats):
                order = (False, True) if i % 2 == 0 else (True, False)
                got = {c: one_run(api, server, samples, cfg, c, Path(tmp) / f"{api}-{i}-{int(c)}") for c in order}
                runs += got.values(); pairs.append((got[False], got[True]))
            off, on = pairs[0]
            walls = sorted(b["wall"] / a_["wall"] for a_, b in pairs)
            wall, cpu = statistics.median(walls), statistics.median(b["cpu"] / a_["cpu"] for a_, b in pairs)
            ratio = on["input_usd"] / off["input_usd"]
            same = all(r["answers"] == off["answers"] and r["accuracy"] == off["accuracy"] and not r["errors"] for r in runs)
            met = ratio <= TARGETS[api] and wall <= 1.1 and same
            ok &= met
            med = lambda k: statistics.median(p[k]["wall"] for p in pairs)
            rows.append(f"| {api} ({MODELS[api]}) | {off['input_usd']:.4f} | {on['input_usd']:.4f} | **{ratio:.2f}x** (<= {TARGETS[api]}) "
                        f"| {100 * on['share']:.1f} % | {'yes' if same else 'NO'} | {med(0):.1f} / {med(1):.1f} s "
                        f"| **{wall:.2f}x** ({walls[0]:.2f}-{walls[-1]:.2f}) | {cpu:.2f}x | {'met' if met else 'MISSED'} |")
            print(rows[-1], flush=True)
    head = ["| provider (model) | input USD uncached (loopback tokens) | input USD cached | cached / uncached | cached share of input "
            "| same answers and scores | median wall uncached / cached | wall ratio: median of pairs (range) | CPU ratio (median) | target |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    text = "\n".join([f"# API cost with provider prompt caching\n",
                      f"{a.videos} videos x {a.questions} questions x {a.frames} frames, concurrency {a.concurrency}, "
                      f"{a.latency:g} s per answer, loopback servers with each provider's documented cache; prices of "
                      f"{PRICES_AS_OF} (vlmlens.models.api.DEFAULT_PRICES); wall times from {a.repeats} back-to-back "
                      f"(uncached, cached) pairs per provider, order alternating, after a warm-up run. "
                      f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs.\n", *head, *rows, ""])
    print(text)
    if all(getattr(a, k) == v for k, v in DEFAULTS.items()) and a.apis == "openai,anthropic,gemini" and a.repeats >= 5:
        (HERE / "results" / "api_cost.md").write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
