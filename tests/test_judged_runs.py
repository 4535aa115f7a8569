"""Open-ended items through the whole runner: generation and LLM judging via the real openai client on a loopback server.

The questions are real IMDb spoiler-FAQ questions (InfiniBench's spoiler skill; tests/data/infinibench/spoiler_faq_slice.json).
"""
import json

import pytest


from vlmlens.core import RunConfig
from vlmlens.runner import run

DATA = __import__("pathlib").Path(__file__).resolve().parent / "data"


@pytest.fixture
def faq_file(tmp_path):
    src = DATA / "infinibench" / "spoiler_faq_slice.json"
    faq = json.loads(src.read_text(encoding="utf-8"))
    rows = []
    for imdb in list(faq)[:3]:
        for k, qa in enumerate(faq[imdb]["questions"][:2]):
            rows.append({"id": f"{imdb}-{k}", "subset": "spoiler_questions", "language": "en", "question": qa["question"],
                         "answer": qa["answer"], "answer_type": "open", "metadata": {"imdb_id": imdb}})
    path = tmp_path / "faq.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path, rows


def _responder(call):
    if call.model == "answerer":
        return "Because of what happened earlier in the film."
    if call.model == "judge":
        text = call.text
        if "tt0038650-1" in text or "boys will be boys" in text:  # one scripted unparsable judgment
            return "I think it deserves a seven."
        return json.dumps({"score": 7, "justification": "partly matches the reference"})
    return None


def test_open_answers_are_judged_and_summarised(server, faq_file, tmp_path, monkeypatch):
    path, rows = faq_file
    server.reset(); server.responder = _responder
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    cfg = RunConfig(benchmark="demo", data_path=str(path), model=f"openai-compatible:answerer@{server.openai_base_url}",
                    judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"retries": 0},
                    modality="text", output_root=str(tmp_path), run_name="judged", progress=False,
                    model_kwargs={"cache": str(tmp_path / "cache.sqlite")})
    s = run(cfg)
    o = s["overall"]
    n = len(rows)
    assert n >= 4 and "tt0038650-1" in {r["id"] for r in rows}
    assert o["n"] == n and o["n_judged"] == n and o["judge_invalid"] == 1
    assert o["judge_invalid_rate"] == pytest.approx(1 / n)
    assert o["accuracy"] == pytest.approx((n - 1) * 0.7 / n)     # the invalid judgment scores 0
    assert o["judge_mean_native"] == 7
    judgments = [json.loads(l) for l in (tmp_path / "judged" / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == n and all(j["judge_id"].startswith("open-0-10/") for j in judgments)
    n_calls = server.count("openai")
    again = run(cfg)                  # resumable: nothing is generated twice; only the invalid judgment is asked for again
    assert server.count("openai") == n_calls + 1 and again["overall"] == o          # (the judge still answers prose for it)
    from vlmlens.report import summary_table
    cols = list(summary_table(s).data.columns)
    assert any("judge invalid" in c.lower() or "judge_invalid" in c for c in cols), cols


def test_missing_judge_key_fails_before_any_item_runs(server, faq_file, tmp_path, monkeypatch):
    path, _ = faq_file
    server.reset(); server.responder = _responder
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = RunConfig(benchmark="demo", data_path=str(path), model=f"openai-compatible:answerer@{server.openai_base_url}",
                    judge="gpt-4o-mini", modality="text", output_root=str(tmp_path), run_name="nokey", progress=False)
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        run(cfg)
    assert server.count("openai") == 0
    assert not (tmp_path / "nokey" / "predictions.jsonl").exists()


def test_progress_false_silences_every_bar_judge_included(server, faq_file, tmp_path, monkeypatch, capfd):
    "RunConfig(progress=False) (the CLI's --no-progress) leaves stderr without a bar: runner, model, judge loop and judge model."
    path, rows = faq_file
    server.reset(); server.responder = _responder
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")
    def judged(name, progress):
        cfg = RunConfig(benchmark="demo", data_path=str(path), model=f"openai-compatible:answerer@{server.openai_base_url}",
                        judge=f"openai-compatible:judge@{server.openai_base_url}", judge_kwargs={"retries": 0, "cache": False},
                        modality="text", output_root=str(tmp_path), run_name=name, progress=progress, model_kwargs={"cache": False})
        capfd.readouterr()
        s = run(cfg)
        assert s["overall"]["n_judged"] == len(rows)
        return capfd.readouterr().err
    shown = judged("bars", True)                         # the control: each of these bars writes to stderr
    assert "judge open-0-10" in shown and "req" in shown and "demo:openai-compatible" in shown, shown
    assert judged("quiet", False).strip() == ""
