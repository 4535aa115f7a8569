"""HinTel-AlignBench Figure 4 with intervals: two models answer the same aligned RealWorldQA items in English and Hindi
through the real runner on a scripted loopback model (both models miss the same Hindi items, so their answers move
together by aligned item); the bars and whiskers read back off the drawn Axes agree with a paired bootstrap over
aligned items computed here, independently of `vlmlens.metrics`."""
import re
import zlib

import numpy as np
import pytest
from matplotlib.container import BarContainer

from loopback import LoopbackServer
from vlmlens.benchmarks import hintel as H
from vlmlens.core import RunConfig
from vlmlens.store import RunSet
from vlmlens.tables import hintel as T

MODELS = ("strong", "weak")


def _wrong(model: str, block: str) -> bool:
    "Hindi answers both models miss (one item in three), and more the weak model misses."
    h = zlib.crc32(block.encode("utf-8"))
    return h % 3 == 0 or (model == "weak" and h % 4 == 1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import os
    from vlmlens.runner import run
    tmp = tmp_path_factory.mktemp("figure4")
    root = H.build_synthetic_hintel(tmp / "data", n_per_subset=24)
    samples, _ = H.load_hintel(root)
    gold = {H.question_block(s): (s.metadata.get("option_labels") or "ABCDEFGH")[s.answer] for s in samples
            if s.subset == "realworldqa"}

    def reply(call):
        hits = [k for k in gold if k in call.text]
        if not hits: return "Z"
        k = max(hits, key=len)
        hindi = re.search(r"[\u0900-\u097f]", k) is not None
        return "Z" if hindi and _wrong(call.model, k) else gold[k]

    old = os.environ.get("OPENAI_COMPATIBLE_API_KEY")
    os.environ["OPENAI_COMPATIBLE_API_KEY"] = "EMPTY"
    try:
        with LoopbackServer() as server:
            server.responder = reply
            for m in MODELS:
                for lang in ("en", "hi"): run(RunConfig(benchmark="hintel", model=f"openai-compatible:{m}@{server.openai_base_url}", data_path=str(root),
                              language=lang, subset="realworldqa", judge="none", max_new_tokens=8, output_root=str(tmp / "out"),
                              run_name=f"{m}-{lang}", progress=False, model_kwargs={"cache": False, "progress": False}))
    finally:
        if old is None: os.environ.pop("OPENAI_COMPATIBLE_API_KEY", None)
        else: os.environ["OPENAI_COMPATIBLE_API_KEY"] = old
    return RunSet.discover(tmp / "out")


def _differences(rs):
    "{model: {aligned item: English − Hindi score}} straight from the score rows."
    s = rs.scores(categorical=False)
    out = {}
    for m, g in s.groupby("cfg_model"):
        en = dict(zip(g[g.language == "en"].align_id, g[g.language == "en"].score.fillna(0).astype(float)))
        hi = dict(zip(g[g.language == "hi"].align_id, g[g.language == "hi"].score.fillna(0).astype(float)))
        out[m] = {a: en[a] - hi[a] for a in en if a in hi}
    return out


def _paired_bootstrap_over_items(diffs, n=4000, seed=11):
    "Resample aligned items with replacement, the same draw for every model; per draw the mean over models of each model's mean."
    items = sorted(set().union(*diffs.values()))
    rng, stats = np.random.default_rng(seed), []
    for _ in range(n):
        draw = [items[i] for i in rng.integers(0, len(items), len(items))]
        per_model = [np.mean([d[a] for a in draw if a in d]) for d in diffs.values() if any(a in d for a in draw)]
        stats.append(np.mean(per_model))
    return np.quantile(stats, [0.025, 0.975])


def test_figure4_bars_carry_a_paired_interval_over_aligned_items(runs):
    diffs = _differences(runs)
    assert set(len(d) for d in diffs.values()) == {24} and len(diffs) == 2           # both models, every aligned item paired
    gap = np.mean([np.mean(list(d.values())) for d in diffs.values()])
    assert gap > 0.1                                                                   # the scripted Hindi misses
    ax, g, note = T.figure4(runs, venue="acl", n_resamples=4000)
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 1 and [t.get_text() for t in ax.get_xticklabels()][0].startswith("RealWorldQA")   # Hindi only, one task
    assert bars[0].patches[0].get_height() == pytest.approx(100 * gap, abs=1e-9)
    (x0, lo), (x1, hi) = bars[0].errorbar.lines[2][0].get_segments()[0]
    want_lo, want_hi = _paired_bootstrap_over_items(diffs)
    assert lo == pytest.approx(100 * want_lo, abs=2.5) and hi == pytest.approx(100 * want_hi, abs=2.5), (lo, hi, want_lo, want_hi)
    assert lo < 100 * gap < hi and hi - lo > 5
    # the models' misses coincide: resampling each model's items on its own would understate the spread
    rng = np.random.default_rng(3)
    alone = np.quantile([np.mean([np.mean(rng.choice(list(d.values()), len(d))) for d in diffs.values()]) for _ in range(4000)], [0.025, 0.975])
    assert (hi - lo) > 100 * (alone[1] - alone[0])
    assert "percentile bootstrap over aligned items" in note and "4,000 resamples" in note
    assert "Figure" not in ax.get_title()
