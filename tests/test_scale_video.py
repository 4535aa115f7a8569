"""Video work done once per video: frames decoded once per video (and shared by later runs on the host), and a
served model receives each video's first question before that video's other questions (so that the server's
prefix cache holds the video when they arrive). The model is an OpenAI-compatible server on loopback."""
import uuid
from collections import defaultdict

import pytest

from vlmlens import media
from vlmlens.core import RunConfig
from vlmlens.runner import run


def _cfg(server, tmp_path, **kw):
    base = dict(benchmark="demo", model=f"openai-compatible:m-{uuid.uuid4().hex[:8]}@{server.openai_base_url}", num_frames=3,
                max_new_tokens=4, output_root=str(tmp_path), progress=False)
    return RunConfig(**{**base, **kw})


def _video_of(call) -> tuple | None:
    "The frames a request carries (a video's frames go as several images), or None for fewer than two images."
    urls = tuple(p["image_url"]["url"] for m in (call.json or {}).get("messages", [])
                 for p in (m.get("content") if isinstance(m.get("content"), list) else []) if p.get("type") == "image_url")
    return urls if len(urls) > 1 else None


def test_a_served_model_gets_each_videos_first_question_before_the_others(server, tmp_path):
    server.latency = 0.3
    summary = run(_cfg(server, tmp_path, model_kwargs={"concurrency": 8}))
    assert summary["overall"]["n_errors"] == 0
    by_video = defaultdict(list)
    for c in server.requests("openai"):
        v = _video_of(c)
        if v is not None: by_video[v].append(c)
    assert len(by_video) >= 4 and all(len(cs) >= 3 for cs in by_video.values())
    for cs in by_video.values():
        first = min(cs, key=lambda c: c.t_start)
        assert all(first.t_end <= c.t_start for c in cs if c is not first), "a question was sent before its video was warm"
    assert server.max_in_flight > 1                                          # still concurrent across videos


@pytest.fixture
def decodes(monkeypatch):
    "The videos `media.sample_frames` decodes (the frame caches call it on a miss)."
    seen = []
    real = media.sample_frames
    monkeypatch.setattr(media, "sample_frames", lambda path, *a, **k: seen.append(str(path)) or real(path, *a, **k))
    return seen


def test_frames_are_decoded_once_per_video_and_later_runs_read_them_from_the_host_cache(server, tmp_path, decodes, monkeypatch):
    monkeypatch.setattr(media, "cache_root", lambda: tmp_path / "host-cache")   # an empty frame store for this test
    frames = dict(num_frames=7, max_side=37)
    first = run(_cfg(server, tmp_path, run_name="one", **frames))
    assert first["overall"]["n_errors"] == 0
    assert sorted(decodes) == sorted(set(decodes)) and len(decodes) == 5, decodes   # five demo videos, each decoded once
    decodes.clear()
    again = run(_cfg(server, tmp_path, run_name="two", **frames))          # another model, the same frames
    assert decodes == [] and again["overall"]["n"] == first["overall"]["n"]
    assert len(list((tmp_path / "host-cache" / "frames").glob("*.npy"))) == 5
