"""Every registered benchmark through one contract: load, prompt, parse, score, summary (and its table), view, resume.

The benchmarks are the registry's (`known_benchmarks()`: vlmlens' own, plus every `vlmlens.benchmarks` entry point),
never a hand list. The guide's Video-MME-style benchmark (`nbs/guide_own_benchmark.ipynb`) joins them the way a
user's package would: its cell is written into a module of a tiny installed distribution (a `.dist-info` folder
with `entry_points.txt` on `sys.path`), so it is found through `importlib.metadata` like any package's. A
benchmark with no example data below fails, so a new benchmark cannot join the registry untested. One tiny model
answers for all of them (loaded once), two items each.
"""
import atexit
import importlib
import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from vlmlens.benchmarks.base import get_benchmark, known_benchmarks
from vlmlens.core import Request, RunConfig
from vlmlens.models.registry import plugins

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "nbs" / "guide_own_benchmark.ipynb"
MARK = "# videomme.py"                                  # the guide's cell holding the whole benchmark


def guide_benchmark_code() -> str:
    "The guide's cell that holds the whole benchmark (the module a user's package would have)."
    cells = json.loads(GUIDE.read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith(MARK))


def install_guide_plugin(site: Path) -> Path:
    "The guide's benchmark as an installed distribution in `site`: its module plus a dist-info naming the entry point."
    (site / "vlmlens_guide_videomme.py").write_text(guide_benchmark_code() + "\n", encoding="utf-8")
    info = site / "vlmlens_guide_videomme-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vlmlens-guide-videomme\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[vlmlens.benchmarks]\nvideomme = vlmlens_guide_videomme:VideoMME\n", encoding="utf-8")
    return site


SITE = install_guide_plugin(Path(tempfile.mkdtemp(prefix="vlmlens-plugin-")))
atexit.register(shutil.rmtree, SITE, True)


@contextmanager
def installed():
    "The guide's distribution importable and discoverable while the block runs."
    sys.path.insert(0, str(SITE)); importlib.invalidate_caches()
    try: yield
    finally:
        sys.path.remove(str(SITE)); sys.modules.pop("vlmlens_guide_videomme", None)


with installed(): NAMES = known_benchmarks()


# --- a few items of each benchmark in its own format -----------------------------------------------------------

def _hintel(tmp):
    from vlmlens.benchmarks.hintel import build_synthetic_hintel
    return {"data_path": str(build_synthetic_hintel(tmp / "hintel", n_per_subset=1))}

def _infinibench(tmp):
    from vlmlens.benchmarks.infinibench import make_synthetic_episode
    return {"data_path": str(make_synthetic_episode(tmp / "ib", minutes=0.5, fps=1, size=(64, 36))["rows"])}

def _neptune(which):
    def build(tmp):
        from test_minerva import make_data
        return {"data_path": str(make_data(tmp, which))}
    return build

def _minerva_ego(tmp):
    from test_data_neptune import EGO_ROWS
    from test_minerva import write_videos
    write_videos(tmp / "ego" / "videos", [r["video_id"] for r in EGO_ROWS])
    (tmp / "ego" / "ego.json").write_text(json.dumps(EGO_ROWS), encoding="utf-8")
    return {"data_path": str(tmp / "ego" / "ego.json")}

EXAMPLES = {"demo": lambda tmp: {}, "hintel": _hintel, "infinibench": _infinibench, "minerva": _neptune("minerva"),
            "curve": _neptune("curve"), "minerva-ego": _minerva_ego,
            "videomme": lambda tmp: {"data_path": str(ROOT / "tests" / "data" / "videomme" / "videomme.jsonl")}}


@pytest.fixture(scope="module")
def tiny():
    from vlmlens.models.registry import load_backend
    b = load_backend("tiny-qwen2.5-vl", progress=False)
    yield b
    b.close()


def test_the_guides_benchmark_is_found_through_its_entry_point():
    with installed():
        assert plugins("vlmlens.benchmarks") == {"videomme": "vlmlens_guide_videomme:VideoMME"}
        assert type(get_benchmark("videomme")).__module__ == "vlmlens_guide_videomme"
    assert "videomme" in NAMES and {"demo", "hintel", "infinibench", "minerva", "curve"} <= set(NAMES)
    assert "videomme" not in known_benchmarks()                      # only while the distribution is installed


def lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_benchmark_keeps_the_contract(name, tiny, tmp_path):
    assert name in EXAMPLES, f"benchmark {name!r} is registered but has no example data in tests/test_conformance.py"
    with installed():
        cfg = RunConfig(name, "tiny-qwen2.5-vl", limit=2, num_frames=2, max_new_tokens=8, judge="none", force=True,
                        progress=False, output_root=str(tmp_path / "runs"), run_name="c", **EXAMPLES[name](tmp_path))
        bench = get_benchmark(name)
        samples, _ = bench.load(cfg)                                  # load
        assert samples and all(s.id and s.benchmark for s in samples)
        req = bench.build_request(samples[0], cfg)                    # prompt
        assert isinstance(req, Request) and any(m["role"] == "user" for m in req.messages)
        parsed = bench.parse(samples[0], "A")                         # parse
        assert isinstance(parsed, tuple) and len(parsed) == 2
        from vlmlens.runner import run
        s = run(cfg, backend=tiny)                                    # generate, score, summary
        run_dir = tmp_path / "runs" / "c"
        preds = lines(run_dir / "predictions.jsonl")
        assert s["overall"]["n"] == len(preds) == 2 and all(p["raw"] is not None or p["error"] for p in preds)
        import pandas as pd
        scores = pd.read_csv(run_dir / "scores.csv")
        assert len(scores) == 2 and "score" in scores.columns
        assert json.loads((run_dir / "summary.json").read_text())["overall"] == s["overall"]
        from vlmlens.report import summary_table
        assert len(summary_table(s).data)                             # the summary reads as a table
        from vlmlens.view import write_site
        page = write_site(run_dir, tmp_path / "view", progress=False)  # the run opens in the viewer, its items listed
        assert page.is_file() and all(p["sample_id"] in (page.parent / "data.js").read_text(encoding="utf-8") for p in preds)
        again = run(cfg, backend=tiny)                                # resume: nothing asked twice, the same numbers
        assert len(lines(run_dir / "predictions.jsonl")) == 2 and again["overall"] == s["overall"]
