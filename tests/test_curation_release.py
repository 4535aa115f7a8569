"""Temporal certificates, the verify step, and the release: rows the InfiniBench loader reads, the official per-skill
files, splits, the dataset card; bad input named."""
import json
from collections import Counter

import pytest

import vlmlens.curation as curation
from vlmlens.benchmarks import infinibench as ib
from vlmlens.core import RunConfig
from vlmlens.curation.release import release_row, write_release
from vlmlens.curation.review import VerdictLog
from vlmlens.curation.store import Step


def test_temporal_certificate_exactly_as_specified():
    tc = curation.temporal_certificate
    assert tc([(10, 10.05), (20, 30), (34, 40), (45.01, 50)]) == [(20.0, 40.0), (45.01, 50.0)]   # <0.1 s dropped; gap 4 merged, 5.01 not
    assert tc([(20, 30), (35, 36)]) == [(20.0, 36.0)]                                          # a gap of exactly 5 s merges
    assert tc([(0, 0.1)]) == [(0.0, 0.1)] and tc([(0, 0.0999)]) == []                           # min_len_s inclusive
    assert tc([(30, 40), (0, 10), (5, 12)]) == [(0.0, 12.0), (30.0, 40.0)]                     # unsorted, overlapping
    assert tc([(0, 1), (3, 4)], merge_gap_s=1.0, min_len_s=0.5) == [(0.0, 1.0), (3.0, 4.0)]
    with pytest.raises(ValueError, match="start <= end"): tc([(3, 1)])
    with pytest.raises(ValueError, match="span"): tc([(1,)])
    s = curation.certificate_stats({"a": [(0, 10), (100, 110)], "b": [(0, 1)]}, {"a": "x", "b": "y"})
    assert s["overall"] == {"n_items": 2, "mean_count": 1.5, "mean_length_s": 10.5}


def _step(tmp_path):
    st = Step(tmp_path / "b", "filter", {})
    (tmp_path / "v.mp4").write_bytes(b"")                       # the release refuses rows whose video is not there
    def items(_, w):
        for s in ("scene_transitions", "deep_context_understanding", "summarization"):
            for k in range(10):
                mcq = s == "scene_transitions"
                w.accept(f"v/{s}/{k}", {"skill_name": s, "question": f"{s} question {k}?", "video_path_mp4": str(tmp_path / "v.mp4"),
                                        "options": [["a", "b"], ["b", "a"], "I don't know"] if mcq else None, "answer_idx": 1 if mcq else None,
                                        "answer": None if mcq else f"answer {k}", "events": ["a", "b"] if mcq else None, "title": "T"})
    st.process([("v", None)], items)
    return st


def test_verify_then_release_round_trips_through_the_loader(tmp_path):
    st = _step(tmp_path)
    sample = curation.review_sample(st)
    assert Counter(it["stratum"] for it in sample) == Counter({"scene_transitions": 2, "deep_context_understanding": 2})
    log = VerdictLog(tmp_path / "v.jsonl")
    for k, it in enumerate(sample):
        log.append(it["id"], "alice", "absent" if k == 0 else "valid", note="not in the video" if k == 0 else "",
                   edits={"answer": "a corrected answer"} if k == 1 else None,
                   spans=[[10 * k, 10 * k + 4]], event_spans=[[[60, 61]], [[1, 2]]] if it["events"] else [])   # b, then a: the gold order
    vs = curation.verify_step(tmp_path / "b", st, log)
    assert [r["id"] for r in vs.rejected()] == [sample[0]["id"]] and "absent" in vs.rejected()[0]["reason"]
    ok = {r["id"]: r["item"] for r in vs.items() if r["item"]["verification"]["status"] == "verified"}
    assert sample[1]["stratum"] == "deep_context_understanding"
    assert len(ok) == 3 and ok[sample[1]["id"]]["answer"] == "a corrected answer"
    assert ok[sample[1]["id"]]["verification"]["edits"] == {"answer": "a corrected answer"}
    summ = vs.store.read_summary()
    assert summ["validity"][-1]["validity"] == pytest.approx(3 / 4) and summ["n_pending"] == 0
    assert summ["certificates"]["overall"]["n_items"] == 3
    paths = write_release(vs, tmp_path / "rel", {"verify": vs})
    rows = [json.loads(l) for l in paths["rows"].read_text().splitlines()]
    assert len(rows) == 29 and Counter(r["split"] for r in rows)["train"] == 26
    assert {r["split"] for r in rows if r["verified"]} <= {"test", "validation"}
    assert all(r["certificate"]["n"] >= 1 for r in rows if r["verified"])
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=str(paths["rows"]), split="train", modality="metadata"))
    assert errs == [] and len(samples) == 26
    mcq = next(s for s in samples if s.answer_type == "mcq")
    assert mcq.options[mcq.answer] == ["b", "a"] and ib.is_idk(mcq.options[-1])
    off = json.loads((tmp_path / "rel" / "official" / "scene_transitions.json").read_text())
    assert len(off) == 10 and off[0]["options"][off[0]["answer_idx"]] == ["b", "a"]
    assert (tmp_path / "rel" / "figures" / "figure3_question_lengths.png").stat().st_size > 0
    card = paths["card"].read_text()
    assert "| scene_transitions | train |" in card and "75.00%" in card


def test_release_refuses_malformed_items(tmp_path):
    with pytest.raises(ValueError, match="v/1: an MCQ skill needs options"):
        release_row("v/1", {"skill_name": "global_appearance", "question": "Q?"}, "train")
    with pytest.raises(ValueError, match="nothing to release"):
        write_release(Step(tmp_path, "empty", {}), tmp_path / "rel")


def test_a_release_naming_videos_that_are_not_there_is_refused_until_a_media_root_holds_them(tmp_path, capsys):
    """Questions from the released outfit file name TVQA episodes by the official layout (/bbt/...). Without the episodes
    the release refuses (one line naming the outfit file, the row and the field; exit 2; nothing written); with a media
    root holding them, the rows point at existing files and the InfiniBench loader reads every row."""
    import argparse
    from vlmlens.curation import cli as ccli
    outfits = tmp_path / "outfits.json"
    outfits.write_text(json.dumps({"season_1": {"episode_1": {"Sheldon": ["red shirt", "blue shirt"], "Penny": ["green dress", "robe"]}}}))
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    run = lambda *a: ccli.main(p.parse_args(["curate", *a]))
    assert run("appearance", "--outfits", str(outfits), "--out", str(tmp_path / "b")) == 0
    rel = ["release", "--from", "appearance_qa", "--out", str(tmp_path / "b"), "--release", str(tmp_path / "rel"), "--split-rule", "test"]
    capsys.readouterr()
    assert run(*rel) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{outfits}: release row 1 (bbt_season_1_episode_1/global_appearance/" in err
    assert "video_path_mp4 /bbt/season_1/episode_1.mp4 not found" in err and "(1 more row(s) with missing media)" in err and "--media-root" in err
    assert not (tmp_path / "rel").exists()
    tvqa = tmp_path / "tvqa" / "bbt" / "season_1"; tvqa.mkdir(parents=True)
    (tvqa / "episode_1.mp4").write_bytes(b"")
    assert run(*rel, "--media-root", str(tmp_path / "tvqa")) == 2                     # the subtitles are still missing
    assert "video_subtitles /bbt/season_1/episode_1.srt not found" in capsys.readouterr().err and not (tmp_path / "rel").exists()
    (tvqa / "episode_1.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n")
    assert run(*rel, "--media-root", str(tmp_path / "tvqa")) == 0
    assert f"video_root={(tmp_path / 'tvqa').resolve()}" in capsys.readouterr().out
    rows = [json.loads(l) for l in (tmp_path / "rel" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all((tmp_path / "tvqa" / r["video_path_mp4"].lstrip("/")).is_file() for r in rows)
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=str(tmp_path / "rel" / "rows.jsonl"), modality="video+subtitles",
                                              benchmark_kwargs={"video_root": str(tmp_path / "tvqa")}))
    assert errs == [] and len(samples) == 2
    assert {m.path for s in samples for m in s.media} == {str(tmp_path / "tvqa" / "bbt" / "season_1" / "episode_1.mp4")}


def test_verify_leaves_summarization_unsampled_as_in_b6_unless_asked(tmp_path, capsys):
    "App. B.6: summarization is not human-verified; `--include-summarization` samples it, and an invalid one is removed."
    import argparse
    from vlmlens.curation import cli as ccli
    st = _step(tmp_path)
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    run = lambda *a: ccli.main(p.parse_args(["curate", "verify", "--from", "filter", "--out", str(tmp_path / "b"), "--verdicts", str(tmp_path / "v.jsonl"), *a]))
    summ = [it for it in curation.review_sample(st, skip_skills=()) if it["stratum"] == "summarization"]
    assert len(summ) == 2
    log = VerdictLog(tmp_path / "v.jsonl")
    for it in curation.review_sample(st, skip_skills=()): log.append(it["id"], "alice", "invalid" if it["id"] == summ[0]["id"] else "valid")
    status = lambda vs: {r["id"]: r["item"]["verification"]["status"] for r in vs.items()}
    assert run() == 0
    from vlmlens.curation.store import list_steps, open_step
    verify = lambda skip: next(st for st in (open_step(r["dir"]) for r in list_steps(tmp_path / "b") if r.get("step") == "verify")
                               if st.inputs["skip"] == skip)
    vs = verify(["summarization"])
    assert status(vs)[summ[0]["id"]] == "unverified" and vs.rejected() == []           # the paper's rule: not sampled
    assert run("--include-summarization") == 0
    vs = verify([])
    assert [r["id"] for r in vs.rejected()] == [summ[0]["id"]] and status(vs)[summ[1]["id"]] == "verified"


def _rel_step(build):
    "Two open-ended items whose video and subtitles are named by RELATIVE paths (videos/e1.mp4, videos/e1.srt)."
    st = Step(build, "filter", {})
    st.process([("v", None)], lambda _, w: [w.accept(f"v/{k}", {"skill_name": "deep_context_understanding", "question": f"Why {k}?",
                                                                 "answer": f"because {k}", "video_path_mp4": "videos/e1.mp4",
                                                                 "video_subtitles": "videos/e1.srt"}) for k in range(2)])
    return st


def _media(folder):
    (folder / "videos").mkdir(parents=True, exist_ok=True)
    (folder / "videos" / "e1.mp4").write_bytes(b"")
    (folder / "videos" / "e1.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n")


def test_relative_media_paths_are_checked_exactly_as_the_loader_resolves_them(tmp_path, monkeypatch, capsys):
    """A relative video/subtitle path is read by the loader under video_root (the media root) or, without one, the
    release folder — never the working folder. The release check resolves it the same way: files only in the working
    folder are refused (row and field named, exit 2, nothing written); files where the loader looks pass, and the
    released rows load with 0 errors."""
    import argparse
    from vlmlens.curation import cli as ccli
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    run = lambda *a: ccli.main(p.parse_args(["curate", *a]))
    _rel_step(tmp_path / "b")
    work = tmp_path / "work"; _media(work); monkeypatch.chdir(work)              # the files exist only in the working folder
    rel = lambda name: ["release", "--from", "filter", "--out", str(tmp_path / "b"), "--release", str(tmp_path / name), "--split-rule", "test"]
    capsys.readouterr()
    assert run(*rel("rel_cwd")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "release row 1 (v/0): video_path_mp4 videos/e1.mp4 not found" in err
    assert f"the loader reads it as {tmp_path / 'rel_cwd' / 'videos' / 'e1.mp4'}" in err and "(1 more row(s)" in err
    assert not (tmp_path / "rel_cwd").exists()
    media = tmp_path / "media"; _media(media)                                     # a media root holding them: passes, loads
    assert run(*rel("rel_root"), "--media-root", str(media)) == 0
    rows = tmp_path / "rel_root" / "rows.jsonl"
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=str(rows), modality="video+subtitles",
                                              benchmark_kwargs={"video_root": str(media.resolve())}))
    assert errs == [] and len(samples) == 2 and samples[0].media[0].path == str(media.resolve() / "videos" / "e1.mp4")
    _media(tmp_path / "rel_beside")                                               # no media root: read beside the rows file
    assert run(*rel("rel_beside")) == 0
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=str(tmp_path / "rel_beside" / "rows.jsonl"),
                                              modality="video+subtitles"))
    assert errs == [] and len(samples) == 2


def test_allow_missing_media_releases_metadata_only_rows_and_the_card_counts_them(tmp_path, capsys):
    import argparse
    from vlmlens.curation import cli as ccli
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    _rel_step(tmp_path / "b")
    args = ["curate", "release", "--from", "filter", "--out", str(tmp_path / "b"), "--release", str(tmp_path / "rel"), "--split-rule", "test"]
    assert ccli.main(p.parse_args(args)) == 2 and not (tmp_path / "rel").exists()
    capsys.readouterr()
    assert ccli.main(p.parse_args([*args, "--allow-missing-media"])) == 0
    assert "2 row(s) name media that is not there" in capsys.readouterr().out
    assert "2 of 2 rows name a video or subtitle file that is not there" in (tmp_path / "rel" / "README.md").read_text()
    assert json.loads((tmp_path / "rel" / "stats.json").read_text())["stats"]["rows_missing_media"] == 2
    rows = str(tmp_path / "rel" / "rows.jsonl")
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=rows, modality="metadata"))
    assert errs == [] and len(samples) == 2
    samples, errs = ib.load_release(RunConfig("infinibench", "x", data_path=rows, modality="video"))
    assert samples == [] and len(errs) == 2 and errs[0].field == "video_path_mp4"


def test_verification_cross_checks_what_b6_cross_checks(tmp_path):
    "A `valid` verdict whose event timestamps run against the answer's order, or with every event absent, is a disagreement; items without"
    " spans stay out of the certificate means, and two reviewers' spans are not merged into one certificate."
    st = _step(tmp_path)
    sample = curation.review_sample(st)
    scene = [it for it in sample if it["stratum"] == "scene_transitions"]
    deep = [it for it in sample if it["stratum"] == "deep_context_understanding"]
    log = VerdictLog(tmp_path / "v.jsonl")
    log.append(scene[0]["id"], "alice", "valid", event_spans=[[[1, 2]], [[60, 61]]])          # a before b, but the gold says b, then a
    log.append(scene[1]["id"], "alice", "valid", event_spans=[None, None])                    # valid, yet no event seen
    log.append(deep[0]["id"], "alice", "valid", spans=[[0, 20]])                              # 1 segment, 20 s
    log.append(deep[0]["id"], "bob", "valid", spans=[[30, 40]])                               # 1 segment, 10 s (merged: 2 / 30 s)
    log.append(deep[1]["id"], "alice", "valid")                                              # no span at all
    vs = curation.verify_step(tmp_path / "b", st, log)
    rej = {r["id"]: r["reason"] for r in vs.rejected()}
    assert set(rej) == {scene[0]["id"], scene[1]["id"]}
    assert "marked valid, but event timestamps out of the answer's order (event 0 at 1 s comes before event 1 at 60 s)" in rej[scene[0]["id"]]
    assert "marked valid, but every event (2) marked absent" in rej[scene[1]["id"]]
    summ = vs.store.read_summary()
    assert summ["cross_check"] == {scene[0]["id"]: {"alice": "event timestamps out of the answer's order (event 0 at 1 s comes before event 1 at 60 s)"},
                                   scene[1]["id"]: {"alice": "every event (2) marked absent"}}
    cert = summ["certificates"]
    assert cert["overall"] == {"n_items": 1, "mean_count": 1.0, "mean_length_s": 15.0} and cert["n_without_spans"] == 1
    assert next(r for r in summ["validity"] if r["stratum"] == "scene_transitions")["validity"] == 0.0
