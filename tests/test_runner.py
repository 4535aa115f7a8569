"""End-to-end tests of the runner, store and CLI on the demo benchmark and the tiny offline Qwen2.5-VL."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from vlmlens.core import Media, RunConfig, Sample
from vlmlens.runner import run

MODEL = "tiny-qwen2.5-vl"


def _cfg(tmp_path, **kw):
    base = dict(benchmark="demo", model=MODEL, num_frames=4, max_new_tokens=8, output_root=str(tmp_path), progress=False)
    base.update(kw)
    return RunConfig(**base)


def _lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try: out.append(json.loads(line))
        except json.JSONDecodeError: pass
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run of the first 12 demo items: the scores every other run must reproduce."""
    root = tmp_path_factory.mktemp("ref")
    summary = run(_cfg(root, limit=12, run_name="ref"))
    return root / "ref", summary


def test_run_writes_the_run_store(reference):
    run_dir, summary = reference
    for name in ("run.json", "predictions.jsonl", "scores.csv", "summary.json"):
        assert (run_dir / name).exists(), name
    preds = _lines(run_dir / "predictions.jsonl")
    assert len(preds) == 12 and len({p["sample_id"] for p in preds}) == 12
    info = json.loads((run_dir / "run.json").read_text())
    assert info["config"]["benchmark"] == "demo" and info["config_hash"] == RunConfig.from_dict(info["config"]).hash()
    assert info["model"]["revision"] and info["model"]["model_id"]
    assert summary["overall"]["n"] == 12 and summary["overall"]["invalid_rate"] is not None
    assert all(p["usage"].get("input_tokens", 0) > 0 for p in preds)


def test_rerun_skips_finished_items(reference, monkeypatch):
    run_dir, summary = reference
    import vlmlens.models.registry as reg
    monkeypatch.setattr(reg, "load_backend", lambda *a, **k: pytest.fail("a finished run must not load the model"))
    again = run(_cfg(run_dir.parent, limit=12, run_name="ref"))
    assert again["overall"] == summary["overall"]
    assert len(_lines(run_dir / "predictions.jsonl")) == 12


def test_sigkill_mid_run_then_resume_matches_uninterrupted(reference, tmp_path):
    ref_dir, ref_summary = reference
    cmd = [sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo", "--model", MODEL, "--frames", "4",
           "--max-new-tokens", "8", "--limit", "12", "--output-root", str(tmp_path), "--run-name", "killed", "--no-progress"]
    preds = tmp_path / "killed" / "predictions.jsonl"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not (preds.exists() and len(preds.read_text().splitlines()) >= 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(_lines(preds))
    assert 3 <= n_before < 12, f"kill landed after {n_before} items"
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    recs = _lines(preds)
    assert sorted(r["sample_id"] for r in recs) == sorted({r["sample_id"] for r in recs}) and len(recs) == 12
    got = json.loads((tmp_path / "killed" / "summary.json").read_text())
    assert got["overall"] == ref_summary["overall"]
    a = pd.read_csv(tmp_path / "killed" / "scores.csv").sort_values("sample_id").reset_index(drop=True)
    b = pd.read_csv(ref_dir / "scores.csv").sort_values("sample_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(a[["sample_id", "raw", "parsed", "score"]], b[["sample_id", "raw", "parsed", "score"]])


def test_no_secret_anywhere_in_the_run_dir(tmp_path, monkeypatch):
    secret = "test-key.THIS-IS-NOT-A-REAL-KEY.0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GEMINI_API_KEY", secret + "-gemini")
    run(_cfg(tmp_path, limit=2, run_name="secret"))
    files = [p for p in (tmp_path / "secret").rglob("*") if p.is_file()]
    assert files
    for p in files:
        data = p.read_bytes()
        assert secret.encode() not in data, p


def test_bad_media_and_bad_rows_are_recorded_and_the_run_goes_on(tmp_path):
    from vlmlens.benchmarks.demo import ensure_demo_data
    demo = ensure_demo_data()
    good = [json.loads(l) for l in (demo / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    video_rows = [r for r in good if any(m["kind"] == "video" for m in r["media"]) and r["language"] == "en"][:3]
    assert len(video_rows) == 3
    for r in video_rows:  # make the media paths absolute so the file can live elsewhere
        for m in r["media"]: m["path"] = str((demo / m["path"]).resolve())
        if r.get("subtitles"): r["subtitles"] = str((demo / r["subtitles"]).resolve())
    (tmp_path / "empty.mp4").write_bytes(b"")
    (tmp_path / "notavideo.mp4").write_text("hello")
    bad_missing = {**video_rows[1], "id": "missing-video", "media": [{"kind": "video", "path": str(tmp_path / "nope.mp4")}]}
    bad_empty = {**video_rows[1], "id": "empty-video", "media": [{"kind": "video", "path": str(tmp_path / "empty.mp4")}]}
    bad_text = {**video_rows[2], "id": "text-video", "media": [{"kind": "video", "path": str(tmp_path / "notavideo.mp4")}]}
    bad_row = {**video_rows[2], "id": "bad-options", "options": "A) red"}
    rows = [video_rows[0], bad_missing, bad_empty, bad_row, bad_text, video_rows[1]]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    summary = run(_cfg(tmp_path, data_path=str(data), run_name="bad"))
    assert any("data.jsonl:4" in e and "options" in e for e in summary["row_errors"]), summary["row_errors"]
    preds = {p["sample_id"]: p for p in _lines(tmp_path / "bad" / "predictions.jsonl")}
    assert set(preds) == {video_rows[0]["id"], video_rows[1]["id"], "missing-video", "empty-video", "text-video"}
    for sid in ("missing-video", "empty-video", "text-video"):
        assert preds[sid]["error"].startswith("MediaError") and "mp4" in preds[sid]["error"], preds[sid]
    assert preds[video_rows[0]["id"]]["error"] is None and preds[video_rows[1]["id"]]["error"] is None
    assert summary["overall"]["n_errors"] == 3 and summary["overall"]["n_answered"] == 2


def test_shards_write_separate_files_and_the_summary_merges(reference, tmp_path):
    _, ref_summary = reference
    s0 = run(_cfg(tmp_path, limit=None, shard="0/2", run_name="sharded", benchmark_kwargs={}, subset=None), )
    s1 = run(_cfg(tmp_path, limit=None, shard="1/2", run_name="sharded"))
    files = sorted(p.name for p in (tmp_path / "sharded").glob("predictions*.jsonl"))
    assert files == ["predictions.shard-0-of-2.jsonl", "predictions.shard-1-of-2.jsonl"]
    n0 = len(_lines(tmp_path / "sharded" / files[0])); n1 = len(_lines(tmp_path / "sharded" / files[1]))
    assert n0 > 0 and n1 > 0
    assert s1["overall"]["n"] == n0 + n1  # the last shard's summary sees both shards


def test_config_hash_is_stable_across_processes():
    cfg = RunConfig(benchmark="demo", model=MODEL, num_frames=8, model_kwargs={"b": 1, "a": [1, 2]})
    out = subprocess.run([sys.executable, "-c", "from vlmlens.core import RunConfig;"
                          "print(RunConfig(benchmark='demo', model='tiny-qwen2.5-vl', num_frames=8, model_kwargs={'a': [1, 2], 'b': 1}).hash())"],
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == cfg.hash()


def test_language_gating_and_force(tmp_path):
    from vlmlens.models.registry import get_spec, register
    from dataclasses import replace
    spec = get_spec(MODEL)
    register(replace(spec, name="tiny-en-only", languages=("en",)))
    try:
        s = run(_cfg(tmp_path, model="tiny-en-only", limit=4, run_name="gated"))
        assert s["skipped_languages"] == ["hi", "te"]
        assert {g["language"] for g in s["groups"]} == {"en"}
        f = run(_cfg(tmp_path, model="tiny-en-only", language="hi", limit=2, force=True, run_name="forced"))
        assert f["force"] is True and f["overall"]["n"] == 2
        assert json.loads((tmp_path / "forced" / "run.json").read_text())["force"] is True
    finally:
        from vlmlens.models import registry
        registry._REGISTRY.pop("tiny-en-only", None)


def test_score_command_rescores_a_finished_run_without_the_model(reference, monkeypatch, capsys):
    run_dir, summary = reference
    import vlmlens.models.registry as reg
    from vlmlens.cli import main
    monkeypatch.setattr(reg, "load_backend", lambda *a, **k: pytest.fail("re-scoring must not load the model"))
    assert main(["score", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Demo, tiny-qwen2.5-vl with 4 frames") and "accuracy" in out and f"results in {run_dir}" in out
    assert json.loads((run_dir / "summary.json").read_text())["overall"] == summary["overall"]
    assert main(["score", str(run_dir.parent / "no-such-run")]) == 2
    assert "not a run folder (no run.json)" in capsys.readouterr().err


def test_frames_that_overflow_the_context_are_reduced_with_the_reason_recorded(tmp_path):
    "The generic context check: a preset or --frames the model cannot hold is reduced, logged and recorded, never silently cut."
    big = {"video_min_pixels": 64 * 28 * 28, "video_max_pixels": 64 * 28 * 28}      # 32 visual tokens per frame
    from vlmlens.core import NothingAnswered
    with pytest.raises(NothingAnswered) as e:   # 144 frames fit, more than the 9.5 s video holds: saved, then loud (exit 3)
        run(_cfg(tmp_path, num_frames=300, subset="video_color", language="en", limit=1, run_name="fit", model_kwargs=big))
    assert "asked for 144 frames but the video has only" in str(e.value)
    fit = e.value.result["frames_fit"]
    assert fit["requested"] == 300 and 1 <= fit["used"] < 300 and "context of 4096" in fit["reason"], fit
    assert json.loads((tmp_path / "fit" / "run.json").read_text())["frames_fit"] == fit
    before = sorted(p.name for p in tmp_path.iterdir())
    out = subprocess.run([sys.executable, "-c", "from vlmlens.cli import main; raise SystemExit(main())", "run", "--benchmark", "demo",
                          "--model", MODEL, "--subset", "video_color", "--language", "en", "--limit", "1", "--frames", "8",
                          "--max-new-tokens", "5000", "--output-root", str(tmp_path / "refused"), "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "exceeds the context of 4096" in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == before      # refused once the model was loaded: no folder, no .lock left


def test_rescoring_keeps_every_note_and_rebuilds_a_lost_summary(reference, tmp_path, capsys):
    "`vlmlens score` changes only what the scoring computes; a corrupt or missing summary.json is rebuilt with the notes."
    import shutil
    from vlmlens.cli import main
    run_dir = tmp_path / "ref"
    shutil.copytree(reference[0], run_dir)
    assert main(["score", str(run_dir)]) == 0                      # the copy's own summary (run_dir is the copy's)
    notes = {"row_errors": ["data.jsonl:7: options: expected a list"], "preset": {"num_frames": 768, "source": "paper"},
             "frames_fit": {"requested": 768, "used": 96, "reason": "768 frames need more than the context"},
             "skipped_languages": ["te"], "a_later_note": [1, {"x": None}]}
    summary_path, info_path = run_dir / "summary.json", run_dir / "run.json"
    summary_path.write_text(json.dumps({**json.loads(summary_path.read_text()), **notes}))    # as a run records them:
    info_path.write_text(json.dumps({**json.loads(info_path.read_text()), **notes, "note_keys": list(notes)}))   # both files
    before = json.loads(summary_path.read_text())
    scores = pd.read_csv(run_dir / "scores.csv")
    assert main(["score", str(run_dir)]) == 0
    assert json.loads(summary_path.read_text()) == before
    for broken in ("{not json", None):                             # corrupt, then missing: rebuilt from the predictions
        summary_path.unlink() if broken is None else summary_path.write_text(broken)
        assert main(["score", str(run_dir)]) == 0, capsys.readouterr().err
        assert json.loads(summary_path.read_text()) == before
        pd.testing.assert_frame_equal(pd.read_csv(run_dir / "scores.csv"), scores)
