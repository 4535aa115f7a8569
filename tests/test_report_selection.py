"""The HinTel report notebook on runs of different settings: three Hindi runs with different token budgets and one
English run, built through the runner on loopback models. It renders (the English − Hindi pairing it cannot make is
said, not raised), its ablation table compares the three Hindi runs, and `runs_select` picks the runs it reports."""
import json
import os

import pytest

from loopback import LoopbackServer
from test_report_notebooks import _hintel_responder
from vlmlens.core import RunConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def hindi_runs(tmp_path_factory):
    from vlmlens.benchmarks import hintel as H
    from vlmlens.runner import run
    root = tmp_path_factory.mktemp("hindi-runs")
    data = H.build_synthetic_hintel(root / "data", n_per_subset=3)
    samples, _ = H.load_hintel(data)
    old = os.environ.get("OPENAI_COMPATIBLE_API_KEY")
    os.environ["OPENAI_COMPATIBLE_API_KEY"] = "EMPTY"
    try:
        with LoopbackServer() as server:
            server.responder = _hintel_responder(samples)
            for lang, budget in (("hi", 64), ("hi", 128), ("hi", 256), ("en", 64)):
                run(RunConfig(benchmark="hintel", data_path=str(data), model=f"openai-compatible:strong@{server.openai_base_url}",
                              judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"retries": 0},
                              max_new_tokens=budget, language=lang, output_root=str(root / "runs"), progress=False,
                              model_kwargs={"cache": False, "progress": False}))
    finally:
        if old is None: os.environ.pop("OPENAI_COMPATIBLE_API_KEY", None)
        else: os.environ["OPENAI_COMPATIBLE_API_KEY"] = old
    return root / "runs"


def _render(runs_root, tmp_path, **params):
    from vlmlens.sweep import render_report
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "report.ipynb"
    render_report(os.path.join(REPO, "evalnb", "report_hintel.ipynb"), out,
                  {"runs_root": str(runs_root), "report_dir": str(tmp_path / "report"), "n_resamples": 200, **params}, cwd=tmp_path)
    nb = json.loads(out.read_text(encoding="utf-8"))
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) +
                     "".join(o.get("data", {}).get("text/markdown", "")) for c in nb["cells"] for o in c.get("outputs", []))


def test_report_on_runs_of_different_settings_renders_and_runs_select_picks_them(hindi_runs, tmp_path):
    text = _render(hindi_runs, tmp_path / "all")
    assert "The paired differences are not shown" in text and "runs_select" in text        # said, never a PoolingError
    assert "Paired differences between runs on their shared items" in text                 # the token-budget ablation
    csv = (tmp_path / "all" / "report" / "tables" / "ablation_paired.csv").read_text(encoding="utf-8")
    assert "[0.00, 0.00]" not in csv
    picked = _render(hindi_runs, tmp_path / "picked", runs_select={"max_new_tokens": 64})
    assert "Paired English − Indic differences on aligned items" in picked and "not shown" not in picked
    with pytest.raises(Exception, match="no run has"):
        _render(hindi_runs, tmp_path / "none", runs_select={"max_new_tokens": 999})


def test_compare_pairs_the_english_and_hindi_versions_of_aligned_items(hindi_runs, capsys):
    from vlmlens.cli import main
    from vlmlens.paired import compare_runs
    from vlmlens.store import RunSet
    rs = RunSet.discover(hindi_runs)
    en = next(r for r in rs if r.config.language == "en")
    hi = next(r for r in rs if r.config.language == "hi" and r.config.max_new_tokens == 64)
    cmp = compare_runs([en, hi], key="align_id", by=["subset"])
    assert set(cmp.group) >= {"vqav2", "vaani_h"} and cmp.too_few.all()
    shared, te = cmp[cmp.n_pairs > 0], cmp[cmp.group.isin(["jee_t", "vaani_t"])]
    assert (shared.n_pairs == 3).all() and (shared.only_a == 0).all()                   # 3 aligned items a subset
    assert len(te) == 2 and (te.n_pairs == 0).all() and (te.only_a == 3).all()          # Telugu subsets' English items: counted per subset
    assert cmp.ci_low.isna().all() and (shared.p_holm >= shared.p_value).all() and te.p_value.isna().all()
    assert main(["compare", str(en.dir), str(hi.dir), "--key", "align_id", "--by", "subset"]) == 0
    out = capsys.readouterr().out
    assert "vqav2" in out and "[0.00, 0.00]" not in out and "too few pairs for an interval" in out
