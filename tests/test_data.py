"""`vlmlens data`: the real download clients (huggingface_hub, requests, yt-dlp) against loopback servers.

The hub serves a small dataset repository with InfiniBench's release layout (`<split>/<split>.csv` rows with the
release's columns, `<split>/skills_json/*.json`); the file server serves a MINERVA JSON (the release's field names)
and direct .mp4 URLs standing in for YouTube."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopback_hub import IB_EPISODE, IB_MOVIE, IB_OLDER, IB_PINNED, HubServer, build_infinibench_hub, ib_rows

REPO = "Vision-CAIR/InfiniBench"
COLUMNS = ["question_id", "skill_name", "split", "video_path_mp4", "video_subtitles", "question", "options", "answer_idx", "answer"]


def _infinibench_repo(root: Path, big: int = 0) -> Path:
    (root / "test" / "skills_json").mkdir(parents=True)
    rows = [{"question_id": f"q{i}", "skill_name": "character_actions", "split": "test",
             "video_path_mp4": f"tvqa/bbt/s01e0{i}.mp4", "video_subtitles": f"tvqa/bbt/s01e0{i}.srt",
             "question": f"What does Sheldon do in scene {i}?", "options": "['knocks', 'sits', 'leaves', 'sings']",
             "answer_idx": i % 4, "answer": ["knocks", "sits", "leaves", "sings"][i % 4]} for i in range(1, 4)]
    with open(root / "test" / "test.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS); w.writeheader(); w.writerows(rows)
    (root / "test" / "skills_json" / "character_actions.json").write_text(json.dumps(rows, indent=1))
    if big: (root / "test" / "skills_json" / "linking_multiple_events.json").write_bytes(os.urandom(big))
    (root / "train").mkdir(); (root / "train" / "train.csv").write_text("question_id\nnot-fetched\n")
    return root


def _cli(args, env, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "vlmlens", "data", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


@pytest.fixture
def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "VLMLENS_DATA", "TRANSFORMERS_OFFLINE"))}
    return {**e, "VLMLENS_DATA": str(tmp_path / "data"), "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_TELEMETRY": "1"}


def test_get_from_the_hub_writes_a_lock_and_verify_names_a_damaged_file(tmp_path, env):
    with HubServer(_infinibench_repo(tmp_path / "repo"), REPO, commit=IB_PINNED) as hub:
        out = _cli(["get", "infinibench", "--no-progress"], {**env, "HF_ENDPOINT": hub.url})
        assert out.returncode == 0, out.stderr[-2000:]
    folder = tmp_path / "data" / "infinibench"
    assert (folder / "test" / "test.csv").read_bytes() == (tmp_path / "repo" / "test" / "test.csv").read_bytes()
    assert not (folder / "train").exists()                                    # only the split asked for
    lock = json.loads((folder / "data.lock.json").read_text())
    assert lock["revision"] == hub.commit and lock["source"] == "hub" and lock["location"] == REPO
    assert sorted(lock["files"]) == ["test/skills_json/character_actions.json", "test/test.csv"]
    assert _cli(["verify", "infinibench"], env).returncode == 0

    csv_path = folder / "test" / "test.csv"
    csv_path.write_bytes(csv_path.read_bytes()[:-10])                         # truncated
    js = folder / "test" / "skills_json" / "character_actions.json"
    b = bytearray(js.read_bytes()); b[5] ^= 1; js.write_bytes(bytes(b))      # same size, one bit changed
    out = _cli(["verify", "infinibench"], env)
    assert out.returncode == 1
    assert "test/test.csv: size" in out.stderr and "truncated" in out.stderr
    assert "character_actions.json: sha256 differs" in out.stderr

    listing = _cli(["list"], env).stdout
    assert f"fetched test @ {hub.commit[:12]}" in listing and "minerva: https://storage.googleapis.com/neptunedata/minerva.json" in listing


def test_a_hub_download_killed_midway_resumes_and_sends_at_most_one_chunk_twice(tmp_path, env):
    size = 8 << 20
    with HubServer(_infinibench_repo(tmp_path / "repo", big=size), REPO, commit=IB_PINNED) as hub:
        hub.delay = 0.02                                                       # ~64 KiB per 20 ms: killable
        e = {**env, "HF_ENDPOINT": hub.url}
        p = subprocess.Popen([sys.executable, "-m", "vlmlens", "data", "get", "infinibench", "--no-progress"], env=e,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        inc = tmp_path / "data" / "infinibench"
        deadline = time.time() + 60
        while time.time() < deadline:
            part = [f for f in inc.rglob("*.part")] if inc.exists() else []
            if part and part[0].stat().st_size >= 3 << 20: break
            time.sleep(0.05)
        else: pytest.fail("the download never got halfway")
        os.killpg(p.pid, signal.SIGKILL); p.wait()
        first = hub.sent["test/skills_json/linking_multiple_events.json"]
        assert first < size
        hub.delay = 0
        out = _cli(["get", "infinibench", "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
        total = hub.sent["test/skills_json/linking_multiple_events.json"]
        ranges = [r for m, path, r in hub.requests if m == "GET" and path.endswith("linking_multiple_events.json")]
    assert ranges[-1] and ranges[-1].startswith("bytes=") and ranges[-1] != "bytes=0-"   # resumed, not restarted
    chunk = 1 << 20
    assert total - size <= chunk, f"{total - size} bytes sent twice"
    assert (tmp_path / "data" / "infinibench" / "test" / "skills_json" / "linking_multiple_events.json").read_bytes() == \
        (tmp_path / "repo" / "test" / "skills_json" / "linking_multiple_events.json").read_bytes()
    assert _cli(["verify", "infinibench"], env).returncode == 0


def _minerva(files: Path, ids):
    rows = [{"key": f"{v}:{'a' * 40}", "video_id": v, "question": "How many goals?", "answer": "2",
             "answer_choice_0": "1", "answer_choice_1": "2", "answer_choice_2": "3", "answer_choice_3": "4", "answer_choice_4": "5",
             "answer_id": 1, "reasoning": "At 01:10 the first goal ...", "question type": "counting", "split": "sports",
             "category": "soccer"} for v in ids]
    (files / "videos").mkdir(parents=True)
    (files / "minerva.json").write_text(json.dumps(rows))
    for v in ids: (files / "videos" / f"{v}.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(4096))


def test_minerva_json_over_https_and_videos_through_yt_dlp_with_consent_and_a_report(tmp_path, env):
    ids = ["dQw4w9WgXcQ", "9bZkp7q19f0", "kJQP7kiw5Fk"]
    _minerva(tmp_path / "files", ids)
    with HubServer(tmp_path / "empty", REPO, files_root=tmp_path / "files") as srv:
        srv.missing.add(f"videos/{ids[2]}.mp4")                                # removed from the site
        e = {**env, "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json",
             "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4"}
        out = _cli(["get", "minerva", "--videos", "--no-progress"], e)
        assert out.returncode == 2 and "--accept-license" in out.stderr and "YouTube" in out.stderr
        assert not (tmp_path / "data").exists()                               # nothing fetched without consent

        out = _cli(["get", "minerva", "--videos", "--accept-license", "--no-progress"], e, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        folder = tmp_path / "data" / "minerva"
        assert sorted(p.name for p in (folder / "videos").iterdir()) == sorted(f"{v}.mp4" for v in ids[:2])
        report = json.loads((folder / "videos_report.json").read_text())
        assert list(report["failed"]) == [ids[2]] and "404" in report["failed"][ids[2]]
        assert ids[2] in out.stderr
        lock = json.loads((folder / "data.lock.json").read_text())
        assert "minerva.json" in lock["files"] and lock["revision"]

        gets = lambda: sum(1 for m, p, _ in srv.requests if m == "GET" and p.endswith(f"{ids[0]}.mp4"))
        before = gets()
        srv.missing.clear()                                                    # back online: retried, consent remembered
        out = _cli(["get", "minerva", "--videos", "--no-progress"], e, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads((folder / "videos_report.json").read_text())["failed"] == {}
        assert (folder / "videos" / f"{ids[2]}.mp4").is_file()
        assert gets() == before                                                # what was there is not fetched again


def test_offline_is_one_line_and_exit_2(tmp_path, env):
    out = _cli(["get", "infinibench"], {**env, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "offline" in out.stderr
    out = _cli(["get", "infinibench"], {**env, "HF_ENDPOINT": "http://127.0.0.1:9"})     # nothing listens there
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "cannot reach" in out.stderr, out.stderr
    out = _cli(["get", "minerva"], {**env, "VLMLENS_MINERVA_URL": "http://127.0.0.1:9/minerva.json"})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "cannot reach" in out.stderr, out.stderr
    assert not (tmp_path / "data" / "infinibench" / "data.lock.json").exists()


def test_a_run_without_data_path_reads_the_fetched_release_and_records_it(tmp_path, env, server):
    server.reset(); server.default_text = "Answer: B"
    env = {**env, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}
    run = lambda name: subprocess.run(
        [sys.executable, "-m", "vlmlens", "run", "--benchmark", "minerva", "--model", "gpt-4o", "--modality", "text",
         "--output-root", str(tmp_path / "out"), "--run-name", name, "--no-progress",
         "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path / name}.sqlite"],
        env=env, capture_output=True, text=True, timeout=300)
    out = run("none")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "vlmlens data get minerva" in out.stderr and not (tmp_path / "out").exists()

    ids = ["dQw4w9WgXcQ", "9bZkp7q19f0"]
    _minerva(tmp_path / "files", ids)
    with HubServer(tmp_path / "empty", REPO, files_root=tmp_path / "files") as srv:
        e = {**env, "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json"}
        assert _cli(["get", "minerva", "--no-progress"], e).returncode == 0
        out = run("r1")
        assert out.returncode == 0, out.stderr[-2000:]
        lock1 = json.loads((tmp_path / "data" / "minerva" / "data.lock.json").read_text())
        info = json.loads((tmp_path / "out" / "r1" / "run.json").read_text())
        assert info["dataset"]["digest"] == lock1["digest"] and info["dataset"]["source"] == "https"
        assert info["config"]["data_path"] == str(tmp_path / "data" / "minerva" / "minerva.json")
        rows = json.loads((tmp_path / "files" / "minerva.json").read_text())
        (tmp_path / "files" / "minerva.json").write_text(json.dumps(rows[:1]))        # the release changes
        assert _cli(["get", "minerva", "--no-progress"], e).returncode == 0
        assert run("r2").returncode == 0
    report = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert f"(lock {lock1['digest'][:8]})" in report.stdout, report.stdout
    from vlmlens.store import RunSet
    assert "dataset" in RunSet.discover(tmp_path / "out").varying()       # two data revisions are never pooled


def test_infinibench_videos_need_consent_arrive_as_archive_parts_and_prepare_unpacks_them(tmp_path, env):
    import io
    import tarfile
    repo = _infinibench_repo(tmp_path / "repo")
    buf, blobs = io.BytesIO(), {f"tvqa/bbt/s01e0{i}.mp4": os.urandom(20000) for i in range(1, 4)}
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, blob in blobs.items():
            ti = tarfile.TarInfo(name); ti.size = len(blob); t.addfile(ti, io.BytesIO(blob))
    raw = buf.getvalue()
    for i, k in enumerate(("aa", "ab", "ac")):
        (repo / "test" / f"test_videos.tar.gz.part_{k}").write_bytes(raw[i * len(raw) // 3:(i + 1) * len(raw) // 3])
    with HubServer(repo, REPO, commit=IB_PINNED) as hub:
        e = {**env, "HF_ENDPOINT": hub.url}
        out = _cli(["get", "infinibench", "--videos", "--no-progress"], e)
        assert out.returncode == 2 and "TVQA" in out.stderr and "--accept-license" in out.stderr
        assert not (tmp_path / "data").exists()
        out = _cli(["prepare", "infinibench"], e)
        assert out.returncode == 2 and "vlmlens data get infinibench --split test --videos" in out.stderr
        assert _cli(["get", "infinibench", "--videos", "--accept-license", "--no-progress"], e).returncode == 0
    out = _cli(["prepare", "infinibench", "--no-progress"], env)
    assert out.returncode == 0, out.stderr[-2000:]
    split = tmp_path / "data" / "infinibench" / "test"
    for name, blob in blobs.items(): assert (split / name).read_bytes() == blob     # where video_path_mp4 points
    lock = json.loads((tmp_path / "data" / "infinibench" / "data.lock.json").read_text())
    assert "test/tvqa/bbt/s01e01.mp4" in lock["files"] and lock["revision"] == hub.commit
    assert _cli(["verify", "infinibench"], env).returncode == 0
    assert "0 files unpacked" in _cli(["prepare", "infinibench", "--no-progress"], env).stdout


def test_an_infinibench_run_without_data_path_reads_the_fetched_split(tmp_path, env, server):
    server.reset(); server.default_text = "Answer: 1"
    with HubServer(_infinibench_repo(tmp_path / "repo"), REPO, commit=IB_PINNED) as hub:
        assert _cli(["get", "infinibench", "--no-progress"], {**env, "HF_ENDPOINT": hub.url}).returncode == 0
    out = subprocess.run(
        [sys.executable, "-m", "vlmlens", "run", "--benchmark", "infinibench", "--model", "gpt-4o", "--modality", "metadata",
         "--judge", "none", "--output-root", str(tmp_path / "out"), "--run-name", "ib", "--no-progress",
         "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path}/c.sqlite"],
        env={**env, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads((tmp_path / "out" / "ib" / "run.json").read_text())
    assert info["config"]["data_path"].endswith("infinibench/test")                  # the split folder: its CSV or skill files
    assert info["dataset"]["revision"] == hub.commit and info["dataset"]["split"] == "test"
    assert json.loads((tmp_path / "out" / "ib" / "summary.json").read_text())["overall"]["n"] == 3


def _srt(cues):
    "Real-shaped SubRip text (CRLF, numbered, two-line cues) of [(start_s, end_s, text)]."
    def ts(t):
        ms = round(t * 1000)
        return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
    return "\r\n".join(f"{i}\r\n{ts(a)} --> {ts(b)}\r\n{t}\r\n" for i, (a, b, t) in enumerate(cues, 1))


def _tvqa_copy(root: Path) -> dict:
    """A TVQA copy as TVQA distributes it: frames_hq/<show>_frames/<clip>/NNNNN.jpg (3 fps) for bbt, clip videos
    <show>_frames/<clip>.mp4 (PyAV, 10 and 5 fps) for friends, and tvqa_subtitles/<clip>.srt for every clip."""
    from PIL import Image
    from vlmlens import media
    frames, subs, code = root / "frames_hq", root / "tvqa_subtitles", iter(range(10_000))
    subs.mkdir(parents=True)
    clips = {"bbt_s01e01": [("s01e01_seg02_clip_00", 3), ("s01e01_seg01_clip_01", 2), ("s01e01_seg01_clip_00", 4)],
             "friends_s02e03": [("friends_s02e03_seg02_clip_00", (5, 4)), ("friends_s02e03_seg01_clip_00", (10, 12)),
                                ("friends_s02e03_seg01_clip_01", (10, 7))],
             "friends_s02e04": [("friends_s02e04_seg01_clip_00", (10, 5)), ("friends_s02e04_seg01_clip_01", None)]}
    codes = {}
    for ep, cs in clips.items():
        for name, spec in sorted(cs, key=lambda c: c[0].replace("friends_", "")):      # codes in playing order
            if spec is None: pass                                                       # the copy lacks this clip
            elif isinstance(spec, int):
                (frames / "bbt_frames" / name).mkdir(parents=True)
                codes[name] = [next(code) for _ in range(spec)]
                for i, c in enumerate(codes[name]): Image.fromarray(media.frame_code_image(c)).save(frames / "bbt_frames" / name / f"{i + 1:05d}.jpg", quality=95)
            else:
                fps, n = spec
                codes[name] = [next(code) for _ in range(n)]
                media.write_video(frames / "friends_frames" / f"{name}.mp4", [media.frame_code_image(c) for c in codes[name]], fps=fps)
            (subs / f"{name}.srt").write_text(_srt([(0.1, 0.35, f"({name[-7:]}:) first line\nsecond line"), (0.4, 0.6, "Bye.")]))
    return {"frames": frames, "subs": subs, "codes": codes}


def _infinibench_episode_rows(root: Path) -> Path:
    (root / "test").mkdir(parents=True)
    eps = ["/bbt/season_1/episode_1", "/friends/season_2/episode_3", "/friends/season_2/episode_4", "/met/season_1/episode_1"]
    rows = [{"question_id": f"q{i}", "skill_name": "character_actions", "split": "test", "video_path_mp4": f"{e}.mp4",
             "video_subtitles": f"{e}.srt", "question": "What happens first?", "options": "['a', 'b', 'c', 'd']",
             "answer_idx": "", "answer": ""} for i, e in enumerate(eps)]
    with open(root / "test" / "test.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS); w.writeheader(); w.writerows(rows)
    return root


def test_prepare_joins_a_tvqa_copy_into_the_episodes_the_infinibench_loader_reads(tmp_path, env, monkeypatch):
    import av
    from vlmlens import media
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    tv = _tvqa_copy(tmp_path / "tvqa")
    with HubServer(_infinibench_episode_rows(tmp_path / "repo"), REPO, commit=IB_PINNED) as hub:
        assert _cli(["get", "infinibench", "--no-progress"], {**env, "HF_ENDPOINT": hub.url}).returncode == 0
    args = ["prepare", "infinibench", "--tvqa-clips", str(tv["frames"]), "--tvqa-subtitles", str(tv["subs"]), "--no-progress"]
    out = _cli(args, env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 episodes written" in out.stdout
    assert "friends/season_2/episode_4" in out.stderr and "friends_s02e04_seg01_clip_01 is missing" in out.stderr
    assert "met/season_1/episode_1" in out.stderr                                  # named by the rows, absent from the copy
    split = tmp_path / "data" / "infinibench" / "test"
    report = json.loads((split / "prepare_report.json").read_text())
    assert sorted(report["failed"]) == ["friends/season_2/episode_4", "met/season_1/episode_1"]
    assert not (split / "friends" / "season_2" / "episode_4.mp4").exists()

    for ep, names in {"bbt/season_1/episode_1": ["s01e01_seg01_clip_00", "s01e01_seg01_clip_01", "s01e01_seg02_clip_00"],
                      "friends/season_2/episode_3": ["friends_s02e03_seg01_clip_00", "friends_s02e03_seg01_clip_01", "friends_s02e03_seg02_clip_00"]}.items():
        video = split / f"{ep}.mp4"
        durs = [len(tv["codes"][n]) / 3 if ep.startswith("bbt") else media.probe(tv["frames"] / "friends_frames" / f"{n}.mp4")["duration_s"] for n in names]
        assert abs(media.probe(video)["duration_s"] - sum(durs)) < 0.01, (ep, durs)            # the summed duration
        with av.open(str(video)) as c: got = [media.read_frame_code(f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
        assert got == [x for n in names for x in tv["codes"][n]]                                  # every frame, clips in order
        offsets = [sum(durs[:i]) for i in range(len(durs))]
        cues = media.read_subtitles(video.with_suffix(".srt"))
        want = [(o + a, o + b) for o in offsets for a, b in ((0.1, 0.35), (0.4, 0.6))]
        assert [t for c in cues for t in (c.start_s, c.end_s)] == pytest.approx([t for w in want for t in w], abs=0.0015)
        assert cues[2].text == f"({names[1][-7:]}:) first line\nsecond line"

    lock = json.loads((tmp_path / "data" / "infinibench" / "data.lock.json").read_text())
    assert "test/bbt/season_1/episode_1.mp4" in lock["files"] and "test/prepare_report.json" not in lock["files"]
    assert _cli(["verify", "infinibench"], env).returncode == 0
    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    cfg = RunConfig(benchmark="infinibench", model="gpt-4o", modality="video+subtitles", data_path=str(split / "test.csv"))
    samples, errors = get_benchmark("infinibench").load(cfg)
    assert sorted(s.metadata["video_path_mp4"] for s in samples) == ["/bbt/season_1/episode_1.mp4", "/friends/season_2/episode_3.mp4"]
    assert all(Path(s.media[0].path).is_file() and Path(s.subtitles).is_file() for s in samples)
    assert len(errors) == 2                                                                     # the two episodes not written
    again = _cli(args, env, timeout=300)
    assert again.returncode == 0 and "0 episodes written, 2 kept" in again.stdout, again.stdout + again.stderr


def test_a_release_from_outside_the_package_gets_its_own_prepare_flag_and_its_step_the_value(tmp_path, monkeypatch, capsys):
    """Two releases registered from outside vlmlens (as a user's benchmark package does when imported) declare one option
    with different help: `vlmlens data prepare` (the CLI, in this process) has one flag naming both, hands the value to
    the named release's step, prints the step's own words, and refuses the option for a release that does not take it."""
    from vlmlens import cli, data, fidelity
    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "400")                                      # argparse: one help line per flag
    monkeypatch.setattr(fidelity, "LEDGER", dict(fidelity.LEDGER))             # the cited scratch releases stay out of the ledger
    got = []

    def my_step(rel, folder, split=None, progress=True, accept_license=False, frames_dir=None, **_):
        got.append((rel.benchmark, Path(folder), split, frames_dir, accept_license))
        return {"folder": Path(folder), "lines": [f"{rel.benchmark}: 3 frames found in {frames_dir}"], "warnings": ["  frame 4 unreadable"]}

    mine = lambda name, helps: data.Release(name, "none", "my lab's server", "CC BY 4.0", "1 MB", "my frames",
                                            citation="my lab's README", prepare=my_step, options=helps)
    data.register_release(mine("scratchbench", {"frames_dir": "the folder of my extracted frames"}))
    data.register_release(mine("scratchbench-two", (data.PrepareOption("frames_dir", "its frames, one folder a video", "DIR"),)))
    try:
        with pytest.raises(SystemExit) as e: cli.main(["data", "prepare", "--help"])
        usage = capsys.readouterr().out
        assert e.value.code == 0 and "--frames-dir DIR " in usage, usage
        assert "scratchbench: the folder of my extracted frames; scratchbench-two: its frames, one folder a video" in usage, usage
        assert "--videos DIR" in usage and "--tvqa-clips" in usage                  # the shipped releases' flags are all there

        assert cli.main(["data", "prepare", "scratchbench", "--frames-dir", str(tmp_path / "frames"), "--split", "test",
                         "--accept-license"]) == 0
        out = capsys.readouterr()
        assert got == [("scratchbench", tmp_path / "data" / "scratchbench", "test", str(tmp_path / "frames"), True)]
        assert out.out == f"scratchbench: 3 frames found in {tmp_path / 'frames'}\n" and out.err == "  frame 4 unreadable\n"

        assert cli.main(["data", "prepare", "minerva", "--frames-dir", "x"]) == 2
        assert capsys.readouterr().err.strip() == "vlmlens: error: --frames-dir DIR: only for scratchbench, scratchbench-two"
        assert cli.main(["data", "prepare", "scratchbench", "--videos", "x"]) == 2
        assert capsys.readouterr().err.strip() == "vlmlens: error: --videos DIR: only for curve, minerva, minerva-ego"
        assert len(got) == 1                                                      # a refusal never reaches a step
    finally:
        for name in ("scratchbench", "scratchbench-two"): data.RELEASES.pop(name, None)
    with pytest.raises(SystemExit) as e: cli.main(["data", "prepare", "minerva", "--frames-dir", "x"])
    assert e.value.code == 2 and "--frames-dir" in capsys.readouterr().err        # gone with the releases that declared it


PLUGIN_RELEASE = """
from pathlib import Path
from vlmlens import data

def write_list(rel, folder, split=None, progress=True, accept_license=False, clip_list=None, **_):
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / "clips.txt").write_text(Path(clip_list).read_text())
    return {"folder": Path(folder), "lines": [f"{rel.benchmark}: clips listed in {folder}"]}

data.register_release(data.Release("plugbench", "none", "my lab's server", "CC BY 4.0", "1 MB", "my clips",
                                   citation="my lab's README", prepare=write_list,
                                   options={"clip_list": "a text file naming the clips to use"}))
"""


def test_a_plugin_folders_release_adds_its_prepare_flag_on_the_command_line(tmp_path, monkeypatch, capsys):
    "`vlmlens --plugins DIR data prepare <its benchmark> --its-option`: the folder is read before the command line is."
    from vlmlens import cli, data, fidelity
    from vlmlens.models import registry
    plugins = tmp_path / "my-plugins"; plugins.mkdir()
    (plugins / "plugbench_release.py").write_text(PLUGIN_RELEASE, encoding="utf-8")
    clips = tmp_path / "clips.txt"; clips.write_text("c1\nc2\n")
    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("VLMLENS_PLUGINS", "")
    monkeypatch.setattr(fidelity, "LEDGER", dict(fidelity.LEDGER))
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        assert cli.main(["--plugins", str(plugins), "data", "prepare", "plugbench", "--clip-list", str(clips)]) == 0
        assert capsys.readouterr().out == f"plugbench: clips listed in {tmp_path / 'data' / 'plugbench'}\n"
        assert (tmp_path / "data" / "plugbench" / "clips.txt").read_text() == "c1\nc2\n"
        assert cli.main(["--plugins", str(tmp_path / "nowhere"), "data", "prepare", "plugbench"]) == 2
        assert "nowhere: no such folder" in capsys.readouterr().err                  # a wrong folder: one line, as for any command
        taken = tmp_path / "taken"; taken.mkdir(); (taken / "json.py").write_text("X = 1\n")   # a module name already in use
        assert cli.main(["--plugins", str(taken), "data", "prepare", "plugbench"]) == 2
        assert "the module name 'json' is already taken" in capsys.readouterr().err      # said, not lost to the early read
    finally:
        data.RELEASES.pop("plugbench", None)
        sys.modules.pop("plugbench_release", None)
        registry._LOADED_FOLDERS.discard(plugins.resolve())


BROKEN_PLUGINS = {
    "a benchmark whose module does not import": ("brokenbench.py", """
from vlmlens.benchmarks.base import register_benchmark
register_benchmark("brokenbench", "vlmlens_no_such_module:Bench")
""", "'vlmlens_no_such_module:Bench', whose module does not import"),
    "a plugin module whose name is taken": ("json.py", "X = 1\n", "the module name 'json' is already taken"),
    "a release option named as the command's own --no-progress": ("noprog.py", """
from vlmlens import data
data.register_release(data.Release("noprogbench", "none", "my lab", "CC BY 4.0", "1 MB", "my clips",
                                   prepare=lambda rel, folder, **_: {}, options={"no_progress": "mine"}))
""", "prepare option 'no_progress': taken by `vlmlens data prepare` itself"),
    "a release option named help": ("helpopt.py", """
from vlmlens import data
data.register_release(data.Release("helpbench", "none", "my lab", "CC BY 4.0", "1 MB", "my clips",
                                   prepare=lambda rel, folder, **_: {}, options=(data.PrepareOption("help", "mine"),)))
""", "prepare option 'help': taken by `vlmlens data prepare` itself"),
}


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    "A plugin folder to write into; whatever its modules registered is gone afterwards."
    from vlmlens import data, fidelity
    from vlmlens.benchmarks import base
    from vlmlens.models import registry
    folder = tmp_path / "my-plugins"; folder.mkdir()
    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("VLMLENS_PLUGINS", "")
    monkeypatch.setattr(fidelity, "LEDGER", dict(fidelity.LEDGER))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(base, "BENCHMARKS", base.BENCHMARKS)
    before = (set(data.RELEASES), set(base.BENCHMARKS), set(sys.modules))
    yield folder
    for name in set(data.RELEASES) - before[0]: dict.pop(data.RELEASES, name)
    for name in set(base.BENCHMARKS) - before[1]: base.BENCHMARKS.pop(name)
    for name in {f.stem for f in folder.glob("*.py")} - before[2]: sys.modules.pop(name, None)
    registry._LOADED_FOLDERS.discard(folder.resolve())


def _one_line_error(capsys, says: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and says in err and err.startswith("vlmlens: error: "), err
    return err


@pytest.mark.parametrize("case", list(BROKEN_PLUGINS))
def test_a_broken_plugin_is_said_in_one_line_by_the_command_never_by_reading_the_command_line(case, plugin_folder, monkeypatch, capsys):
    """A plugin folder whose module registers an unimportable benchmark, takes a module name already in use, or declares a
    prepare option named as the command's own flags: every command still reads its command line (the flags of
    `data prepare` are built from the releases known so far), and the command that reads the folder says what is wrong
    in one line, exit 2; so does `data prepare`, before its flags are read, and so does `data list` that gathers every release."""
    from vlmlens import cli
    name, code, says = BROKEN_PLUGINS[case]
    (plugin_folder / name).write_text(code, encoding="utf-8")
    nowhere = str(plugin_folder.parent / "no-such-run")
    if name != "brokenbench.py":                                          # the folder itself does not import: every command says so
        assert cli.main(["--plugins", str(plugin_folder), "report", nowhere]) == 2
        _one_line_error(capsys, says)
    assert cli.main(["--plugins", str(plugin_folder), "data", "prepare", "minerva", "--videos", "x"]) == 2
    _one_line_error(capsys, says)
    monkeypatch.setenv("VLMLENS_PLUGINS", str(plugin_folder))
    assert cli.main(["report", nowhere]) == 2                            # reading the command line imported the folder: no crash
    _one_line_error(capsys, "no-such-run")
    assert cli.main(["data", "prepare", "minerva", "--videos", "x"]) == 2
    _one_line_error(capsys, says)
    assert cli.main(["data", "list"]) == 2
    _one_line_error(capsys, says)


def test_a_plugin_release_with_a_wrong_option_name_is_said_not_hidden_behind_its_unknown_flag(plugin_folder, capsys):
    "`options={\"video-dir\": ...}` is refused when the plugin is read; `data prepare ... --video-dir X` says that, not 'unrecognized arguments'."
    from vlmlens import cli
    (plugin_folder / "dashed.py").write_text("""
from vlmlens import data
data.register_release(data.Release("dashbench", "none", "my lab", "CC BY 4.0", "1 MB", "my clips",
                                   prepare=lambda rel, folder, **_: {}, options={"video-dir": "my videos"}))
""", encoding="utf-8")
    assert cli.main(["--plugins", str(plugin_folder), "data", "prepare", "dashbench", "--video-dir", "X"]) == 2
    err = _one_line_error(capsys, "prepare option 'video-dir': a Python identifier")
    assert "unrecognized" not in err


def test_what_a_prepare_step_returns_is_printed_as_its_lines_or_refused_in_one_line(plugin_folder, capsys):
    """A step returning None (it forgot its result) is refused in one line naming the benchmark's step; `lines` and
    `warnings` given as one string are printed as one line each, not one character a line."""
    from vlmlens import cli
    (plugin_folder / "saysome.py").write_text("""
from vlmlens import data

def forgot(rel, folder, **_): pass

def one_string(rel, folder, **_): return {"lines": "strbench: 3 clips ready", "warnings": "  clip 4 unreadable"}

for name, step in (("nonebench", forgot), ("strbench", one_string)):
    data.register_release(data.Release(name, "none", "my lab", "CC BY 4.0", "1 MB", "my clips", citation="my README", prepare=step))
""", encoding="utf-8")
    assert cli.main(["--plugins", str(plugin_folder), "data", "prepare", "nonebench"]) == 2
    _one_line_error(capsys, "nonebench's prepare step (saysome.forgot) returned NoneType, not a dict")
    assert cli.main(["--plugins", str(plugin_folder), "data", "prepare", "strbench"]) == 0
    out = capsys.readouterr()
    assert (out.out, out.err) == ("strbench: 3 clips ready\n", "  clip 4 unreadable\n")


def test_accept_license_help_names_the_releases_with_terms(monkeypatch, capsys):
    from vlmlens import cli
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit): cli.main(["data", "prepare", "--help"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("--accept-license"))
    assert "(releases with terms: curve, infinibench, minerva, minerva-ego)" in line, line


def test_prepare_minerva_maps_the_fetched_videos_and_lists_the_missing_ones(tmp_path, env, monkeypatch):
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    ids = ["dQw4w9WgXcQ", "9bZkp7q19f0", "kJQP7kiw5Fk"]
    _minerva(tmp_path / "files", ids)
    rows = json.loads((tmp_path / "files" / "minerva.json").read_text())
    rows[0]["video_id"] = f"https://www.youtube.com/watch?v={ids[0]}"                # the release writes YouTube URLs
    (tmp_path / "files" / "minerva.json").write_text(json.dumps(rows))
    with HubServer(tmp_path / "empty", REPO, files_root=tmp_path / "files") as srv:
        srv.missing.add(f"videos/{ids[2]}.mp4")
        e = {**env, "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json", "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4"}
        assert _cli(["get", "minerva", "--videos", "--accept-license", "--no-progress"], e, timeout=300).returncode == 0
    out = _cli(["prepare", "minerva"], env)
    assert out.returncode == 0, out.stderr[-2000:]
    folder = tmp_path / "data" / "minerva"
    assert f"2 videos in {folder / 'video_map.csv'}" in out.stdout and "video_map=" in out.stdout
    assert f"video {ids[2]} missing" in out.stderr and "404" in out.stderr                # the reason get recorded
    with open(folder / "video_map.csv", newline="") as f:
        assert {r["video_id"]: r["path"] for r in csv.DictReader(f)} == {v: f"videos/{v}.mp4" for v in ids[:2]}
    assert _cli(["verify", "minerva"], env).returncode == 0                               # the map is not release data

    monkeypatch.setenv("VLMLENS_DATA", str(tmp_path / "data"))
    cfg = RunConfig(benchmark="minerva", model="gpt-4o", modality="video", data_path=str(folder / "minerva.json"),
                    benchmark_kwargs={"video_map": str(folder / "video_map.csv")})
    samples, errors = get_benchmark("minerva").load(cfg)
    assert sorted(Path(s.media[0].path).name for s in samples) == sorted(f"{v}.mp4" for v in ids[:2])
    assert len(errors) == 1 and ids[2] in str(errors[0])

    mine = tmp_path / "my downloads"; mine.mkdir()
    for i, v in enumerate(ids): (mine / f"Match {i} [{v}].webm").write_bytes(b"\x1aE\xdf\xa3" + os.urandom(512))   # yt-dlp's default names
    out = _cli(["prepare", "minerva", "--videos", str(mine)], env)
    assert out.returncode == 0 and "3 videos in" in out.stdout and "missing" not in out.stderr, out.stderr
    samples, errors = get_benchmark("minerva").load(cfg)
    assert not errors and sorted(Path(s.media[0].path).parent for s in samples) == [mine] * 3


def test_a_run_on_the_default_release_and_one_naming_the_same_file_are_one_run(tmp_path, env, server):
    server.reset(); server.default_text = "Answer: B"
    _minerva(tmp_path / "files", ["dQw4w9WgXcQ", "9bZkp7q19f0"])
    with HubServer(tmp_path / "empty", REPO, files_root=tmp_path / "files") as srv:
        assert _cli(["get", "minerva", "--no-progress"], {**env, "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json"}).returncode == 0
    (tmp_path / "link").symlink_to(tmp_path / "data")
    e = {**env, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}

    def run(i, *data_path):
        return subprocess.run(
            [sys.executable, "-m", "vlmlens", "run", "--benchmark", "minerva", "--model", "gpt-4o", "--modality", "text",
             "--output-root", str(tmp_path / "out"), "--no-progress", *data_path,
             "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path}/c{i}.sqlite"],
            env=e, capture_output=True, text=True, timeout=300, cwd=tmp_path / "data")

    out = run(0)                                                       # no --data-path: the fetched release
    assert out.returncode == 0, out.stderr[-2000:]
    asked = server.count("openai")
    assert asked == 2
    for i, spelling in enumerate(("minerva/minerva.json", str(tmp_path / "link" / "minerva" / "minerva.json"),
                                  str(tmp_path / "data" / "minerva" / "minerva.json")), 1):
        out = run(i, "--data-path", spelling)                          # the same file, spelled three ways
        assert out.returncode == 0, out.stderr[-2000:]
        assert server.count("openai") == asked, spelling               # resumed: nothing asked again
    runs = list((tmp_path / "out").iterdir())
    assert len(runs) == 1, [p.name for p in runs]
    info = json.loads((runs[0] / "run.json").read_text())
    assert info["config"]["data_path"] == str((tmp_path / "data" / "minerva" / "minerva.json").resolve())


# -- InfiniBench as published: the hub trees built from the evidence cited in loopback_hub.py ----------------------

@pytest.fixture
def ib_hub(tmp_path):
    built = build_infinibench_hub(tmp_path / "hub")
    with HubServer(built["root"], REPO, commit=IB_PINNED, history=built["history"]) as hub:
        hub.contents = built["contents"]
        yield hub


def _ib_load(data_path, split=None, modality="metadata"):
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.core import RunConfig
    cfg = RunConfig(benchmark="infinibench", model="gpt-4o", modality=modality, data_path=str(data_path), split=split)
    return get_benchmark("infinibench").load(cfg)


def test_every_split_at_the_pinned_revision_with_its_address_and_a_revision_override(tmp_path, env, ib_hub):
    e = {**env, "HF_ENDPOINT": ib_hub.url}
    folder = tmp_path / "data" / "infinibench"
    for split in ("test", "validation", "train"):
        out = _cli(["get", "infinibench", "--split", split, "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
    lock = json.loads((folder / "data.lock.json").read_text())
    assert lock["revision"] == IB_PINNED and lock["requested_revision"] == "73fead8"        # the pinned commit, resolved in full
    assert lock["address"] == f"{ib_hub.url}/datasets/{REPO}/tree/{IB_PINNED}"              # where the bytes came from
    assert lock["splits"] == ["test", "validation", "train"]
    assert not (folder / "validation" / "validation.csv").exists()                          # removed at the pinned commit
    assert len(list((folder / "validation" / "skills_json").glob("*.json"))) == 8
    assert not list(folder.rglob("*.part_*"))                                               # videos only with --videos
    listing = _cli(["list"], env).stdout
    assert "fetched test, validation, train @ 73fead800000" in listing
    assert "test ~12 GB, validation 11.9 GB, train 92 GB" in listing and "6,006 / 5,137 / 76,475" in listing

    for bad in (["--revision", "deadbee"], ["--split", "final"]):                           # one line, exit 2, nothing changed
        out = _cli(["get", "infinibench", "--no-progress", *bad], e)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert ("deadbee" in out.stderr) if bad[0] == "--revision" else ("splits test, validation, train" in out.stderr)
    assert json.loads((folder / "data.lock.json").read_text())["digest"] == lock["digest"]
    import shutil                                                                           # a revision without the split asked for
    shutil.copytree(ib_hub.root, tmp_path / "no-train"); shutil.rmtree(tmp_path / "no-train" / "train")
    ib_hub.trees["abcdef1" + "0" * 33] = tmp_path / "no-train"
    out = _cli(["get", "infinibench", "--split", "train", "--revision", "abcdef1", "--no-progress"], e)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "no rows of split 'train' (this revision has test, validation)" in out.stderr

    out = _cli(["get", "infinibench", "--split", "dev", "--revision", IB_OLDER[:7], "--no-progress"], e)   # dev is validation
    assert out.returncode == 0, out.stderr[-2000:]
    lock = json.loads((folder / "data.lock.json").read_text())
    assert lock["revision"] == IB_OLDER and lock["requested_revision"] == IB_OLDER[:7] and lock["split"] == "validation"
    assert (folder / "validation" / "validation.csv").is_file()
    assert _cli(["verify", "infinibench"], env).returncode == 0


def test_every_data_path_form_reads_the_same_rows_and_media_resolve_against_the_split_folder(tmp_path, env, ib_hub):
    e = {**env, "HF_ENDPOINT": ib_hub.url}
    for split in ("validation", "train"):
        assert _cli(["get", "infinibench", "--split", split, "--videos", "--accept-license", "--no-progress"], e).returncode == 0
        out = _cli(["prepare", "infinibench", "--split", split, "--no-progress"], env)
        assert out.returncode == 0 and "4 files unpacked" in out.stdout, out.stdout + out.stderr    # a plain tar (validation) and a .tar.gz
    root = tmp_path / "data" / "infinibench"
    val = root / "validation"
    want = sorted(f"{r['skill_name'].replace('choronological', 'chronological')}/{r['question_id']}" for r in ib_rows("validation"))
    for form, split in ((root, "validation"), (root, "dev"), (val, None), (val, "dev"), (val / "skills_json", "validation")):
        samples, errors = _ib_load(form, split, modality="video+subtitles")
        assert not errors and sorted(s.id for s in samples) == want, (form, split, errors)
        assert all(s.answer is not None for s in samples)
    skill = val / "skills_json" / "global_appearance.json"
    for split in ("validation", "dev", None):                                               # one skill file: that skill's rows
        samples, errors = _ib_load(skill, split, modality="video+subtitles")
        assert [s.id for s in samples] == ["global_appearance/10"] and not errors, (split, errors)
        assert samples[0].media[0].path == str(val / IB_EPISODE[0]) and samples[0].subtitles == str(val / IB_EPISODE[1])
    samples, errors = _ib_load(root / "train" / "train.csv", "train")                       # UTF-16 with its BOM
    assert len(samples) == 4 and not errors
    assert _ib_load(root, "train")[0] == samples
    character = next(s for s in _ib_load(val)[0] if s.subset == "character_actions")
    assert character.options[:2] == [["answers the phone", "bakes a cake"], ["bakes a cake", "answers the phone"]]
    with pytest.raises(ValueError, match="no rows of split 'test'"):
        _ib_load(skill, "test")


def test_a_partial_unpack_resumes_and_a_missing_video_is_a_row_error_that_stops_nothing(tmp_path, env, ib_hub):
    e = {**env, "HF_ENDPOINT": ib_hub.url}
    assert _cli(["get", "infinibench", "--split", "validation", "--videos", "--accept-license", "--no-progress"], e).returncode == 0
    val = tmp_path / "data" / "infinibench" / "validation"
    (val / IB_EPISODE[0]).parent.mkdir(parents=True)
    (val / IB_EPISODE[0]).write_bytes(ib_hub.contents["validation"][IB_EPISODE[0]][:100])   # an unpack killed midway
    out = _cli(["prepare", "infinibench", "--split", "validation", "--no-progress"], env)
    assert out.returncode == 0 and "4 files unpacked" in out.stdout, out.stdout + out.stderr
    assert (val / IB_EPISODE[0]).read_bytes() == ib_hub.contents["validation"][IB_EPISODE[0]]
    assert "0 files unpacked" in _cli(["prepare", "infinibench", "--split", "dev", "--no-progress"], env).stdout
    (val / IB_MOVIE[0]).unlink()                                                             # one video gone
    samples, errors = _ib_load(val, modality="video")
    assert len(samples) == 5 and len(errors) == 3
    assert all(er.field == "video_path_mp4" and "file not found" in er.message and IB_MOVIE[0] in er.message for er in errors)


def _ib_run(tmp_path, env, server, *args, name="ib"):
    return subprocess.run(
        [sys.executable, "-m", "vlmlens", "run", "--benchmark", "infinibench", "--model", "gpt-4o", "--judge", "none",
         "--output-root", str(tmp_path / "out"), "--run-name", name, "--no-progress",
         "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", f"cache={tmp_path}/{name}.sqlite", *args],
        env={**env, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}, capture_output=True, text=True, timeout=300)


def test_runs_on_every_split_without_data_path(tmp_path, env, server, ib_hub):
    server.reset(); server.default_text = "Answer: 0"
    e = {**env, "HF_ENDPOINT": ib_hub.url}
    for split in ("validation", "train"):
        assert _cli(["get", "infinibench", "--split", split, "--videos", "--accept-license", "--no-progress"], e).returncode == 0
        assert _cli(["prepare", "infinibench", "--split", split, "--no-progress"], env).returncode == 0
    for split, n in (("validation", 8), ("dev", 8), ("train", 4)):
        out = _ib_run(tmp_path, env, server, "--split", split, "--modality", "subtitles", name=f"ib-{split}")
        assert out.returncode == 0, out.stderr[-2000:]
        info = json.loads((tmp_path / "out" / f"ib-{split}" / "run.json").read_text())
        summary = json.loads((tmp_path / "out" / f"ib-{split}" / "summary.json").read_text())
        assert summary["overall"]["n"] == n and summary["overall"]["n_errors"] == 0, summary["overall"]
        split_name = "validation" if split == "dev" else split
        assert info["config"]["data_path"].endswith(f"infinibench/{split_name}")
        assert info["dataset"]["split"] == split_name and info["dataset"]["revision"] == IB_PINNED
        assert info["dataset"]["address"] == f"{ib_hub.url}/datasets/{REPO}/tree/{IB_PINNED}"


def test_a_test_split_run_is_prediction_only_and_writes_the_official_files(tmp_path, env, server, ib_hub):
    server.reset(); server.default_text = "Sheldon makes tea."
    assert _cli(["get", "infinibench", "--no-progress"], {**env, "HF_ENDPOINT": ib_hub.url}).returncode == 0   # the default split: test
    out = _ib_run(tmp_path, env, server, "--modality", "metadata")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 MCQ rows carry no options: refused, not asked" in out.stderr                 # loud, with the count
    assert "no ground truth" in out.stdout, out.stdout
    run = tmp_path / "out" / "ib"
    summary = json.loads((run / "summary.json").read_text())
    bs = summary["benchmark_summary"]
    assert summary["overall"]["n"] == 2 and summary["overall"]["n_answered"] == 2
    assert bs["prediction_only"] is True and bs["acc"] is None and bs["score_0_10"] is None and bs["overall_0_100"] is None
    assert summary["rows_not_read"] == 2 and len(summary["row_errors"]) == 1                 # one line, counting both rows
    rep = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(run)], env=env, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0 and "2 data rows could not be read and never became items" in rep.stdout, rep.stdout[-2000:] + rep.stderr[-2000:]
    assert all(v["score_0_10"] is None for v in bs["skills"].values())                      # not 0: nothing to score against
    files = {Path(p).name: json.loads(Path(p).read_text()) for p in summary["files"].values()}
    assert sorted(files) == ["spoiler_questions.json", "summarization.json"]
    rec = files["summarization.json"][0]
    assert rec == {"question_id": "3", "question": "Please provide a very detailed summary of the video.", "pred": "Sheldon makes tea."}

    only_mcq = tmp_path / "mcq.csv"                                                         # every row refused: a failure, before anything exists
    lines = (tmp_path / "data" / "infinibench" / "test" / "test.csv").read_text().splitlines()
    only_mcq.write_text("\n".join(lines[:3]) + "\n")
    out = _ib_run(tmp_path, env, server, "--modality", "metadata", "--data-path", str(only_mcq), name="refused")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "every row was refused: 2 MCQ rows carry no options" in out.stderr
    assert not (tmp_path / "out" / "refused").exists()


def test_tvqa_episodes_are_joined_where_the_hub_rows_name_them_and_only_those(tmp_path, env, ib_hub):
    tv = _tvqa_copy(tmp_path / "tvqa")                                   # bbt s01e01 (named by the rows), friends s02e03/e04 (not)
    assert _cli(["get", "infinibench", "--no-progress"], {**env, "HF_ENDPOINT": ib_hub.url}).returncode == 0
    out = _cli(["prepare", "infinibench", "--tvqa-clips", str(tv["frames"]), "--tvqa-subtitles", str(tv["subs"]), "--no-progress"], env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "1 episodes written, 0 kept" in out.stdout and "friends" not in out.stdout + out.stderr     # the rows' filter matched
    split = tmp_path / "data" / "infinibench" / "test"
    assert (split / IB_EPISODE[0]).is_file() and (split / IB_EPISODE[1]).is_file()                    # TV_shows/videos/…, TV_shows/subtitles/…
    assert not (split / "bbt").exists() and not list(split.rglob("friends*"))
    samples, errors = _ib_load(split, modality="video+subtitles")
    ep = [s for s in samples if s.metadata["video_path_mp4"] == IB_EPISODE[0]]
    assert [s.id for s in ep] == ["summarization/3"] and ep[0].media[0].path == str(split / IB_EPISODE[0])
    assert [e.field for e in errors if IB_MOVIE[0] in e.message] == ["video_path_mp4"]               # the movie is not TVQA's


GUIDE_BLOCKS = [("infinibench.md", "## Fetch a split from the hub"), ("data.md", "# Fetch the benchmarks' releases")]


def _readme_infinibench_walkthrough() -> list[str]:
    "The InfiniBench guide's split-by-split commands (nbs/guides/infinibench.md), as printed (comments dropped)."
    import guides
    [block] = guides.blocks(*GUIDE_BLOCKS[0])
    assert block.startswith("vlmlens data get infinibench --split validation")
    return guides.commands(block)


@pytest.mark.parametrize("split", ["validation", "test", "train"])
def test_the_readme_infinibench_walkthrough_runs_as_printed_for_every_split(tmp_path, env, server, ib_hub, split):
    import shlex
    def reply(call):                                                     # the judge's JSON, else the model's option number
        return '{"score": 7, "justification": "close"}' if "Please evaluate" in call.text else "Answer: 0"
    server.reset(); server.responder = reply
    e = {**env, "HF_ENDPOINT": ib_hub.url, "OPENAI_BASE_URL": server.openai_base_url,
         "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}
    commands = _readme_infinibench_walkthrough()
    assert len(commands) == 4 and commands[-1].startswith("vlmlens run")
    for cmd in commands:
        argv = [a if a != "validation" else split for a in shlex.split(cmd)]          # the same commands for each split
        out = subprocess.run([sys.executable, "-m", "vlmlens", *argv[1:], *(["--no-progress"] if argv[1] != "data" or argv[2] != "verify" else [])],
                             env=e, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert out.returncode == 0, (cmd, out.stderr[-3000:])
    summary = json.loads(next((tmp_path / "outputs").rglob("summary.json")).read_text())
    bs, n = summary["benchmark_summary"], {"validation": 8, "test": 2, "train": 4}[split]
    assert summary["overall"]["n"] == n and summary["overall"]["n_errors"] == 0, summary["overall"]
    if split == "test":
        assert bs["prediction_only"] and bs["acc"] is None and len(summary["files"]) == 2
    else:
        assert bs["acc"] == pytest.approx({"validation": 3 / 4, "train": 2 / 3}[split])   # "0" is right but for character_actions
        assert bs["score_0_10"] == 7.0 and "files" not in summary


def test_a_run_under_the_lmms_eval_protocol_asks_reads_and_counts_as_the_authors_task(tmp_path, env, server, ib_hub):
    def reply(call):
        return '{"score": 6, "justification": "partly"}' if "Please evaluate" in call.text else "(A) the first one"
    server.reset(); server.responder = reply
    e = {**env, "HF_ENDPOINT": ib_hub.url}
    assert _cli(["get", "infinibench", "--split", "validation", "--videos", "--accept-license", "--no-progress"], e).returncode == 0
    assert _cli(["prepare", "infinibench", "--split", "validation", "--no-progress"], env).returncode == 0
    bad = _ib_run(tmp_path, env, server, "--split", "validation", "--modality", "subtitles", "--benchmark-kwarg", "protocol=lmms-eval", name="bad")
    assert bad.returncode == 2 and "protocol lmms-eval gives the model the video" in bad.stderr and not (tmp_path / "out" / "bad").exists()
    out = _ib_run(tmp_path, {**env, "OPENAI_BASE_URL": server.openai_base_url}, server, "--split", "validation", "--modality",
                  "video+subtitles", "--frames", "8", "--benchmark-kwarg", "protocol=lmms-eval", "--judge", "gpt-4o-mini", name="lmms")
    assert out.returncode == 0, out.stderr[-3000:]
    asked = [c.text for c in server.calls if "Please evaluate" not in c.text]
    ga = next(t for t in asked if "Sheldon's outfits" in t)
    ga = ga[ga.index("Given this video's subtitles : "):]                                      # after the backend's frame labels
    # 8 of the episode's 16 frames at 2 fps: indices 0 2 4 6 9 11 13 15, at 1 s and 2 s the two cues (ends included)
    assert ga.startswith("Given this video's subtitles : Sheldon: Hello.\nPenny: Hi.\n\nPlease Answer this question :\n")
    assert "\nPlease Answer this question :\nWhat is the correct sequence of Sheldon's outfits?\nOptions are:\n(A) red shirt, blue jacket\n" in ga
    assert ga.endswith("Best option: (") and "(C) I don't know" in ga
    judged = [c.text for c in server.calls if "Please evaluate" in c.text]
    assert len(judged) == 4 and all("Question: Given this video's subtitles : " in t for t in judged)   # the task's whole prompt
    bs = json.loads((tmp_path / "out" / "lmms" / "summary.json").read_text())["benchmark_summary"]
    assert bs["protocol"] == "lmms-eval"
    assert bs["lmms_eval"]["skills"] == {"summarization": 6.0, "spoiler_questions": 6.0, "deep_context_understanding": 6.0,
                                         "linking_multiple_events": 6.0, "character_actions": 0.0, "scene_transitions": 100.0,
                                         "chronological_understanding": 100.0, "global_appearance": 100.0}
    assert (bs["acc"], bs["score_0_10"], bs["overall_0_100"]) == (0.75, 6.0, 67.5)              # 0.5·6/10 + 0.5·75/100


def test_get_repairs_damaged_files_and_refetches_rows_a_new_commit_changed_at_the_same_size(tmp_path, env):
    repo = _infinibench_repo(tmp_path / "repo")
    folder = tmp_path / "data" / "infinibench"
    with HubServer(repo, REPO, commit=IB_PINNED) as hub:
        e = {**env, "HF_ENDPOINT": hub.url}
        assert _cli(["get", "infinibench", "--no-progress"], e).returncode == 0
        js = folder / "test" / "skills_json" / "character_actions.json"
        b = bytearray(js.read_bytes()); b[5] ^= 1; js.write_bytes(bytes(b))          # damaged, same size
        out = _cli(["verify", "infinibench"], env)
        assert out.returncode == 1 and "repair with `vlmlens data get infinibench`" in out.stderr
        assert _cli(["get", "infinibench", "--no-progress"], e).returncode == 0       # the repair the message names
        assert js.read_bytes() == (repo / "test" / "skills_json" / "character_actions.json").read_bytes()
        assert _cli(["verify", "infinibench"], env).returncode == 0

        import shutil                                                                 # a later commit edits a row, same size
        later, new = shutil.copytree(repo, tmp_path / "later"), "fedcba9876543210fedcba9876543210fedcba98"
        csv_path = later / "test" / "test.csv"
        csv_path.write_text(csv_path.read_text().replace("scene 1", "scene 9"))
        hub.trees[new] = later
        out = _cli(["get", "infinibench", "--revision", new, "--no-progress"], e)
        assert out.returncode == 0, out.stderr[-2000:]
    assert (folder / "test" / "test.csv").read_bytes() == csv_path.read_bytes() != (repo / "test" / "test.csv").read_bytes()
    assert json.loads((folder / "data.lock.json").read_text())["revision"] == new


def test_the_data_guide_runs_as_printed(tmp_path, env, ib_hub, server, monkeypatch):
    """nbs/guides/data.md's block, in this process: the hub release from the loopback hub, MINERVA's file and videos from
    a loopback mirror (yt-dlp through VLMLENS_YOUTUBE_URL), the user's TVQA copy in ~/tvqa and own downloads in
    ~/my-yt-dlp-downloads, GPT-4o behind the loopback OpenAI server."""
    import guides
    from test_minerva import write_videos
    from vlmlens.store import RunSet
    ids = ["dQw4w9WgXcQ", "9bZkp7q19f0"]
    _minerva(tmp_path / "files", ids)
    write_videos(tmp_path / "files" / "videos", ids)                       # real, decodable videos in place of the stubs
    home = tmp_path / "home"
    _tvqa_copy(home / "tvqa")
    mine = home / "my-yt-dlp-downloads"; mine.mkdir()
    (mine / f"A match [{ids[0]}].mp4").write_bytes((tmp_path / "files" / "videos" / f"{ids[0]}.mp4").read_bytes())
    [block] = guides.blocks(*GUIDE_BLOCKS[1])
    monkeypatch.chdir(tmp_path)
    for k in [k for k in os.environ if k.startswith("HF_") or k == "TRANSFORMERS_OFFLINE"]: monkeypatch.delenv(k)
    import huggingface_hub.constants as hub_constants                      # read once, when another test first imported it
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub_constants, "ENDPOINT", ib_hub.url)
    monkeypatch.setattr(hub_constants, "HUGGINGFACE_CO_URL_TEMPLATE", ib_hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    server.responder = lambda call: "Answer: B"
    with HubServer(tmp_path / "empty", REPO, files_root=tmp_path / "files") as srv:
        for k, v in {"VLMLENS_DATA": env["VLMLENS_DATA"], "HF_HOME": env["HF_HOME"], "HF_ENDPOINT": ib_hub.url, "HOME": str(home),
                     "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json", "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4",
                     "OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}.items():
            monkeypatch.setenv(k, v)
        ran = guides.run_commands(block)
    assert len(ran) == 10 and ran[-1].startswith("vlmlens run --benchmark minerva")
    [run] = RunSet.discover(tmp_path / "outputs").runs
    assert run.summary["overall"]["n"] == 2 and run.summary["overall"]["n_errors"] == 0 and run.summary["overall"]["accuracy"] == 1.0
    assert run.info["dataset"]["address"] == f"{srv.url}/files/minerva.json"
