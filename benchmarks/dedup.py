"""Benchmark: question deduplication (InfiniBench §3.2.3, App. B.5) — vlmlens.curation.dedup vs a brute-force NumPy baseline.

    python benchmarks/dedup.py                          # 100,000 questions at 0.95, baseline on 10,000
    python benchmarks/dedup.py --embed-all              # embed all 100,000 with MiniLM (slow on 2 cores; cached after)
    python benchmarks/dedup.py --n 20000 --baseline 5000

The questions are InfiniBench-style (question + answer choices; 77 per video, like InfiniBench's 91K questions over
1,219 videos), written from templates with 2% near-duplicate rewrites. Stages, each timed in this run:

1. embedding with the offline default, all-MiniLM-L6-v2 (sentence-transformers, batched, L2-normalised). Unless
   `--embed-all`, a sample of `--embed-sample` questions is embedded and the time for all N is extrapolated from the
   measured rate (printed as such); the N vectors for stage 2 are then blends of three of the sample's real MiniLM
   vectors each (plus a little noise; the 2% rewrites get their original's vector plus noise), so that the search sees
   realistic similarities without re-embedding.
2. the pair search at 0.95 over all N vectors, same-video scope (the default), tiled matrix products
   (`vlmlens.curation.dedup.similar_pairs`), and the clusters kept/removed;
3. the baseline: the full N×N similarity matrix in NumPy on the first `--baseline` questions, for the same scope and
   threshold; the flagged pairs must be identical to stage 2's on those questions (checked, printed), and the
   whole-set scope (`all`) is compared too.

Results go to stdout and to ``benchmarks/results/dedup.md``.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PER_VIDEO = 77
SKILLS = ("global_appearance", "scene_transitions", "character_actions", "chronological_understanding",
          "summarization", "deep_context_understanding", "spoiler_questions", "linking_multiple_events")
NAMES = ["Sheldon", "Penny", "Leonard", "Howard", "Raj", "Amy", "Bernadette", "Ross", "Rachel", "Monica", "Chandler", "Joey",
         "Phoebe", "House", "Cuddy", "Wilson", "Ted", "Marshall", "Lily", "Robin", "Barney", "Castle", "Beckett", "Meredith"]
PLACES = ["kitchen", "office", "cafe", "hospital", "apartment", "laundry room", "park", "bar", "car", "lab", "restaurant", "hallway"]
VERBS = ["makes tea", "answers the phone", "folds the laundry", "feeds the ducks", "bakes a cake", "writes on the whiteboard",
         "argues with a neighbour", "reads a letter", "drives to work", "orders coffee", "watches television", "plays chess",
         "fixes the sink", "buys flowers", "calls a friend", "loses the keys", "signs a contract", "cooks dinner"]


def questions(n: int, seed: int = 0) -> list[dict]:
    "N InfiniBench-style items (question + options), 77 per video, 2% near-duplicate rewrites of an earlier item."
    rng = random.Random(seed)
    out = []
    for k in range(n):
        vid = f"video_{k // PER_VIDEO:05d}"
        if k % 50 == 49 and out and out[-1]["video_id"] == vid:
            prev = dict(out[-1]); prev["id"] = f"q{k}"; prev["question"] = prev["question"].replace("?", " in this episode?")
            out.append(prev); continue
        a, b = rng.sample(NAMES, 2)
        ev = [f"{rng.choice(NAMES)} {rng.choice(VERBS)} in the {rng.choice(PLACES)}" for _ in range(4)]
        kind = k % 4
        if kind == 0: q = f"Did the event '{ev[0]}' happen before the event '{ev[1]}'?"; opts = ["Yes", "No"]
        elif kind == 1: q = f"What is the correct sequence of {a}'s actions in this episode ({k})?"; opts = [ev, ev[::-1], ev[1:] + ev[:1]]
        elif kind == 2: q = f"Why does {a} {rng.choice(VERBS)} after {b} {rng.choice(VERBS)} in the {rng.choice(PLACES)}?"; opts = None
        else: q = f"In what order does {a} visit the {rng.choice(PLACES)}, the {rng.choice(PLACES)} and the {rng.choice(PLACES)}?"; opts = [ev[:3], ev[2::-1]]
        out.append({"id": f"q{k}", "video_id": vid, "skill_name": SKILLS[k % len(SKILLS)], "question": q, "options": opts})
    return out


def brute_force_pairs(emb: np.ndarray, threshold: float, groups) -> set:
    "The baseline: the full similarity matrix, masked to the scope's groups, upper triangle."
    s = emb @ emb.T
    g = np.asarray([str(x) for x in groups])
    i, j = np.nonzero(np.triu((s >= threshold) & (g[:, None] == g[None, :]), 1))
    return set(zip(i.tolist(), j.tolist()))


def compute_floor(st, texts: list[str]) -> dict:
    """The least time any fp32 engine needs to embed `texts` here: their tokens × the encoder's linear-layer FLOPs, at the
    machine's peak matrix-multiply rate measured now (attention, layer norms and the tokenizer not even counted)."""
    import torch
    n_tok = sum(len(ids) for ids in st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"])
    lin = sum(m.weight.numel() for name, m in st[0].auto_model.named_modules()
              if isinstance(m, torch.nn.Linear) and "pooler" not in name)
    x, w = torch.randn(128 * 32, 384), torch.randn(384, 1536)
    for _ in range(3): x @ w
    t0, k = time.perf_counter(), 40
    for _ in range(k): x @ w
    gflops = 2 * x.shape[0] * 384 * 1536 * k / (time.perf_counter() - t0) / 1e9
    return {"tokens": n_tok, "flop_per_token": 2 * lin, "gflops": gflops, "threads": torch.get_num_threads(),
            "seconds": n_tok * 2 * lin / (gflops * 1e9)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000); ap.add_argument("--baseline", type=int, default=10_000)
    ap.add_argument("--threshold", type=float, default=0.95); ap.add_argument("--embed-sample", type=int, default=1000)
    ap.add_argument("--embed-all", action="store_true"); ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--out", default=str(HERE / "results" / "dedup.md"))
    a = ap.parse_args()
    from vlmlens.curation.dedup import SentenceEmbedder, clusters, embed_text, minilm_path, similar_pairs

    items = questions(a.n)
    texts = [embed_text(it) for it in items]
    emb = SentenceEmbedder(minilm_path(), batch_size=a.batch_size, cache=False)
    emb._load()                                                       # model load not counted in the rate
    rows = []
    if a.embed_all:
        t0 = time.perf_counter(); E = emb(texts); t_embed = time.perf_counter() - t0
        rows.append(("embed all N questions (MiniLM)", a.n, t_embed, "measured"))
    else:
        sample_idx = sorted(random.Random(1).sample(range(a.n), min(a.embed_sample, a.n)))   # every question kind, in proportion
        t0 = time.perf_counter(); S = emb([texts[i] for i in sample_idx]); dt = time.perf_counter() - t0
        rate = len(sample_idx) / dt
        rows.append((f"embed {len(sample_idx)} questions (MiniLM)", len(sample_idx), dt, f"measured, {rate:.1f} q/s"))
        rows.append(("embed all N questions (MiniLM)", a.n, a.n / rate, "extrapolated from the measured rate"))
        rng = np.random.default_rng(0)
        mix = rng.integers(0, len(S), size=(a.n, 3))                 # each question: a blend of three real question vectors
        E = S[mix].sum(1) + rng.normal(scale=0.02, size=(a.n, S.shape[1])).astype(np.float32)
        dup = [k for k, it in enumerate(items) if it["question"].endswith(" in this episode?") and k % 50 == 49]
        E[dup] = E[[k - 1 for k in dup]] + rng.normal(scale=0.01, size=(len(dup), S.shape[1])).astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
    floor = compute_floor(emb._load(), texts)
    rows.append(("lower bound: MiniLM's linear layers at this machine's peak matmul rate", a.n, floor["seconds"],
                 f"{floor['tokens']:,} tokens × {floor['flop_per_token'] / 1e6:.1f} MFLOP / {floor['gflops']:.0f} GFLOP/s "
                 f"(measured now: {floor['threads']} threads, fp32)"))
    groups = [it["video_id"] for it in items]
    t0 = time.perf_counter(); p, _ = similar_pairs(E, a.threshold, groups); lab = clusters(a.n, p); t_search = time.perf_counter() - t0
    n_removed = int((lab != np.arange(a.n)).sum())
    rows.append((f"pairs >= {a.threshold} (same video, batched) + clusters", a.n, t_search, f"{len(p)} pairs, {n_removed} removed"))
    m = min(a.baseline, a.n)
    t0 = time.perf_counter(); base = brute_force_pairs(E[:m], a.threshold, groups[:m]); t_base = time.perf_counter() - t0
    t0 = time.perf_counter(); ours, _ = similar_pairs(E[:m], a.threshold, groups[:m]); t_ours = time.perf_counter() - t0
    same_video = set(map(tuple, ours.tolist())) == base
    rows.append((f"baseline: full {m}x{m} matrix (same video)", m, t_base, f"{len(base)} pairs"))
    rows.append((f"vlmlens on the same {m} (same video, batched)", m, t_ours, f"identical flags: {same_video}, {t_base / t_ours:.1f}x faster"))
    t0 = time.perf_counter(); base_all = brute_force_pairs(E[:m], a.threshold, [0] * m); tb_all = time.perf_counter() - t0
    t0 = time.perf_counter(); ours_all, _ = similar_pairs(E[:m], a.threshold, None); to_all = time.perf_counter() - t0
    same_all = set(map(tuple, ours_all.tolist())) == base_all
    rows.append((f"baseline: full {m}x{m} matrix (whole set)", m, tb_all, f"{len(base_all)} pairs"))
    rows.append((f"vlmlens tiled on the same {m} (whole set)", m, to_all, f"identical flags: {same_all}, {tb_all / to_all:.2f}x"))
    total = rows[1][2] + t_search if not a.embed_all else rows[0][2] + t_search
    lines = ["| stage | questions | seconds | note |", "|---|---|---|---|"] + [f"| {s} | {n:,} | {t:.2f} | {note} |" for s, n, t, note in rows]
    lines.append(f"| **total for {a.n:,} questions (embedding + search)** | {a.n:,} | **{total:.1f}** | {total / 60:.1f} min; target 5 min |")
    lines += ["", f"The search and clustering of {a.n:,} questions take {t_search:.1f} s; the MiniLM embedding is the bottleneck "
              f"({'measured' if a.embed_all else 'extrapolated'}). Embeddings are cached per model and text "
              f"(`VLMLENS_CACHE/embeddings/`), so rerunning deduplication with other thresholds or scopes costs only the search.",
              "", f"No fp32 engine can embed these {a.n:,} questions here in 5 minutes: their {floor['tokens']:,} tokens through "
              f"MiniLM's linear layers alone are {floor['tokens'] * floor['flop_per_token'] / 1e12:.1f} TFLOP, "
              f"{floor['seconds'] / 60:.1f} min at the {floor['gflops']:.0f} GFLOP/s this machine's matrix multiply reaches "
              f"(measured in this run); the measured embedding rate is {floor['seconds'] / rows[1][2] * 100:.0f}% of that bound. "
              "The 5-minute target needs about "
              f"{floor['tokens'] * floor['flop_per_token'] / 300 / 1e9:.0f} GFLOP/s: a GPU, or a CPU with several times "
              "this one's cores (`SentenceEmbedder(device=...)`)."]
    host = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    text = "\n".join([f"# Deduplication at {a.threshold} ({a.n:,} questions)", "", f"`python benchmarks/{Path(__file__).name} "
                      + " ".join(sys.argv[1:]) + "` on " + host + ".", "", *lines, ""])
    print(text)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text, encoding="utf-8")
    if not (same_video and same_all): sys.exit("flags differ from the brute-force baseline")


if __name__ == "__main__":
    main()
