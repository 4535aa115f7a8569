"""Benchmark: how vlmlens reads multiple-choice answers, against a careful human.

    python benchmarks/mcq_reading.py            # the table, and every disagreement
    python benchmarks/mcq_reading.py --quiet    # the table only

The set (`tests/data/mcq_reading/`, provenance "hand-written") is 298 realistic model outputs to ten five-way
video questions (MINERVA-style: labels A–E; one question with numbers as options, one whose options start with
the article "A", the colour question in Hindi, Telugu, Chinese, Japanese and Arabic), each labelled with the
option a careful human reads, or null when the output chooses none (refusals, hedges between two options,
negations alone, echoed option lists). Classes: bare and lowercase letters, answer phrases, option text only,
reasoning chains, hedges, negations, refusals, echoed options, option numbers, contrast forms ("It's not E,
it's D"), choosing verbs ("I'll go with B", 我选B, Bを選びます), "... corresponds to option C" after naming
other options, the article "A" ("Answer: A screwdriver"), numbers as options.

Each output is read with `vlmlens.scoring.parse_answer` (the path every benchmark's MCQ reading takes). The
targets: agreement >= 97%, and no letter for any output a human reads as choosing nothing. Results go to
stdout and to ``benchmarks/results/mcq_reading.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "mcq_reading"
TARGET = 0.97


def load(data: Path = DATA):
    "The questions and the labelled outputs (the header row, with the provenance, dropped)."
    questions = json.loads((data / "questions.json").read_text(encoding="utf-8"))
    rows = [json.loads(l) for l in (data / "outputs.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    return questions, [r for r in rows if "text" in r]


def read(questions: dict, row: dict) -> str | None:
    "The letter vlmlens reads in one output (None: no choice)."
    from vlmlens.core import Sample
    from vlmlens.scoring import parse_answer
    q = questions[row["question"]]
    s = Sample(id=str(row["id"]), benchmark="mcq_reading", question=q["question"], options=q["options"], answer=0, answer_type="mcq",
               language=row["lang"])
    got, valid = parse_answer(s, row["text"])
    return chr(65 + got) if valid else None


def measure(questions: dict, rows: list) -> dict:
    "Agreement overall, per class and per language; letters given to no-answer outputs; the disagreements."
    by_class, by_lang, misses = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0]), []
    for r in rows:
        got = read(questions, r)
        ok = got == r["human"]
        for table, key in ((by_class, r["class"]), (by_lang, r["lang"])):
            table[key][0] += ok; table[key][1] += 1
        if not ok: misses.append((r, got))
    n_none = sum(r["human"] is None for r in rows)
    return {"n": len(rows), "agree": sum(v[0] for v in by_class.values()) / len(rows), "by_class": dict(by_class),
            "by_lang": dict(by_lang), "n_no_answer": n_none,
            "letters_for_no_answer": sum(1 for r, g in misses if r["human"] is None), "misses": misses}


def report(m: dict, quiet: bool = False) -> str:
    "The result as markdown."
    out = ["# Reading multiple-choice answers like a human", "",
           f"`python benchmarks/mcq_reading.py`: {m['n']} hand-labelled outputs (`tests/data/mcq_reading/`).", "",
           f"**Agreement with the human reading: {m['agree']:.1%}** (target {TARGET:.0%}); letters given to the "
           f"{m['n_no_answer']} outputs that choose nothing: **{m['letters_for_no_answer']}** (target 0).", "",
           "| class | n | agree |", "|---|---|---|"]
    out += [f"| {k} | {v[1]} | {v[0] / v[1]:.1%} |" for k, v in sorted(m["by_class"].items())]
    out += ["", "| language | n | agree |", "|---|---|---|"]
    out += [f"| {k} | {v[1]} | {v[0] / v[1]:.1%} |" for k, v in sorted(m["by_lang"].items())]
    if not quiet and m["misses"]:
        out += ["", "Disagreements (human → vlmlens):", ""]
        out += [f"- [{r['class']}, {r['lang']}] {json.dumps(r['text'], ensure_ascii=False)}: {r['human']} → {g}"
                for r, g in m["misses"]]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quiet", action="store_true", help="the table only, not every disagreement")
    args = ap.parse_args(argv)
    m = measure(*load())
    text = report(m, args.quiet)
    print(text)
    (HERE / "results" / "mcq_reading.md").write_text(report(m), encoding="utf-8")
    return 0 if m["agree"] >= TARGET and m["letters_for_no_answer"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
