"""End-to-end tests of the transformers backend on the tiny random Qwen2.5-VL (CPU, offline)."""
import os

import pytest
import torch
from PIL import Image

from vlmlens.core import Request, message
from vlmlens.models import registry
from vlmlens.models.qwen_vl import (HFBackend, build_tiny_qwen25vl, content_hash, estimate_visual_tokens, sampling_fps,
                               tiny_model_dir, TINY_MODEL_NAME)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    return build_tiny_qwen25vl(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def backend(tiny_path):
    b = HFBackend(str(tiny_path), name="tiny", languages=("en", "hi", "te"))
    yield b
    b.close()


def img(w, h, rgb):
    return Image.new("RGB", (w, h), rgb)


def frames(n, w=80, h=60):
    return [img(w, h, (30 * i % 256, 100, 50 + 10 * i)) for i in range(n)]


def req(sid, *parts, max_new_tokens=None):
    parts = [{"type": "image", "image": p} if isinstance(p, Image.Image) else p for p in parts]
    return Request(sid, [message("user", *parts)], max_new_tokens=max_new_tokens)


def run(b, reqs, batch_size, **kw):
    b.batch_size = batch_size
    return b.generate(reqs, **kw)


# -- determinism -----------------------------------------------------------------

def test_two_builds_same_revision(tmp_path, tiny_path, backend):
    other = build_tiny_qwen25vl(tmp_path / "again")
    assert content_hash(other) == content_hash(tiny_path) == backend.revision
    assert backend.revision.startswith("sha256:") and len(backend.revision) == 7 + 64


def test_same_request_same_text(backend):
    r = req("a", img(64, 48, (200, 30, 30)), "What colour is the ball?")
    g1, g2 = run(backend, [r], 1, max_new_tokens=12), run(backend, [r], 1, max_new_tokens=12)
    assert g1[0].error is None and g1[0].text == g2[0].text and g1[0].usage == g2[0].usage


def test_sampling_is_seeded(backend):
    r = req("s", "Tell me a story.")
    a = run(backend, [r], 1, max_new_tokens=12, temperature=1.0, seed=1)[0].text
    b = run(backend, [r], 1, max_new_tokens=12, temperature=1.0, seed=1)[0].text
    c = run(backend, [r], 1, max_new_tokens=12, temperature=1.0, seed=2)[0].text
    assert a == b and a != c


# -- batching ----------------------------------------------------------------------

def test_left_padded_batch_equals_one_by_one(backend):
    reqs = [req("short", "Hi"),
            req("long", "Select the best answer to the following multiple-choice question. " * 3),
            req("img", img(120, 90, (10, 200, 10)), "What is shown?"),
            req("hi", "यह किस रंग की गेंद है?"),
            req("vid", {"type": "video", "frames": frames(4), "timestamps": [0, 1, 2, 3]}, "What happens?")]
    batched = run(backend, reqs, 5, max_new_tokens=10)
    single = run(backend, reqs, 1, max_new_tokens=10)
    assert [g.error for g in batched] == [None] * 5
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.usage for g in batched] == [g.usage for g in single]
    assert len({g.text for g in batched}) > 1                      # the random model is not degenerate
    ins = [g.usage["input_tokens"] for g in batched]
    assert ins[1] > ins[0] and ins[2] > ins[0]                      # mixed lengths really were padded


def test_usage_counts(backend):
    prompt = "What colour is the ball?"
    g = run(backend, [req("u", prompt)], 1, max_new_tokens=6)[0]
    text = backend.processor.apply_chat_template([{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                                                 tokenize=False, add_generation_prompt=True)
    assert g.usage["input_tokens"] == len(backend.processor.tokenizer(text).input_ids)
    assert 1 <= g.usage["output_tokens"] <= 6 and g.latency_s > 0
    # a request's own max_new_tokens truncates its row inside a longer batch: same as generating 3 tokens alone
    short, long = run(backend, [req("a", prompt, max_new_tokens=3), req("b", prompt)], 2, max_new_tokens=12)
    alone = run(backend, [req("a", prompt)], 1, max_new_tokens=3)[0]
    assert (short.text, short.usage) == (alone.text, alone.usage) and short.usage["output_tokens"] <= 3
    assert long.usage["output_tokens"] > short.usage["output_tokens"] or long.usage["output_tokens"] == short.usage["output_tokens"] < 3


# -- media -----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [4, 5])
def test_video_frames_and_timestamps(backend, n):
    ts = [10.0 + 0.5 * i for i in range(n)]                        # 2 fps, starting at 10 s
    r = req(f"v{n}", {"type": "video", "path": "clip.mp4", "frames": frames(n), "timestamps": ts, "duration_s": 60.0},
            "What happens in the video?")
    inputs = backend.prepare_inputs([r])
    t, h, w = inputs["video_grid_thw"][0].tolist()
    assert t == (n + 1) // 2                                        # odd count padded to an even one
    assert inputs["second_per_grid_ts"][0].item() == pytest.approx(2 / sampling_fps(ts, n)) == pytest.approx(1.0)
    n_vis = t * h * w // 4
    assert n_vis == backend.estimate_visual_tokens(80, 60, n)
    assert int((inputs["input_ids"][0] == backend.model.config.video_token_id).sum()) == n_vis
    g = backend.generate([r], max_new_tokens=5)[0]
    assert g.error is None and g.usage["input_tokens"] == inputs["attention_mask"][0].sum().item()


def temporal_positions(backend, inputs):
    pos, _ = backend.model.model.get_rope_index(
        inputs["input_ids"], inputs["mm_token_type_ids"], video_grid_thw=inputs["video_grid_thw"],
        second_per_grid_ts=inputs["second_per_grid_ts"], attention_mask=inputs["attention_mask"])
    is_vid = inputs["input_ids"][0] == backend.model.config.video_token_id
    return sorted(set(pos[0, 0, is_vid].tolist()))


def test_real_time_reaches_position_ids(backend):
    """Temporal M-RoPE steps follow the frames' real spacing: tokens_per_second (2) x 2 frames x interval."""
    tps = backend.model.config.vision_config.tokens_per_second
    for interval in (1.0, 4.0):
        ts = [interval * i for i in range(6)]
        inputs = backend.prepare_inputs([req("v", {"type": "video", "frames": frames(6), "timestamps": ts}, "?")])
        steps = {b - a for a, b in zip(*(lambda p: (p, p[1:]))(temporal_positions(backend, inputs)))}
        assert steps == {int(tps * 2 * interval)}


def test_image_and_text_interleaved(backend):
    a, b = img(64, 48, (200, 0, 0)), img(200, 150, (0, 0, 200))
    r = req("mix", "First picture:", a, "Second picture:", b,
            "Are they the same colour?")
    inputs = backend.prepare_inputs([r])
    ids = inputs["input_ids"][0].tolist()
    tok = backend.processor.tokenizer
    rendered = tok.decode(ids)
    assert rendered.index("First picture:") < rendered.index("<|image_pad|>") < rendered.index("Second picture:")
    n_img = sum(t == backend.model.config.image_token_id for t in ids)
    assert n_img == backend.estimate_visual_tokens(64, 48) + backend.estimate_visual_tokens(200, 150)
    assert backend.estimate_visual_tokens(200, 150) > backend.estimate_visual_tokens(64, 48)
    g = backend.generate([r], max_new_tokens=6)[0]
    assert g.error is None and g.usage["input_tokens"] == len(ids)


def test_pixel_bounds_from_backend_and_part(tiny_path):
    b = HFBackend(str(tiny_path), max_pixels=4 * 28 * 28)
    try:
        r = req("p", {"type": "image", "image": img(400, 300, (1, 2, 3))}, "?")
        n1 = int(b.prepare_inputs([r])["image_grid_thw"][0].prod()) // 4
        assert b.image_pixels[1] == 4 * 28 * 28 and b.video_pixels[1] == 4 * 28 * 28   # applies to frames too
        assert n1 == estimate_visual_tokens(400, 300, min_pixels=b.image_pixels[0], max_pixels=4 * 28 * 28) <= 4
        r2 = req("p2", {"type": "image", "image": img(400, 300, (1, 2, 3)), "max_pixels": 9 * 28 * 28}, "?")
        assert int(b.prepare_inputs([r2])["image_grid_thw"][0].prod()) // 4 == estimate_visual_tokens(
            400, 300, min_pixels=b.image_pixels[0], max_pixels=9 * 28 * 28) > n1
    finally:
        b.close()


# -- failures ----------------------------------------------------------------------------

def test_broken_request_does_not_sink_the_batch(backend):
    good = [req("g1", "Hello"), req("g2", img(64, 48, (0, 255, 0)), "Colour?")]
    bad = Request("bad", [message("user", {"type": "image", "path": "missing.png", "image": None}, "Colour?")])
    gens = run(backend, [good[0], bad, good[1]], 3, max_new_tokens=6)
    assert gens[1].text is None and "request bad" in gens[1].error and "image" in gens[1].error
    alone = run(backend, good, 1, max_new_tokens=6)
    assert [gens[0].text, gens[2].text] == [g.text for g in alone] and all(g.error is None for g in alone)


# -- registry ----------------------------------------------------------------------------

def test_registry_loads_tiny_and_local_paths(tmp_path, monkeypatch, tiny_path):
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "cache"))
    with registry.load_backend("tiny-qwen2.5-vl") as b:
        assert isinstance(b, HFBackend) and b.name == "tiny-qwen2.5-vl"
        assert b.model_id == str(tmp_path / "cache" / "models" / TINY_MODEL_NAME) == str(tiny_model_dir())
        assert b.revision == content_hash(tiny_path)
        assert b.supports_language("te-IN") and not b.supports_language("fr")
        info = b.info()
        assert info["revision"] == b.revision and info["backend"] == "hf" and info["parameters"] < 300_000
    with registry.load_backend(str(tiny_path), batch_size=2) as b:      # a raw local checkpoint directory
        assert b.revision == content_hash(tiny_path) and b.batch_size == 2 and b.languages == ()
    with pytest.raises(ValueError, match="unknown hf backend option"):
        registry.load_backend(str(tiny_path), max_pixel=5)


def test_language_claims():
    """The papers decide (HinTel §4.1, MINERVA-Cultural): Qwen2.5-VL-7B runs Hindi in HinTel, not Telugu; all 18 CURVE locales."""
    assert registry.supports_language("tiny-qwen2.5-vl", "hi") and registry.supports_language("tiny-qwen2.5-vl", "en")
    assert registry.supports_language("qwen2.5-vl-7b", "hi", "hintel") and not registry.supports_language("qwen2.5-vl-7b", "te", "hintel")
    assert registry.supports_language("qwen2.5-vl-7b", "te-IN", "curve") and registry.supports_language("qwen2.5-vl-7b", "ta-IN", "curve")
    assert registry.get_spec("qwen2.5-vl-7b").languages_for("infinibench") == ("en",)
    for m in ("qwen2.5-vl-3b", "qwen2.5-vl-72b", "qwen2-vl-7b"):           # not evaluated in Indic languages by any paper
        assert registry.supports_language(m, "en") and registry.supports_language(m, "ja")
        assert not registry.supports_language(m, "hi") and not registry.supports_language(m, "te")
    with pytest.raises(KeyError, match="known models"):
        registry.supports_language("no-such-model", "en")


def _video_q(clip, q, start=0.0):
    return Request("v", [message("system", "Answer briefly."),
                         message("user", {"type": "video", "frames": clip, "timestamps": [start + 0.5 * i for i in range(len(clip))]}, q)])


def test_prefix_reuse_gives_the_same_answers_and_encodes_each_video_once(tiny_path):
    "Questions video first: the vision tower runs once per video, and greedy answers equal those without reuse."
    a, b = frames(8), frames(8, w=96, h=72)[::-1]
    qs = [(a, "What happens first?"), (a, "Who is in the room?"), (a, "What colour is the ball?"),
          (b, "What happens first?"), (b, "Where are they?"), (a, "What happens first?")]
    answers = {}
    for reuse in (False, True):
        be = HFBackend(str(tiny_path), name="tiny", reuse_prefix=reuse)
        calls = []
        hook = be.model.model.visual.register_forward_hook(lambda *_: calls.append(1))
        answers[reuse] = [(g.text, g.usage, g.error) for g in be.generate([_video_q(c, q) for c, q in qs], max_new_tokens=8)]
        hook.remove()
        if reuse:
            assert be.prefix_stats == {"hits": 3, "misses": 3}                # a, b, and a again after b
            assert len(calls) == 3, "the vision tower ran more than once per video (in a row)"
        else:
            assert len(calls) == len(qs)
        be.close()
    assert all(e is None for _, _, e in answers[True])
    assert answers[True] == answers[False]
    assert len({t for t, _, _ in answers[False]}) > 1, "the tiny model must answer differently to make the test meaningful"


def test_prefix_reuse_is_per_single_request_and_can_be_turned_off(tiny_path):
    be = HFBackend(str(tiny_path), name="tiny", batch_size=2)
    clip = frames(4)
    be.generate([_video_q(clip, "One?"), _video_q(clip, "Two?")], max_new_tokens=4)   # one batch of two: computed in full
    assert getattr(be, "prefix_stats", {"hits": 0})["hits"] == 0
    be.close()
    off = registry.load_backend("tiny-qwen2.5-vl", reuse_prefix="false")
    assert off.reuse_prefix is False and off.info()["reuse_prefix"] is False
    off.generate([_video_q(clip, "One?")], max_new_tokens=4)
    assert off._prefix is None
    off.close()


def test_runner_decodes_frames_at_the_processor_size_with_identical_inputs_and_answers(tiny_path, tmp_path):
    "The runner hands the backend's GridFit to the frame sampler: smaller frames, the same tensors, the same answers."
    import numpy as np
    from vlmlens import media, runner
    from vlmlens.benchmarks.base import Benchmark
    from vlmlens.core import RunConfig, Sample
    rng = np.random.default_rng(0)
    tex = rng.integers(0, 256, (150, 400, 3), dtype=np.uint8)
    video = media.write_video(tmp_path / "clip.mp4", (np.ascontiguousarray(tex[:, 4 * i: 4 * i + 200]) for i in range(24)), fps=8)
    s = Sample("v1", "demo", question="What happens?", options=["a", "b"], answer=0, media=[{"kind": "video", "path": str(video)}])
    cfg = RunConfig("demo", "tiny", num_frames=4, allow_outside_media=True)
    be = HFBackend(str(tiny_path), name="tiny")
    try:
        fit = runner.frame_fit(be)
        assert fit == be.frame_fit() and fit.size(200, 150) != (200, 150)
        full, _ = runner.prepare(Benchmark(), s, cfg, None)
        fitted, _ = runner.prepare(Benchmark(), s, cfg, None, fit=fit)
        def frames_of(r): return next(p["frames"] for m in r.messages for p in m["content"] if isinstance(p, dict) and "frames" in p)
        fv, gv = frames_of(full), frames_of(fitted)
        assert [f.size for f in fv] == [(200, 150)] * 4 and [f.size for f in gv] == [fit.size(200, 150)] * 4
        a, b = be.prepare_inputs([full]), be.prepare_inputs([fitted])
        assert set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)
        assert [g.text for g in be.generate([full, fitted], max_new_tokens=6)] == [be.generate([full], max_new_tokens=6)[0].text] * 2
    finally:
        be.close()


def test_grid_fit_is_qwen_vl_utils_smart_resize():
    "GridFit re-states qwen-vl-utils' smart_resize; it must give the same size everywhere (or refuse where it raises)."
    import random
    from qwen_vl_utils.vision_process import smart_resize
    from vlmlens.media import GridFit
    rng = random.Random(0)
    for _ in range(3000):
        f = rng.choice([28, 32, 56, 64])
        lo = rng.choice([4, 128, 256]) * f * f // 4
        g = GridFit(f, lo, lo * rng.choice([1, 2, 8, 64]))
        w, h = rng.randint(1, 4000), rng.randint(1, 4000)
        try: want = smart_resize(h, w, f, g.min_pixels, g.max_pixels)[::-1]
        except ValueError: want = None
        got = g.size(w, h)
        assert got == want or (got is None and want is not None and 0 in want), (f, g, w, h, got, want)


def test_the_qwen_vl_path_shares_the_transformers_input_preparation(tiny_path):
    "One `prepare_inputs` for every local backend (checks, media memo, left padding); the Qwen-VL path supplies only its processor arguments."
    from vlmlens.models.transformers import TransformersBackend
    assert HFBackend.prepare_inputs is TransformersBackend.prepare_inputs
    b = HFBackend(str(tiny_path), name="tiny")
    try:
        kw = b.processor_inputs([Request("a", [message("user", "Hi")]), Request("b", [message("user", "A longer question here?")])])
        assert kw["do_resize"] is False and len(kw["text"]) == 2 and "padding" not in kw
        mask = b.prepare_inputs([Request("a", [message("user", "Hi")]), Request("b", [message("user", "A longer question here?")])])["attention_mask"]
        assert mask[0, 0] == 0 and mask[0, -1] == 1                                   # the shorter one padded on the left
    finally: b.close()
