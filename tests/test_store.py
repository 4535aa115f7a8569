"""End-to-end tests of vlmlens.store: durability under SIGKILL, resume, conflicts, secrets, shards, atomic summary."""
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from vlmlens.core import Judgment, Prediction, RunConfig, Sample
from vlmlens.secrets import REDACTED
from vlmlens.store import RunConflictError, RunStore, iter_jsonl, shard_filter

H = "c0ffee" * 10


def pred(sid, error=None, raw="The answer is (B)"):
    if error: return Prediction(sid, H, raw=None, error=error)
    return Prediction(sid, H, raw=raw, parsed=1, valid=True, usage={"input_tokens": 12, "output_tokens": 5},
                      latency_s=0.25, model_id="tiny", model_revision="r1")


def parsed_lines(path):
    """Every line of a JSONL file that parses, and the count of those that do not."""
    good, bad = [], 0
    for raw in Path(path).read_bytes().split(b"\n"):
        if not raw.strip(): continue
        try: good.append(json.loads(raw))
        except ValueError: bad += 1
    return good, bad


def test_append_and_reload_round_trip(tmp_path):
    preds = [pred("a"), pred("b", raw="ünïcode \u2028 line sep\nnewline"), pred("c", error="MediaError: no such file")]
    with RunStore(tmp_path / "run", H).prepare() as st:
        for p in preds: st.append_prediction(p)
        st.append_judgment(Judgment("a", "judge-x", "f" * 64, '{"score": 7}', 7.0, True))
    st = RunStore(tmp_path / "run", H)
    assert st.load_predictions() == {p.sample_id: p for p in preds}
    assert st.done_ids() == {"a", "b"}
    assert st.load_judgments() == [Judgment("a", "judge-x", "f" * 64, '{"score": 7}', 7.0, True)]
    assert (tmp_path / "run" / "predictions.jsonl").read_bytes().count(b"\n") == 3   # one line per record


def test_retry_rules(tmp_path):
    with RunStore(tmp_path, H) as st:
        st.append_prediction(pred("ok-then-error"))
        st.append_prediction(pred("ok-then-error", error="timeout"))
        st.append_prediction(pred("error-then-ok", error="timeout"))
        st.append_prediction(pred("error-then-ok", raw="later"))
        st.append_prediction(pred("error-twice", error="first"))
        st.append_prediction(pred("error-twice", error="second"))
    got = RunStore(tmp_path, H).load_predictions()
    assert got["ok-then-error"].error is None
    assert got["error-then-ok"].raw == "later"
    assert got["error-twice"].error == "second"
    assert RunStore(tmp_path, H).done_ids() == {"ok-then-error", "error-then-ok"}


def test_other_config_lines_ignored(tmp_path):
    with RunStore(tmp_path, H) as st: st.append_prediction(pred("a"))
    with RunStore(tmp_path, "other") as other:
        other.append_prediction(Prediction("b", "other", raw="x"))
        with pytest.raises(ValueError, match="config hash"):
            other.append_prediction(pred("c"))
    assert set(RunStore(tmp_path, H).load_predictions()) == {"a"}
    assert set(RunStore(tmp_path, "other").load_predictions()) == {"b"}


def test_partial_last_line_then_append(tmp_path):
    st = RunStore(tmp_path, H).prepare()
    with st: st.append_prediction(pred("a"))
    f = st.predictions_path
    whole = pred("b").to_json().encode()
    with open(f, "ab") as fh: fh.write(whole[: len(whole) // 2])          # what SIGKILL mid-write leaves
    with pytest.warns(UserWarning, match=r"predictions.jsonl:2: ignoring a truncated last line"):
        assert set(RunStore(tmp_path, H).load_predictions()) == {"a"}
    with RunStore(tmp_path, H) as st2, pytest.warns(UserWarning, match="truncated last line"):
        assert st2.done_ids() == {"a"}
        st2.append_prediction(pred("b"))
        st2.append_prediction(pred("c"))
    good, bad = parsed_lines(f)
    assert [r["sample_id"] for r in good] == ["a", "b", "c"] and bad == 1
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert RunStore(tmp_path, H).done_ids() == {"a", "b", "c"}


CHILD = r"""
import sys, time
from vlmlens.core import Prediction
from vlmlens.store import RunStore
run_dir, h, n, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with RunStore(run_dir, h).prepare() as st:
    done = st.done_ids()
    for i in range(n):
        sid = f"s{i:03d}"
        if sid in done: continue
        st.append_prediction(Prediction(sid, h, raw=sid + " " + "x" * 200_000, parsed=i, valid=True))
        print(sid, flush=True)
        time.sleep(delay)
print("finished", flush=True)
"""


def test_sigkill_and_resume_in_real_processes(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    run_dir, n = tmp_path / "run", 40
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    child = subprocess.Popen([sys.executable, str(script), str(run_dir), H, str(n), "0.02"],
                             stdout=subprocess.PIPE, text=True, env=env)
    first = []
    try:
        while len(first) < 8:
            line = child.stdout.readline()
            assert line, "child exited before it could be killed"
            first.append(line.strip())
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None: child.kill()
    assert child.returncode == -signal.SIGKILL
    assert "finished" not in first

    # also leave a torn record, as a kill in the middle of a write() would
    f = run_dir / "predictions.jsonl"
    with open(f, "ab") as fh: fh.write(b'{"sample_id": "s039", "config_hash": "' + H.encode() + b'", "raw": "s039 xxx')
    with pytest.warns(UserWarning, match="truncated last line"):
        done_before = RunStore(run_dir, H).done_ids()
    assert set(first) <= done_before and len(done_before) < n

    resumed = subprocess.run([sys.executable, str(script), str(run_dir), H, str(n), "0"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    second = resumed.stdout.split()
    assert second[-1] == "finished"
    assert set(second[:-1]).isdisjoint(done_before)                      # finished items were skipped
    assert set(second[:-1]) | done_before == {f"s{i:03d}" for i in range(n)}

    good, bad = parsed_lines(f)
    ids = [r["sample_id"] for r in good]
    assert sorted(ids) == [f"s{i:03d}" for i in range(n)]                 # exactly one valid line per sample
    assert bad >= 1                                                      # the torn record stayed ignorable
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        preds = RunStore(run_dir, H).load_predictions()
    assert len(preds) == n and all(p.raw.startswith(sid) and p.valid for sid, p in preds.items())


def test_config_hash_conflict(tmp_path):
    cfg = RunConfig("demo", "tiny", output_root=str(tmp_path), run_name="r", num_frames=8)
    st = RunStore.open(cfg)
    st.write_run_json({"model_id": "tiny"})
    with st: st.append_prediction(Prediction("a", cfg.hash(), raw="A"))
    changed = RunConfig("demo", "tiny", output_root=str(tmp_path), run_name="r", num_frames=16)
    with pytest.raises(RunConflictError) as ei:
        RunStore.open(changed)
    msg = str(ei.value)
    assert str(tmp_path / "r") in msg and cfg.hash() in msg and changed.hash() in msg
    # the same configuration resumes, whatever the bookkeeping fields say
    assert RunStore.open(RunConfig("demo", "tiny", output_root=str(tmp_path), run_name="r", num_frames=8, limit=3)).done_ids() == {"a"}
    # overwrite moves the old run aside; nothing is deleted
    with pytest.warns(UserWarning, match="moved the previous run"):
        st2 = RunStore.open(changed, overwrite=True)
    old = [p for p in tmp_path.iterdir() if p.name.startswith("r.old-")]
    assert len(old) == 1 and (old[0] / "predictions.jsonl").exists()
    assert json.loads((old[0] / "run.json").read_text())["config_hash"] == cfg.hash()
    st2.write_run_json()
    assert json.loads(st2.run_json_path.read_text())["config_hash"] == changed.hash()
    assert st2.done_ids() == set()


def test_run_json_contents(tmp_path):
    cfg = RunConfig("demo", "tiny", output_root=str(tmp_path), shard="1/2")
    st = RunStore.open(cfg)
    doc = json.loads(st.run_json_path.read_text()) if st.run_json_path.exists() else None
    assert doc is None
    st.write_run_json({"model_id": "local/tiny", "model_revision": "sha256:abc"})
    doc = json.loads(st.run_json_path.read_text())
    import vlmlens
    assert doc["config"] == cfg.to_dict() and doc["config_hash"] == cfg.hash() and doc["shard"] == "1/2"
    assert doc["vlmlens_version"] == vlmlens.__version__
    assert doc["model_id"] == "local/tiny" and doc["model_revision"] == "sha256:abc"
    assert set(doc["git"]) == {"commit", "dirty"}
    assert doc["started_at"].endswith("+00:00") and doc["python"] == ".".join(map(str, sys.version_info[:3]))
    assert "torch" in doc and "transformers" in doc and doc["hostname"]


def test_no_secret_reaches_disk(tmp_path, monkeypatch):
    env_secret = "test-key.4f9c2a7d1e8b6035"
    cfg_secret = "tok-zzzz-9876543210"
    only_in_config = "only-in-config-5d1c0b"       # in no environment variable: caught by its key alone
    monkeypatch.setenv("OPENAI_API_KEY", env_secret)
    monkeypatch.setenv("MY_SERVICE_TOKEN", cfg_secret)
    cfg = RunConfig("demo", "gpt-4o-mini", output_root=str(tmp_path),
                    model_kwargs={"api_key": env_secret, "base_url": f"http://localhost:1/v1?key={env_secret}",
                                  "access_token": only_in_config},
                    benchmark_kwargs={"judge": {"client_options": {"token": cfg_secret}}, "note": cfg_secret})
    st = RunStore.open(cfg)
    st.write_run_json({"model_id": "gpt-4o-mini", "headers": {"Authorization": f"Bearer {env_secret}"},
                       "echo": [f"key was {env_secret}"]})
    with st: st.append_prediction(Prediction("a", cfg.hash(), raw="A", parsed=0, valid=True))
    st.write_summary({"config": cfg.to_dict(), "accuracy": 1.0})
    st.write_scores_csv([{"sample_id": "a", "score": 1.0}])
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"run.json", "predictions.jsonl", "summary.json", "scores.csv"}
    for p in files:
        text = p.read_bytes()
        for secret in (env_secret, cfg_secret, only_in_config):
            assert secret.encode() not in text, (p, secret)
    doc = json.loads(st.run_json_path.read_text())
    assert doc["config"]["model_kwargs"]["api_key"] == REDACTED
    assert doc["config"]["max_new_tokens"] == 64 and doc["model_id"] == "gpt-4o-mini"   # non-secrets kept


def test_shard_files_and_merging(tmp_path):
    samples = [Sample(f"q{i}", "demo") for i in range(30)]
    seen = []
    for i in range(3):
        cfg = RunConfig("demo", "tiny", output_root=str(tmp_path), run_name="sharded", shard=f"{i}/3")
        mine = shard_filter(samples, cfg)
        seen += [s.id for s in mine]
        with RunStore.open(cfg) as st:
            st.write_run_json()
            for s in mine: st.append_prediction(Prediction(s.id, cfg.hash(), raw="A"))
            st.append_judgment(Judgment(mine[0].id, "j", "0" * 64, "1", 1.0, True))
            assert st.done_ids(all_shards=False) == {s.id for s in mine}
    assert sorted(seen) == sorted(s.id for s in samples)                    # shards partition the samples
    names = sorted(p.name for p in (tmp_path / "sharded").iterdir())
    assert names == ["judgments.shard-0-of-3.jsonl", "judgments.shard-1-of-3.jsonl", "judgments.shard-2-of-3.jsonl",
                     "predictions.shard-0-of-3.jsonl", "predictions.shard-1-of-3.jsonl",
                     "predictions.shard-2-of-3.jsonl", "run.json"]
    merged = RunStore.open(RunConfig("demo", "tiny", output_root=str(tmp_path), run_name="sharded"))
    assert set(merged.load_predictions()) == {s.id for s in samples}
    assert len(merged.load_judgments()) == 3
    for i in range(3):
        ids = [r["sample_id"] for r in map(lambda t: t[1], iter_jsonl(tmp_path / "sharded" / f"predictions.shard-{i}-of-3.jsonl"))]
        cfg = RunConfig("demo", "tiny", shard=f"{i}/3")
        assert ids == [s.id for s in shard_filter(samples, cfg)]


def test_atomic_summary(tmp_path, monkeypatch):
    st = RunStore(tmp_path / "run", H).prepare()
    assert st.read_summary() is None
    for k in range(5): st.write_summary({"accuracy": k / 4, "n": k})
    assert st.read_summary() == {"accuracy": 1.0, "n": 4}
    assert [p.name for p in st.run_dir.iterdir()] == ["summary.json"]          # no temp files left
    # a crash in the middle of replacing leaves the old summary intact and no temp file
    def boom(src, dst): raise OSError("disk gone")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk gone"):
        st.write_summary({"accuracy": 0.0, "n": 99})
    monkeypatch.undo()
    assert st.read_summary() == {"accuracy": 1.0, "n": 4}
    assert [p.name for p in st.run_dir.iterdir()] == ["summary.json"]


# -- every file a run writes reads back as written -------------------------------------------------------------------

_FRAGMENTS = ["\r", "\n", "\r\n", "\n\r", '"', '""', "'", ",", ";", "\x00", "\t", " ", "\\", "B", "answer", "(C)",
              "שלום", "مرحبا بك", "\u200f", "\u202e", "e\u0301", "a\u0308\u0323", "\u0915\u094d\u0937", "\u2028", "\u2029",
              "\ufeff", "\x85", "😀", "\u0000end"]


def _tricky(rng, k_max=8) -> str:
    "A seeded answer built from what breaks files: carriage returns, newlines, quotes, commas, NUL, RTL, combining marks."
    return "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, k_max)))


class _Answers:
    "A backend that answers each item with a given text."
    name, model_id, revision, languages = "answers", "answers", "r", ("en",)
    def __init__(self, texts, label): self.texts, self.label = texts, label
    def generate(self, reqs, **kw):
        from vlmlens.core import Generation
        return [Generation(self.texts[r.sample_id], {"input_tokens": 3}, finish_reason="stop") for r in reqs]
    def info(self): return {"name": self.label}
    def close(self): pass


def test_every_file_a_run_writes_reads_back_as_written(tmp_path):
    "predictions, judgments, scores.csv, summary.json and run.json, read by RunSet/Run and by pandas with its defaults."
    import random
    import pandas as pd
    from vlmlens.benchmarks.base import get_benchmark
    from vlmlens.runner import run, write_summary
    from vlmlens.store import Run, RunSet
    rng = random.Random(20231)
    for trial in range(3):
        n = 40
        texts = {f"s{i:02d}": _tricky(rng) for i in range(n)}
        questions = {sid: "Q " + _tricky(rng, 4) for sid in texts}
        items = [Sample(sid, "demo", question=questions[sid], options=["a", "b"], answer=0) for sid in texts]
        label, notes = _tricky(rng), [_tricky(rng) for _ in range(3)]
        cfg = RunConfig("demo", "answers", modality="text", output_root=str(tmp_path), run_name=f"t{trial}", progress=False)
        run(cfg, backend=_Answers(texts, label), samples=items)
        store = RunStore.open(cfg)
        for sid, t in texts.items(): store.append_judgment(Judgment(sid, "j", "0" * 64, t, 1.0, True))
        write_summary(store, get_benchmark("demo"), items, cfg, {"row_errors": notes})
        r = RunSet.discover(tmp_path).where(run_name=f"t{trial}")[0]
        assert {sid: p.raw for sid, p in r.predictions().items()} == texts
        assert {j.sample_id: j.raw for j in r.judgments()} == texts
        assert r.summary["row_errors"] == notes and r.info["model"]["name"] == label
        assert r.status == "finished" and r.overall["n"] == n
        for df in (r.scores(), pd.read_csv(r.dir / "scores.csv")):          # ours, and pandas with every default
            assert len(df) == n
            got = df.set_index(df["sample_id"].astype(str))
            assert {sid: got.loc[sid, "raw"] for sid in texts} == texts
            assert {sid: got.loc[sid, "question"] for sid in texts} == questions
        lines = pd.read_json(r.dir / "predictions.jsonl", lines=True)
        assert dict(zip(lines["sample_id"], lines["raw"])) == texts


def test_scores_without_arguments_is_the_categorical_reading(tmp_path):
    "`RunSet.scores()` gives what `scores(columns=<every column>, categorical=True)` gives: text tags as categoricals."
    import pandas as pd
    from vlmlens.store import RunSet
    for k, (model, frames) in enumerate([("m-a", 8), ("m-b", 8), ("m-a", 16)]):
        cfg = RunConfig("demo", model, num_frames=frames, output_root=str(tmp_path), run_name=f"r{k}")
        with RunStore.open(cfg) as st:
            st.write_run_json({"model_id": model})
            st.write_scores_csv([{"sample_id": f"s{i}", "subset": f"k{i % 2}", "language": "en", "valid": i % 3 != 0,
                                  "error": None if i % 4 else "timeout", "raw": f"answer {i}", "score": float(i % 2)} for i in range(5)])
            st.write_summary({"overall": {"n": 5}})
    rs = RunSet.discover(tmp_path)
    df = rs.scores()
    assert len(df) == 15 and df["cfg_model"].tolist().count("m-a") == 10
    for tag in ("run", "run_dir", "cfg_model", "cfg_benchmark"):
        assert isinstance(df[tag].dtype, pd.CategoricalDtype), tag
    assert df["cfg_num_frames"].tolist() == [8] * 10 + [16] * 5
    pd.testing.assert_frame_equal(df, rs.scores(columns=list(df.columns), categorical=True))
    plain = rs.scores(categorical=False)                           # the repeated-value reading holds the same values
    same = lambda d: d.astype(object).where(d.notna(), None).values.tolist()
    assert same(df) == same(plain[list(df.columns)])


def test_summary_and_viewer_share_one_json_safe_conversion(tmp_path):
    "A set, a path, NumPy numbers and NaN in a summary are written as a list, text, numbers and null (one rule, `store.json_safe`)."
    import json
    import numpy as np
    from pathlib import Path
    from vlmlens import store, view
    s = store.RunStore(tmp_path / "run", "h")
    s.write_summary({"acc": np.float64("nan"), "n": np.int64(3), "langs": {"hi"}, "data": Path("/d/x.json"), "ok": np.bool_(True)})
    got = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert got == {"acc": None, "n": 3, "langs": ["hi"], "data": "/d/x.json", "ok": True}
    assert view.json_safe is store.json_safe
