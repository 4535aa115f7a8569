"""The guides under nbs/guides/: every ```bash block is executed by a test, as printed.

`test_every_guide_block_is_run_by_a_test` is the guard: each test that runs guide blocks declares the sections it
runs (`GUIDE_BLOCKS`, read statically from every tests/test_*.py); a block in no declared section fails the guard,
unless it is listed in NOT_RUN with the reason no test can run it (a GPU host, a cluster, the official code's
checkouts). The other tests here run the guide blocks that need only the demo benchmark, the tiny offline model and
the loopback OpenAI server, in this process (`vlmlens.cli.main`), from an empty working folder."""
import glob
import importlib
import json
import re
import shutil

import pytest

import guides
from guides import blocks, run_commands, unrun_blocks

GUIDE_BLOCKS = [("running.md", "## Run, rescore, report"), ("view_compare.md", None), ("hintel.md", "## Evaluate an API model"),
                ("infinibench.md", "## Scoring and protocols"), ("reports.md", "## A run beside the paper")]

# (page, first line of the block): why no test runs it. Keep this short; a test that runs a block removes it here.
NOT_RUN = {
    ("running.md", "# a papermill sweep: models × languages × frames …, one executed notebook per run"):
        "six papermill kernels, about 4 minutes on 2 CPUs (tests/test_sweep.py runs `vlmlens sweep` on a smaller demo grid)",
    ("hintel.md", "vlmlens sweep evalnb/sweeps/hintel.yaml     # the paper's roster × en/hi/te (standard)"):
        "the paper's roster: paid API models and local models of 4-27B parameters",
    ("infinibench.md", "vlmlens run --benchmark infinibench --data-path rows.json --split validation --model qwen2.5-vl-7b \\"):
        "a local 7B model on the user's copy of the videos, and the paper's roster",
    ("minerva.md", "vlmlens run --benchmark minerva --data-path minerva.json --benchmark-kwarg video_root=/videos --model qwen2.5-vl-7b --frames 64"):
        "a local 7B model and Gemini 2.5 Pro on the user's videos, and the paper's roster",
    ("scale.md", "# GPU host: the server shards the model (tensor parallel) and batches requests; one video per prompt"):
        "a GPU host running vLLM",
    ("scale.md", "vlmlens sweep evalnb/sweeps/curve.yaml --executor ray      # each run a Ray task with its CPUs/GPUs"):
        "a Ray cluster or Slurm, and the paper's roster (tests/test_scale_sweep.py runs both executors on a tiny sweep)",
    ("scale.md", "torchrun --nproc-per-node 4 -m vlmlens run --benchmark infinibench --data-path rows.json --model qwen2.5-vl-7b --frames 256"):
        "four GPUs (tests/test_scale_torchrun.py runs the same launch on CPU processes)",
    ("scale.md", "vllm serve Qwen/Qwen2.5-VL-7B-Instruct --enable-prefix-caching --tensor-parallel-size 4 --limit-mm-per-prompt '{\"image\": 256}'"):
        "a GPU host running vLLM",
    ("speed.md", "python benchmarks/gpu.py --size gpu --out benchmarks/results/gpu.md   # about 8 minutes (--budget-s)"):
        "a GPU (the same script's CPU size runs in tests/test_gpu_bench.py)",
    ("fidelity.md", "python tools/golden_vqa.py --official /path/to/VQA                  # git clone https://github.com/GT-Vision-Lab/VQA"):
        "checkouts of the official repositories, which the tests do not store (tests/test_golden.py checks their stored outputs)",
}


def test_every_guide_block_is_run_by_a_test():
    missing = unrun_blocks(not_run=NOT_RUN)
    assert not missing, f"guide blocks no test runs (declare them in a test's GUIDE_BLOCKS): {missing}"
    for (page, heading), files in guides.declared().items():
        assert blocks(page, heading), f"{files}: GUIDE_BLOCKS names {page} {heading!r}, which has no bash block"
    claimed = {(p, b.splitlines()[0]) for (p, h) in guides.declared() for b in blocks(p, h)}
    present = {(q.name, b.splitlines()[0]) for q in guides.GUIDES.glob("*.md") for b in blocks(q.name)}
    assert set(NOT_RUN) <= present, f"NOT_RUN names blocks the guides no longer have: {set(NOT_RUN) - present}"
    assert not set(NOT_RUN) & claimed, f"NOT_RUN names blocks a test runs: {set(NOT_RUN) & claimed}"


def test_the_guard_catches_a_block_no_test_runs(tmp_path):
    root = tmp_path / "guides"
    shutil.copytree(guides.GUIDES, root)
    assert unrun_blocks(root=root, not_run=NOT_RUN) == []
    page = root / "hintel.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n## Planted\n\n```bash\nvlmlens data list --planted\n```\n", encoding="utf-8")
    assert unrun_blocks(root=root, not_run=NOT_RUN) == ["hintel.md: vlmlens data list --planted"]
    page.write_text(page.read_text(encoding="utf-8").replace("## Evaluate an API model", "## Evaluate a model"), encoding="utf-8")
    assert "hintel.md: vlmlens data list --planted" in unrun_blocks(root=root, not_run=NOT_RUN)       # a renamed section is no longer run
    assert any(m.startswith("hintel.md: python -c") for m in unrun_blocks(root=root, not_run=NOT_RUN))


def test_every_section_of_a_page_is_cut_at_its_next_heading():
    sec = guides.section("hintel.md", "## Evaluate an API model")
    assert sec.startswith("## Evaluate an API model\n") and "## The paper's roster" not in sec
    with pytest.raises(KeyError): guides.section("hintel.md", "## No such heading")


# Files a page names that a command on it writes, and the placeholders DEVELOPERS.md uses for "any notebook/module".
WRITTEN = {"benchmarks/results/gpu.md", "nbs/NN_name.ipynb", "vlmlens/name.py"}


def named_files_and_modules(text: str) -> tuple[set, set]:
    "The repository paths (`vlmlens/assets/...`, `tests/...`) and the `vlmlens.x.y` names a page writes in backticks."
    paths = {re.sub(r"[:#].*$", "", m).rstrip(".,;)") for m in re.findall(r"`([^`\s]+)`", text)
             if re.match(r"(vlmlens|tests|tools|evalnb|benchmarks|docs|nbs)/", m)}
    return paths - WRITTEN, set(re.findall(r"\b(vlmlens(?:\.[A-Za-z_]\w*)+)", text))


def resolves(name: str) -> bool:
    "Whether `vlmlens.a.b` is a module, or an attribute reached from the longest importable module prefix."
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try: obj = importlib.import_module(".".join(parts[:i]))
        except ImportError: continue
        for a in parts[i:]:
            if not hasattr(obj, a): return False
            obj = getattr(obj, a)
        return True
    return False


def test_every_file_and_module_the_pages_name_exists():
    "No stale names: every package path (`<benchmark>` matches any) and `vlmlens.` name on the front page, DEVELOPERS.md and the guides is there."
    pages = [guides.REPO / "README.md", guides.REPO / "DEVELOPERS.md", *sorted(guides.GUIDES.glob("*.md"))]
    stale = []
    for page in pages:
        paths, names = named_files_and_modules(page.read_text(encoding="utf-8"))
        stale += [f"{page.name}: {p}" for p in sorted(paths) if not glob.glob(str(guides.REPO / re.sub(r"<[^>]+>", "*", p)))]
        stale += [f"{page.name}: {n}" for n in sorted(names) if not resolves(n)]
    assert not stale, f"names that are not in the package: {stale}"
    paths, names = named_files_and_modules("`vlmlens/assets/paper_numbers.json` and `vlmlens.models.hf`, `vlmlens/assets/paper_numbers/<b>.json`")
    assert [p for p in sorted(paths) if not glob.glob(str(guides.REPO / re.sub(r"<[^>]+>", "*", p)))] == ["vlmlens/assets/paper_numbers.json"]
    assert [n for n in names if not resolves(n)] == ["vlmlens.models.hf"]


def test_running_guide_runs_as_printed(tmp_path, monkeypatch, capsys):
    "Run, rescore and report on the demo with the tiny model, as running.md prints it."
    monkeypatch.chdir(tmp_path)
    [block] = blocks(*GUIDE_BLOCKS[0])
    ran = run_commands(block)
    assert [c.split()[1] for c in ran] == ["run", "score", "report"]
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "outputs" / "demo-hi" / "summary.json").read_text())
    assert summary["overall"]["n"] == 8 and summary["overall"]["n_errors"] == 0
    assert "tiny-qwen2.5-vl" in out and "| all items |" in out          # the Markdown report of the run


def test_view_and_compare_guide_runs_as_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    look, compare = blocks("view_compare.md")
    run_commands(look)
    assert (tmp_path / "outputs" / "demo-view" / "index.html").is_file()
    capsys.readouterr()
    run_commands(compare)
    out = capsys.readouterr().out
    assert "demo-frames-4" in out and "demo-frames-1" in out and "|" in out   # the Markdown table names both runs


def test_hintel_api_guide_runs_as_printed(tmp_path, monkeypatch, capsys, server):
    "An API model on a synthetic HinTel copy: the dry run sends nothing, the run asks the loopback OpenAI server."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.000000000000")
    server.responder = lambda call: "1" if "semantically similar" in call.text else None     # the judge says similar
    [block] = blocks("hintel.md", "## Evaluate an API model")
    cmds = guides.commands(block)
    run_commands("\n".join(cmds[:2]))                                   # the copy, then --dry-run
    assert "nothing sent or created" in capsys.readouterr().out and not server.calls and not (tmp_path / "outputs").exists()
    run_commands("\n".join(cmds[2:]))                                   # (answers may come from the session's API cache)
    from vlmlens.store import RunSet
    runs = {r.config.model: r for r in RunSet.discover(tmp_path / "outputs").runs}
    api = runs["gpt-4.1"]
    assert api.summary["overall"]["n"] == 20 and api.summary["overall"]["n_errors"] == 0
    assert len(api.judgments()) > 0 and "gpt-4.1-2025-04-14" in json.dumps(api.summary)          # the paper's judge on misses
    assert runs["tiny-qwen2.5-vl"].summary["overall"]["n"] == 4
    out = capsys.readouterr().out
    assert "gpt-4.1" in out and "tiny-qwen2.5-vl" in out


def test_infinibench_offline_guide_line_runs_as_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    [block] = blocks("infinibench.md", "## Scoring and protocols")
    run_commands(block)
    [summary] = list((tmp_path / "outputs").rglob("summary.json"))
    assert json.loads(summary.read_text())["overall"]["n"] == 3


def test_reports_guide_runs_as_printed(tmp_path, monkeypatch, capsys, server):
    "A synthetic HinTel run of GPT-4.1 (loopback), as LaTeX and beside the paper, as reports.md prints it."
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.000000000000")
    server.responder = lambda call: "1" if "semantically similar" in call.text else None
    [block] = blocks("reports.md", "## A run beside the paper")
    run_commands(block)
    out = capsys.readouterr().out
    assert "\\begin{table" in out and "\\toprule" in out                # the LaTeX report
    assert "HinTel Table 3" in out and "not the paper's items" in out      # ours beside the paper, no verdict on synthetic items
