"""Harness overhead per item as a share of model time, for every tiny local architecture, at batch size 8 on this CPU.

For each registered `tiny-*` model, the demo benchmark's image and video items (English, Hindi, Telugu) go through the
runner's own `run_batch` — prompt building, frame sampling and decoding, subtitle rendering, generation, parsing and
scoring — and every prediction through `RunStore.append_prediction` (one fsynced JSONL line), exactly as `vlmlens run`
does. Generation (the backend's `generate`: chat template, processor, model) is timed inside, so

    harness = (run_batch − generate) + store          model = generate          share = harness / model

measured in the same run for the same items. Target: share ≤ 10%. The tiny models are ~0.1 M parameters, so this is
the harshest case for the ratio: a real 7B model spends 10³–10⁴× longer per item while the harness does the same work.

    python benchmarks/model_overhead.py                     # all tiny models, 32 items each, batch 8, 4 frames
    python benchmarks/model_overhead.py --models tiny-gemma3 --items 16 --write benchmarks/results/model_overhead.md
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from vlmlens import runner
from vlmlens.benchmarks.base import get_benchmark
from vlmlens.core import RunConfig
from vlmlens.media import FrameCache
from vlmlens.models.registry import known_models, load_backend
from vlmlens.store import RunStore


class Timed:
    "A backend proxy that adds up the wall time spent in `generate`."
    def __init__(self, backend):
        self.backend, self.seconds = backend, 0.0

    def __getattr__(self, name): return getattr(self.backend, name)

    def generate(self, requests, **kw):
        t0 = time.perf_counter()
        try: return self.backend.generate(requests, **kw)
        finally: self.seconds += time.perf_counter() - t0


def timed_batches(bench, timed, batches, cfg, cache, store) -> tuple[float, float, int]:
    "Each batch through `runner.run_batch`, its predictions through `store`: (seconds in run_batch, seconds storing, errors)."
    t_run, t_store, errors = 0.0, 0.0, 0
    for batch in batches:
        t0 = time.perf_counter()
        preds = runner.run_batch(bench, timed, batch, cfg, cache)
        t1 = time.perf_counter()
        for p in preds: store.append_prediction(p)
        t_run, t_store = t_run + (t1 - t0), t_store + (time.perf_counter() - t1)
        errors += sum(p.error is not None for p in preds)
    return t_run, t_store, errors


def measure(model: str, items: int, batch: int, frames: int, new_tokens: int, root: Path) -> dict:
    "Per-item harness and model seconds for `items` demo items on `model` (after one warm-up batch)."
    cfg = RunConfig("demo", model, num_frames=frames, max_new_tokens=new_tokens, batch_size=batch, subset="image_color,image_number,video_order,video_color",
                    output_root=str(root), run_name=model, progress=False, overwrite=True)
    bench = get_benchmark("demo")
    samples, _ = bench.load(cfg)
    samples = bench.filter(samples, cfg)
    pool = (samples * (1 + (items + batch) // max(1, len(samples))))[: items + batch]
    with load_backend(model, batch_size=batch) as b:
        timed, store, cache = Timed(b), RunStore.open(cfg), FrameCache()
        runner.run_batch(bench, timed, pool[:batch], cfg, cache)                    # warm-up: first decode, kernels
        timed.seconds = 0.0
        t_run, t_store, n_err = timed_batches(bench, timed, [pool[i:i + batch] for i in range(batch, len(pool), batch)],
                                              cfg, cache, store)
        kind = b.kind
    n = len(pool) - batch
    model_s, harness_s = timed.seconds / n, (t_run - timed.seconds + t_store) / n
    return {"model": model, "backend": kind, "items": n, "errors": n_err, "model_ms": 1e3 * model_s,
            "harness_ms": 1e3 * harness_s, "store_ms": 1e3 * t_store / n, "share": harness_s / model_s}


def table(rows: list[dict], batch: int, frames: int, new_tokens: int) -> str:
    out = [f"Harness overhead per item vs model time (batch size {batch}, {frames} frames per video, {new_tokens} new tokens, "
           f"CPU, median of repeats)", "",
           "| model | backend | items | model ms/item | harness ms/item | of which store | harness / model |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| `{r['model']}` | {r['backend']} | {r['items']} | {r['model_ms']:.1f} | {r['harness_ms']:.2f} | "
                   f"{r['store_ms']:.2f} | {100 * r['share']:.1f}% |")
    worst = max(r["share"] for r in rows)
    out += ["", f"worst share {100 * worst:.1f}% (target ≤ 10%): {'met' if worst <= 0.10 else 'NOT met'}"]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=[m for m in known_models() if m.startswith("tiny-")])
    ap.add_argument("--items", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", help="also write the table to this Markdown file")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="vlmlens-overhead-") as d:
        for m in a.models:
            frames = 1 if m == "tiny-mllama" else a.frames                        # one image per request
            runs = [measure(m, a.items, a.batch_size, frames, a.max_new_tokens, Path(d) / str(i)) for i in range(a.repeats)]
            r = dict(runs[0])
            for k in ("model_ms", "harness_ms", "store_ms", "share"): r[k] = statistics.median(x[k] for x in runs)
            r["errors"] = max(x["errors"] for x in runs)
            rows.append(r)
            print(f"{m:22s} model {r['model_ms']:8.1f} ms/item  harness {r['harness_ms']:6.2f} ms/item  "
                  f"share {100 * r['share']:5.1f}%  errors {r['errors']}", flush=True)
    text = table(rows, a.batch_size, a.frames, a.max_new_tokens)
    print("\n" + text)
    if a.write: Path(a.write).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
