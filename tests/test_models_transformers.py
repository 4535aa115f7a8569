"""Every registered local architecture, offline, on a tiny random checkpoint built at test time (once per session, in the
shared VLMLENS_CACHE): the real processor and generate path on image, multi-image and video requests, left-padded batches,
the visual-token arithmetic behind the context check, the input limits, the revision, and `vlmlens run --benchmark demo`
end to end."""
import json
import os

import pytest
import torch
from PIL import Image

from vlmlens.core import Request, RunConfig, message
from vlmlens.models import registry, transformers as tb

TINY = sorted(n for n in registry.known_models() if n.startswith("tiny-"))
LOCAL_TYPES = set(registry.TRANSFORMERS_MODEL_TYPES) | set(registry.QWEN_MODEL_TYPES)


def img(w, h, rgb):
    return Image.new("RGB", (w, h), rgb)


def frames(n, w=80, h=60):
    return [img(w, h, (37 * i % 256, 90, 40 + 20 * i)) for i in range(n)]


def video(n, w=80, h=60, step=5.0):
    return {"type": "video", "path": "clip.mp4", "frames": frames(n, w, h), "timestamps": [step * i for i in range(n)],
            "duration_s": step * n}


def req(sid, *parts, max_new_tokens=None):
    return Request(sid, [message("user", *parts)], max_new_tokens=max_new_tokens)


@pytest.fixture(scope="module", params=TINY)
def backend(request):
    b = registry.load_backend(request.param, batch_size=4)
    yield b
    b.close()


def test_every_tested_architecture_has_a_tiny_model():
    types = {registry.get_spec(n).local_builder.rsplit(":", 1)[-1] for n in TINY if "transformers" in registry.get_spec(n).local_builder}
    assert types == set(registry.TRANSFORMERS_MODEL_TYPES) and "tiny-qwen2.5-vl" in TINY


def test_batch_of_images_videos_and_text_equals_one_by_one(backend):
    one_image = backend.max_images == 1
    reqs = [req("img", {"type": "image", "image": img(64, 48, (200, 30, 30))}, "What colour is the ball?"),
            req("txt", "Select the best answer to the following multiple-choice question. " * 2),
            req("vid", video(1 if one_image else 4), "What happens in the video?"),
            req("hi", {"type": "image", "image": img(90, 60, (0, 0, 200))}, "यह किस रंग की गेंद है?", max_new_tokens=3)]
    if not one_image:
        reqs.append(req("two", {"type": "image", "image": img(64, 48, (200, 30, 30))}, {"type": "image", "image": img(48, 64, (9, 9, 9))},
                        "Same colour?"))
    batched = backend.generate(reqs, max_new_tokens=6)
    single = [backend.generate([r], max_new_tokens=6)[0] for r in reqs]
    assert [g.error for g in batched] == [None] * len(reqs)
    assert [(g.text, g.usage) for g in batched] == [(g.text, g.usage) for g in single]
    assert batched[3].usage["output_tokens"] <= 3                                    # a request's own answer budget
    lengths = backend.prepare_inputs(reqs)["attention_mask"].sum(dim=1).tolist()
    assert [g.usage["input_tokens"] for g in batched] == lengths                      # padding not counted
    assert lengths[0] > len(backend.tokenizer(backend.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "text", "text": "What colour is the ball?"}]}], tokenize=False,
        add_generation_prompt=True), add_special_tokens=False).input_ids)             # the image really adds tokens


def test_the_image_reaches_the_model(backend):
    def logits(colour):
        inputs = backend.prepare_inputs([req("c", {"type": "image", "image": img(64, 48, colour)}, "Colour?")])
        with torch.inference_mode(): return backend.model(**inputs).logits[0, -1]
    assert not torch.allclose(logits((255, 0, 0)), logits((0, 0, 255)))


def test_video_reaches_the_model_with_its_times(backend):
    n = 1 if backend.max_images == 1 else 4
    base = backend.prepare_inputs([req("v", video(n, step=1.0), "?")])
    later = backend.prepare_inputs([req("v", video(n, step=60.0), "?")])
    if backend.timestamps:       # the times go into the prompt (Qwen3-VL) or the positions (Qwen2.5-VL)
        differs = base["input_ids"].shape != later["input_ids"].shape or not torch.equal(base["input_ids"], later["input_ids"]) \
            or not torch.equal(base.get("second_per_grid_ts", torch.zeros(1)), later.get("second_per_grid_ts", torch.zeros(1)))
        assert differs
    elif not backend.video_input and n > 1:
        text = backend.tokenizer.decode(later["input_ids"][0])
        assert "[00:01:00]" in text and "[00:03:00]" in text                    # frames as images, each after its time


def test_visual_tokens_match_real_prompts(backend):
    """The context arithmetic equals the real prompt growth: exactly up to 32 frames, and errs on the safe side beyond."""
    text_only = backend.prepare_inputs([req("t", "?")])["input_ids"].shape[1]
    with_img = backend.prepare_inputs([req("i", {"type": "image", "image": img(120, 90, (1, 2, 3))}, "?")])["input_ids"].shape[1]
    assert backend.visual_tokens(120, 90) == with_img - text_only
    if backend.max_images == 1: return
    for n in (3, 6):
        real = backend.prepare_inputs([req("v", video(n, 120, 90), "?")])["input_ids"].shape[1] - text_only
        if backend.timestamps and backend.video_input:    # printed times are measured at their longest (4 digits)
            assert real <= backend.visual_tokens(120, 90, n) <= real + 3 * n, n
        else:
            assert backend.visual_tokens(120, 90, n) == real, n
    if backend.video_input:
        real = backend.prepare_inputs([req("v", video(40, 32, 32, step=0.5), "?")])["input_ids"].shape[1] - text_only
        slack = 40 * (3 if backend.timestamps else 1)       # digits of labels and times are counted at their longest
        assert real <= backend.visual_tokens(32, 32, 40) <= real + slack


def test_fit_frames_shrinks_a_budget_that_overflows(backend):
    saved = backend.context_tokens
    try:
        backend.context_tokens = backend.visual_tokens(80, 60, 5) + 300 + 64
        n, why = backend.fit_frames(64, 80, 60, text_tokens=300, new_tokens=64)
        assert n >= 5 and n < 64 and backend.name in why and "exceeds the context" in why
        assert backend.visual_tokens(80, 60, n) <= backend.context_tokens - 364 < backend.visual_tokens(80, 60, n + 1)
        assert backend.fit_frames(n, 80, 60, text_tokens=300, new_tokens=64) == (n, None)
        with pytest.raises(ValueError, match="even 1 frame"):
            backend.fit_frames(8, 80, 60, text_tokens=backend.context_tokens, new_tokens=64)
    finally:
        backend.context_tokens = saved


def test_revision_is_the_cached_content_hash(backend, monkeypatch):
    assert backend.revision == tb.content_hash(backend.model_id) and backend.revision.startswith("sha256:")
    info = backend.info()
    json.dumps(info)
    assert info["revision"] == backend.revision and info["model_type"] in LOCAL_TYPES and info["parameters"] < 300_000
    monkeypatch.setattr(tb, "content_hash", lambda p: (_ for _ in ()).throw(AssertionError("hashed again")))
    assert tb.cached_content_hash(backend.model_id) == backend.revision            # remembered by path, size and mtime


def test_input_limits_fail_per_request_with_one_line():
    with registry.load_backend("tiny-mllama") as b:                                  # one image per request
        two = req("two", {"type": "image", "image": img(40, 40, (1, 1, 1))}, {"type": "image", "image": img(40, 40, (2, 2, 2))}, "?")
        ok = req("ok", {"type": "image", "image": img(40, 40, (1, 1, 1))}, "?")
        g = b.generate([two, ok], max_new_tokens=3)
        assert "at most 1 image(s) per request, this one has 2" in g[0].error and "max_images=2" in g[0].error
        assert g[1].error is None
    with registry.load_backend("tiny-gemma3", frames_as_images="false") as b:        # no video input, frames forbidden
        g = b.generate([req("v", video(2), "?")], max_new_tokens=3)[0]
        assert "frames_as_images=False" in g.error and "\n" not in g.error
    with registry.load_backend("tiny-internvl", frames_as_images=True) as b:         # a video model asked for frames as images
        assert not b.video_input and "[00:00:05]" in b.tokenizer.decode(b.prepare_inputs([req("v", video(2), "?")])["input_ids"][0])


def test_configuration_checks_before_the_run():
    with pytest.raises(ValueError, match="at most 1 image"):
        registry.get_spec("tiny-mllama").check(RunConfig("demo", "tiny-mllama", num_frames=4))
    with pytest.raises(ValueError, match="frames_as_images=False forbids"):
        registry.get_spec("tiny-aya-vision").check(RunConfig("demo", "tiny-aya-vision", num_frames=2, model_kwargs={"frames_as_images": "false"}))
    with pytest.raises(ValueError, match="not run in 'fr'.*--force"):
        registry.get_spec("tiny-qwen3-vl").check(RunConfig("demo", "tiny-qwen3-vl", language="fr"))
    registry.get_spec("tiny-qwen3-vl").check(RunConfig("demo", "tiny-qwen3-vl", language="fr", force=True, num_frames=64))
    with pytest.raises(ValueError, match="unknown transformers backend option"):
        registry.load_backend("tiny-gemma3", max_pixel=5)


@pytest.mark.parametrize("name", TINY)
def test_demo_benchmark_end_to_end(name, tmp_path):
    """`vlmlens run --benchmark demo` on each tiny architecture: image and video items, every item answered."""
    from vlmlens.cli import main
    frames_n = "1" if registry.get_spec(name).max_images == 1 else "2"
    rc = main(["run", "--benchmark", "demo", "--model", name, "--frames", frames_n, "--language", "en", "--batch-size", "5",
               "--model-kwarg", "batch_size=5",
               "--subset", "image_color,video_order", "--output-root", str(tmp_path), "--run-name", "r", "--no-progress"])
    assert rc in (0, None)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["overall"]["n"] == 5 and summary["overall"]["n_errors"] == 0
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    model = info["model"]
    assert model["name"] == name and model["revision"].startswith("sha256:") and model["backend"] in ("hf", "transformers")
    preds = [json.loads(l) for l in (tmp_path / "r" / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 5 and all(p["raw"] is not None and p["model_revision"] == model["revision"] for p in preds)


def test_true_false_options_accept_yes_on_1_and_refuse_a_typo_before_the_run(tmp_path):
    kw = tb.check_kwargs(registry.get_spec("tiny-qwen2.5-vl"), {"reuse_prefix": "yes", "frame_labels": "on", "frames_as_images": "1",
                                                                 "trust_remote_code": "no"}, tb.BACKEND_KWARGS)
    assert [kw[k] for k in ("reuse_prefix", "frame_labels", "frames_as_images", "trust_remote_code")] == [True, True, True, False]
    import subprocess, sys
    out = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
                          "--model", "tiny-qwen2.5-vl", "--limit", "2", "--output-root", str(tmp_path / "runs"), "--no-progress",
                          "--model-kwarg", "reuse_prefix=maybe"], capture_output=True, text=True, timeout=300)
    lines = [l for l in out.stderr.splitlines() if l.startswith("vlmlens:")]   # (a first use also builds the demo data)
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "reuse_prefix must be true or false" in lines[0]
    assert not (tmp_path / "runs").exists()
