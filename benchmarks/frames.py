"""Benchmark: exact frame sampling from a long video — vlmlens.media.sample_frames vs peers.

    python benchmarks/frames.py                 # 60-minute video, N = 16, 64, 256, 768
    python benchmarks/frames.py --minutes 5     # quick check on a 5-minute video

Peers: decord, torchcodec (exact and approximate seek modes), qwen-vl-utils' readers (torchcodec, its default
when installed; decord; torchvision) and lmms-eval's PyAV reader (its `read_video_pyav` algorithm: one
sequential decode from the start, keeping the frames at `np.linspace(0, n_frames - 1, N)`; re-implemented
here so the benchmark does not install lmms-eval and its GPU stack). `vlmlens exact=False` (nearest
keyframes) is timed beside them but is not exact by design, so it is not a peer and its ratio is against
vlmlens' exact sampling.

The test video (640x360 H.264, 25 fps, a keyframe every 10 s, every frame showing
its own index as a block code) is made once with PyAV and cached outside the
repository (``$VLMLENS_BENCH_DIR`` or the system temp dir): the 60-minute one is
90,000 frames. Each method runs in a fresh subprocess so its peak RSS can be read
from ``resource.getrusage(RUSAGE_CHILDREN)``. The table goes to stdout and to
``benchmarks/results/frames.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
W, H, FPS, KEYINT = 640, 360, 25, 250


def cache_dir() -> Path:
    d = Path(os.environ.get("VLMLENS_BENCH_DIR") or Path(tempfile.gettempdir()) / "vlmlens-bench")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _texture(seed=0) -> np.ndarray:
    "A smooth random RGB texture twice as wide as the frame, scrolled to give real motion."
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (H // 8 + 1, W // 4 + 1, 3), dtype=np.uint8)
    big = np.repeat(np.repeat(small, 8, axis=0), 8, axis=1)[:H, : 2 * W]
    return np.ascontiguousarray(big)


def frames_for(n_frames: int):
    from vlmlens.media import frame_code_image
    tex = _texture()
    code_w = W // 2
    for i in range(n_frames):
        off = (3 * i) % W                       # scroll 3 px per frame
        img = tex[:, off: off + W].copy()
        img[:, :code_w] = frame_code_image(i, code_w, H)
        yield img


def make_video(minutes: float) -> Path:
    from vlmlens.media import write_video
    n = int(round(minutes * 60 * FPS))
    path = cache_dir() / f"codevideo_{minutes:g}min_{W}x{H}_{FPS}fps_k{KEYINT}.mp4"
    if path.exists() and path.stat().st_size > 0: return path
    tmp = path.with_suffix(".part.mp4")
    t0 = time.time()
    print(f"making {path} ({n} frames, once) ...", flush=True)

    def progress(it):
        for i, f in enumerate(it):
            if i and i % 5000 == 0:
                el = time.time() - t0
                print(f"  {i}/{n} frames, {el:.0f}s elapsed, ~{el / i * (n - i):.0f}s left", flush=True)
            yield f

    write_video(tmp, progress(frames_for(n)), fps=FPS, keyint=KEYINT, preset="ultrafast", crf=23)
    tmp.rename(path)
    print(f"made {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.time() - t0:.0f}s", flush=True)
    return path


# ---------------------------------------------------------------- workers (one fresh process each)

def _codes(arrs_or_images) -> list:
    "Frame indices read back from the block code in the left half of each frame."
    from PIL import Image
    from vlmlens.media import read_frame_code
    out = []
    for a in arrs_or_images:
        im = a if isinstance(a, Image.Image) else Image.fromarray(np.asarray(a))
        out.append(read_frame_code(im.crop((0, 0, W // 2, H))))
    return out


def target_times(n: int, duration_s: float) -> list:
    return [(i + 0.5) * duration_s / n for i in range(n)]


def shown_index(t: float) -> int:
    "Index of the frame shown at time t in the test video (frame i has pts i/FPS)."
    return int(math.floor(t * FPS + 1e-6))


def work_vlmlens(video, n):
    from vlmlens.media import sample_frames
    t0 = time.perf_counter()
    fr = sample_frames(video, num_frames=n)
    wall = time.perf_counter() - t0
    expected = [shown_index(t) for t in fr.timestamps_s]
    return wall, _codes(fr.images) == expected, f"{fr.stats['seeks']} seeks, {fr.stats['decoded']} packets decoded", \
        {"decoded": fr.stats["decoded"]}


def work_decord(video, n):
    import decord
    from vlmlens.media import frame_times
    t0 = time.perf_counter()
    vr = decord.VideoReader(video)
    dur = len(vr) / vr.get_avg_fps()
    idx = [shown_index(t) for t in frame_times(dur, num_frames=n)]      # the same frames sample_frames returns
    arr = vr.get_batch(idx).asnumpy()
    wall = time.perf_counter() - t0
    return wall, _codes(arr) == idx, f"get_batch on sample_frames' {n} frame indices"


def work_qwen(video, n, backend=None):
    import torchvision
    from qwen_vl_utils import vision_process as vp
    default = vp.get_video_reader_backend()
    backend = backend or default
    if backend == "torchcodec" and not vp.is_torchcodec_available():
        raise RuntimeError("unavailable: torchcodec is not installed")
    if backend == "decord" and not vp.is_decord_available():
        raise RuntimeError("unavailable: decord is not installed")
    if backend == "torchvision":
        if not hasattr(torchvision.io, "read_video"):
            raise RuntimeError(f"unavailable: torchvision {torchvision.__version__} has no io.read_video")
        need = int(os.environ.get("BENCH_TOTAL_FRAMES", "0")) * W * H * 3
        if need > 4e9:
            raise RuntimeError(f"skipped: io.read_video decodes the whole video into memory (~{need / 1e9:.0f} GB)")
    t0 = time.perf_counter()
    video_t, meta, _ = vp.VIDEO_READER_BACKENDS[backend]({"video": video, "nframes": n})
    wall = time.perf_counter() - t0
    idx = [int(i) for i in meta["frames_indices"]]
    arr = video_t.permute(0, 2, 3, 1).numpy()
    tag = f"{backend} reader{' (qwen-vl-utils default)' if backend == default else ''}, its own linspace indices"
    return wall, _codes(arr) == idx, tag


def work_vlmlens_approx(video, n):
    from vlmlens.media import sample_frames
    t0 = time.perf_counter()
    fr = sample_frames(video, num_frames=n, exact=False)
    wall = time.perf_counter() - t0
    keyframes = fr.frame_pts_s == fr.timestamps_s and all(c % KEYINT == 0 for c in _codes(fr.images))
    right_time = _codes(fr.images) == [shown_index(t) for t in fr.frame_pts_s]
    return wall, keyframes and right_time, (f"nearest keyframes: {len(set(fr.frame_pts_s))} distinct, "
                                            f"{fr.stats['decoded']} packets decoded; exact = each is a keyframe shown at its reported time")


def work_torchcodec(video, n, mode="exact"):
    from torchcodec.decoders import VideoDecoder
    from vlmlens.media import frame_times
    t0 = time.perf_counter()
    dec = VideoDecoder(video, seek_mode=mode, num_ffmpeg_threads=0, dimension_order="NHWC")
    times = frame_times(dec.metadata.duration_seconds, num_frames=n)
    batch = dec.get_frames_played_at(seconds=times)
    arr = batch.data.numpy()
    wall = time.perf_counter() - t0
    return wall, _codes(arr) == [shown_index(t) for t in times], f"get_frames_played_at, seek_mode={mode}, FFmpeg threads auto"


def work_lmms_pyav(video, n, _reader="pyav"):
    "lmms-eval's read_video_pyav algorithm: decode from the start, keep the frames at linspace indices."
    import av
    t0 = time.perf_counter()
    with av.open(video) as c:
        s = c.streams.video[0]
        total = s.frames
        idx = np.linspace(0, total - 1, min(n, total), dtype=int)
        want, last, out = set(idx.tolist()), int(idx[-1]), {}
        for i, f in enumerate(c.decode(video=0)):
            if i > last: break
            if i in want: out[i] = f.to_ndarray(format="rgb24")
        arr = np.stack([out[i] for i in idx])
    wall = time.perf_counter() - t0
    return wall, _codes(arr) == [int(i) for i in idx], "sequential decode from 0 to the last index, its own linspace indices"


WORKERS = {"vlmlens.sample_frames": work_vlmlens, "vlmlens exact=False": work_vlmlens_approx, "qwen-vl-utils": work_qwen,
           "decord": work_decord, "torchcodec": work_torchcodec, "lmms-eval": work_lmms_pyav}


def peak_rss_kb() -> int:
    """This process image's peak RSS in KiB: VmHWM from /proc (Linux), else ru_maxrss.

    Not ru_maxrss on Linux: at exec() the kernel carries the parent's high-water mark into the child's
    ru_maxrss, so a child of a big parent would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"): return int(line.split()[1])
    except OSError: pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker_main(method: str, video: str, n: int):
    name, _, backend = method.partition(":")
    try:
        fn = WORKERS[name]
        # imports happen inside the timed functions' modules; import them first so RSS0 is the post-import baseline
        if name == "qwen-vl-utils": import qwen_vl_utils.vision_process  # noqa: F401
        if name == "decord": import decord  # noqa: F401
        if name == "torchcodec": import torchcodec.decoders  # noqa: F401
        if name in ("lmms-eval", "vlmlens.sample_frames", "vlmlens exact=False"): import av  # noqa: F401  (vlmlens.media imports it lazily)
        import vlmlens.media  # noqa: F401
        rss0 = peak_rss_kb()
        wall, exact, note, *extra = fn(video, n, backend) if backend else fn(video, n)   # extra: a dict of counts
        res = {"ok": True, "wall_s": wall, "exact": exact, "note": note, "rss0_kb": rss0, "peak_kb": peak_rss_kb(), **(extra or [{}])[0]}
    except Exception as e:  # reported as an unavailable row, with the reason
        msg = str(e)
        res = {"ok": False, "reason": msg if msg.startswith(("unavailable", "skipped")) else f"failed: {type(e).__name__}: {msg}"}
    print("RESULT " + json.dumps(res), flush=True)


# ---------------------------------------------------------------- driver

def run_one(method: str, video: Path, n: int, total_frames: int) -> dict:
    "Run one method in a fresh process, which reports its own wall time and peak RSS."
    env = dict(os.environ, BENCH_TOTAL_FRAMES=str(total_frames))
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, __file__, "--worker", method, "--video", str(video), "--n", str(n)],
                             stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = p.stdout.read()
        p.stdout.close()
        p.wait()
        err.seek(0)
        err_tail = err.read().strip().splitlines()[-1:] or [""]
    line = next((l for l in out.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        return {"ok": False, "reason": f"crashed (exit {p.returncode}): {err_tail[0]}"}
    res = json.loads(line[7:])
    if res["ok"]: res["peak_mb"], res["delta_mb"] = res["peak_kb"] / 1024, (res["peak_kb"] - res["rss0_kb"]) / 1024
    return res


METHODS = ["vlmlens.sample_frames", "vlmlens exact=False", "qwen-vl-utils", "qwen-vl-utils:decord", "qwen-vl-utils:torchvision",
           "decord", "torchcodec", "torchcodec:approximate", "lmms-eval:pyav"]
OURS = ("vlmlens.sample_frames", "vlmlens exact=False")


def decode_rate(video: Path, n: int = 750) -> float:
    "Packets per second one single-threaded PyAV decoder achieves on this video, from its start (measured in this run)."
    import av
    with av.open(str(video)) as c:
        s = c.streams.video[0]
        s.codec_context.thread_count = 1
        t0, k = time.perf_counter(), 0
        for pk in c.demux(s):
            if not pk.size: continue
            pk.decode(); k += 1
            if k >= n: break
        return k / (time.perf_counter() - t0)


def main(minutes: float, ns: list, repeats: int, out: Path | None, budget_s: float = 30.0):
    from importlib.metadata import version
    import av                                   # the driver stays small: no torch/decord imports here
    video = make_video(minutes)
    total = int(round(minutes * 60 * FPS))
    load0 = os.getloadavg()
    print(f"video {video.name}: {minutes:g} min, {W}x{H}, {FPS} fps, keyframe every {KEYINT} frames; "
          f"{os.cpu_count()} CPUs, load {load0[0]:.1f}", flush=True)
    rate = decode_rate(video)
    rows = []
    for n in ns:
        results = {}
        for m in METHODS:
            best, spent = None, 0.0
            for r in range(repeats):               # cheap cells are repeated (noise), long ones run once
                res = run_one(m, video, n, total)
                if not res["ok"]: best = res; break
                if best is None or res["wall_s"] < best["wall_s"]: best = res
                spent += res["wall_s"]
                if spent >= budget_s: break
            results[m] = best
            show = f"{best['wall_s']:.2f}s peak {best['peak_mb']:.0f} MB exact={best['exact']}" if best["ok"] else best["reason"]
            print(f"  N={n:<4} {m:<28} {show}", flush=True)
        peers = [r["wall_s"] for m, r in results.items() if r["ok"] and r["exact"] and m not in OURS]
        fastest = min(peers) if peers else None
        qwen = results.get("qwen-vl-utils") if results.get("qwen-vl-utils", {}).get("ok") else None
        for m, r in results.items(): rows.append((n, m, r, fastest, qwen, results["vlmlens.sample_frames"]))
    load1 = os.getloadavg()
    lines = [f"# Frame sampling benchmark ({minutes:g}-minute video)", "",
             f"Video: {W}x{H} H.264 (x264 ultrafast, no B-frames), {FPS} fps, keyframe every {KEYINT} frames "
             f"({KEYINT / FPS:g} s), {total} frames, {video.stat().st_size / 1e6:.0f} MB; uniform samples at segment centres.",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), load average {load0[0]:.1f} at start, "
             f"{load1[0]:.1f} at end; Python {platform.python_version()}, PyAV {av.__version__} "
             f"(FFmpeg {getattr(av, 'ffmpeg_version_info', '?')}), "
             f"decord {version('decord')}, torchcodec {version('torchcodec')}, qwen-vl-utils {version('qwen-vl-utils')}, torch {version('torch')}.",
             f"Each cell: one fresh process per run, the best of up to {repeats} runs (a method stops repeating once "
             f"its runs of the cell add up to {budget_s:g} s, so only the short cells are repeated); wall = time of the sampling call "
             "(open + index + decode + convert, not interpreter start-up); peak = the process's peak RSS "
             "(VmHWM, which counts C/C++ allocations), delta = peak minus the peak RSS after imports; "
             "ratio = wall / fastest exact peer's wall (for `vlmlens exact=False`: / vlmlens exact wall); "
             "peak / qwen = peak RSS / qwen-vl-utils' (default reader) peak RSS; exact = every returned frame's "
             "burned-in code equals the expected frame index.", "",
             "| N | method | wall (s) | peak RSS (MB) | delta RSS (MB) | ratio | peak / qwen | exact | notes |",
             "|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for n, m, r, fastest, qwen, ours in rows:
        if r["ok"]:
            base = (ours["wall_s"] if ours["ok"] else None) if m == "vlmlens exact=False" else fastest
            ratio = f"{r['wall_s'] / base:.2f}" if base else "–"
            mem = f"{r['peak_mb'] / qwen['peak_mb']:.2f}" if qwen else "–"
            lines.append(f"| {n} | {m} | {r['wall_s']:.2f} | {r['peak_mb']:.0f} | {r['delta_mb']:.0f} | {ratio} | {mem} | "
                         f"{'yes' if r['exact'] else 'NO'} | {r['note']} |")
        else:
            lines.append(f"| {n} | {m} | – | – | – | – | – | – | {r['reason']} |")
    lines += ["", "Targets: exact sampling ≤ 0.6× the fastest peer at 16–256 frames and ≤ 1.0× at 768; peak memory ≤ ¼ "
              "of qwen-vl-utils'; `exact=False` ≥ 3× faster than exact at 64 frames.", ""]
    from vlmlens.media import _cpus
    cpus = _cpus()                              # the CPUs sample_frames spreads its readers over
    lines += [f"Floors measured in this run: one PyAV decoder decodes {rate:.0f} packets/s here, single-threaded. Exact frames "
              "need every packet from a target's keyframe to the target decoded, so the least wall time for exact "
              f"sampling is (packets decoded) / ({rate:.0f} × {cpus} CPUs); the least peak memory is the interpreter "
              f"after imports plus the returned frames themselves ({W}×{H}×3 bytes each).", ""]
    for n, m, r, fastest, qwen, ours in rows:
        if m == "vlmlens.sample_frames" and r["ok"] and fastest:
            if r.get("decoded"):
                floor = r["decoded"] / (rate * cpus)
                mem_floor = (r["rss0_kb"] / 1024 + n * W * H * 3 / 2 ** 20) / qwen["peak_mb"] if qwen else None
                lines.append(f"- N={n}: decode floor {floor:.2f} s = {floor / fastest:.2f}× the fastest peer (vlmlens: "
                             f"{r['wall_s'] / floor:.2f}× the floor)" + (f"; memory floor {mem_floor:.2f}× qwen-vl-utils' peak"
                                                                          if mem_floor else ""))
            goal = 1.0 if n >= 768 else 0.6
            lines.append(f"- N={n}: exact {r['wall_s'] / fastest:.2f}× fastest peer (target ≤ {goal}) — "
                         f"{'met' if r['wall_s'] / fastest <= goal else 'NOT met'}; peak memory "
                         + (f"{r['peak_mb'] / qwen['peak_mb']:.2f}× qwen-vl-utils' (target ≤ 0.25) — "
                            f"{'met' if r['peak_mb'] / qwen['peak_mb'] <= 0.25 else 'NOT met'}" if qwen else "– (no qwen-vl-utils row)"))
        if m == "vlmlens exact=False" and r["ok"] and ours["ok"]:
            lines.append(f"- N={n}: exact=False {ours['wall_s'] / r['wall_s']:.1f}× faster than exact"
                         + (" (target ≥ 3× at 64)" if n == 64 else ""))
    table = "\n".join(lines) + "\n"
    print()
    print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(table)
        print(f"wrote {out}")
    ours = {n: r for n, m, r, *_ in rows if m == "vlmlens.sample_frames"}
    slow = [n for n, m, r, f, *_ in rows if m == "vlmlens.sample_frames" and r["ok"] and f and r["wall_s"] > f]
    bad = [n for n, r in ours.items() if not (r["ok"] and r["exact"])]
    if slow: print(f"NOTE: sample_frames slower than the fastest peer at N = {slow}")
    if bad: print(f"ERROR: sample_frames not exact / failed at N = {bad}"); return 1
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="length of the test video (default 60)")
    ap.add_argument("--n", type=int, nargs="+", default=[16, 64, 256, 768], help="frame counts (default 16 64 256 768)")
    ap.add_argument("--repeats", type=int, default=3, help="most runs per cell; the fastest is reported (default 3)")
    ap.add_argument("--budget-s", type=float, default=30.0,
                    help="stop repeating a cell once its runs add up to this many seconds (default 30)")
    ap.add_argument("--out", type=Path, default=None,
                    help="markdown table path (default benchmarks/results/frames.md for 60 minutes, "
                         "frames_<M>min.md otherwise)")
    ap.add_argument("--make-only", action="store_true", help="only make (or find) the cached video")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--video", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker, a.video, a.n[0])
        sys.exit(0)
    if a.make_only:
        print(make_video(a.minutes))
        sys.exit(0)
    out = a.out or HERE / "results" / ("frames.md" if a.minutes == 60 else f"frames_{a.minutes:g}min.md")
    sys.exit(main(a.minutes, a.n, a.repeats, out, a.budget_s))
