"""Video as video to served models: `openai-compatible:` with `video=native` sends the run's sampled frames as one
`video_url` MP4 part (vLLM/SGLang's documented form), and the frames it carries are the local backend's frames."""
import base64
import io
import json
import os
import subprocess
import sys

import av
import pytest
from PIL import Image

from loopback import LoopbackServer
from vlmlens.core import Request, message
from vlmlens.media import frame_code_image, materialize, read_frame_code, write_video
from vlmlens.models.qwen_vl import to_qwen_messages
from vlmlens.models.registry import load_backend

QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"


def coded_video(path, seconds=5, fps=8):
    "A video whose frame i shows the code i (read back with `read_frame_code`)."
    return write_video(path, [frame_code_image(i, 64, 48) for i in range(seconds * fps)], fps=fps)


def decode(url: str) -> list[tuple[int, float]]:
    "(frame code, time in s) of every frame of an MP4 data URL."
    assert url.startswith("data:video/mp4;base64,")
    with av.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as c:
        return [(read_frame_code(f.to_image()), float(f.time)) for f in c.decode(video=0)]


def test_served_video_carries_the_local_backends_frames(tmp_path):
    path = coded_video(tmp_path / "v.mp4")
    reqs = [Request(f"q{k}", materialize([message("user", {"type": "video", "path": str(path)}, q)], num_frames=6))
            for k, q in enumerate(["What happens first?", "What happens last?"])]
    local = [p for m in to_qwen_messages(reqs[0].messages, image_pixels=(4, 1 << 22), video_pixels=(4, 1 << 22))
             for p in m["content"] if p["type"] == "video"][0]         # what the local hf backend hands the processor
    with LoopbackServer() as srv:
        b = load_backend(f"openai-compatible:{QWEN}@{srv.openai_base_url}", video="native", cache=False, progress=False)
        gens = b.generate(reqs, max_new_tokens=8)
        b.close()
        calls = srv.requests("openai")
    assert [g.error for g in gens] == [None, None] and [c.status for c in calls] == [200, 200]
    bodies = sorted((c.json for c in calls), key=lambda j: j["messages"][0]["content"][-1]["text"])
    urls = []
    for body in bodies:
        parts = body["messages"][0]["content"]
        assert [p["type"] for p in parts] == ["video_url", "text"]      # one video part, no frames as images
        urls.append(parts[0]["video_url"]["url"])
        assert body["media_io_kwargs"] == {"video": {"num_frames": 6}}
        assert body["mm_processor_kwargs"]["fps"] == pytest.approx(local["sample_fps"], rel=1e-5)
    assert urls[0] == urls[1]                                            # byte-identical across the video's questions
    got = decode(urls[0])
    ts = reqs[0].messages[0]["content"][0]["timestamps"]
    assert [code for code, _ in got] == [read_frame_code(f) for f in local["video"]]   # the same frames ...
    assert [code for code, _ in got] == [int(t * 8) for t in ts]       # frame i is on screen over [i/8, (i+1)/8)
    assert [t for _, t in got] == pytest.approx([t - ts[0] for t in local["timestamps"]], abs=0.5 / local["sample_fps"])  # ... at their times


def test_images_mode_is_unchanged_and_schema_is_checked(tmp_path):
    path = coded_video(tmp_path / "v.mp4", seconds=2)
    req = Request("q", materialize([message("user", {"type": "video", "path": str(path)}, "Q?")], num_frames=3))
    with LoopbackServer() as srv:
        b = load_backend(f"openai-compatible:{QWEN}@{srv.openai_base_url}", video="images", cache=False, progress=False)
        assert b.generate([req], max_new_tokens=4)[0].error is None
        b.close()
        body = srv.requests("openai")[0].json
    assert [p["type"] for p in body["messages"][0]["content"]].count("image_url") == 3
    assert "media_io_kwargs" not in body
    from loopback import _check_openai_media                            # the loopback refuses what vLLM would
    assert _check_openai_media({"messages": [{"role": "user", "content": [{"type": "video_url", "video_url": "x"}]}]})
    assert _check_openai_media({"messages": [], "media_io_kwargs": {"video": 8}})


@pytest.mark.parametrize("model,why", [("gpt-4o", "only OpenAI-compatible servers"),
                                       ("openai-compatible:google/gemma-3-4b-it@{url}", "has no video input")])
def test_native_video_refused_before_the_run(server, tmp_path, model, why):
    "Refused in one line before anything is created, by a server that answers (so the refusal is the video input's)."
    out, model = tmp_path / "runs", model.format(url=server.openai_base_url)
    r = subprocess.run([sys.executable, "-m", "vlmlens", "run", "--benchmark", "demo", "--model", model,
                        "--model-kwarg", "video=native", "--output-root", str(out)], capture_output=True, text=True,
                       env={**__import__("os").environ, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"})
    assert r.returncode == 2, r.stderr
    said = [l for l in r.stderr.strip().splitlines() if not l.startswith("building the vlmlens demo data")]   # tqdm of the demo data
    assert len(said) == 1 and why in said[0] and "Traceback" not in r.stderr
    assert not out.exists()


def test_a_served_run_sends_each_video_as_one_mp4_via_the_cli(server, tmp_path):
    server.default_text = "The answer is B."
    cmd = [sys.executable, "-m", "vlmlens", "run", "--benchmark", "demo", "--language", "en", "--frames", "4", "--limit", "8",
           "--model", f"openai-compatible:{QWEN}@{server.openai_base_url}", "--model-kwarg", "video=native",
           "--model-kwarg", "cache=false", "--output-root", str(tmp_path), "--run-name", "served", "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((tmp_path / "served" / "summary.json").read_text())
    assert summary["overall"]["n"] == 8 and summary["overall"]["n_errors"] == 0
    video_calls = [c for c in server.requests("openai") if "video_url" in json.dumps(c.json)]
    assert video_calls and all(c.status == 200 for c in server.requests("openai"))
    for c in video_calls:
        kinds = [p["type"] for m in c.json["messages"] if isinstance(m["content"], list) for p in m["content"]]
        assert kinds.count("video_url") == 1 and c.json["media_io_kwargs"] == {"video": {"num_frames": 4}}
        url = next(p["video_url"]["url"] for m in c.json["messages"] if isinstance(m["content"], list)
                   for p in m["content"] if p["type"] == "video_url")
        assert len(decode(url)) == 4
    assert json.loads((tmp_path / "served" / "run.json").read_text())["model"]["video"] == "native"   # recorded with the run



@pytest.mark.parametrize("option, sent", [(None, "video_url"), ("images", "image_url")])
def test_a_served_qwen_run_sends_video_by_default_and_images_on_request(server, tmp_path, option, sent):
    "InfiniBench App. B.7 feeds Qwen-VL video: a served Qwen2.5-VL run does so without options; video=images restores images."
    from vlmlens.core import RunConfig
    from vlmlens.runner import run
    server.default_text = "The answer is B."
    kw = {"cache": False, **({"video": option} if option else {})}
    cfg = RunConfig("demo", f"openai-compatible:{QWEN}@{server.openai_base_url}", language="en", num_frames=4, limit=2,
                    model_kwargs=kw, output_root=str(tmp_path), run_name="served", progress=False)
    s = run(cfg)
    assert s["overall"]["n"] == 2 and s["overall"]["n_errors"] == 0
    bodies = [c.json for c in server.requests("openai")]
    kinds = [[p["type"] for m in b["messages"] if isinstance(m["content"], list) for p in m["content"]] for b in bodies]
    assert bodies and all(k.count(sent) == (1 if sent == "video_url" else 4) for k in kinds), kinds
    assert all(("media_io_kwargs" in b) == (sent == "video_url") for b in bodies)
    info = json.loads((tmp_path / "served" / "run.json").read_text())
    assert info["model"]["video"] == ("native" if option is None else "frames")
    assert info["config"]["model_kwargs"]["video"] == (option or "native")          # the choice is in the config ...
    assert info["config_hash"] != RunConfig("demo", cfg.model, language="en", num_frames=4, limit=2,
                                            model_kwargs={"cache": False}).hash()   # ... so in the hash: never an older images run


def test_an_image_run_of_a_served_video_model_keeps_its_hash(server, tmp_path):
    "Only a run that shows video records video=native: an image-only run's configuration (and hash) is as it was."
    from vlmlens.core import RunConfig
    from vlmlens.runner import run
    cfg = RunConfig("demo", f"openai-compatible:{QWEN}@{server.openai_base_url}", language="en", subset="image_color", limit=1,
                    model_kwargs={"cache": False}, output_root=str(tmp_path), run_name="img", progress=False)
    run(cfg)
    info = json.loads((tmp_path / "img" / "run.json").read_text())
    assert "video" not in info["config"]["model_kwargs"] and info["config_hash"] == cfg.hash()


def test_limit_does_not_decide_the_recorded_video_default(server, tmp_path):
    "The run's whole selection decides whether video=native is recorded, never --limit (not hashed): a run whose first"
    " item is an image, cut by --limit 1, goes on under the same hash when the limit is lifted."
    import dataclasses
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    from vlmlens.runner import run
    every = get_benchmark("demo").load(RunConfig("demo", "m", language="en", progress=False))[0]
    mixed = [next(s for s in every if s.subset == "image_color"), next(s for s in every if s.subset == "video_color")]
    server.default_text = "The answer is B."
    cfg = RunConfig("demo", f"openai-compatible:{QWEN}@{server.openai_base_url}", language="en", num_frames=4, limit=1,
                    model_kwargs={"cache": False}, output_root=str(tmp_path), run_name="mixed", progress=False)
    first = run(cfg, samples=mixed)
    whole = run(dataclasses.replace(cfg, limit=None), samples=mixed)      # the same run, continued
    assert first["config_hash"] == whole["config_hash"] and whole["overall"]["n"] == 2
    assert json.loads((tmp_path / "mixed" / "run.json").read_text())["config"]["model_kwargs"]["video"] == "native"


def test_context_fit_counts_video_tokens_the_servers_way(server, tmp_path):
    "With the server's context (--max-model-len) given, a run asking for more frames than fit sends the most that do."
    server.default_text = "The answer is B."
    cmd = [sys.executable, "-m", "vlmlens", "run", "--benchmark", "demo", "--language", "en", "--frames", "64", "--limit", "3",
           "--model", f"openai-compatible:{QWEN}@{server.openai_base_url}", "--model-kwarg", "video=native",
           "--model-kwarg", "context_tokens=3000", "--model-kwarg", "cache=false", "--output-root", str(tmp_path),
           "--run-name", "fit", "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    bodies = [c.json for c in server.requests("openai") if "media_io_kwargs" in c.json]
    counts = {b["media_io_kwargs"]["video"]["num_frames"] for b in bodies}
    assert len(counts) == 1 and 2 <= min(counts) < 64, counts
    n = counts.pop()
    url = next(p["video_url"]["url"] for p in bodies[0]["messages"][-1]["content"] if p["type"] == "video_url")
    assert len(decode(url)) == n                                         # the MP4 carries exactly the frames that fit
    assert "64 frames of" in res.stderr and f"so {n} frames" in res.stderr   # and the run says why


def test_the_mp4_bytes_are_the_same_in_another_process():
    "Shards and reruns send the same bytes, so a server's prefix cache is shared across processes too (x264 on one thread)."
    code = ("import hashlib, sys; from PIL import Image; from vlmlens.media import frame_code_image; "
            "from vlmlens.models.openai import encode_segment_mp4; "
            "fr = [Image.fromarray(frame_code_image(i, 224, 126)) for i in range(24)]; "
            "sys.stdout.write(hashlib.sha256(encode_segment_mp4(fr, [i * 0.5 for i in range(24)])).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    assert len(digests) == 1 and len(digests.pop()) == 64


def test_the_image_limit_does_not_count_a_native_videos_frames():
    "A server's per-prompt image limit bounds frames sent as images, not the frames of one native video."
    from vlmlens.core import RunConfig
    from vlmlens.models.registry import get_spec
    spec = get_spec(f"openai-compatible:{QWEN}@http://127.0.0.1:9/v1")
    cfg = lambda mode: RunConfig("demo", spec.name, num_frames=64, model_kwargs={"max_images": 16, "video": mode})
    with pytest.raises(ValueError, match="at most 16 image"): spec.check(cfg("frames"))
    assert spec.check(cfg("native")) is None
