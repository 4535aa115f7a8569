"""Golden data for JEE scoring: the official dair-iitd/jeebench `compute_metrics.py` (`compute_score`) run on
generated and adversarial (gold, extracted answer, question type) cases; writes tests/data/golden/jee.jsonl
(tests/test_golden.py checks vlmlens.benchmarks.hintel_scoring.jee_score against it).

    python tools/golden_jee.py --official /path/to/jeebench     # a clone of github.com/dair-iitd/jeebench
    python tools/golden_jee.py --official /work/.mirror/dair-iitd+jeebench/repo   # or a bare git dir (fetch tool)

`compute_metrics.py` is a script: importing it would read the response files and write results. Only its imports,
its constants and its function definitions are executed (selected from the parsed module in memory); the text is
not changed. Answers are strings, as the script passes them (the extract column of a CSV read with dtype=str, a
missing extract being the string "None"). A case on which `compute_score` raises records the exception.
"""
import ast
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_common import arg_parser, official_source, write_golden  # noqa: E402

REPO, FILE = "dair-iitd/jeebench", "compute_metrics.py"


def load_official(src: str) -> dict:
    "The namespace of the script's imports, constants and functions (its top-level pipeline is not run)."
    tree = ast.parse(src)
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef))
            or (isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in n.targets))]
    ns: dict = {"__name__": "compute_metrics"}
    exec(compile(ast.Module(body=keep, type_ignores=[]), FILE, "exec"), ns)
    return ns


LETTER_ANSWERS = ["A", "B", "C", "D", "E", "AB", "BA", "BB", "ABC", "ABCD", "ABCE", "BCD", "AD", "a", "b", "ab", "Ab",
                  "", "None", "none", "(A)", "(B) and (D)", "A, C", "A,B", "B;C", "[A][C]", "Option A", "option b",
                  "A. Because C is the answer", "The answer is B", "BD.", "A and C", "A or B", "AC\n", " D ", "ABCDE",
                  "CDA", "DCBA", "E F", "1", "2", "0", "{B}", "\\boxed{C}", "Both A and D", "All", "NONE", "N/A"]
NUMBER_ANSWERS = ["2", "2.0", "2.00", "02", " 2 ", "+2", "-2", "2.01", "2.009", "1.99", "1.989", "2.011", "28.21", "28.2",
                  "28.19", "28.209", "0.5", ".5", "5.", "0.77", "0.78", "0.769", "1e3", "1E-2", "1000", "1000.0", "inf",
                  "-inf", "nan", "NaN", "1_000", "None", "", "two", "2,5", "2.5.1", "3/4", "0.75", "2 A", "2A", "0x10",
                  "\u0663", "\u0969", "1\n", "\t3", "-0", "0", "0.0", "0.01", "0.009", "-0.01", "6.25", "6.24", "6.26",
                  "6.259", "6.2599", "100", "99.99", "99.989", "1.2e1", "12", "True", "None ", "N/A"]
GOLD_NUMBERS = ["2", "0.5", "28.2", "0.77", "6.25", "1000", "0", "-1.5", "12", "100", "99.99", "0.01", "1.25", "3"]


def cases(n: int, seed: int) -> list[dict]:
    "Every question type: exact, partial and wrong letter sets, odd extractions, numbers at the ±0.01 border."
    rng = random.Random(seed)
    out = []
    for q in ("MCQ", "MCQ(multiple)"):
        for g in (["A", "B", "C", "D"] if q == "MCQ" else ["A", "BD", "ABC", "ABCD", "BCD", "AC"]):
            out += [{"gold": g, "resp": r, "type": q} for r in LETTER_ANSWERS]
    out += [{"gold": g, "resp": r, "type": q} for q in ("Integer", "Numeric") for g in GOLD_NUMBERS[:6] for r in NUMBER_ANSWERS]
    while len(out) < n:
        q = rng.choice(["MCQ", "MCQ(multiple)", "Integer", "Numeric"])
        if q.startswith("MCQ"):
            g = rng.choice("ABCD") if q == "MCQ" else "".join(sorted(rng.sample("ABCD", rng.randint(1, 4))))
            r = rng.choice([
                "".join(rng.sample("ABCD", rng.randint(0, 4))),                       # any subset, any order
                "".join(rng.choice("ABCDEabcd") for _ in range(rng.randint(1, 5))),   # repeats, lower case, E
                rng.choice(LETTER_ANSWERS),
                rng.choice([", ", " and ", ";", " "]).join(rng.sample("ABCD", rng.randint(1, 3))),
                rng.choice(["(", "Option ", "answer: "]) + rng.choice("ABCD") + rng.choice([")", ".", "", " is correct"])])
        else:
            g = rng.choice(GOLD_NUMBERS) if rng.random() < 0.5 else f"{rng.uniform(-50, 150):.{rng.randint(0, 3)}f}"
            d = rng.choice([0, 0.01, -0.01, 0.005, -0.005, 0.0101, -0.0101, 0.0099, 0.02, 0.1, 1, 0.001])
            r = rng.choice([f"{float(g) + d:.{rng.randint(0, 4)}f}", repr(float(g) + d), str(g), rng.choice(NUMBER_ANSWERS)])
        out.append({"gold": g, "resp": r, "type": q})
    return out


def main(argv=None):
    ap = arg_parser(__doc__, "jee", REPO, 3000, "/work/.mirror/dair-iitd+jeebench/repo")
    a = ap.parse_args(argv)
    src, prov = official_source(a.official, FILE, a.commit)
    compute_score = load_official(src)["compute_score"]
    rows = []
    for i, c in enumerate(cases(a.n, a.seed)):
        try: off = {"score": float(compute_score(c["gold"], c["resp"], c["type"], None))}
        except Exception as e: off = {"error": f"{type(e).__name__}: {e}"}
        rows.append({"case": i, **c, "official": off})
    write_golden("jee", {"repository": REPO, **prov, "function": "compute_score(gold, resp, question_type, year)",
                         "interpreter": f"Python {sys.version.split()[0]}", "seed": a.seed}, rows, a.out)


if __name__ == "__main__":
    main()
