"""Golden data for VQA accuracy: the official GT-Vision-Lab/VQA `vqaEval.py` run on generated and adversarial
(prediction, references) cases; writes tests/data/golden/vqa.jsonl (tests/test_golden.py checks vlmlens against it).

    python tools/golden_vqa.py --official /path/to/VQA          # a clone of github.com/GT-Vision-Lab/VQA
    python tools/golden_vqa.py --official /work/.mirror/GT-Vision-Lab+VQA/repo   # or a bare git dir (fetch tool)

The official script is Python 2. It runs under `--python` (default: a Python 2.7 found as `python2` or under
pyenv, else this interpreter); under Python 3 its two `print` statements are turned into calls in memory, nothing
else changes and nothing is written to the checkout. Each case is one question of an in-memory VQA annotation set
(ten answer records with unique answer ids, as in the release) handed to `VQAEval.evaluate`; the per-question
accuracy is taken before the script rounds it for display. For every prediction (and a single reference) the row
also holds the official `processDigitArticle(processPunctuation(.))` of the cleaned text.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_common import arg_parser, official_source, write_golden  # noqa: E402

REPO, FILE = "GT-Vision-Lab/VQA", "PythonEvaluationTools/vqaEvaluation/vqaEval.py"

# Runs under Python 2.7 or 3: loads the official module from its text and evaluates the cases.
DRIVER = r'''
import io, json, re, sys
src_path, cases_path, out_path = sys.argv[1:4]
src = open(src_path, "rb").read()
if sys.version_info[0] >= 3:
    src = re.sub(r'^(\s*)print (".*")\s*$', r'\1print(\2)', src.decode("utf-8"), flags=re.M)
ns = {"__name__": "vqaEval"}
exec(compile(src, src_path, "exec"), ns)

class AnnotationSet(object):
    def __init__(self, qa): self.qa = qa
    def getQuesIds(self): return list(self.qa)

def clean(t): return t.replace("\n", " ").replace("\t", " ").strip()

cases = json.loads(io.open(cases_path, encoding="utf-8").read())
gts, res = {}, {}
for i, c in enumerate(cases):
    gts[i] = {"question_id": i, "question_type": "what is", "answer_type": "other",
              "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": k + 1} for k, a in enumerate(c["answers"])]}
    res[i] = {"question_id": i, "answer": c["pred"]}
ev = ns["VQAEval"](AnnotationSet(gts), AnnotationSet(res), n=2)
acc = {}
ev.setEvalQA = lambda q, a: acc.__setitem__(q, a)     # the accuracy before the script rounds it for display
stdout, sys.stdout = sys.stdout, sys.stderr
ev.evaluate()
sys.stdout = stdout
norm = lambda t: ev.processDigitArticle(ev.processPunctuation(clean(t)))
out = []
for i, c in enumerate(cases):
    r = {"accuracy": acc[i], "norm_pred": norm(c["pred"])}
    if len(c["answers"]) == 1: r["norm_ref"] = norm(c["answers"][0])
    out.append(r)
open(out_path, "w").write(json.dumps(out, ensure_ascii=True))
'''

ATOMS = ["yes", "no", "Yes", "YES", "No.", "two", "Two", "2", "TWO", "ten", "10", "none", "0", "zero", "None",
         "1,000", "1000", "1.000", "1,000,000", "3,5", "3, 5", "$1,000", "1,2", "1 2", "3.5", "3.5.", ".5", "5.",
         "Left!", "left", "left!", "Left", "right?", "left-hand", "left hand", "t-shirt", "t shirt", "T-Shirt",
         "don't", "dont", "Dont know", "don't know", "isnt", "isn't", "cant", "can't", "twas", "Im", "im", "Ive",
         "somebody'd", "somebodyd", "oclock", "o'clock", "yall'll", "y'allll", "whats up?", "what's",
         "the dog", "a dog", "an dog", "dog", "Dog.", "The Dog", "dogs", "the", "a", "an", "The", "",
         "red/white", "red white", "red & white", "red and white", "(apple)", "apple", "an apple", "Apple!",
         "it's", "its", "10:30", "10 30", "....", "...", ". . .", "a.b", "e.g.", "U.S.A.", "U.S.A", "mr. smith",
         "yes!", "yes !", "yes ,", "yes, it is", "Yes, it is.", "no, it isn't", "!", "?", "-", "--", "@home",
         "a;b", "a; b", "a_b", "a\\b", "[5]", "{5}", "<5>", "5-6", "5 - 6", "-5", "+5", "=", "`x`", '"yes"', "'yes'",
         "50%", "#1", "5$", "café", "naïve", "two dogs", "2 dogs", "The Two Dogs", "three", "3", "four", "one",
         "1", "nine", "9", " yes", "yes ", "yes\n", "\tno", "no\t\n", "red  white", "a  dog", "one.two", "1.2.3"]
PUNCT = [";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!",
         ".", ":", "'", "&", "%", "$"]
WORDS = ["yes", "no", "two", "2", "ten", "none", "the", "a", "an", "dog", "red", "white", "dont", "isnt", "its",
         "1,000", "3.5", "left", "t-shirt", "apple", "im", "whats", "zero"]


def mutate(rng: random.Random, s: str) -> str:
    "A small random change of an answer: case, punctuation, articles, number words, whitespace, commas."
    op = rng.randrange(11)
    if op == 0: return s.upper()
    if op == 1: return s.capitalize()
    if op == 2: return s + rng.choice(PUNCT)
    if op == 3: return rng.choice(PUNCT) + s
    if op == 4: return s + " " + rng.choice(PUNCT)
    if op == 5: return rng.choice(["the ", "a ", "an ", "The ", "A "]) + s
    if op == 6: return rng.choice([" ", "\n", "\t", "  "]) + s + rng.choice(["", " ", "\n", "\t"])
    if op == 7: return s.replace(" ", rng.choice(["  ", "-", "/", ", ", "_"]))
    if op == 8: return s + " " + rng.choice(WORDS)
    if op == 9: return rng.choice(WORDS) + rng.choice([" ", ",", ", ", "-"]) + s
    return s + rng.choice(["1,000", " 1,000", "2.5", ".", "..", "!"])


def answer(rng: random.Random) -> str:
    s = rng.choice(ATOMS)
    for _ in range(rng.choice([0, 0, 1, 1, 2])): s = mutate(rng, s)
    return s


def cases(n: int, seed: int) -> list[dict]:
    "Curated cases, then identical references, differing references, small sets and single references."
    rng = random.Random(seed)
    out = [{"pred": p, "answers": [p] * 10, "kind": "identical"} for p in ("Two", "1,000", "Left!", "t-shirt", "yes", "None")]
    out += [{"pred": "two", "answers": ["Two"] * 10, "kind": "identical"}, {"pred": "2", "answers": ["two"] * 10, "kind": "identical"},
            {"pred": "Two", "answers": ["Two"] * 9 + ["2"], "kind": "differing"}, {"pred": "yes", "answers": ["yes"], "kind": "single"}]
    while len(out) < n:
        u = rng.random()
        if u < 0.25:                                   # ten identical references (compared as they are)
            ref = answer(rng)
            pred = rng.choice([ref, mutate(rng, ref), ref.strip(), answer(rng)])
            out.append({"pred": pred, "answers": [ref] * 10, "kind": "identical"})
        elif u < 0.32:                                 # identical once stripped
            ref = answer(rng).strip() or "yes"
            refs = [rng.choice(["", " ", "\n", "\t"]) + ref + rng.choice(["", " ", "\n"]) for _ in range(10)]
            out.append({"pred": rng.choice([ref, mutate(rng, ref)]), "answers": refs, "kind": "identical-stripped"})
        elif u < 0.75:                                 # ten references with 2-4 distinct forms (the normalised branch)
            base = answer(rng)
            pool = list(dict.fromkeys([base, mutate(rng, base)] + [rng.choice([mutate(rng, base), answer(rng)]) for _ in range(rng.randint(0, 2))]))
            if len(pool) < 2: pool.append(answer(rng) + "x")
            refs = [rng.choice(pool) for _ in range(10)]
            if len(set(refs)) < 2: refs[rng.randrange(10)] = pool[1] if refs[0] == pool[0] else pool[0]
            pred = rng.choice([base, mutate(rng, base), rng.choice(pool), answer(rng)])
            out.append({"pred": pred, "answers": refs, "kind": "differing"})
        elif u < 0.83:                                 # 2, 3 or 5 references
            pool = [answer(rng) for _ in range(rng.randint(1, 3))]
            refs = [rng.choice(pool) for _ in range(rng.choice([2, 3, 5]))]
            out.append({"pred": rng.choice(pool + [answer(rng)]), "answers": refs, "kind": "few"})
        else:                                          # one reference (HinTel's case: checked against vlmlens' reading)
            ref = answer(rng)
            out.append({"pred": rng.choice([ref, mutate(rng, ref), answer(rng)]), "answers": [ref], "kind": "single"})
    return out


def python2() -> str | None:
    "A working Python 2.7 interpreter, if there is one."
    cands = [shutil.which("python2"), str(Path.home() / ".pyenv/versions/2.7.18/bin/python")]
    for c in cands:
        if c and Path(c).exists():
            try:
                if subprocess.run([c, "-c", "import sys; sys.exit(sys.version_info[0] != 2)"], capture_output=True).returncode == 0:
                    return c
            except OSError:
                pass
    return None


def run_official(src: str, cs: list[dict], python: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "vqaEval.py").write_text(src, encoding="utf-8")
        (d / "driver.py").write_text(DRIVER, encoding="utf-8")
        (d / "cases.json").write_text(json.dumps([{"pred": c["pred"], "answers": c["answers"]} for c in cs], ensure_ascii=False), encoding="utf-8")
        r = subprocess.run([python, str(d / "driver.py"), str(d / "vqaEval.py"), str(d / "cases.json"), str(d / "out.json")],
                           capture_output=True, cwd=d, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        if r.returncode != 0:
            sys.exit(f"the official script failed under {python}:\n{r.stderr.decode('utf-8', 'replace')[-2000:]}")
        return json.loads((d / "out.json").read_text(encoding="utf-8"))


def main(argv=None):
    ap = arg_parser(__doc__, "vqa", REPO, 3000, "/work/.mirror/GT-Vision-Lab+VQA/repo")
    ap.add_argument("--python", help="the interpreter that runs the official script (default: Python 2.7 if found)")
    a = ap.parse_args(argv)
    src, prov = official_source(a.official, FILE, a.commit)
    python = a.python or python2() or sys.executable
    cs = cases(a.n, a.seed)
    got = run_official(src, cs, python)
    ver = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True).stdout.strip()
    rows = [{"case": i, "kind": c["kind"], "pred": c["pred"], "answers": c["answers"], "official": g} for i, (c, g) in enumerate(zip(cs, got))]
    write_golden("vqa", {"repository": REPO, **prov, "function": "VQAEval.evaluate (per-question accuracy), processPunctuation, "
                         "processDigitArticle", "interpreter": f"Python {ver}", "seed": a.seed}, rows, a.out)


if __name__ == "__main__":
    main()
