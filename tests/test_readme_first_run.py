"""The front page's "A first real evaluation" block, run as printed in this process: MINERVA's file and the videos of
its first 20 questions from a loopback mirror (yt-dlp through VLMLENS_YOUTUBE_URL), GPT-4o behind the loopback OpenAI
server. The release here has 21 questions over three videos, the 21st the only one about the third, so `--limit 20`
must leave that video unfetched and the run must ask 20 questions; then the whole set, as the text after the block
says, asks only the 21st."""
import json
import os
import shlex

import guides
from loopback_hub import HubServer
from test_data import env  # noqa: F401  (the fixture: a data cache in tmp_path)
from test_minerva import write_videos
from vlmlens.cli import main
from vlmlens.store import RunSet

IDS = ["dQw4w9WgXcQ", "9bZkp7q19f0", "kJQP7kiw5Fk"]


def _release(files):
    "21 MINERVA rows (the release's field names): questions 1-20 about the first two videos, the 21st about the third."
    rows = [{"key": f"{v}:{i:040x}", "video_id": v, "question": f"How many goals? ({i})", "answer": "2",
             **{f"answer_choice_{k}": str(k + 1) for k in range(5)}, "answer_id": 1, "reasoning": "At 01:10 the first goal ...",
             "question type": "counting", "split": "sports", "category": "soccer"}
            for i, v in enumerate([IDS[i % 2] for i in range(20)] + [IDS[2]])]
    files.mkdir(parents=True)
    (files / "minerva.json").write_text(json.dumps(rows))
    write_videos(files / "videos", IDS, seconds=10)                     # 40 frames: enough for --frames 32


def test_the_first_real_evaluation_runs_as_printed(tmp_path, env, server, monkeypatch, capsys):  # noqa: F811
    _release(tmp_path / "files")
    [block] = guides.blocks("README.md", "## A first real evaluation", root=guides.REPO)
    monkeypatch.chdir(tmp_path)
    for k in [k for k in os.environ if k.startswith("HF_") or k == "TRANSFORMERS_OFFLINE"]: monkeypatch.delenv(k)
    import huggingface_hub.constants as hub_constants                      # read once, when another test first imported it
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    server.responder = lambda call: "Answer: B"
    ran = []
    with HubServer(tmp_path / "empty", "x/y", files_root=tmp_path / "files") as srv:
        for k, v in {"VLMLENS_DATA": env["VLMLENS_DATA"], "VLMLENS_MINERVA_URL": f"{srv.url}/files/minerva.json",
                     "VLMLENS_YOUTUBE_URL": f"{srv.url}/files/videos/{{id}}.mp4", "OPENAI_BASE_URL": server.openai_base_url}.items():
            monkeypatch.setenv(k, v)
        for cmd in guides.commands(block):
            argv = shlex.split(cmd)
            if argv[:2] == ["pip", "install"]: assert argv[2:] == ["vlmlens[data]"]; continue
            if argv[0] == "export":
                name, _ = argv[1].split("=", 1)
                monkeypatch.setenv(name, "test-openai-key.not-real.000000000000"); continue
            assert argv[0] == "vlmlens", cmd
            assert main(argv[1:]) in (0, None), cmd
            ran.append(argv[1])
            if "--dry-run" in argv: assert not (tmp_path / "outputs").exists()          # the dry run creates nothing
        assert ran == ["data", "data", "run", "run", "report"]
        videos = tmp_path / "data" / "minerva" / "videos"
        assert sorted(p.stem for p in videos.glob("*.mp4")) == sorted(IDS[:2])         # only the first 20 questions' videos
        [run] = RunSet.discover(tmp_path / "outputs").runs
        assert run.summary["overall"]["n"] == 20 and run.summary["overall"]["n_errors"] == 0
        assert run.summary["overall"]["accuracy"] == 1.0
        assert [e.split(": ", 1)[1] for e in run.summary["row_errors"]] == [f"video_id: video {IDS[2]!r} not found in {videos} or {videos.parent}"]
        shown = capsys.readouterr()
        assert "| all items |" in shown.out                                             # the report, in Markdown
        assert "minerva: 2 videos in" in shown.out and f"video {IDS[2]} missing" not in shown.err   # prepare: not asked for
        # the whole set: every video, and the same run without --limit asks only the 21st question
        assert main(["data", "get", "minerva", "--videos", "--accept-license"]) in (0, None)
    assert sorted(p.stem for p in videos.glob("*.mp4")) == sorted(IDS)
    last = [c for c in guides.commands(block) if c.startswith("vlmlens run") and "--dry-run" not in c][0]
    assert main(shlex.split(last.replace(" --limit 20", ""))[1:]) in (0, None)
    [run] = RunSet.discover(tmp_path / "outputs").runs
    assert run.summary["overall"]["n"] == 21 and run.summary["overall"]["accuracy"] == 1.0
    assert len((run.dir / "predictions.jsonl").read_text().splitlines()) == 21         # the 20 kept, only the 21st asked
