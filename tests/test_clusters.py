"""Items know their cluster: MINERVA runs through the real runner on a scripted loopback model whose answers move
together within a video; the score rows carry the video, and the intervals over videos agree with a cluster bootstrap
computed here, independently of `vlmlens.metrics`."""
import json
import re

import numpy as np
import pytest

from loopback import LoopbackServer
from vlmlens.core import RunConfig
from vlmlens.store import RunSet

N_VIDEOS, PER_VIDEO = 40, 5
GOOD = {"strong": set(range(24)), "weak": set(range(12))}        # the videos each model reads right


def _items():
    return [{"key": f"v{v}-q{j}", "video_id": f"vid{v:02d}", "question": f"About video vid{v:02d}, question {j}: which colour?",
             **{f"answer_choice_{i}": c for i, c in enumerate(["red", "blue", "green", "yellow", "white"])}, "answer_id": 0,
             "answer": "red", "question type": "Color", "split": "test", "category": "Scenes"}
            for v in range(N_VIDEOS) for j in range(PER_VIDEO)]


def _reply(call):
    "A model that reads some videos right (every question about it right, but one) and the others wrong."
    m = re.search(r"vid(\d\d), question (\d)", call.text)
    if not m: return "A"
    v, j = int(m.group(1)), int(m.group(2))
    right = (v in GOOD[call.model]) != (j == 4 and v % 3 == 0)          # one question in some videos goes the other way
    return "Answer: A" if right else "Answer: C"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import os
    from vlmlens.runner import run
    tmp = tmp_path_factory.mktemp("clusters")
    data = tmp / "minerva.json"
    data.write_text(json.dumps(_items()), encoding="utf-8")
    old = os.environ.get("OPENAI_COMPATIBLE_API_KEY")
    os.environ["OPENAI_COMPATIBLE_API_KEY"] = "EMPTY"
    try:
        with LoopbackServer() as server:
            server.responder = _reply
            for name in ("strong", "weak"):
                run(RunConfig("minerva", f"openai-compatible:{name}@{server.openai_base_url}", data_path=str(data), modality="text",
                              output_root=str(tmp / "out"), run_name=name, progress=False, model_kwargs={"cache": False, "progress": False}))
    finally:
        if old is None: os.environ.pop("OPENAI_COMPATIBLE_API_KEY", None)
        else: os.environ["OPENAI_COMPATIBLE_API_KEY"] = old
    return tmp / "out"


def _bootstrap_over_videos(scores, videos, n=4000, seed=7):
    "Resample whole videos with replacement; the mean over all their questions; 2.5% and 97.5% quantiles."
    rng = np.random.default_rng(seed)
    by_video = {}
    for s, v in zip(scores, videos): by_video.setdefault(v, []).append(s)
    groups = list(by_video.values())
    means = []
    for _ in range(n):
        pick = [groups[i] for i in rng.integers(0, len(groups), len(groups))]
        means.append(sum(map(sum, pick)) / sum(map(len, pick)))
    return np.quantile(means, [0.025, 0.975])


def test_every_score_row_names_its_video(runs):
    rs = RunSet.discover(runs)
    s = rs.scores()
    assert len(s) == 2 * N_VIDEOS * PER_VIDEO and s["cluster"].notna().all()
    assert s.groupby("run")["cluster"].nunique().tolist() == [N_VIDEOS, N_VIDEOS]
    one = rs[0].scores()
    assert set(one["cluster"]) == {f"video:vid{v:02d}" for v in range(N_VIDEOS)}
    assert (one.groupby("cluster").size() == PER_VIDEO).all()
    assert one["cluster"].map(type).eq(str).all()                       # read back as text, never as numbers


def test_interval_over_videos_matches_an_independent_cluster_bootstrap_and_is_wider_than_wilson(runs):
    from vlmlens.metrics import cluster_se, mean_interval
    s = RunSet.discover(runs / "strong")[0].scores()
    vals, vids = s["score"].astype(float).tolist(), s["cluster"].tolist()
    got = mean_interval(vals, vids)
    lo, hi = _bootstrap_over_videos(vals, vids)
    assert got["method"] == "cluster-bootstrap" and got["n_clusters"] == N_VIDEOS
    assert got["ci_low"] == pytest.approx(lo, abs=0.015) and got["ci_high"] == pytest.approx(hi, abs=0.015)
    wil = mean_interval(vals)                                            # the same answers as independent items
    assert wil["method"] == "wilson" and (hi - lo) > 1.6 * (wil["ci_high"] - wil["ci_low"])
    se = cluster_se(vals, vids)
    assert se["design_effect"] > 3                                       # five questions a video, answered alike
    crs = mean_interval(vals, vids, method="cluster-se")
    assert crs["ci_low"] == pytest.approx(lo, abs=0.03) and crs["ci_high"] == pytest.approx(hi, abs=0.03)


def test_vlmlens_compare_pairs_runs_on_shared_items_with_an_interval_over_videos(runs, capsys):
    "strong − weak: 12 more videos read right; the interval resamples videos; an unshared run is counted, a tiny one is 'too few'."
    import pandas as pd
    from vlmlens.cli import main
    from vlmlens.paired import compare_runs
    rs = RunSet.discover(runs)
    strong, weak = (next(r for r in rs if r.name == n) for n in ("strong", "weak"))
    cmp = compare_runs([strong, weak])
    r = cmp.iloc[0]
    a = strong.scores().set_index("sample_id")["score"]
    b = weak.scores().set_index("sample_id")["score"]
    assert (r.n_pairs, r.n_clusters, r.only_a, r.only_b, r.interval) == (200, 40, 0, 0, "cluster-bootstrap")
    assert r["diff"] == pytest.approx((a - b.reindex(a.index)).mean())
    d = (a - b.reindex(a.index)).to_numpy()
    lo, hi = _bootstrap_over_videos(d, strong.scores().set_index("sample_id").loc[a.index, "cluster"].tolist())
    assert r.ci_low == pytest.approx(lo, abs=0.02) and r.ci_high == pytest.approx(hi, abs=0.02) and r.ci_low > 0
    assert r.test == "exact sign test over clusters" and r.p_value < 0.01
    tiny = runs.parent / "tiny"                                           # the weak run's first 6 items, one more of its own
    tiny.mkdir()
    import shutil
    for f in ("run.json", "summary.json"): shutil.copy(runs / "weak" / f, tiny / f)
    sc = pd.read_csv(runs / "weak" / "scores.csv").head(6)
    pd.concat([sc, sc.head(1).assign(sample_id="extra")]).to_csv(tiny / "scores.csv", index=False)
    assert main(["compare", str(runs / "strong"), str(runs / "weak"), str(tiny), "--mdd"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    big = next(l for l in lines if " 200 " in l)
    assert re.search(r"\[\d+\.\d\d, \d+\.\d\d\]", big) and "0/0" in big
    small = next(l for l in lines if " 6 " in l and "/" in l)
    assert "–" in small and "[0.00, 0.00]" not in out and "194/1" in small      # too few: no interval; unshared items counted
    assert "Holm-adjusted across the 2 comparisons" in " ".join(out.split())
    assert "percentile bootstrap over videos" in out and "exact sign test over videos" in out


def test_compare_refuses_one_run_and_an_ambiguous_key(runs, capsys):
    from vlmlens.cli import main
    assert main(["compare", str(runs / "strong")]) == 2
    assert "at least two readable runs" in capsys.readouterr().err
    assert main(["compare", str(runs / "strong"), str(runs / "weak"), "--key", "subset"]) == 2
    assert "appears twice" in capsys.readouterr().err


def test_the_run_table_labels_each_group_row(runs, capsys):
    "A MINERVA run groups by split: its row says which split, beside 'all items'; no row without a label."
    from vlmlens.cli import main
    assert main(["report", str(runs / "strong")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, l in enumerate(lines) if "accuracy %" in l)
    assert lines[head].split()[0] == "split"
    assert [l.split()[0] for l in lines[head + 1:head + 3]] == ["test", "all"]


def test_two_runs_that_answer_alike_are_not_called_too_few(runs, tmp_path, capsys):
    "200 pairs over 40 videos, none differing: no interval, and the reason is that nothing varies, not that pairs are too few."
    import shutil
    from vlmlens.cli import main
    shutil.copytree(runs / "weak", tmp_path / "again")
    assert main(["compare", str(runs / "weak"), str(tmp_path / "again")]) == 0
    out = capsys.readouterr().out
    row = next(l for l in out.splitlines() if " 200 " in l)
    assert " 0.00 " in row and "[" not in row and "too few pairs" not in out and "the per-item differences do not vary" in out


def test_compare_csv_names_both_runs_and_keeps_their_means(runs, capsys):
    "The machine form of a comparison keeps the runs' labels in A and B, and their means beside them (never written over the labels)."
    import io
    import pandas as pd
    from vlmlens.cli import main
    assert main(["compare", str(runs / "strong"), str(runs / "weak"), "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert (df.loc[0, "A"], df.loc[0, "B"]) == ("strong", "weak"), df
    assert df.loc[0, "A (fraction)"] > df.loc[0, "B (fraction)"] and df.loc[0, "pairs"] == 200
