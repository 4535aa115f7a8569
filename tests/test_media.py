"""Tests of vlmlens.media on synthesized media: exact frames, bad media, EXIF, subtitles, cache, materialize.

Every synthesized frame shows its own index as a block code (`frame_code_image`), so a sampled frame can be
checked against the frame that is really shown at its timestamp, found by decoding the whole file with PyAV.
"""
import os
import time

import av
import numpy as np
import pytest
from PIL import Image

from vlmlens.core import message
from vlmlens.media import (Cue, FrameCache, MediaError, frame_code_image, frame_times, load_image, materialize,
                           read_frame_code, read_subtitles, sample_frames, subtitles_between, subtitles_for_frames,
                           transcript, write_video)

FPS, N_FRAMES, KEYINT, W, H = 10, 150, 12, 96, 64


def reference(path):
    "[(pts_s, code)] of every frame, in presentation order, by a plain sequential decode."
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        start, tb = s.start_time or 0, float(s.time_base)
        return [((f.pts - start) * tb, read_frame_code(f.to_image())) for f in c.decode(s)]


def shown(ref, t):
    "Code of the frame shown at time t: the last frame whose pts <= t."
    return [code for pts, code in ref if pts <= t + 1e-9][-1]


# x264 defaults (B-frames, b-pyramid: reordering and non-reference frames), x264 ultrafast (no B-frames), Matroska, VP9
VARIANTS = {"mp4-bframes": ("mp4", "libx264", {}), "mp4-ultrafast": ("mp4", "libx264", {"preset": "ultrafast"}),
            "mkv-bframes": ("mkv", "libx264", {}), "webm-vp9": ("webm", "libvpx-vp9", {"deadline": "realtime", "cpu-used": "8"})}


@pytest.fixture(scope="module", params=list(VARIANTS))
def video(request, tmp_path_factory):
    ext, codec, opts = VARIANTS[request.param]
    path = tmp_path_factory.mktemp("media") / f"v.{ext}"
    write_video(path, (frame_code_image(i, W, H) for i in range(N_FRAMES)), fps=FPS, keyint=KEYINT, codec=codec,
                options=opts)
    ref = reference(path)
    assert [c for _, c in ref] == list(range(N_FRAMES)), "the frame code must survive encoding"
    return path, ref


@pytest.fixture(scope="module")
def mp4(tmp_path_factory):
    path = tmp_path_factory.mktemp("media") / "b.mp4"
    write_video(path, (frame_code_image(i, W, H) for i in range(N_FRAMES)), fps=FPS, keyint=KEYINT)
    return path


def codes(fr): return [read_frame_code(im) for im in fr.images]


# ---------------------------------------------------------------- write_video


def test_write_video_keyframes_exactly_every_keyint(mp4):
    with av.open(str(mp4)) as c:
        s = c.streams.video[0]
        pk = [p for p in c.demux(s) if p.size]
        assert len(pk) == N_FRAMES and s.average_rate == FPS
        pts_order = sorted(range(len(pk)), key=lambda i: pk[i].pts)          # display index of each packet
        keys = sorted(pts_order.index(i) for i, p in enumerate(pk) if p.is_keyframe)
    assert keys == list(range(0, N_FRAMES, KEYINT))


def test_write_video_accepts_pil_and_rejects_bad_frames(tmp_path):
    p = write_video(tmp_path / "pil.mp4", [Image.fromarray(frame_code_image(i, W, H)) for i in range(3)], fps=4)
    assert [c for _, c in reference(p)] == [0, 1, 2]
    with pytest.raises(ValueError, match="frame 1 is 32x32"):
        write_video(tmp_path / "x.mp4", [frame_code_image(0, W, H), np.zeros((32, 32, 3), np.uint8)])
    with pytest.raises(ValueError, match="uint8 RGB"):
        write_video(tmp_path / "y.mp4", [np.zeros((H, W), np.uint8)])


# ---------------------------------------------------------------- exact frames


@pytest.mark.parametrize("n", [1, 4, 9])
def test_sparse_targets_are_exact_and_seek(video, n):
    path, ref = video
    fr = sample_frames(path, num_frames=n)
    assert fr.timestamps_s == pytest.approx([(i + 0.5) * N_FRAMES / FPS / n for i in range(n)])
    assert codes(fr) == [shown(ref, t) for t in fr.timestamps_s]
    assert fr.frame_pts_s == pytest.approx([ref[shown(ref, t)][0] for t in fr.timestamps_s])
    assert all(p <= t + 1e-9 for p, t in zip(fr.frame_pts_s, fr.timestamps_s))
    assert fr.stats["seeks"] >= 1 and fr.stats["decoded"] <= n * (KEYINT + 4)   # at most ~a GOP per target
    assert fr.duration_s == pytest.approx(N_FRAMES / FPS) and fr.source_fps == pytest.approx(FPS)
    assert all(im.mode == "RGB" and im.size == (W, H) for im in fr.images)


@pytest.mark.parametrize("n", [40, 150])
def test_dense_targets_decode_each_packet_once(video, n):
    path, ref = video
    fr = sample_frames(path, num_frames=n, workers=1)
    assert codes(fr) == [shown(ref, t) for t in fr.timestamps_s]
    assert fr.stats["decoded"] + fr.stats["skipped"] <= N_FRAMES                 # one forward pass at most
    if n == N_FRAMES: assert codes(fr) == list(range(N_FRAMES))


@pytest.mark.parametrize("x264", ["", "open-gop=1:bframes=3:b-pyramid=normal", "bframes=3:b-pyramid=strict:b-adapt=0"])
def test_random_targets_through_the_mp4_index_are_exact(tmp_path, x264):
    "Keyframes come from the MP4 sample index (no probe opened); a keyframe that shows after its target is stepped over."
    import random
    from vlmlens.media import _VideoReader
    path = write_video(tmp_path / "r.mp4", (frame_code_image(i, W, H) for i in range(N_FRAMES)), fps=FPS, keyint=KEYINT,
                       options={"x264-params": x264} if x264 else {})
    ref, rng = reference(path), random.Random(0)
    for trial in range(30):
        ts = sorted(rng.uniform(0, N_FRAMES / FPS - 1e-3) for _ in range(rng.randint(1, 12)))
        if trial % 3 == 0: ts = sorted(rng.randrange(N_FRAMES) / FPS for _ in ts)        # exactly on frame times
        with _VideoReader(path) as r:
            r.set_threads(1)
            ims, _ = r.read(ts, (W, H))
            assert [read_frame_code(im) for im in ims] == [shown(ref, t) for t in ts], ts
            assert r.ix is not None and r.probe is None


def test_start_end_clipping(video):
    path, ref = video
    fr = sample_frames(path, num_frames=7, start_s=3.33, end_s=9.1)
    assert fr.timestamps_s == pytest.approx([3.33 + (i + 0.5) * (9.1 - 3.33) / 7 for i in range(7)])
    assert codes(fr) == [shown(ref, t) for t in fr.timestamps_s]
    assert all(33 <= c <= 91 for c in codes(fr))
    fr = sample_frames(path, num_frames=3, start_s=12.0, end_s=99)              # end past the video: clipped
    assert fr.timestamps_s == pytest.approx([12.5, 13.5, 14.5]) and codes(fr) == [125, 135, 145]


def test_fps_and_max_frames(video):
    path, ref = video
    fr = sample_frames(path, fps=2, start_s=1.0, end_s=4.0)
    assert fr.timestamps_s == pytest.approx([1.25, 1.75, 2.25, 2.75, 3.25, 3.75])
    assert codes(fr) == [12, 17, 22, 27, 32, 37]
    fr = sample_frames(path, fps=4, max_frames=5)                               # 60 frames wanted > 5: uniform 5
    assert fr.timestamps_s == pytest.approx([1.5, 4.5, 7.5, 10.5, 13.5])
    assert codes(fr) == [15, 45, 75, 105, 135]


def test_workers_and_max_side(mp4):
    ref = reference(mp4)
    one = sample_frames(mp4, num_frames=23, workers=1)
    three = sample_frames(mp4, num_frames=23, workers=3, max_side=48)
    assert three.stats["workers"] == 3 and one.stats["workers"] == 1
    assert codes(one) == codes(three) == [shown(ref, t) for t in one.timestamps_s]
    assert three.images[0].size == (48, 32)
    small = np.asarray(one.images[5].resize((48, 32), Image.Resampling.BOX), np.float32)
    assert np.abs(small - np.asarray(three.images[5], np.float32)).mean() < 12   # same picture, just smaller


def test_frame_times_default_and_errors():
    assert len(frame_times(100.0)) == 8
    with pytest.raises(ValueError, match="not both"): frame_times(10.0, num_frames=2, fps=1)


# ---------------------------------------------------------------- bad media


def test_bad_media_raise_media_error_naming_the_path(tmp_path, mp4):
    missing = tmp_path / "missing.mp4"
    empty = tmp_path / "empty.mp4"; empty.write_bytes(b"")
    text = tmp_path / "notes.mp4"; text.write_text("this is a text file, not a video\n" * 20)
    data = mp4.read_bytes()
    half = tmp_path / "half.mp4"; half.write_bytes(data[: len(data) // 2])           # moov at the end: lost
    fs = write_video(tmp_path / "fs.mp4", (frame_code_image(i, W, H) for i in range(N_FRAMES)), fps=FPS,
                     keyint=KEYINT, faststart=True)
    fs_half = tmp_path / "fs_half.mp4"; fs_half.write_bytes(fs.read_bytes()[: fs.stat().st_size // 2])
    cases = {missing: "does not exist", empty: "empty", text: "not a readable video",
             half: "not a readable video", fs_half: "truncated or corrupt"}
    for path, why in cases.items():
        with pytest.raises(MediaError) as ei: sample_frames(path, num_frames=8)
        assert str(path) in str(ei.value) and why in str(ei.value), str(ei.value)
        assert ei.value.path == str(path)
    with pytest.raises(MediaError, match=r"asked for 151 frames but the video has only 150"):
        sample_frames(mp4, num_frames=151)
    with pytest.raises(MediaError, match=r"asked for 20 frames but the video has only 10 between 2s and 3s"):
        sample_frames(mp4, num_frames=20, start_s=2, end_s=3)
    with pytest.raises(MediaError, match="after the video ends"): sample_frames(mp4, start_s=20)


def test_audio_only_file_has_no_video_stream(tmp_path):
    p = tmp_path / "audio.m4a"
    with av.open(str(p), "w") as out:
        s = out.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate = 8000
        out.mux(s.encode(frame)); out.mux(s.encode(None))
    with pytest.raises(MediaError, match="no video stream"): sample_frames(p)


# ---------------------------------------------------------------- images


@pytest.mark.parametrize("orientation,red_at", [(1, "left"), (3, "right"), (6, "top"), (8, "bottom")])
def test_load_image_applies_exif_orientation(tmp_path, orientation, red_at):
    img = Image.new("RGB", (60, 40), (0, 0, 255))
    img.paste((255, 0, 0), (0, 0, 30, 40))                                       # left half red, as stored
    exif = img.getexif(); exif[0x0112] = orientation
    img.save(tmp_path / "o.jpg", exif=exif, quality=95)
    out = load_image(tmp_path / "o.jpg")
    assert out.mode == "RGB" and out.size == ((60, 40) if orientation in (1, 3) else (40, 60))
    w, h = out.size
    probe = {"left": (5, h // 2), "right": (w - 5, h // 2), "top": (w // 2, 5), "bottom": (w // 2, h - 5)}[red_at]
    r, g, b = out.getpixel(probe)
    assert r > 200 and b < 60, (orientation, out.getpixel(probe))
    assert load_image(tmp_path / "o.jpg", max_side=30).size == ((30, 20) if orientation in (1, 3) else (20, 30))


def test_load_image_errors(tmp_path):
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    with pytest.raises(MediaError, match="x.png: not a readable image"): load_image(tmp_path / "x.png")
    with pytest.raises(MediaError, match="does not exist"): load_image(tmp_path / "none.jpg")


# ---------------------------------------------------------------- subtitles

SRT = ("1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>Caf\u00e9</i> open\r\n\r\n\r\n"
       "00:00:03.000 --> 00:00:04,000\r\n{\\an8}No number \u00ff\r\n2\r\n"
       "00:00:05,000 --> 00:00:06,000\r\nTwo\r\nlines\r\n")


@pytest.mark.parametrize("enc", ["utf-8", "utf-8-sig", "utf-16", "cp1252", "latin-1"])
def test_read_srt_encodings(tmp_path, enc):
    p = tmp_path / f"s_{enc}.srt"
    p.write_bytes(SRT.encode(enc))
    assert read_subtitles(p) == [Cue(1.0, 2.5, "Caf\u00e9 open"), Cue(3.0, 4.0, "No number \u00ff"),
                                 Cue(5.0, 6.0, "Two\nlines")]


def test_read_srt_with_0xff_bytes_like_infinibench(tmp_path):
    p = tmp_path / "ib.srt"
    p.write_bytes(b"1\n00:00:01,000 --> 00:00:02,000\nHe said \xff\xffhi\xff\n")
    assert read_subtitles(p) == [Cue(1.0, 2.0, "He said \u00ff\u00ffhi\u00ff")]


def test_read_vtt(tmp_path):
    vtt = ("WEBVTT\n\nNOTE a comment\n\nid-1\n00:01.000 --> 00:02.000 align:start\n<v Bob>Hi &amp; bye\n\n"
           "00:00:00.500 --> 00:00:01.000\nfirst\n")
    for enc in ("utf-8", "utf-16"):
        (tmp_path / "a.vtt").write_bytes(vtt.encode(enc))
        assert read_subtitles(tmp_path / "a.vtt") == [Cue(0.5, 1.0, "first"), Cue(1.0, 2.0, "Hi & bye")]


def test_bad_subtitles(tmp_path):
    (tmp_path / "bad.srt").write_bytes(b"\x00\x01binary junk\x02" * 10)
    (tmp_path / "empty.vtt").write_bytes(b"")
    for name, why in (("bad.srt", "no subtitle cues"), ("empty.vtt", "empty"), ("none.srt", "does not exist")):
        with pytest.raises(MediaError) as ei: read_subtitles(tmp_path / name)
        assert str(tmp_path / name) in str(ei.value) and why in str(ei.value)


def test_subtitle_queries():
    cues = [Cue(0, 10, "long"), Cue(1, 2, "a"), Cue(3, 4, "b"), Cue(20, 21, "c")]
    assert [c.text for c in subtitles_between(cues, 2, 3.5)] == ["long", "b"]
    assert subtitles_for_frames(cues, [0.5, 1.5, 4.0, 15, 20]) == [["long"], ["long", "a"], ["long"], [], ["c"]]
    assert transcript(cues) == "long\na\nb\nc"


# ---------------------------------------------------------------- cache and materialize


def test_materialize_fills_parts_and_uses_the_cache(tmp_path, mp4):
    Image.fromarray(frame_code_image(77, 120, 80)).save(tmp_path / "i.png")
    (tmp_path / "s.srt").write_text("1\n00:00:02,000 --> 00:00:04,000\nhello\n")
    msgs = [message("user", {"type": "video", "path": str(mp4), "start": 2.0, "end": 6.0},
                    {"type": "image", "path": str(tmp_path / "i.png")}, "Which frames?")]
    cache = FrameCache(max_entries=2)
    out = materialize(msgs, num_frames=4, max_side=48, cache=cache, subtitles_per_frame=tmp_path / "s.srt")
    v, im, txt = out[0]["content"]
    assert v["timestamps"] == pytest.approx([2.5, 3.5, 4.5, 5.5]) and v["duration_s"] == pytest.approx(15.0)
    assert [read_frame_code(f) for f in v["frames"]] == [25, 35, 45, 55]
    assert v["frames"][0].size == (48, 32) and v["frame_subtitles"] == ["hello", "hello", "", ""]
    assert read_frame_code(im["image"]) == 77 and im["image"].size == (48, 32)
    assert txt == {"type": "text", "text": "Which frames?"}
    assert set(msgs[0]["content"][0]) == {"type", "path", "start", "end"} and "image" not in msgs[0]["content"][1]
    assert (cache.hits, cache.misses) == (0, 1)
    again = materialize(msgs, num_frames=4, max_side=48, cache=cache)
    assert (cache.hits, cache.misses) == (1, 1)                                    # no second decode
    assert again[0]["content"][0]["frames"][0] is v["frames"][0]
    materialize(msgs, num_frames=5, max_side=48, cache=cache)                      # other budget: a miss
    assert (cache.hits, cache.misses) == (1, 2)
    os.utime(mp4, ns=(time.time_ns(), time.time_ns() + 10**9))                      # a changed file is never stale
    materialize(msgs, num_frames=4, max_side=48, cache=cache)
    assert (cache.hits, cache.misses) == (1, 3)


def test_materialize_errors_name_the_file(tmp_path):
    msgs = [message("user", {"type": "video", "path": str(tmp_path / "gone.mp4")})]
    with pytest.raises(MediaError, match="gone.mp4: file does not exist"): materialize(msgs)


# ---------------------------------------------------------------- data the harness does not trust


@pytest.mark.parametrize("bad", ["abc", [1], {"s": 1}, True, float("nan"), -3])
def test_bad_clip_bounds_from_data_are_a_media_error_not_a_crash(mp4, bad):
    "A row's video `start: 'abc'` or `[1]` fails its own item with a MediaError naming the file and field."
    with pytest.raises(MediaError, match=r"b\.mp4: start must be"):
        sample_frames(mp4, num_frames=2, start_s=bad)
    with pytest.raises(MediaError, match=r"b\.mp4: start must be"):
        FrameCache().get(mp4, num_frames=2, start_s=bad)                # never an unhashable key / TypeError
    with pytest.raises(MediaError, match=r"b\.mp4: end must be"):
        FrameCache.key(mp4, num_frames=2, end_s=bad)
    msgs = [message("user", {"type": "video", "path": str(mp4), "start": bad}, "q")]
    with pytest.raises(MediaError, match="start must be"):
        materialize(msgs, num_frames=2, cache=FrameCache())


def test_bad_per_part_frame_counts_and_paths_are_media_errors(mp4):
    with pytest.raises(MediaError, match="num_frames must be a number"):
        materialize([message("user", {"type": "video", "path": str(mp4), "num_frames": "many"})])
    with pytest.raises(MediaError, match="must be a non-empty string, got list"):
        materialize([message("user", {"type": "image", "path": ["x.png"]})])
    fr = sample_frames(mp4, num_frames="3", start_s="1.5")                   # numeric strings from CSV rows are fine
    assert len(fr) == 3 and fr.timestamps_s[0] > 1.5


def test_media_outside_the_data_root_is_refused_per_item(tmp_path, mp4):
    root = tmp_path / "data"
    (root / "img").mkdir(parents=True)
    Image.new("RGB", (8, 8), "red").save(root / "img" / "ok.png")
    outside = tmp_path / "private.png"
    Image.new("RGB", (8, 8), "blue").save(outside)
    (root / "img" / "link.png").symlink_to(outside)
    ok = [message("user", {"type": "image", "path": str(root / "img" / "ok.png")}, "q")]
    assert materialize(ok, root=root)[0]["content"][0]["image"].getpixel((1, 1))[0] > 200
    for path in (str(root / "img" / ".." / ".." / "private.png"), str(outside), str(root / "img" / "link.png"), str(mp4)):
        kind = "video" if path.endswith(".mp4") else "image"
        msgs = [message("user", {"type": kind, "path": path}, "q")]
        with pytest.raises(MediaError, match="outside the data root") as ei:
            materialize(msgs, num_frames=2, root=root)
        assert ei.value.path == path                                            # names the path the row gave
        materialize(msgs, num_frames=2, root=root, allow_outside=True)         # the explicit opt-out reads it
    subs = tmp_path / "s.srt"
    subs.write_text("1\n00:00:00,000 --> 00:00:01,000\nhi\n")
    vid = root / "v.mp4"
    vid.write_bytes(mp4.read_bytes())
    msgs = [message("user", {"type": "video", "path": str(vid), "subtitles": str(subs)})]
    with pytest.raises(MediaError, match="s.srt: resolves to .* outside the data root"):
        materialize(msgs, num_frames=2, root=[root], subtitles_per_frame=True)   # subtitle files too
    assert materialize(msgs, num_frames=2, root=[root, tmp_path], subtitles_per_frame=True)[0]["content"][0]["frame_subtitles"]


def test_large_images_are_downscaled_to_the_pixel_budget(tmp_path):
    from vlmlens.media import DEFAULT_MAX_PIXELS
    Image.new("RGB", (4800, 3600), (10, 200, 30)).save(tmp_path / "big.jpg", quality=70)   # 17.3 MP
    Image.new("RGB", (4800, 3600), (10, 200, 30)).save(tmp_path / "big.png")
    for name in ("big.jpg", "big.png"):
        msgs = [message("user", {"type": "image", "path": str(tmp_path / name)}, "q")]
        im = materialize(msgs)[0]["content"][0]["image"]                        # the default budget applies
        assert im.size[0] * im.size[1] <= DEFAULT_MAX_PIXELS and abs(im.size[0] / im.size[1] - 4 / 3) < 0.01, im.size
        small = materialize(msgs, max_pixels=250_000)[0]["content"][0]["image"]
        assert small.size[0] * small.size[1] <= 250_000 and small.getpixel((5, 5))[1] > 150
        assert materialize(msgs, max_pixels=None)[0]["content"][0]["image"].size == (4800, 3600)   # budget off


# ---------------------------------------------------------------- past 256 frames, approximate frames, shared cache


def test_768_frames_are_exact(tmp_path):
    "InfiniBench's Qwen budget: 768 dense targets, each the frame shown at its time, every GOP decoded once per reader."
    path = write_video(tmp_path / "long.mp4", (frame_code_image(i, W, H) for i in range(800)), fps=FPS, keyint=KEYINT)
    ref = reference(path)
    fr = sample_frames(path, num_frames=768)
    assert len(fr) == 768 and codes(fr) == [shown(ref, t) for t in fr.timestamps_s]
    assert fr.stats["decoded"] + fr.stats["skipped"] <= 800 + fr.stats["workers"] * KEYINT     # a GOP cut between readers


def _keyframes(path):
    "[(pts_s, code)] of the keyframes, by a plain sequential decode."
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        start, tb = s.start_time or 0, float(s.time_base)
        return [((f.pts - start) * tb, read_frame_code(f.to_image())) for f in c.decode(s) if f.key_frame]


@pytest.mark.parametrize("n", [3, 10, 40])
def test_exact_false_returns_the_nearest_keyframes_and_their_own_times(video, n):
    path, ref = video
    keys = _keyframes(path)
    fr = sample_frames(path, num_frames=n, exact=False)
    wanted = [(i + 0.5) * N_FRAMES / FPS / n for i in range(n)]
    key_codes = {c: t for t, c in keys}
    assert all(c in key_codes for c in codes(fr)), (codes(fr), sorted(key_codes))
    assert fr.timestamps_s == fr.frame_pts_s == pytest.approx([key_codes[c] for c in codes(fr)])   # the frames' own times
    for t, got in zip(wanted, fr.timestamps_s):
        nearest = min(abs(k - t) for k, _ in keys)
        assert abs(got - t) <= nearest + 2 / FPS, (t, got, nearest)
    assert fr.stats["decoded"] <= len({c for c in codes(fr)}) and fr.stats["exact"] is False


def test_exact_false_is_a_separate_cache_entry_and_reaches_materialize(mp4):
    cache = FrameCache()
    exact, approx = cache.get(mp4, num_frames=5), cache.get(mp4, num_frames=5, exact=False)
    assert cache.misses == 2 and codes(exact) != codes(approx)
    part = materialize([message("user", {"type": "video", "path": str(mp4)})], num_frames=5, exact=False, cache=cache,
                       max_pixels=None)[0]["content"][0]
    assert part["timestamps"] == approx.timestamps_s and cache.hits == 1


_DECODE = """
import json, sys
from vlmlens.media import DiskFrameStore, FrameCache
c = FrameCache(disk=DiskFrameStore(sys.argv[1]))
fr = c.get(sys.argv[2], num_frames=40)
print(json.dumps({"from_disk": bool(fr.stats.get("from_disk")), "codes": __import__("vlmlens.media").media.read_frame_code(fr.images[7])}))
"""


def test_processes_on_one_host_decode_a_video_once(tmp_path, mp4):
    "Two processes asking for the same frames at once: one decodes (holding the key's lock), the other reads its copy."
    import json
    import subprocess
    import sys
    store = tmp_path / "frames"
    procs = [subprocess.Popen([sys.executable, "-c", _DECODE, str(store), str(mp4)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(o["from_disk"] for o in outs) == [False, True]
    assert outs[0]["codes"] == outs[1]["codes"] == shown(reference(mp4), (7 + 0.5) * N_FRAMES / FPS / 40)
    assert len(list(store.glob("*.npy"))) == 1
    from vlmlens.media import DiskFrameStore
    here = FrameCache(disk=DiskFrameStore(store)).get(mp4, num_frames=40)     # a third process: nothing to decode
    assert here.stats["from_disk"] is True


# ---------------------------------------------------------------- frames by number


@pytest.mark.parametrize("ext,codec", [("mp4", "libx264"), ("mkv", "libx264"), ("webm", "libvpx-vp9")])
def test_frames_by_number_are_those_frames_at_an_ntsc_rate(tmp_path, ext, codec):
    "frame_indices at 30000/1001 fps: frame i is the i-th frame decoded, even where the container keeps times in ms."
    fps, n = 30000 / 1001, 90
    opts = {"deadline": "realtime", "cpu-used": "8"} if codec == "libvpx-vp9" else {}
    path = write_video(tmp_path / f"ntsc.{ext}", (frame_code_image(i, W, H) for i in range(n)), fps=fps, keyint=KEYINT, codec=codec, options=opts)
    assert [c for _, c in reference(path)] == list(range(n))
    idx = [89, 0, 1, 2, 33, 33, 34, 58, 88, 45]                      # any order, repeats, neighbours, both ends
    fr = sample_frames(path, frame_indices=idx)
    assert codes(fr) == idx
    assert fr.timestamps_s == [i / fr.source_fps for i in idx] and fr.source_fps == pytest.approx(fps)
    assert codes(sample_frames(path, frame_indices=range(n), workers=3)) == list(range(n))     # every frame, split over readers
    with pytest.raises(MediaError, match=f"frame index {n} is past the video's last frame"):
        sample_frames(path, frame_indices=[0, n])


def test_frames_by_number_key_the_cache_and_reach_materialize(mp4):
    cache = FrameCache()
    part = {"type": "video", "path": str(mp4), "frame_indices": [5, 140]}
    got = materialize([message("user", part)], num_frames=8, cache=cache)[0]["content"][0]    # the part's indices, not 8 frames
    assert [read_frame_code(f) for f in got["frames"]] == [5, 140] and got["timestamps"] == [0.5, 14.0]
    materialize([message("user", part)], num_frames=8, cache=cache)
    other = materialize([message("user", {**part, "frame_indices": [5, 141]})], cache=cache)[0]["content"][0]
    assert (cache.hits, cache.misses) == (1, 2) and [read_frame_code(f) for f in other["frames"]] == [5, 141]
    with pytest.raises(MediaError, match="2 frames by index but max_frames is 1"):
        materialize([message("user", part)], max_frames=1)
