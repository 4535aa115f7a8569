"""Golden data for InfiniBench scoring: the official Vision-CAIR/Infinibench `evaluation/eval_script.py` run on
generated and adversarial folders of per-skill prediction files; writes tests/data/golden/infinibench.jsonl
(tests/test_golden.py scores the same folders with `vlmlens.runner.score_files("infinibench", ...)`).

    python tools/golden_infinibench.py --official /path/to/Infinibench    # a clone of github.com/Vision-CAIR/Infinibench

`evaluation/eval_script.py` is in commit b62f604; older snapshots (such as 7c4af42 of 2025-06-11) lack it. A plain
folder holding `evaluation/eval_script.py` works too (give `--commit`).

Each case is one prediction folder (any of the eight official file names; grounding rows with or without `pred` /
`answer_idx`, of any JSON type; reasoning rows with or without `question` / `answer` / `pred` / a written-back
`gpt_score`) plus the judge's reply to each row the script sends to the judge. The script is imported in a
temporary folder without an API key; its `client` is replaced at run time by a stand-in whose
`chat.completions.create` returns the scripted reply for the row's question (or raises the scripted API error), so
`gpt_score_wrapper` parses real reply texts. `eval_open_ended_skills` runs with `max_retries=0` (a scripted reply
does not change when re-asked), then `eval_mcq_skills` and `print_comprehensive_summary`, whose log lines are kept.
"""
import contextlib
import importlib.util
import json
import logging
import os
import random
import re
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_common import arg_parser, official_source, write_golden  # noqa: E402

REPO, FILE = "Vision-CAIR/Infinibench", "evaluation/eval_script.py"
MCQ_FILES = ["character_actions.json", "scene_transitions.json", "choronological_understanding.json", "global_appearance.json"]
OPEN_FILES = ["summarization.json", "spoiler_questions.json", "deep_context_understanding.json", "linking_multiple_events.json"]
QUESTION = re.compile(r"^Question: (.*)$", re.M)


@contextlib.contextmanager
def _cwd(d):
    old = os.getcwd()
    os.chdir(d)
    try: yield
    finally: os.chdir(old)


def load_official(src: str, workdir: Path):
    "The official module, imported from its text in `workdir` (its log file lands there), with no API key."
    (workdir / "eval_script.py").write_text(src, encoding="utf-8")
    key = os.environ.pop("OPENAI_API_KEY", None)
    try:
        with _cwd(workdir):
            spec = importlib.util.spec_from_file_location("infinibench_eval_script", workdir / "eval_script.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
    finally:
        if key is not None: os.environ["OPENAI_API_KEY"] = key
    logging.getLogger().handlers.clear()            # the script's own handlers: stdout and evaluation.log
    return mod


class ScriptedClient:
    "Stands in for `openai.OpenAI`: the reply scripted for the question in the user message."
    def __init__(self): self.replies = {}
    @property
    def chat(self): return SimpleNamespace(completions=SimpleNamespace(create=self.create))
    def create(self, messages, **kw):
        q = QUESTION.search(messages[-1]["content"]).group(1)
        r = self.replies[q]
        if "raise" in r: raise RuntimeError(r["raise"])
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=r["content"]))])


REPLIES = [lambda s: '{"score": %d, "justification": "ok"}' % s,
           lambda s: "{'score': %d, 'justification': 'single quotes'}" % s,
           lambda s: '{\n  "score": %d,\n  "justification": "The answer omits a key detail."\n}' % s,
           lambda s: ' {"score": %d, "justification": "leading space"}' % s,
           lambda s: '{"score": %d, "justification": "x", "confident": true}' % s,            # JSON true: not a literal
           lambda s: '{"score": %d, "justification": null}' % s,
           lambda s: '{"score": %d.5, "justification": "half"}' % s,
           lambda s: '{"score": "%d", "justification": "a string"}' % s,
           lambda s: '{"score": %d}' % s,
           lambda s: '{"justification": "no score"}',
           lambda s: '{"score": %d, "justification": "over"}' % (s + 11),
           lambda s: '{"score": -%d, "justification": "negative"}' % (s + 1),
           lambda s: '{"score": True, "justification": "a bool"}',
           lambda s: '```json\n{"score": %d, "justification": "fenced"}\n```' % s,
           lambda s: 'Score: %d' % s,
           lambda s: "'score and justification'",
           lambda s: "['score', 'justification']",
           lambda s: '{"score": %d, "justification": "x"} trailing' % s,
           lambda s: "",
           lambda s: '{"score": 500, "justification": "server error"}',
           lambda s: '{"score": {"value": %d}, "justification": "nested"}' % s]


def reply(rng: random.Random) -> dict:
    u = rng.random()
    if u < 0.04: return {"raise": rng.choice(["Connection error.", "Request timed out.", "Error code: 400 - bad request"])}
    if u < 0.06: return {"content": None}
    s = rng.randint(0, 10)
    if u < 0.6: return {"content": REPLIES[0](s)}
    return {"content": rng.choice(REPLIES)(s)}


def mcq_row(rng: random.Random, q: str) -> dict:
    n = rng.randint(3, 6)
    r = {"question": q, "options": [f"option {k}" for k in range(n - 1)] + [rng.choice(["I don't know", "I dont know"])]}
    u = rng.random()
    if u < 0.85: r["answer_idx"] = rng.randrange(n)
    elif u < 0.9: r["answer_idx"] = str(rng.randrange(n))
    elif u < 0.94: r["answer_idx"] = None
    elif u < 0.96: r["answer_idx"] = float(rng.randrange(n))
    gold = r.get("answer_idx")
    u = rng.random()
    if u < 0.12: return r                                                        # no pred: a failed item
    if u < 0.45 and gold is not None: r["pred"] = gold if rng.random() < 0.8 else str(gold)
    elif u < 0.8: r["pred"] = rng.randrange(n)
    else: r["pred"] = rng.choice([-1, "-1", None, "1", 1.0, True, "", "option 1", n, [1], "None"])
    return r


def open_row(rng: random.Random, q: str, replies: dict) -> dict:
    r = {"question": q, "answer": rng.choice(["They marry.", "He leaves the city.", "", None]), "pred": rng.choice(
        ["They get married.", "No idea.", "", None, "He stays.", "A long answer " * 5])}
    u = rng.random()
    if u < 0.08: r.pop(rng.choice(["question", "answer", "pred"]))               # a row the script cannot judge
    u = rng.random()
    if u < 0.15: r["gpt_score"] = rng.choice([rng.randint(0, 10), rng.randint(0, 10), 7.5, 11, -1, True, False, 0])
    elif u < 0.2: r["gpt_score"], r["gpt_justification"] = None, "Evaluation failed: earlier"
    if r.get("gpt_score") is None and all(k in r for k in ("question", "answer", "pred")): replies[q] = reply(rng)
    return r


def cases(n: int, seed: int) -> list[dict]:
    "Folders with a random subset of the eight files, from empty to a dozen rows, every row shape above."
    rng = random.Random(seed)
    out = []
    for i in range(n):
        files, replies = {}, {}
        names = rng.sample(MCQ_FILES + OPEN_FILES, rng.randint(1, 8))
        for f in names:
            k = rng.choice([0, 1, 2, 3, 5, 8, 12]) if rng.random() < 0.9 else 0
            q = lambda j: f"Q{i}.{f.split('.')[0]}.{j}"
            files[f] = [mcq_row(rng, q(j)) for j in range(k)] if f in MCQ_FILES else [open_row(rng, q(j), replies) for j in range(k)]
        if i % 50 == 0: files = {f: [] for f in files}                          # only empty files
        out.append({"files": files, "replies": replies})
    return out


class Lines(logging.Handler):
    def __init__(self): super().__init__(); self.lines = []
    def emit(self, record): self.lines.append(record.getMessage())


def run_official(mod, client: ScriptedClient, case: dict, d: Path) -> dict:
    for f, rows in case["files"].items(): (d / f).write_text(json.dumps(rows), encoding="utf-8")
    client.replies = case["replies"]
    mod.client = client
    h = Lines()
    mod.logger.addHandler(h)
    mod.logger.propagate = False
    try:
        with _cwd(d):
            try:
                oe = mod.eval_open_ended_skills(str(d), max_threads=4, batch_size=5, max_retries=0, retry_delay=0.0)
                mcq = mod.eval_mcq_skills(str(d))
            except Exception as e:                   # the script stops (its main() exits 1)
                return {"error": f"{type(e).__name__}: {e}"}
            h.lines.clear()
            mod.print_comprehensive_summary(oe, mcq)
    finally:
        mod.logger.removeHandler(h)
    pick = lambda p: next((ln for ln in h.lines if ln.startswith(p)), None)
    return {"open_ended_results": oe, "mcq_results": mcq, "score_line": pick("Overall GPT Score:"),
            "accuracy_line": pick("Overall Accuracy:")}


def main(argv=None):
    ap = arg_parser(__doc__, "infinibench", REPO + " (holding evaluation/eval_script.py)", 800)
    a = ap.parse_args(argv)
    src, prov = official_source(a.official, FILE, a.commit)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        mod = load_official(src, Path(work))
        client = ScriptedClient()
        for i, c in enumerate(cases(a.n, a.seed)):
            with tempfile.TemporaryDirectory(dir=work) as d:
                rows.append({"case": i, **c, "official": run_official(mod, client, c, Path(d))})
    write_golden("infinibench", {"repository": REPO, **prov, "function": "eval_open_ended_skills (gpt_score_wrapper), "
                                 "eval_mcq_skills (mcq_accuracy), print_comprehensive_summary",
                                 "interpreter": f"Python {sys.version.split()[0]}", "seed": a.seed}, rows, a.out)


if __name__ == "__main__":
    main()
