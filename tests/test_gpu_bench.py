"""benchmarks/gpu.py, the one-command GPU benchmark, run here with `--size cpu`: it writes a complete result table
(every section has its figures, each with a baseline from the same run, or a stated reason), keeps to its time budget
by skipping with reasons, and refuses `--size gpu` without a GPU. Timings are not checked."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu.py"
COLUMNS = ["section", "measurement", "setting", "result", "baseline (same run)", "vs baseline", "target"]
SECTIONS = ["1 Qwen2.5-VL, hf backend", "2 InternVL3, transformers backend", "3 dedup embeddings"]
REASONS = ("skipped:", "n/a:", "failed:", "out of memory:")
FIGURES = {SECTIONS[0]: ["prefill", "time per question", "CPU: frame decoding (PyAV) + processor", "throughput at batch 8",
                         "harness share at batch 8", "questions on one video, prefix reuse",
                         "identical answers with and without reuse"],
           SECTIONS[1]: ["prefill", "time per question", "CPU: frame decoding (PyAV) + processor"],
           SECTIONS[2]: ["embedding rate, MiniLM-L6 architecture, random weights", "100,000 questions embedded"]}


def run(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900, cwd=cwd)


def table(text: str) -> tuple[list, list]:
    "(header, rows) of the Markdown result table."
    lines = [l for l in text.splitlines() if l.startswith("|")]
    split = lambda l: [c.strip() for c in l.strip().strip("|").split("|")]
    return split(lines[0]), [split(l) for l in lines[2:]]


def by_section(rows) -> dict:
    out = {}
    for r in rows: out.setdefault(r[0], []).append(r)
    return out


def has_number(cell: str) -> bool: return any(c.isdigit() for c in cell) and not cell.startswith(REASONS)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu-bench")
    out = d / "gpu_cpu.md"
    return run(d, "--size", "cpu", "--out", str(out), "--budget-s", "900"), out


def test_cpu_run_fills_every_section(cpu_run):
    r, out = cpu_run
    assert r.returncode == 0, r.stderr[-3000:]
    text = out.read_text()
    header, rows = table(text)
    assert header == COLUMNS
    assert all(len(row) == len(COLUMNS) for row in rows)
    secs = by_section(rows)
    assert list(secs) == SECTIONS
    for sec, names in FIGURES.items():
        got = {}
        for row in secs[sec]: got.setdefault(row[1], []).append(row)
        for name in names:
            assert name in got, (sec, name)
            for row in got[name]:
                assert has_number(row[3]), row                     # a generous budget: nothing skipped, nothing failed
                assert row[4], row                                 # and each figure names its baseline
    for sec in SECTIONS[:2]:                                       # both architectures at the same frame counts
        for n in (4, 8, 16):
            assert any(row[1] == "time per question" and row[2].startswith(f"{n} frames") for row in secs[sec]), (sec, n)
    memory = [row for row in rows if row[1] == "peak GPU memory"]
    assert len(memory) == 6 and all(row[3].startswith("n/a: no GPU") for row in memory)
    targets = {row[1]: row[6] for row in rows if row[6]}
    assert set(targets) == {"questions on one video, prefix reuse", "identical answers with and without reuse",
                            "harness share at batch 8", "100,000 questions embedded"}
    assert all(t.endswith(("met", "NOT met")) for t in targets.values())
    assert "NOT GPU numbers" in text                                # CPU figures are never presented as GPU figures
    assert "GPU decoders that decoded a frame of it here: none" in text
    assert "Machine:" in text and "Targets:" in text


def test_budget_exceeded_skips_with_reasons(tmp_path):
    out = tmp_path / "r.md"
    r = run(tmp_path, "--size", "cpu", "--out", str(out), "--budget-s", "0.001")   # spent before the first section starts, however fast this machine
    assert r.returncode == 0, r.stderr[-3000:]
    header, rows = table(out.read_text())
    assert header == COLUMNS and list(by_section(rows)) == SECTIONS
    for row in rows:
        assert row[3].startswith("skipped:") and "section's" in row[3], row


def test_gpu_size_without_gpu_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available(): pytest.skip("this machine has a GPU: --size gpu is not a mistake here")
    out = tmp_path / "gpu.md"
    r = run(tmp_path, "--size", "gpu", "--out", str(out))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not out.exists()


def test_readme_gives_the_scripts_device_command():
    "The prepared command in DEVELOPERS 'Speed on a GPU' is the one at the top of the script (so it runs as printed); the speed guide gives the plain one."
    import re
    squash = lambda t: " ".join(t.replace("\\\n", " ").split())
    dev = (REPO / "DEVELOPERS.md").read_text(encoding="utf-8")
    section = dev[dev.index("## Speed on a GPU"):]
    guide = (REPO / "nbs" / "guides" / "speed.md").read_text(encoding="utf-8")
    assert "python benchmarks/gpu.py --size gpu --out benchmarks/results/gpu.md" in guide
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    assert "--size gpu" in block and "--prepare .whl" in section
    assert squash(block) in squash(SCRIPT.read_text(encoding="utf-8"))
