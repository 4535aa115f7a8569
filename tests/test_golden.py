"""vlmlens agrees with the official scoring code on every golden row (tests/data/golden/*.jsonl).

The rows were written by tools/golden_*.py, which run the official scripts themselves (GT-Vision-Lab/VQA vqaEval.py,
dair-iitd/jeebench compute_metrics.py, Vision-CAIR/Infinibench evaluation/eval_script.py) on generated and adversarial
inputs; each file's first row is its provenance. Where vlmlens documents a reading instead of the official outcome
(one VQA reference; a JEE number the script cannot parse, on which it stops), the row is checked against that reading.
"""
import json
import re
from pathlib import Path

from vlmlens.benchmarks.infinibench import MCQ_SKILLS, OFFICIAL_FILES, OPEN_SKILLS, InfiniBenchJudge
from vlmlens.core import Generation
from vlmlens.models.registry import Backend
from vlmlens.runner import score_files
from vlmlens.benchmarks.hintel_scoring import jee_score, vqa_accuracy, vqa_normalize

GOLDEN = Path(__file__).parent / "data" / "golden"


def golden(name: str) -> tuple[dict, list[dict]]:
    lines = (GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    head, rows = json.loads(lines[0])["provenance"], [json.loads(x) for x in lines[1:]]
    assert head["n_cases"] == len(rows) and re.fullmatch(r"[0-9a-f]{40}", head["commit"]) and len(head["file_sha256"]) == 64
    return head, rows


def agree(rows, check) -> None:
    "Every row agrees: `check(row)` returns None, else a description of the disagreement (the first ones are shown)."
    bad = [(r["case"], msg) for r in rows for msg in [check(r)] if msg is not None]
    assert not bad, f"{len(bad)}/{len(rows)} golden rows disagree with the official code; first ones:\n" + "\n".join(
        f"  case {c}: {m}" for c, m in bad[:15])


# --- VQA --------------------------------------------------------------------------------------------------------
def test_vqa_golden_provenance():
    head, rows = golden("vqa")
    assert head["repository"] == "GT-Vision-Lab/VQA" and len(rows) >= 3000
    kinds = {r["kind"] for r in rows}
    assert {"identical", "identical-stripped", "differing", "few", "single"} <= kinds


def test_vqa_accuracy_equals_official():
    "vqa_accuracy (official=True) equals the official per-question accuracy on every row, one reference included."
    _, rows = golden("vqa")
    def check(r):
        got = vqa_accuracy(r["pred"], r["answers"])
        want = r["official"]["accuracy"]
        return None if abs(got - want) <= 1e-12 else f"{r['pred']!r} vs {r['answers']!r}: official {want}, vlmlens {got}"
    agree(rows, check)


def test_vqa_normalize_equals_official():
    "vqa_normalize (English) equals the official processDigitArticle(processPunctuation(.)) of the cleaned text."
    _, rows = golden("vqa")
    def check(r):
        got = vqa_normalize(r["pred"])
        return None if got == r["official"]["norm_pred"] else f"{r['pred']!r}: official {r['official']['norm_pred']!r}, vlmlens {got!r}"
    agree(rows, check)


def test_vqa_single_reference_reading():
    """One reference: the ledger's reading (HinTel, `reading`) compares the official normalisations directly (an
    answer that normalises to nothing never matches); the official leave-one-out scores every such row 0."""
    _, rows = golden("vqa")
    single = [r for r in rows if len(r["answers"]) == 1]
    assert len(single) >= 300 and all(r["official"]["accuracy"] == 0.0 for r in single)
    def check(r):
        p, g = r["official"]["norm_pred"], r["official"]["norm_ref"]
        want = float(bool(p) and p == g)
        got = vqa_accuracy(r["pred"], r["answers"][0], official=False)
        return None if got == want else f"{r['pred']!r} vs {r['answers'][0]!r}: reading {want}, vlmlens {got}"
    agree(single, check)
    assert sum(float(bool(r["official"]["norm_pred"]) and r["official"]["norm_pred"] == r["official"]["norm_ref"]) for r in single) >= 50


# --- JEE --------------------------------------------------------------------------------------------------------
def test_jee_golden_covers_every_type():
    head, rows = golden("jee")
    assert head["repository"] == "dair-iitd/jeebench"
    seen = {(r["type"], r["official"].get("score", "error")) for r in rows}
    assert {("MCQ", 1.0), ("MCQ", 0.0), ("MCQ(multiple)", 1.0), ("MCQ(multiple)", 0.25), ("MCQ(multiple)", 0.5),
            ("MCQ(multiple)", 0.75), ("MCQ(multiple)", 0.0), ("Integer", 1.0), ("Integer", 0.0), ("Numeric", 1.0),
            ("Numeric", 0.0), ("Numeric", "error")} <= seen


def test_jee_score_equals_official():
    """jee_score (official=True) equals compute_score on every row; where compute_score stops on an answer it cannot
    read as a number, vlmlens scores 0 (documented in vlmlens.benchmarks.hintel_scoring)."""
    _, rows = golden("jee")
    def check(r):
        got = jee_score(r["gold"], r["resp"], r["type"])
        off = r["official"]
        if "error" in off:
            return None if got == 0.0 and r["type"] in ("Integer", "Numeric") else f"{r}: official stops ({off['error']}), vlmlens {got}"
        return None if got == off["score"] else f"gold {r['gold']!r}, answer {r['resp']!r} ({r['type']}): official {off['score']}, vlmlens {got}"
    agree(rows, check)


# --- InfiniBench --------------------------------------------------------------------------------------------------
class ScriptedJudge(Backend):
    "Replies scripted per question (the golden row's judge replies); an API failure is an errored generation."
    name = model_id = "scripted-judge"
    def __init__(self, replies): self.replies, self.unexpected = replies, []
    def generate(self, requests, **kw):
        out = []
        for rq in requests:
            q = re.search(r"^Question: (.*)$", rq.messages[-1]["content"][0]["text"], re.M).group(1)
            r = self.replies.get(q)
            if r is None:
                self.unexpected.append(q)
                r = {"raise": "the official script does not send this row to the judge"}
            out.append(Generation(text=None, error=r["raise"]) if "raise" in r else Generation(text=r["content"], error=None if r["content"] is not None else "no text"))
        return out


SKILL_OF = {f.split(".")[0]: s for s, f in OFFICIAL_FILES.items()}   # the script names a skill by its file name


def _score_case(case: dict, folder: Path) -> dict:
    for f, rows in case["files"].items(): (folder / f).write_text(json.dumps(rows), encoding="utf-8")
    backend = ScriptedJudge(case["replies"])
    with InfiniBenchJudge(backend, cache=False) as judge:
        s = score_files("infinibench", folder, judge)
    return {**s, "unexpected": backend.unexpected}


def _compare(case: dict, s: dict) -> str | None:
    off, st = case["official"], s["skills"]
    if s["unexpected"]: return f"vlmlens sent rows to the judge that the official script scores without it: {s['unexpected']}"
    for f, res in off["mcq_results"].items():
        v = st.get(SKILL_OF[f], {})
        if (v.get("accuracy"), v.get("n")) != (res["accuracy"], res["total_items"]):
            return f"{f}: official accuracy {res['accuracy']} of {res['total_items']}, vlmlens {v.get('accuracy')} of {v.get('n')}"
    for f, res in off["open_ended_results"].items():
        v = st.get(SKILL_OF[f], {})
        valid = (v.get("n_judged") or 0) - (v.get("judge_invalid") or 0)
        if (v.get("score_0_10"), v.get("n"), valid) != (res["average_score"], res["total_items"], res["valid_scores"]):
            return (f"{f}: official mean {res['average_score']} ({res['valid_scores']} valid of {res['total_items']}), "
                    f"vlmlens {v.get('score_0_10')} ({valid} valid of {v.get('n')})")
    want_mcq = {SKILL_OF[f] for f in off["mcq_results"]}
    want_open = {SKILL_OF[f] for f in off["open_ended_results"]}
    got_mcq, got_open = {k for k in st if k in MCQ_SKILLS}, {k for k in st if k in OPEN_SKILLS}
    if (got_mcq, got_open) != (want_mcq, want_open):
        return f"skills: official {sorted(want_mcq | want_open)}, vlmlens {sorted(got_mcq | got_open)}"
    acc = re.match(r"Overall Accuracy: (\S+)%$", off["accuracy_line"]).group(1) if off["accuracy_line"] else None
    if s["printed"]["Acc"] != acc: return f"Acc printed: official {acc}, vlmlens {s['printed']['Acc']}"
    score = re.match(r"Overall GPT Score: (\S+)/10$", off["score_line"]).group(1) if off["score_line"] else None
    no_valid = bool(want_open) and all((st[k].get("n_judged") or 0) - (st[k].get("judge_invalid") or 0) == 0 for k in want_open)
    if score is None and want_open and not no_valid: return f"Score: official prints none, vlmlens has valid judge scores ({s['printed']['Score']})"
    if score is not None and s["printed"]["Score"] != score: return f"Score printed: official {score}, vlmlens {s['printed']['Score']}"
    return None


def test_infinibench_golden_provenance():
    head, rows = golden("infinibench")
    assert head["repository"] == "Vision-CAIR/Infinibench" and head["file"] == "evaluation/eval_script.py" and len(rows) >= 500
    assert not any("error" in r["official"] for r in rows)
    replies = [x for r in rows for x in r["replies"].values()]
    assert any("raise" in x for x in replies) and any(x.get("content") is None for x in replies)


def test_infinibench_official_files_equal_official(tmp_path):
    """score_files('infinibench', folder, judge) gives the official per-skill accuracy (every row in the denominator),
    per-skill mean judge score (valid replies only; 0.0 for a skill with none), and the printed Acc and Score."""
    _, rows = golden("infinibench")
    def check(r):
        d = tmp_path / str(r["case"])
        d.mkdir()
        return _compare(r, _score_case(r, d))
    agree(rows, check)


# --- InfiniBench, the authors' lmms-eval task ---------------------------------------------------------------------
def _lmms_skill(name: str) -> str:
    return "chronological_understanding" if name == "choronological_understanding" else name


def test_infinibench_lmms_golden_provenance():
    head, rows = golden("infinibench_lmms")
    assert head["repository"] == "KerolosAtef/lmms-eval" and head["file"] == "lmms_eval/tasks/infinibench/utils.py"
    assert head["commit"].startswith("887fbb5") and head["test_yaml_commit"].startswith("c0cb65e")
    assert {r["kind"] for r in rows} == {"prompt", "answer", "aggregate", "frames"}


def test_infinibench_lmms_prompts_equal_the_task():
    "The text the model is given: prompts, lettered options, 768-frame sampling, the subtitles at the sampled frames."
    from vlmlens.benchmarks.infinibench import lmms_prompt
    from vlmlens.media import parse_srt
    from vlmlens.readers import parse_literal_list
    _, rows = golden("infinibench_lmms")
    def check(r):
        d = r["doc"]
        opts = parse_literal_list(d["options"], "options") if d["skill_name"] in MCQ_LMMS else None
        cues = parse_srt(r["srt"]) if r["srt"] is not None and r["use_subtitle"] else None
        got = lmms_prompt(d["question"], opts, r["frames"], r["fps"], cues, r["n_frames"])
        return None if got == r["official"]["text"] else f"{d['skill_name']}: official {r['official']['text'][:200]!r}, vlmlens {got[:200]!r}"
    agree([r for r in rows if r["kind"] == "prompt"], check)


def test_infinibench_lmms_frame_indices_equal_the_task():
    "The frames the task samples (its times are index / fps of these indices), 768 by default, short videos repeating frames."
    from vlmlens.benchmarks.infinibench import lmms_frame_indices
    _, rows = golden("infinibench_lmms")
    frames = [r for r in rows if r["kind"] == "frames"]
    assert len(frames) >= 10 and any(len(r["official"]["indices"]) == 768 for r in frames)
    def check(r):
        got = lmms_frame_indices(r["frames"], r["n_frames"])
        if [i / r["fps"] for i in got] != r["official"]["times"]: return f"{r['frames']} frames at {r['fps']}: the times differ"
        return None if got == r["official"]["indices"] else f"{r['frames']} frames, n {r['n_frames']}: official {r['official']['indices'][:8]}…, vlmlens {got[:8]}…"
    agree(frames, check)


def test_infinibench_lmms_answers_equal_the_task():
    "The answer read from a reply (first parenthesised token, or the whole reply) and the gold it is compared with."
    from vlmlens.benchmarks.infinibench import lmms_answer
    _, rows = golden("infinibench_lmms")
    def check(r):
        d, mcq = r["doc"], r["doc"]["skill_name"] in MCQ_LMMS
        got = (lmms_answer(r["reply"], mcq), chr(65 + int(d["answer_idx"])) if mcq else d["answer"])
        want = (r["official"]["pred"], r["official"]["answer"])
        return None if got == tuple(want) else f"{r['reply']!r}: official {want}, vlmlens {got}"
    agree([r for r in rows if r["kind"] == "answer"], check)


def test_infinibench_lmms_numbers_equal_the_task():
    "Per-skill Acc/Score over the split's rows, their averages over all four skills, overall: to the last bit."
    from vlmlens.benchmarks.infinibench import lmms_aggregate
    _, rows = golden("infinibench_lmms")
    def check(r):
        correct, scores = {}, {}
        for x in r["results"]:
            s = _lmms_skill(x["task_type"])
            if s in MCQ_SKILLS: correct.setdefault(s, []).append(str(x["pred"]) == str(x["answer"]))
            else: scores.setdefault(s, []).append(x["gpt_score"])
        got = lmms_aggregate(correct, scores, {_lmms_skill(k): v for k, v in r["counts"].items()})
        printed = {k: f"{got['skills'][_lmms_skill(k)]:.2f}" + ("%" if _lmms_skill(k) in MCQ_SKILLS else "/10") for k in r["official"]["printed"]}
        if got["overall_0_100"] != r["official"]["value"]: return f"overall: official {r['official']['value']!r}, vlmlens {got['overall_0_100']!r}"
        return None if printed == r["official"]["printed"] else f"per skill: official {r['official']['printed']}, vlmlens {printed}"
    agree([r for r in rows if r["kind"] == "aggregate"], check)


MCQ_LMMS = ("character_actions", "scene_transitions", "choronological_understanding", "global_appearance")
