"""Benchmark: prefix (key/value cache) reuse for many questions on one video, local transformers backend.

    python benchmarks/prefix_reuse.py                          # CPU: 20 questions x 64 frames, a CPU-sized Qwen2.5-VL
    python benchmarks/prefix_reuse.py --questions 5 --frames 16
    python benchmarks/prefix_reuse.py --size 7b --frames 256 --device cuda   # a GPU host: the real 7B architecture

The model is a Qwen2.5-VL with random weights and the real architecture: the real vision tower layout (patch 14,
2x2 spatial merge, temporal patch 2, windowed attention with full-attention blocks, 112-pixel windows), M-RoPE
with real timestamps, built at test time (`--size cpu`: vision 4 blocks of width 256, text 4 layers of width
512; `--size 7b`: Qwen2.5-VL-7B-Instruct's published config, bf16). The same backend object answers the same
questions twice, in the same process: once with `reuse_prefix` off (every question prefills the system prompt
and the video, and runs the vision tower), once with it on (the first question does, the others continue from
the cached prefix). Greedy decoding; the answers must be identical. The table goes to stdout and to
benchmarks/results/prefix_reuse.md (benchmarks/results/prefix_reuse_<size>.md for other sizes).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def build(path: Path, size: str, frame_pixels: int) -> Path:
    "A random Qwen2.5-VL with the real architecture at `size`, saved with a processor that keeps frames at `frame_pixels`."
    import torch
    from transformers import AutoModelForImageTextToText, GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor
    from vlmlens.models.qwen_vl import QWEN_VL_CHAT_TEMPLATE, build_tiny_qwen_tokenizer
    tok = build_tiny_qwen_tokenizer()
    tid = tok.convert_tokens_to_ids
    if size == "cpu":
        text = dict(hidden_size=512, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                    rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1e6})
        vision = dict(depth=4, hidden_size=256, intermediate_size=512, num_heads=4, out_hidden_size=512, fullatt_block_indexes=[3])
        dtype = torch.float32
    else:  # Qwen2.5-VL-7B-Instruct's config.json
        text = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                    rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6})
        vision = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                      fullatt_block_indexes=[7, 15, 23, 31])
        dtype = torch.bfloat16
    cfg = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=len(tok), max_position_embeddings=128000, use_sliding_window=False, sliding_window=None,
                         initializer_range=0.2, bos_token_id=tid("<|endoftext|>"), eos_token_id=tid("<|im_end|>"),
                         pad_token_id=tid("<|endoftext|>"), **text),
        vision_config=dict(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, tokens_per_second=2, window_size=112,
                           initializer_range=0.2, **vision),
        tie_word_embeddings=size == "cpu", image_token_id=tid("<|image_pad|>"), video_token_id=tid("<|video_pad|>"),
        vision_start_token_id=tid("<|vision_start|>"), vision_end_token_id=tid("<|vision_end|>"))
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(cfg, dtype=dtype)
    eos, pad = tid("<|im_end|>"), tid("<|endoftext|>")
    model.generation_config = GenerationConfig(bos_token_id=pad, eos_token_id=[eos, pad], pad_token_id=pad, do_sample=False)
    common = dict(patch_size=14, temporal_patch_size=2, merge_size=2)
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(min_pixels=4 * 28 * 28, max_pixels=frame_pixels, **common),
                               video_processor=Qwen2VLVideoProcessor(min_pixels=4 * 28 * 28, max_pixels=frame_pixels, **common),
                               tokenizer=tok, chat_template=QWEN_VL_CHAT_TEMPLATE)
    model.save_pretrained(path); proc.save_pretrained(path)
    return path


def frames(n: int, w: int, h: int) -> list:
    "n frames of a moving texture (so that neighbouring frames differ, as in a film)."
    from PIL import Image
    rng = np.random.default_rng(0)
    tex = np.repeat(np.repeat(rng.integers(0, 256, (h // 8 + 1, 2 * w // 8 + 1, 3), dtype=np.uint8), 8, 0), 8, 1)
    return [Image.fromarray(np.ascontiguousarray(tex[:h, (7 * i) % w:(7 * i) % w + w])) for i in range(n)]


QUESTIONS = ["What is the man holding when the scene starts?", "Where does the conversation in the kitchen take place?",
             "Which character arrives last?", "What colour is the car?", "Why does the woman leave the room?",
             "How many people are at the table?", "What happens right after the phone rings?", "Who opens the door?",
             "What is written on the sign?", "What time of day is it in the final scene?"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--width", type=int, default=336)
    ap.add_argument("--height", type=int, default=196)
    ap.add_argument("--size", choices=("cpu", "7b"), default="cpu")
    ap.add_argument("--device", default=None)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    a = ap.parse_args(argv)
    from vlmlens.core import Request, message
    from vlmlens.models.qwen_vl import HFBackend
    from vlmlens.models.transformers import MediaMemo
    import torch
    path = build(Path(tempfile.mkdtemp(prefix="vlmlens-prefix-")) / "model", a.size, a.width * a.height)
    be = HFBackend(str(path), name=f"qwen2.5-vl-{a.size}-random", device=a.device)
    n_params = sum(p.numel() for p in be.model.parameters())
    clip = frames(a.frames, a.width, a.height)
    duration = 3600.0
    times = [(i + 0.5) * duration / a.frames for i in range(a.frames)]
    qs = [f"{QUESTIONS[i % len(QUESTIONS)]} (question {i + 1})" for i in range(a.questions)]
    reqs = [Request(f"q{i}", [message("system", "You are watching a film. Answer the question about it in a few words."),
                              message("user", {"type": "video", "frames": clip, "timestamps": times, "duration_s": duration}, q)])
            for i, q in enumerate(qs)]
    visual = int(be.prepare_inputs(reqs[:1])["video_grid_thw"].prod().item()) // 4
    load0 = os.getloadavg()[0]
    result = {}
    for reuse in (False, True):
        be.reuse_prefix, be._prefix, be.prefix_stats = reuse, None, {"hits": 0, "misses": 0}
        for memo in (be.processor.image_processor, be.processor.video_processor, be.__dict__.get("_vision_info")):
            if isinstance(memo, MediaMemo): memo.last = None        # each mode starts with nothing preprocessed
        per = []
        for r in reqs:
            t0 = time.perf_counter()
            g = be.generate([r], max_new_tokens=a.max_new_tokens)[0]
            if g.error: raise SystemExit(f"generation failed: {g.error}")
            per.append((time.perf_counter() - t0, g.text, g.usage))
        result[reuse] = (per, dict(be.prefix_stats))
        print(f"reuse={reuse}: {sum(p[0] for p in per):.1f} s for {len(per)} questions "
              f"(first {per[0][0]:.2f} s, rest {np.mean([p[0] for p in per[1:]]) if len(per) > 1 else 0:.2f} s each)", flush=True)
    off, on = result[False][0], result[True][0]
    t_off, t_on = sum(p[0] for p in off), sum(p[0] for p in on)
    same = [p[1] for p in off] == [p[1] for p in on]
    lines = [f"# Prefix reuse: {a.questions} questions on one video, {a.frames} frames ({a.size} Qwen2.5-VL, random weights)", "",
             f"Model: Qwen2.5-VL architecture, random weights, {n_params / 1e6:.1f} M parameters "
             f"({'vision 4 blocks x 256, text 4 layers x 512' if a.size == 'cpu' else 'Qwen2.5-VL-7B-Instruct config'}); "
             f"patch 14, 2x2 merge, temporal patch 2; {be.model.dtype}, {be.model.device}.",
             f"Video: {a.frames} frames of {a.width}x{a.height} over {duration:.0f} s -> {visual} visual tokens per prompt; "
             f"greedy, at most {a.max_new_tokens} new tokens; the same backend, questions in the same order, first without "
             "then with reuse.",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), load average {load0:.1f} at start, "
             f"{os.getloadavg()[0]:.1f} at end; torch {torch.__version__}, threads {torch.get_num_threads()}.", "",
             "| reuse | total (s) | first question (s) | other questions, mean (s) | prefix hits | ratio vs no reuse |",
             "|---|---:|---:|---:|---:|---:|"]
    for reuse, (per, stats) in result.items():
        t = sum(p[0] for p in per)
        rest = np.mean([p[0] for p in per[1:]]) if len(per) > 1 else float("nan")
        lines.append(f"| {'on' if reuse else 'off'} | {t:.1f} | {per[0][0]:.2f} | {rest:.2f} | {stats['hits']}/{len(per)} | "
                     f"{t / t_off:.3f} |")
    lines += ["", f"Identical answers with and without reuse: {'yes' if same else 'NO'} "
              f"({len(set(p[1] for p in off))} distinct answers over {len(off)} questions).",
              f"Target: total with reuse <= 0.25x without: {'met' if t_on / t_off <= 0.25 else 'NOT met'} ({t_on / t_off:.3f})."]
    text = "\n".join(lines) + "\n"
    print(text)
    out = HERE / "results" / ("prefix_reuse.md" if a.size == "cpu" and a.frames == 64 and a.questions == 20 else
                              f"prefix_reuse_{a.size}_{a.frames}f_{a.questions}q.md")
    out.parent.mkdir(exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
