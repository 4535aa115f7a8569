"""Golden data for InfiniBench's lmms-eval protocol: the authors' own task code (KerolosAtef/lmms-eval,
`lmms_eval/tasks/infinibench/utils.py`) run on generated inputs; writes tests/data/golden/infinibench_lmms.jsonl
(tests/test_golden.py computes the same outputs with vlmlens' `lmms_*` functions).

    python tools/golden_infinibench_lmms.py --official /path/to/lmms-eval --deps /path/to/site    # a clone or bare git dir

The code is read from the checkout at generation time and never stored: `utils.py`, `infinibench_validation.yaml` and
`infinibench_train.yaml` at HEAD (887fbb5), `infinibench_test.yaml` at c0cb65e (HEAD's `utils.py` still loads it; the
file was removed when the test split lost its ground truth). It needs torch (the task's `torch.linspace`) and pysrt
(its subtitle reader: `pip install --target <dir> pysrt`, passed as `--deps`). The module is imported from its text in a
temporary folder with stand-ins for what it reaches outside the task: `datasets.load_dataset` (the per-split row counts
are set per case instead), the OpenAI client (it is never asked: open answers carry their judge score, and a missing
score meets a client that fails), decord's `VideoReader` (the case's frame count and rate), loguru, cv2, and
lmms_eval's submission helper. Three kinds of case:

- `prompt`: a row (any skill and split, options a Python-literal string with nested lists), a video (frames, rate), a
  subtitle file or none, the frame count → `infinibench_doc_to_text` (the whole text the model is given);
- `answer`: a row and a model reply → `infinibench_process_results` (the answer read, the gold letter or text);
- `aggregate`: results with judge scores and the split's row counts → `infinibench_aggregate_results` (its return value
  and the per-skill numbers of the table it prints);
- `frames`: a video (frames, rate) and a frame count → `prepare_prompt`'s frame times (caught where it hands them to
  `match_subtitles_to_frames`) and the frame indices they are `index / fps` of.
"""
import contextlib
import io
import json
import logging
import os
import random
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_common import _git, arg_parser, official_source, write_golden  # noqa: E402

REPO, DIR = "KerolosAtef/lmms-eval", "lmms_eval/tasks/infinibench/"
TEST_YAML_COMMIT = "c0cb65e1398e6db38f5b7df6033fd9c1e2df0b75"
OPEN = ["summarization", "spoiler_questions", "deep_context_understanding", "linking_multiple_events"]
MCQ = ["character_actions", "scene_transitions", "choronological_understanding", "global_appearance"]
SPLIT_DIR = {"train": "train", "dev": "validation", "test": "test"}
WORDS = "Sheldon Penny Leonard kitchen office laundry park tea cake phone ducks whiteboard it's \"quoted\" o'clock".split()


class _Video:
    "decord.VideoReader's stand-in: the frame count and rate of the case's video."
    table: dict = {}
    def __init__(self, path, *a, **k): self.n, self.fps = self.table[os.path.normpath(str(path))]
    def __len__(self): return self.n
    def get_avg_fps(self): return self.fps


class _Client:
    "The OpenAI client's stand-in: any request fails (open answers carry their judge score already)."
    def __init__(self, *a, **k): self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._fail))
    def _fail(self, **k): raise ValueError("no judge in golden generation")


def _stubs():
    mods = {"decord": types.SimpleNamespace(VideoReader=_Video), "cv2": types.ModuleType("cv2"),
            "datasets": types.SimpleNamespace(load_dataset=lambda *a, **k: []),
            "openai": types.SimpleNamespace(OpenAI=_Client), "loguru": types.SimpleNamespace(logger=logging.getLogger("lmms"))}
    for name in ("lmms_eval", "lmms_eval.tasks", "lmms_eval.tasks._task_utils"): mods[name] = types.ModuleType(name)
    mods["lmms_eval.tasks._task_utils.file_utils"] = types.SimpleNamespace(generate_submission_file=lambda *a, **k: None)
    sys.modules.update(mods)


def load_official(checkout: Path, workdir: Path) -> tuple:
    "The task module imported from its text in `workdir`, and the provenance of the files read."
    src, prov = official_source(checkout, DIR + "utils.py")
    task = workdir / "infinibench"; task.mkdir()
    (task / "utils.py").write_text(src, encoding="utf-8")
    yamls = {}
    for name in ("infinibench_validation.yaml", "infinibench_train.yaml"):
        yamls[name] = official_source(checkout, DIR + name)[0]
    yamls["infinibench_test.yaml"] = _git(checkout, "show", f"{TEST_YAML_COMMIT}:{DIR}infinibench_test.yaml")
    for name, text in yamls.items(): (task / name).write_text(text, encoding="utf-8")
    _stubs()
    import importlib.util
    old = os.getcwd(); os.chdir(workdir)
    try:
        spec = importlib.util.spec_from_file_location("infinibench_lmms_utils", task / "utils.py")
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    finally: os.chdir(old)
    mod.Download_Videos = True                       # the videos are the stand-in's; nothing is downloaded
    return mod, {**prov, "test_yaml_commit": TEST_YAML_COMMIT}


def _words(rng, k): return " ".join(rng.choice(WORDS) for _ in range(k))


def _srt(rng, duration_s: float) -> str:
    "A subtitle file: strictly increasing starts, some cues overlapping the next, some two-line, millisecond times."
    t, out = rng.uniform(0, 3), []
    while t < duration_s and len(out) < rng.randint(1, 60):
        d = rng.choice([rng.uniform(0.2, 4), rng.uniform(4, 12)])
        text = _words(rng, rng.randint(1, 6)) + (("\n" + _words(rng, rng.randint(1, 4))) if rng.random() < 0.3 else "")
        out.append((round(t, 3), round(t + d, 3), text))
        t += rng.choice([d + rng.uniform(0, 5), d * rng.uniform(0.2, 0.9)])    # a gap, or the next cue overlaps
    ts = lambda x: f"{int(x // 3600):02d}:{int(x // 60 % 60):02d}:{int(x % 60):02d},{round(x * 1000) % 1000:03d}"
    return "".join(f"{i}\n{ts(a)} --> {ts(b)}\n{txt}\n\n" for i, (a, b, txt) in enumerate(out, 1))


def _options(rng, skill) -> list:
    k = rng.randint(2, 6)
    if skill in ("scene_transitions", "character_actions", "choronological_understanding") and rng.random() < 0.7:
        return [[_words(rng, 2) for _ in range(rng.randint(2, 4))] for _ in range(k)]       # orderings: nested lists
    return [_words(rng, rng.randint(1, 5)) for _ in range(k - 1)] + (["I don't know"] if rng.random() < 0.5 else [_words(rng, 2)])


def _doc(rng, i, skill, split) -> dict:
    video = rng.choice(["TV_shows/videos/bbt/season_1/episode_1.mp4", "Movies/videos/tt0120338.mp4", f"TV_shows/videos/friends/season_2/episode_{i}.mp4"])
    doc = {"question_id": i, "skill_name": skill, "split": split, "video_path_mp4": video,
           "video_subtitles": video.replace("/videos/", "/subtitles/").replace(".mp4", ".srt"), "question": _words(rng, rng.randint(3, 12)) + "?"}
    if skill in MCQ:
        opts = _options(rng, skill)
        doc.update(options=repr(opts), answer_idx=rng.randrange(len(opts)), answer=repr(opts[0]))
    else: doc.update(options="", answer_idx="", answer=_words(rng, rng.randint(2, 10)))
    return doc


def _place(workdir: Path, doc: dict, n: int, fps: float, srt: str | None):
    "The case's video (a stand-in file and its frames/rate) and subtitles where the task looks for them."
    base = Path("./infinibench_cache") / SPLIT_DIR[doc["split"]]
    v = workdir / base / doc["video_path_mp4"]; v.parent.mkdir(parents=True, exist_ok=True); v.write_bytes(b"")
    _Video.table[os.path.normpath(str(base / doc["video_path_mp4"]))] = (n, fps)
    s = workdir / base / doc["video_subtitles"]
    if srt is None: s.unlink(missing_ok=True)
    else: s.parent.mkdir(parents=True, exist_ok=True); s.write_text(srt, encoding="utf-8")


def _kwargs(mod, split) -> dict:
    cfg = {"train": mod.config_file_train, "dev": mod.config_file_val, "test": mod.config_file_test}[split]
    return dict(cfg["lmms_eval_specific_kwargs"]["default"])


@contextlib.contextmanager
def _in(d):
    old = os.getcwd(); os.chdir(d)
    try: yield
    finally: os.chdir(old)


def prompt_cases(mod, workdir, rng, n) -> list[dict]:
    out = []
    for i in range(n):
        skill, split = rng.choice(OPEN + MCQ), rng.choice(["train", "dev", "test"])
        doc, kw = _doc(rng, i, skill, split), _kwargs(mod, split)
        frames, fps = rng.choice([rng.randint(1, 40), rng.randint(40, 5000), rng.randint(5000, 200000)]), rng.choice([3.0, 23.976, 25.0, 29.97, 30.0, rng.uniform(1, 60)])
        srt = _srt(rng, frames / fps) if rng.random() < 0.8 else None
        if rng.random() < 0.4: kw["n_frames"] = rng.randint(1, 1000)
        if rng.random() < 0.1: kw["use_subtitle"] = False
        _place(workdir, doc, frames, fps, srt)
        with _in(workdir): text = mod.infinibench_doc_to_text(dict(doc), kw)
        out.append({"kind": "prompt", "case": len(out), "doc": doc, "frames": frames, "fps": fps, "srt": srt,
                    "n_frames": kw["n_frames"], "use_subtitle": kw["use_subtitle"], "official": {"text": text}})
    return out


REPLIES = ["({L}) {w}", "{L}) {w}", "{L}", "The answer is ({L}).", "({L}) and ({M})", "() {w}", "({l}) {w}", "{w}", "",
           "Best option: ({L})", "(({L}))", "(A long answer) then ({L})", "Answer : {w}", "  {w}  "]


def answer_cases(mod, workdir, rng, n, start) -> list[dict]:
    out = []
    for i in range(n):
        skill, split = rng.choice(OPEN + MCQ), rng.choice(["train", "dev"])
        doc = _doc(rng, 10_000 + i, skill, split)
        _place(workdir, doc, 100, 25.0, None)
        L, M = rng.choice("ABCDEF"), rng.choice("ABCDEF")
        reply = rng.choice(REPLIES).format(L=L, M=M, l=L.lower(), w=_words(rng, rng.randint(1, 6)))
        with _in(workdir): got = mod.infinibench_process_results(dict(doc), [reply])["Overall_score"]
        out.append({"kind": "answer", "case": start + len(out), "doc": doc, "reply": reply,
                    "official": {"pred": got["pred"], "answer": got["answer"]}})
    return out


def aggregate_cases(mod, workdir, rng, n, start) -> list[dict]:
    out = []
    for _ in range(n):
        split = rng.choice(["train", "dev", "test"])
        counts = {s: rng.choice([0, rng.randint(1, 12)]) for s in OPEN + MCQ}
        results = []
        for s in OPEN + MCQ:
            for _ in range(rng.randint(0, counts[s])):
                if s in MCQ:
                    results.append({"task_type": s, "split": split, "answer": rng.choice("ABCD"), "pred": rng.choice(["A", "B", "C", "D", "B) x", "(C)"])})
                else:
                    results.append({"task_type": s, "split": split, "answer": "a", "pred": "p", "question": "q",
                                    "gpt_score": rng.choice([None, *range(11)])})
        rng.shuffle(results)
        mod.n_qa_per_skill = {split: dict(counts)}
        buf = io.StringIO()
        with _in(workdir), contextlib.redirect_stdout(buf):
            value = mod.infinibench_aggregate_results([dict(r) for r in results])
        printed = {}
        for line in buf.getvalue().splitlines():
            for s in OPEN + MCQ:
                if line.startswith(s.replace("_", " ").title() + " "): printed[s] = line.split()[-1]
        out.append({"kind": "aggregate", "case": start + len(out), "split": split, "counts": counts, "results": results,
                    "official": {"value": value, "printed": printed}})
    return out


FRAME_CASES = [(1000, 29.97, 768), (1000, 30000 / 1001, 768), (1000, 30000 / 1001, 7), (800, 25.0, 768), (769, 24.0, 768), (768, 30.0, 768),
               (24, 8.0, 768), (1, 25.0, 768), (100000, 23.976, 768), (54321, 25.0, 767), (5000, 29.97, 7), (5000, 29.97, 5),
               (333, 12.5, 1), (2, 2.0, 128)]


def frame_cases(mod, workdir, start) -> list[dict]:
    "The frame times the task computes for each (frames, rate, n_frames) of FRAME_CASES, and their frame indices."
    out, seen = [], []
    real = mod.match_subtitles_to_frames
    mod.match_subtitles_to_frames = lambda subs, times: (seen.append(list(times)), real(subs, times))[1]
    try:
        for i, (n, fps, k) in enumerate(FRAME_CASES):
            doc = {"split": "dev", "video_path_mp4": f"Movies/videos/frames_{i}.mp4", "video_subtitles": f"Movies/subtitles/frames_{i}.srt"}
            _place(workdir, doc, n, fps, "1\n00:00:00,000 --> 00:00:01,000\nx\n\n")
            base = os.path.join("./infinibench_cache", "validation")
            seen.clear()
            with _in(workdir): mod.prepare_prompt("q", os.path.join(base, doc["video_path_mp4"]), os.path.join(base, doc["video_subtitles"]), "summarization", k)
            (times,) = seen
            idx = [round(t * fps) for t in times]
            assert all(j / fps == t for j, t in zip(idx, times)), "a frame time is not index / fps"
            out.append({"kind": "frames", "case": start + len(out), "frames": n, "fps": fps, "n_frames": k,
                        "official": {"times": times, "indices": idx}})
    finally: mod.match_subtitles_to_frames = real
    return out


def main():
    ap = arg_parser(__doc__, "infinibench_lmms", REPO, 900)
    ap.add_argument("--deps", help="a folder holding pysrt (pip install --target DIR pysrt)")
    a = ap.parse_args()
    if a.deps: sys.path.insert(0, a.deps)
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as d:
        workdir = Path(d)
        mod, prov = load_official(Path(a.official), workdir)
        k = a.n // 3
        rows = prompt_cases(mod, workdir, rng, k)
        rows += answer_cases(mod, workdir, rng, k, len(rows))
        rows += aggregate_cases(mod, workdir, rng, a.n - 2 * k, len(rows))
        rows += frame_cases(mod, workdir, len(rows))
    write_golden("infinibench_lmms", {"repository": REPO, **prov}, rows, a.out)


if __name__ == "__main__":
    main()
