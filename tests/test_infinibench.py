"""InfiniBench end to end: a synthetic episode (release rows, all 8 skills) and real IMDb spoiler/summary records
in the four input modes on the tiny model, open answers judged through the real openai client on a loopback server;
aggregate arithmetic against the paper's GPT-4o row; official export -> import round trip; the report notebook."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from loopback import LoopbackServer
from vlmlens.benchmarks import infinibench as ib
from vlmlens.core import RunConfig
from vlmlens.runner import run

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "infinibench"
MODES = ("video", "subtitles", "video+subtitles", "metadata")


def _judge_reply(text: str, salt: int = 0) -> str:
    if "How does the episode end?" in text:                      # one scripted unparsable judgment
        return "I would say seven out of ten."
    return json.dumps({"score": (len(text) * 7 + salt) % 11, "justification": "compared with the reference"})


def _responder(call):
    if call.model == "judge": return _judge_reply(call.text)
    if call.model == "judge2": return _judge_reply(call.text, salt=3)
    return None


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as s:
        s.responder = _responder
        yield s


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The synthetic episode (2.5 min, 2 fps, 160x90) and a real-text folder: 2 movies' IMDb FAQ + 2 episode summaries
    (from ../shared/data, else the packaged slice of the same files), with synthetic media keyed like the records."""
    root = tmp_path_factory.mktemp("infinibench")
    ep = ib.make_synthetic_episode(root / "episode", minutes=2.5, fps=2, size=(160, 90))
    real = root / "real"; real.mkdir()
    src = ib.real_text_data(SHARED if (SHARED / "movienet_spoiler_faq.json").exists() else None)
    movies = list(src["faq"])[:2]
    faq = {m: {"questions": src["faq"][m]["questions"][:2]} for m in movies}
    summ = {"bbt": {"season_1": dict(list(src["summaries"]["bbt"]["season_1"].items())[:1])},
            "friends": {"season_1": dict(list(src["summaries"]["friends"]["season_1"].items())[:1])}}
    (real / "movienet_spoiler_faq.json").write_text(json.dumps(faq), encoding="utf-8")
    (real / "tvqa_imdb_summaries.json").write_text(json.dumps(summ), encoding="utf-8")
    media = root / "real_media"; media.mkdir()
    keys = movies + [f"{s}_{se}_{e}"
                     for s, v in summ.items() for se, eps in v.items() for e in eps]
    for k in keys:
        shutil.copy(ep["video"], media / f"{k}.mp4"); shutil.copy(ep["subtitles"], media / f"{k}.srt")
    n_real = sum(len(v["questions"]) for v in faq.values()) + 2
    return {"root": root, "episode": ep, "real": real, "media": media, "n_real": n_real}


def _cfg(server, data, out, modality, source, **kw):
    bk = {"source": source}
    if source == "real_text": bk.update(real_root=str(data["real"]), video_root=str(data["media"]))
    bk.update(kw.pop("benchmark_kwargs", {}))
    return RunConfig(benchmark="infinibench", model="tiny-qwen2.5-vl", modality=modality, num_frames=kw.pop("num_frames", 4),
                     max_side=160, max_new_tokens=6, data_path=str(data["episode"]["rows"]) if source == "release" else None,
                     judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"retries": 0},
                     benchmark_kwargs=bk, output_root=str(out), progress=False, **kw)


@pytest.fixture(scope="module")
def runs(server, data, monkeypatch_module):
    monkeypatch_module.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    out = data["root"] / "runs"
    res = {}
    for mode in MODES:
        res[("release", mode)] = run(_cfg(server, data, out, mode, "release", run_name=f"syn-{mode}"))
        res[("real", mode)] = run(_cfg(server, data, out, mode, "real_text", run_name=f"real-{mode}"))
    # ablations for the report: no IDK option, a second frame count
    res["noidk"] = run(_cfg(server, data, out, "video", "release", run_name="syn-noidk", benchmark_kwargs={"idk_option": False}))
    res["f2"] = run(_cfg(server, data, out, "video", "release", run_name="syn-2f", num_frames=2))
    return out, res


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_aggregates_match_the_published_gpt4o_row():
    acc = ib.grounding_accuracy(dict(zip(ib.MCQ_SKILLS, [49.67, 37.71, 39.93, 60.98])))
    assert ib.round_published(acc) == 47.07
    assert ib.round_published(ib.overall_score(acc, 6.50)) == 56.04
    assert ib.round_published(ib.overall_score(47.07, 6.50)) == 56.04     # from the rounded Acc as well
    # Score is an unweighted mean over skills, not over items
    assert ib.reasoning_score({"summarization": 6.0, "spoiler_questions": 7.0, "deep_context_understanding": 6.5,
                               "linking_multiple_events": 6.5}) == 6.5


def test_release_loader_row_errors_and_splits(data, tmp_path):
    rows = [json.loads(l) for l in data["episode"]["rows"].read_text().splitlines()]
    rows += [dict(rows[0], question_id=90, skill_name="humour"),                       # unknown skill
             dict(rows[0], question_id=91, video_path_mp4="missing.mp4"),             # missing video
             dict(rows[0], question_id=92, options="[a, b"),                          # bad literal
             dict(rows[0], question_id=93, answer_idx=9)]                             # out of range
    p = tmp_path / "rows.json"; p.write_text(json.dumps(rows))
    cfg = RunConfig(benchmark="infinibench", model="tiny-qwen2.5-vl", data_path=str(p), modality="video",
                    benchmark_kwargs={"video_root": str(data["episode"]["video"].parent)})
    samples, errors = ib.InfiniBenchBenchmark().load(cfg)
    assert len(samples) == 10
    msgs = sorted(str(e) for e in errors)
    assert len(errors) == 4 and any("humour" in m for m in msgs) and any("missing.mp4" in m for m in msgs)
    assert any("options" in m for m in msgs) and any("out of range" in m for m in msgs)
    test = [s for s in samples if s.metadata["split"] == "test"]
    assert len(test) == 1 and test[0].answer is None
    only_val, _ = ib.InfiniBenchBenchmark().load(RunConfig(benchmark="infinibench", model="x", data_path=str(p),
                                                         split="validation", modality="metadata"))
    assert {s.metadata["split"] for s in only_val} == {"validation"}
    # the subtitle modes need the .srt, the metadata mode needs neither file
    (tmp_path / "v").mkdir(); shutil.copy(data["episode"]["video"], tmp_path / "v" / "episode.mp4")
    s2, e2 = ib.InfiniBenchBenchmark().load(RunConfig(benchmark="infinibench", model="x", data_path=str(data["episode"]["rows"]),
                                                      modality="subtitles", benchmark_kwargs={"video_root": str(tmp_path / "v")}))
    assert not s2 and all("video_subtitles" in str(e) for e in e2)


def test_all_modes_run_end_to_end(runs, data):
    out, res = runs
    for mode in MODES:
        syn, real = res[("release", mode)], res[("real", mode)]
        assert syn["overall"]["n"] == 10 and syn["overall"]["n_errors"] == 0, (mode, syn["row_errors"])
        assert real["overall"]["n"] == data["n_real"] and real["overall"]["n_errors"] == 0, (mode, real["row_errors"])
        b = syn["benchmark_summary"]
        assert set(b["skills"]) == set(ib.SKILLS) and b["complete"]
        assert b["judge_invalid"] == 1                                # the scripted unparsable judgment
        scores = pd.read_csv(out / f"syn-{mode}" / "scores.csv")
        # the aggregate arithmetic, recomputed from the per-item rows
        acc = [100 * scores[(scores.subset == s) & scores.score.notna()].score.mean() for s in ib.MCQ_SKILLS]
        sc = [10 * scores[(scores.subset == s) & scores.score.notna()].score.mean() for s in ib.OPEN_SKILLS]
        assert b["acc"] == pytest.approx(sum(acc) / 4) and b["score"] == pytest.approx(sum(sc) / 4)
        assert b["overall"] == pytest.approx((b["acc"] + 10 * b["score"]) / 2)
        assert scores[scores.sample_id == "deep_context_understanding/10"].score.isna().all()   # test split: no score
        rb = real["benchmark_summary"]
        assert set(rb["skills"]) == {"spoiler_questions", "summarization"} and rb["acc"] is None
    noidk = res["noidk"]["benchmark_summary"]
    assert noidk["idk_option"] is False and noidk["n_idk"] == 0
    assert noidk["chance"] > res[("release", "video")]["benchmark_summary"]["chance"]


def test_prompt_modes_and_frame_cache(data):
    bench = ib.InfiniBenchBenchmark()
    from vlmlens import media
    from vlmlens.runner import prepare
    cfg = RunConfig(benchmark="infinibench", model="tiny-qwen2.5-vl", data_path=str(data["episode"]["rows"]),
                    modality="video+subtitles", num_frames=6)
    samples, _ = bench.load(cfg)
    cache = media.FrameCache()
    reqs = [prepare(bench, s, cfg, cache)[0] for s in samples]
    assert cache.misses == 1 and cache.hits == len(samples) - 1         # one decode for the whole episode
    text = "\n".join(p["text"] for p in reqs[0].messages[0]["content"] if p["type"] == "text")
    assert "Subtitles at the sampled frames" in text and "1) " in text and "I don't know" in text
    full = RunConfig(**{**cfg.to_dict(), "benchmark_kwargs": {"subtitle_mode": "full"}})
    r = prepare(bench, samples[0], full, cache)[0]
    assert any("Subtitles:" in p.get("text", "") for p in r.messages[0]["content"])
    meta = RunConfig(**{**cfg.to_dict(), "modality": "metadata"})
    r = prepare(bench, samples[0], meta, None)[0]
    assert ib.SYN_TITLE in r.messages[0]["content"][0]["text"] and not any(p["type"] == "video" for p in r.messages[0]["content"])


def test_context_check_refuses_before_running(data):
    cfg = RunConfig(benchmark="infinibench", model="tiny-qwen2.5-vl", data_path=str(data["episode"]["rows"]),
                    modality="video", num_frames=300, model_kwargs={"video_min_pixels": 64 * 28 * 28, "video_max_pixels": 64 * 28 * 28})
    samples, errors = ib.InfiniBenchBenchmark().load(cfg)
    assert not samples and len(errors) == 10
    assert all("context of 4096" in str(e) and "300 frames" in str(e) for e in errors)
    fits = RunConfig(**{**cfg.to_dict(), "num_frames": 16})
    assert len(ib.InfiniBenchBenchmark().load(fits)[0]) == 10


def test_official_export_import_round_trip(runs, server, tmp_path):
    out, res = runs
    run_dir = out / "syn-video+subtitles"
    files = ib.export_official(run_dir, tmp_path / "official")
    assert {p.name for p in files.values()} == set(ib.OFFICIAL_FILES.values())
    rows = json.loads((tmp_path / "official" / "choronological_understanding.json").read_text())
    assert all(set(r) >= {"question", "answer_idx", "pred"} and isinstance(r["pred"], int) for r in rows)
    from vlmlens.judges import open_ended_judge
    _, samples = ib.run_samples(run_dir)
    with open_ended_judge(f"openai-compatible:judge@{server.openai_base_url}", retries=0) as judge:
        got = ib.score_official(tmp_path / "official", judge=judge, samples=samples)
    want = res[("release", "video+subtitles")]["benchmark_summary"]
    for k in ("acc", "score", "overall", "chance", "n_idk", "n_invalid", "judge_invalid"):
        assert got[k] == pytest.approx(want[k]), k
    for s in ib.SKILLS:
        for k in ("accuracy", "mean_score"):
            if k in want["skills"][s]: assert got["skills"][s][k] == pytest.approx(want["skills"][s][k]), (s, k)
    # without a judge the MCQ part still scores; open skills stay unscored
    nj = ib.score_official(tmp_path / "official")
    assert nj["acc"] == pytest.approx(want["acc"]) and nj["score"] is None
    bad = tmp_path / "bad"; bad.mkdir()
    (bad / "global_appearance.json").write_text(json.dumps([{"question": "q", "pred": 1}]))
    with pytest.raises(ValueError, match="answer_idx"): ib.import_official(bad)


def test_report_notebook_renders_tables_and_plots(runs, server, tmp_path, repo_root):
    import papermill as pm
    out, res = runs
    from vlmlens.judges import open_ended_judge
    with open_ended_judge(f"openai-compatible:judge2@{server.openai_base_url}", retries=0) as j2:
        ib.rejudge(out / "syn-video", [j2])
    table, agree = ib.judge_robustness(out / "syn-video")
    assert len(table) == 2 and agree["judges"] and agree["pairwise"][0]["n"] >= 3
    rep = tmp_path / "report"
    pm.execute_notebook(str(repo_root / "evalnb" / "report_infinibench.ipynb"), str(tmp_path / "report.ipynb"),
                        parameters={"runs_root": str(out), "report_dir": str(rep), "robustness_run": str(out / "syn-video")},
                        cwd=str(tmp_path), progress_bar=False)
    t3 = pd.read_csv(rep / "table3.csv", index_col=0)
    assert "Random" in t3.index and {"Acc", "Score", "Overall", "Global Appearance"} <= set(t3.columns)
    assert (rep / "frames_curve.png").stat().st_size > 1000
    mod = pd.read_csv(rep / "modality_table.csv", index_col=0)
    assert set(MODES) <= set(mod.columns)
    idk = pd.read_csv(rep / "idk_table.csv")
    assert set(idk.idk_option) == {True, False}
    assert (rep / "judge_robustness.csv").exists()
