"""The two releases of the google-deepmind/neptune README that vlmlens fetches besides MINERVA: MINERVA-Cultural (CURVE)
and Minerva-Ego, through the real clients (requests, yt-dlp) against loopback copies built from the README's evidence.

Evidence (google-deepmind/neptune README.md @ bdde4b1919fba9a02954be7cbb1c9da7e4bd8001, 2026-03-31):
- Minerva-cultural, "Downloading the Data": one JSON file `neptunedata/curve.json` with the fields `key, video_id` (a
  YouTube URL), `locale, question, answer, reasoning_steps, external_links, skills` (comma-separated), `category,
  subcategory`; answers are open-ended and judged 0/1/2 by Gemini-2.5-Flash.
- Minerva-Ego, "Downloading the Data": `minerva-ego_20260205.json` in the repository itself (added in commit
  95ee29048c6ebac478884e4e1bc698f8779820a3) with MINERVA's fields (`key, video_id` (an HD-EPIC video id), `question,
  answer, answer_choice_{i}, answer_id, reasoning, question type`), 1,160 questions over HD-EPIC videos.
- HD-EPIC's layout (hd-epic/hd-epic-downloader, data/files.txt @ a95ee365): `HD-EPIC/Videos/P01/P01-20240202-110250.mp4`
  beside `<id>_vrs_to_mp4_log.json` and `<id>_mp4_to_vrs_time_ns.csv`; video ids are `P0X-YYYYMMDD-HHMMSS`.
The README does not say whether `reasoning_steps` is a list or one text; the copy below has one of each.
"""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopback_hub import HubServer
from test_minerva import judge_reply, write_videos

EGO_COMMIT = "95ee29048c6ebac478884e4e1bc698f8779820a3"
CURVE_ROWS = [
    {"key": "hi-IN_0001", "video_id": "https://www.youtube.com/watch?v=dQw4w9WgXcQ", "locale": "hi-IN",
     "question": "वीडियो में कौन सा त्योहार मनाया जा रहा है?", "answer": "दिवाली",
     "reasoning_steps": "1. 00:01 पर दीये जलाए जाते हैं\n2. दीये जलाना दिवाली की परंपरा है\n3. इसलिए त्योहार दिवाली है",
     "external_links": ["https://en.wikipedia.org/wiki/Diwali"], "skills": "Temporal Ordering, Visual Cultural Understanding",
     "category": "Festivals", "subcategory": "Diwali"},
    {"key": "ko-KR_0001", "video_id": "https://www.youtube.com/watch?v=9bZkp7q19f0", "locale": "ko-KR",
     "question": "영상에서 어떤 음식을 만드나요?", "answer": "김치",
     "reasoning_steps": ["00:01 배추를 소금에 절인다", "00:03 빨간 양념을 바른다", "그래서 음식은 김치다"],
     "external_links": [], "skills": "Object Recognition, Visual Cultural Understanding", "category": "Cuisine",
     "subcategory": "Kimchi"},
    {"key": "ta-IN_0001", "video_id": "https://youtu.be/kJQP7kiw5Fk", "locale": "ta-IN",
     "question": "வீடியோவில் என்ன உணவு சமைக்கப்படுகிறது?", "answer": "பொங்கல்",
     "reasoning_steps": ["00:02 பானையில் அரிசி பொங்குகிறது", "ஆகவே உணவு பொங்கல்"], "external_links": [],
     "skills": "Counting, Visual Cultural Understanding", "category": "Cuisine", "subcategory": "Pongal"},
]
EGO_ROWS = [
    {"key": f"{vid}_q{i}", "video_id": vid, "question": "Which drawer did I open before taking out the pan?",
     "answer": "the left drawer", **{f"answer_choice_{j}": c for j, c in enumerate(
         ["the left drawer", "the right drawer", "the oven", "the fridge", "no drawer"])}, "answer_id": 0,
     "reasoning": "At 00:01 the left drawer opens; at 00:03 the pan comes out.", "question type": "Temporal Reasoning, Spatial Perception"}
    for i, vid in enumerate(("P01-20240202-110250", "P04-20240414-172534"))
]


class NeptuneServer(HubServer):
    """The loopback file server, plus the redirect a bucket or CDN may answer with (302 to the file's real place)."""
    def __init__(self, *a, redirects=None, **kw):
        super().__init__(*a, **kw)
        self.redirects = redirects or {}

    def _handle(self, h, head: bool):
        if h.path in self.redirects:
            h.send_response(302); h.send_header("Location", self.redirects[h.path]); h.send_header("Content-Length", "0")
            return h.end_headers()
        return super()._handle(h, head)


def _cli(args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "vlmlens", *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "VLMLENS_DATA", "TRANSFORMERS_OFFLINE"))}
    return {**e, "VLMLENS_DATA": str(tmp_path / "data"), "HF_HOME": str(tmp_path / "hf"), "OPENAI_COMPATIBLE_API_KEY": "EMPTY"}


def _curve_files(files: Path):
    files.mkdir(parents=True)
    (files / "curve.json").write_text(json.dumps(CURVE_ROWS, ensure_ascii=False), encoding="utf-8")
    write_videos(files / "videos", [r["video_id"] for r in CURVE_ROWS])


def test_curve_release_fetched_prepared_verified_and_run_without_data_path(tmp_path, env, server):
    from vlmlens.store import RunSet
    _curve_files(tmp_path / "files")
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files",
                       redirects={"/neptunedata/curve.json": "/files/curve.json"}) as srv:
        srv.missing.add("videos/kJQP7kiw5Fk.mp4")                                       # a video taken down on YouTube
        e = {**env, "VLMLENS_CURVE_URL": f"{srv.url}/neptunedata/curve.json",
             "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4"}
        out = _cli(["data", "get", "curve", "--videos", "--no-progress"], e)
        assert out.returncode == 2 and "--accept-license" in out.stderr and "CURVE" in out.stderr
        assert not (tmp_path / "data").exists()
        out = _cli(["data", "get", "curve", "--videos", "--accept-license", "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "video kJQP7kiw5Fk not fetched" in out.stderr and "404" in out.stderr
    folder = tmp_path / "data" / "curve"
    lock = json.loads((folder / "data.lock.json").read_text())
    assert lock["address"] == f"{srv.url}/files/curve.json"                             # after the redirect, not the bucket
    assert lock["revision"].strip('"') and lock["location"].endswith("neptunedata/curve.json")
    listing = _cli(["data", "list"], env).stdout
    assert f"fetched @ " in listing and f"from {srv.url}/files/curve.json" in listing

    out = _cli(["data", "prepare", "curve"], env)
    assert out.returncode == 0 and "2 videos in" in out.stdout and "video kJQP7kiw5Fk missing:" in out.stderr and "404" in out.stderr, out.stderr
    assert _cli(["data", "verify", "curve"], env).returncode == 0

    url = server.openai_base_url
    server.responder = lambda call: (judge_reply(call) if call.model == "judge"                 # 2 iff the reference is in the answer
                                     else ("Answer: दिवाली" if "त्योहार" in call.text else "Answer: no idea"))
    out = _cli(["run", "--benchmark", "curve", "--model", f"openai-compatible:student@{url}", "--judge",
                f"openai-compatible:judge@{url}", "--judge-kwarg", "k=1", "--frames", "2", "--output-root",
                str(tmp_path / "out"), "--run-name", "curve", "--no-progress", "--model-kwarg", "cache=false"], env)
    assert out.returncode == 0, out.stderr[-3000:]
    run = RunSet.discover(tmp_path / "out").runs[0]
    assert run.info["dataset"]["address"] == lock["address"] and run.info["dataset"]["digest"] == lock["digest"]
    report = _cli(["report", str(tmp_path / "out")], env).stdout
    assert f"Data: {lock['address']} @" in report, report                            # the table's note names the mirror used
    assert run.config.data_path == str(folder / "curve.json")
    s = run.summary
    assert s["overall"]["n"] == 2 and len(s["row_errors"]) == 1 and "kJQP7kiw5Fk" in s["row_errors"][0]
    bs = s["benchmark_summary"]
    assert bs["by_locale"]["hi-IN"]["accuracy"] == 1.0 and bs["by_locale"]["ko-KR"]["accuracy"] == 0.0
    sc = run.scores().set_index("sample_id")
    assert sc.loc["hi-IN_0001", "locale"] == "hi-IN" and sc.loc["ko-KR_0001", "judge_score"] == 0
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    samples, _ = get_benchmark("curve").load(RunConfig("curve", "m", data_path=str(folder / "curve.json"), modality="text"))
    hi = next(x for x in samples if x.locale == "hi-IN")                                # the human chain, step by step
    assert (hi.language, len(hi.metadata["reasoning"]), hi.metadata["skills"][-1]) == ("hi", 3, "Visual Cultural Understanding")


def _hd_epic_copy(root: Path) -> Path:
    "The user's HD-EPIC download, as hd-epic-downloader lays it out; one video of the two is not downloaded."
    vid = EGO_ROWS[0]["video_id"]
    part = root / "HD-EPIC" / "Videos" / vid.split("-")[0]
    write_videos(part, [vid])
    (part / f"{vid}_vrs_to_mp4_log.json").write_text("{}")
    (part / f"{vid}_mp4_to_vrs_time_ns.csv").write_text("mp4_time_ns,vrs_time_ns\n")
    (part / "durations.txt").write_text(f"{vid} 4.0\n")
    return root / "HD-EPIC"


def test_minerva_ego_release_at_its_pinned_commit_with_the_users_hd_epic_copy(tmp_path, env, server):
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    (tmp_path / "files" / EGO_COMMIT).mkdir(parents=True)
    (tmp_path / "files" / EGO_COMMIT / "minerva-ego_20260205.json").write_text(json.dumps(EGO_ROWS))
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        e = {**env, "VLMLENS_MINERVA_EGO_URL": f"{srv.url}/files/{{revision}}/minerva-ego_20260205.json"}
        out = _cli(["data", "get", "minerva-ego", "--videos"], e)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "HD-EPIC's downloader" in out.stderr
        assert not (tmp_path / "data").exists()
        out = _cli(["data", "get", "minerva-ego", "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
    folder = tmp_path / "data" / "minerva-ego"
    lock = json.loads((folder / "data.lock.json").read_text())
    assert lock["revision"] == EGO_COMMIT and lock["address"] == f"{srv.url}/files/{EGO_COMMIT}/minerva-ego_20260205.json"

    hd = _hd_epic_copy(tmp_path / "mine")
    out = _cli(["data", "prepare", "minerva-ego", "--videos", str(hd)], env)
    assert out.returncode == 2 and "--accept-license" in out.stderr and "HD-EPIC" in out.stderr
    assert not (folder / "video_map.csv").exists() and not (folder / "accepted.json").exists()
    out = _cli(["data", "prepare", "minerva-ego", "--videos", str(hd), "--accept-license"], env)
    assert out.returncode == 0, out.stderr
    assert "1 videos in" in out.stdout and f"video {EGO_ROWS[1]['video_id']} missing: not in {hd}" in out.stderr
    assert _cli(["data", "prepare", "minerva-ego", "--videos", str(hd)], env).returncode == 0    # accepted once
    with open(folder / "video_map.csv", newline="") as f:
        assert [r["video_id"] for r in csv.DictReader(f)] == [EGO_ROWS[0]["video_id"]]
    assert _cli(["data", "verify", "minerva-ego"], env).returncode == 0

    for kw in ({"video_map": str(folder / "video_map.csv")}, {"video_root": str(hd)}):        # the map, or the copy itself
        samples, errors = get_benchmark("minerva-ego").load(RunConfig("minerva-ego", "m", data_path=str(folder / "minerva-ego_20260205.json"),
                                                                      benchmark_kwargs=kw))
        assert [s.id for s in samples] == [EGO_ROWS[0]["key"]] and samples[0].media[0].path.endswith("P01-20240202-110250.mp4")
        assert len(errors) == 1 and EGO_ROWS[1]["video_id"] in str(errors[0])

    server.default_text = "Answer: (A)"
    out = _cli(["run", "--benchmark", "minerva-ego", "--model", f"openai-compatible:m@{server.openai_base_url}",
                "--benchmark-kwarg", f"video_map={folder / 'video_map.csv'}", "--frames", "2", "--output-root",
                str(tmp_path / "out"), "--run-name", "ego", "--no-progress", "--model-kwarg", "cache=false"], env)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads((tmp_path / "out" / "ego" / "run.json").read_text())
    assert info["dataset"]["revision"] == EGO_COMMIT
    s = json.loads((tmp_path / "out" / "ego" / "summary.json").read_text())
    assert s["overall"]["n"] == 1 and s["overall"]["accuracy"] == 1.0
    assert s["benchmark_summary"]["by_skill"]["Spatial Perception"]["n"] == 1


def test_unknown_release_and_unreachable_mirror_are_one_line(tmp_path, env):
    out = _cli(["data", "get", "minerva_ego"], env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "minerva-ego" in out.stderr, out.stderr
    out = _cli(["data", "get", "curve"], {**env, "VLMLENS_CURVE_URL": "http://127.0.0.1:9/curve.json"})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "cannot reach" in out.stderr, out.stderr
    assert not (tmp_path / "data" / "curve" / "data.lock.json").exists()


GUIDE_BLOCKS = [("minerva.md", "## Fetch CURVE and Minerva-Ego"), ("minerva.md", "## A served open model")]


def _readme_neptune_commands() -> list[str]:
    "The MINERVA guide's commands for CURVE and Minerva-Ego (nbs/guides/minerva.md), as printed (comments stripped)."
    import guides
    return [c for b in guides.blocks(*GUIDE_BLOCKS[0]) for c in guides.commands(b)]


def test_readme_data_walkthrough_for_curve_and_minerva_ego_runs_as_printed(tmp_path, env, server):
    """Every guide line for the two releases, run as printed; the test adds only where the services are (mirror
    variables, the clients' base URLs), keys, and the user's HD-EPIC download in `~/HD-EPIC`."""
    import shlex
    cmds = _readme_neptune_commands()
    assert [c.split()[1:3] for c in cmds] == [["data", "get"], ["data", "get"], ["data", "prepare"], ["data", "prepare"],
                                              ["run", "--benchmark"], ["run", "--benchmark"]], cmds
    _curve_files(tmp_path / "files")
    (tmp_path / "files" / EGO_COMMIT).mkdir()
    (tmp_path / "files" / EGO_COMMIT / "minerva-ego_20260205.json").write_text(json.dumps(EGO_ROWS))
    home = tmp_path / "home"; _hd_epic_copy(home)
    server.responder = lambda call: (judge_reply(call) if call.model == "gemini-2.5-flash"
                                     else "Answer: दिवाली" if "त्योहार" in call.text else "Answer: A")
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        e = {**env, "HOME": str(home), "VLMLENS_CURVE_URL": f"{srv.url}/files/curve.json",
             "VLMLENS_MINERVA_EGO_URL": f"{srv.url}/files/{{revision}}/minerva-ego_20260205.json",
             "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4", "OPENAI_BASE_URL": server.openai_base_url,
             "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000",
             "GEMINI_API_KEY": "test-gemini-key.not-real.000000000000", "VLMLENS_OUTPUTS": str(tmp_path / "outputs")}
        for c in cmds:
            argv = [os.path.expanduser(os.path.expandvars(a)) if not a.startswith("~") else str(home / a[2:])
                    for a in shlex.split(c.replace("$VLMLENS_DATA", e["VLMLENS_DATA"]))]
            out = subprocess.run([sys.executable, "-m", "vlmlens", *argv[1:], *(["--output-root", str(tmp_path / "out"),
                                  "--no-progress"] if argv[1] == "run" else [])], env=e, capture_output=True, text=True,
                                 timeout=600, cwd=tmp_path)
            assert out.returncode == 0, (c, out.stderr[-3000:])
    from vlmlens.store import RunSet
    runs = {r.config.benchmark: r for r in RunSet.discover(tmp_path / "out").runs}
    assert runs["curve"].summary["benchmark_summary"]["by_locale"]["hi-IN"]["accuracy"] == 1.0
    assert runs["curve"].summary["overall"]["n"] == 3 and runs["curve"].config.judge == "gemini-2.5-flash"
    assert runs["minerva-ego"].summary["overall"]["accuracy"] == 1.0 and runs["minerva-ego"].summary["overall"]["n"] == 1


def test_the_served_open_model_guide_runs_as_printed(tmp_path, env, server, monkeypatch, capsys):
    """The MINERVA guide's served-model block, in this process: the release from the loopback mirror, the model
    behind the loopback OpenAI-compatible server in place of `http://gpu-host:8000/v1`, the judge behind its Gemini API."""
    import guides
    from vlmlens.store import RunSet
    _curve_files(tmp_path / "files")
    [block] = guides.blocks(*GUIDE_BLOCKS[1])
    assert "http://gpu-host:8000/v1" in block
    monkeypatch.chdir(tmp_path)
    server.responder = lambda call: (judge_reply(call) if call.model == "gemini-2.5-flash"
                                     else "Answer: दिवाली" if "त्योहार" in call.text else "Answer: no idea")
    for k in [k for k in os.environ if k.startswith("HF_") or k == "TRANSFORMERS_OFFLINE"]: monkeypatch.delenv(k)   # as the env fixture
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        for k, v in {**{k: v for k, v in env.items() if k.startswith(("VLMLENS_DATA", "HF_HOME", "OPENAI_COMPATIBLE"))},
                     "VLMLENS_CURVE_URL": f"{srv.url}/files/curve.json", "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4",
                     "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url, "GEMINI_API_KEY": "test-gemini-key.not-real.000000000000"}.items():
            monkeypatch.setenv(k, v)
        guides.run_commands(block.replace("http://gpu-host:8000/v1", server.openai_base_url))
    [run] = RunSet.discover(tmp_path / "outputs").runs
    assert run.config.model.startswith("openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@") and run.config.judge == "gemini-2.5-flash"
    assert run.config.model_kwargs.get("video") == "native"                          # a Qwen-VL family served: frames as one video
    assert run.summary["overall"]["n"] == 3 and run.summary["benchmark_summary"]["by_locale"]["hi-IN"]["accuracy"] == 1.0
    assert "| all items |" in capsys.readouterr().out


def test_a_subset_fetch_gets_the_first_questions_videos_and_a_full_fetch_completes_it(tmp_path, env, server):
    "`data get curve --videos --limit 1`: only the first question's video; the lock, `verify` and `list` say it is a subset; a run of that question finds it."
    from vlmlens.store import RunSet
    _curve_files(tmp_path / "files")
    folder = tmp_path / "data" / "curve"
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        e = {**env, "VLMLENS_CURVE_URL": f"{srv.url}/files/curve.json", "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4"}
        bad = _cli(["data", "get", "curve", "--limit", "1", "--no-progress"], e)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "only with --videos" in bad.stderr, bad.stderr
        out = _cli(["data", "get", "curve", "--videos", "--limit", "1", "--accept-license", "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "the videos of the first 1 questions" in out.stdout
        assert sorted(p.name for p in (folder / "videos").iterdir()) == ["dQw4w9WgXcQ.mp4"]      # the first row's video only
        assert not any("9bZkp7q19f0" in path or "kJQP7kiw5Fk" in path for _, path, _ in srv.requests)
        lock = json.loads((folder / "data.lock.json").read_text())
        assert lock["videos"] == {"questions": 1, "videos": 1, "of": 3}
        v = _cli(["data", "verify", "curve"], env)
        assert v.returncode == 1 and "only those of the first 1 questions (1 of 3 videos)" in v.stderr, v.stderr
        assert "the videos of the first 1 questions only" in _cli(["data", "list"], env).stdout

        url = server.openai_base_url
        server.responder = lambda call: judge_reply(call) if call.model == "judge" else "Answer: दिवाली"
        r = _cli(["run", "--benchmark", "curve", "--model", f"openai-compatible:student@{url}", "--judge",
                  f"openai-compatible:judge@{url}", "--judge-kwarg", "k=1", "--frames", "2", "--limit", "1", "--output-root",
                  str(tmp_path / "out"), "--run-name", "first", "--no-progress", "--model-kwarg", "cache=false"], env)
        assert r.returncode == 0, r.stderr[-3000:]
        s = RunSet.discover(tmp_path / "out").runs[0].summary
        assert s["overall"]["n"] == 1 and s["benchmark_summary"]["by_locale"]["hi-IN"]["accuracy"] == 1.0    # its video was found

        again = _cli(["data", "get", "curve", "--videos", "--accept-license", "--no-progress"], e)   # the rest, no --limit
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(list((folder / "videos").iterdir())) == 3
        assert json.loads((folder / "data.lock.json").read_text())["videos"] == {"questions": "all", "videos": 3, "of": 3}
        assert _cli(["data", "verify", "curve"], env).returncode == 0
        smaller = _cli(["data", "get", "curve", "--videos", "--limit", "1", "--accept-license", "--no-progress"], e)
        assert smaller.returncode == 0 and json.loads((folder / "data.lock.json").read_text())["videos"]["questions"] == "all"
        ib = _cli(["data", "get", "infinibench", "--videos", "--limit", "2", "--accept-license"], e)
        assert ib.returncode == 2 and "not fetched per question" in ib.stderr and len(ib.stderr.strip().splitlines()) == 1


def test_a_release_is_found_from_plain_python_in_a_fresh_interpreter(tmp_path, env):
    "`vlmlens.data` names no benchmark: asked for one, it imports that benchmark's module, whose import declares the release."
    _curve_files(tmp_path / "files")
    code = ("import sys, vlmlens.data as d\n"
            "assert not any(m.startswith('vlmlens.benchmarks') for m in sys.modules), 'imported before asked'\n"
            "out = d.get('curve', progress=False)\n"
            "print(out['lock']['benchmark'], sorted(out['lock']['files']), 'vlmlens.benchmarks.infinibench' in sys.modules)\n"
            "print(sorted(d.releases()))\n")
    with NeptuneServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**env, "VLMLENS_CURVE_URL": f"{srv.url}/files/curve.json"})
    assert r.returncode == 0, r.stderr[-2000:]
    first, second = r.stdout.splitlines()
    assert first == "curve ['curve.json'] False"                     # only CURVE's own module was imported for it
    assert second == "['curve', 'hintel', 'infinibench', 'minerva', 'minerva-ego']"
