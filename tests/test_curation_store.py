"""Curation steps behave like runs: named by their inputs, append-only, resumable after a kill, rejections kept."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vlmlens.curation.store import Provenance, Step, list_steps


def _child(root: Path, kill_at: int | None) -> str:
    return textwrap.dedent(f"""
        import os, signal
        from vlmlens.curation.store import Step, Provenance
        st = Step({str(root)!r}, "generate", {{"n": 20}})
        def fn(k, w):
            w.accept(f"u{{k}}/a", {{"k": k}}, Provenance("src.txt", [k, k + 1], model="scripted", raw="r"))
            if k == {kill_at!r}: os.kill(os.getpid(), signal.SIGKILL)   # killed between two items of one unit
            w.accept(f"u{{k}}/b", {{"k": k}})
            if k % 7 == 3: w.reject(f"u{{k}}/c", "parse", "options do not contain the answer", item={{"raw": "x"}})
        st.process([(f"u{{k}}", k) for k in range(20)], fn)
    """)


def test_killed_step_resumes_without_duplicates(tmp_path):
    r = subprocess.run([sys.executable, "-c", _child(tmp_path, 9)], capture_output=True, text=True)
    assert r.returncode != 0                      # it was killed
    st = Step(tmp_path, "generate", {"n": 20})
    assert st.done_units() == {f"u{k}" for k in range(9)}
    assert len([l for l in (st.dir / "items.jsonl").read_text().splitlines() if l.strip()]) == 19  # 9 units × 2 + the orphan
    r = subprocess.run([sys.executable, "-c", _child(tmp_path, None)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    st = Step(tmp_path, "generate", {"n": 20})
    ids = [x["id"] for x in st.items()]
    assert len(ids) == len(set(ids)) == 40
    assert sorted(ids) == sorted(f"u{k}/{s}" for k in range(20) for s in "ab")
    rej = st.rejected()
    assert [x["id"] for x in rej] == [f"u{k}/c" for k in range(20) if k % 7 == 3]
    assert all(x["stage"] == "parse" and "answer" in x["reason"] and x["item"] == {"raw": "x"} for x in rej)
    assert st.items()[0]["provenance"] == {"source": "src.txt", "span": [0, 1], "span_unit": "char", "model": "scripted", "raw": "r"}
    s = st.finish()
    assert (s["n_done"], s["n_items"], s["n_rejected"], s["rejected_by_stage"]) == (20, 40, 3, {"parse": 3})
    assert json.loads((st.dir / "summary.json").read_text())["n_items"] == 40


def test_inputs_name_the_step_and_files_count_by_content(tmp_path):
    src = tmp_path / "t.txt"
    src.write_text("INT. KITCHEN - DAY")
    a = Step(tmp_path / "b", "scenes", {"transcript": src, "seed": 72})
    (tmp_path / "elsewhere").mkdir()
    moved = tmp_path / "elsewhere" / "t.txt"
    moved.write_text("INT. KITCHEN - DAY")
    assert Step(tmp_path / "b", "scenes", {"transcript": moved, "seed": 72}).dir == a.dir   # moved: same step
    src.write_text("INT. OFFICE - NIGHT")
    b = Step(tmp_path / "b", "scenes", {"transcript": src, "seed": 72})
    assert b.dir != a.dir
    info = json.loads((a.dir / "step.json").read_text())
    assert info["config"]["inputs"]["transcript"]["sha256"] and info["kind"] == "curation_step"
    assert {r["dir"] for r in list_steps(tmp_path / "b")} >= {str(a.dir), str(b.dir)}


def test_a_failing_unit_is_recorded_and_retried(tmp_path):
    st = Step(tmp_path, "filter", {})
    def fn(k, w):
        if k == 1: raise TimeoutError("generator timed out")
        w.accept(f"i{k}", {"k": k})
    with pytest.warns(UserWarning, match="unit u1 failed"):
        s = st.process([(f"u{k}", k) for k in range(3)], fn)
    assert (s["n_done"], s["n_failed"], s["failed_units"]) == (2, 1, {"u1": "TimeoutError: generator timed out"})
    s = st.process([(f"u{k}", k) for k in range(3)], lambda k, w: w.accept(f"i{k}", {"k": k}))
    assert (s["n_done"], s["n_failed"], s["n_items"]) == (3, 0, 3)


def test_no_secret_reaches_a_step_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "openai-secret-value-123456789")
    st = Step(tmp_path, "generate", {"model_kwargs": {"api_key": "openai-secret-value-123456789"}})
    st.process([("u", 0)], lambda _, w: w.accept("q", {"raw": "echo openai-secret-value-123456789"}))
    for p in st.dir.iterdir():
        assert "openai-secret-value" not in p.read_text(), p.name
