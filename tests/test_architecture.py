"""The shape of the package and its notebooks: imports point down, no cycles, optional extras stay optional,
notebooks a newcomer can edit (small export cells, one way to split a class, examples under functions)."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "vlmlens"
NBS = sorted((ROOT / "nbs").glob("*.ipynb"))
MAX_EXPORT_LINES = 40
MAX_EXPORT_CHARS = 3000  # ~40 lines of 75 characters
MAX_LINE_CHARS = 180


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        if p.name == "_modidx.py": continue
        rel = p.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        yield name, p


def test_import_contract():
    "The layers contract in pyproject.toml (import-linter): no module imports a layer above its own."
    r = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_no_import_cycles():
    "No two vlmlens modules import each other, directly or through others."
    import grimp
    import networkx as nx
    g = grimp.build_graph("vlmlens")
    dg = nx.DiGraph()
    for m in g.modules:
        for dep in g.find_modules_directly_imported_by(m): dg.add_edge(m, dep)
    cycles = [c for c in nx.simple_cycles(dg) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles[:5]}"


def _inner_imports(tree):
    "Import statements inside function bodies that import vlmlens modules."
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)): continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "vlmlens"):
                out.append((node.lineno, node.module))
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "vlmlens" for a in node.names):
                out.append((node.lineno, node.names[0].name))
    return out


def test_package_imports_at_top_level():
    "Imports between vlmlens modules are module-level, so that the import graph is visible (plugins load by name)."
    bad = []
    for name, p in _modules():
        for lineno, mod in _inner_imports(ast.parse(p.read_text(encoding="utf-8"))):
            bad.append(f"{p.relative_to(ROOT)}:{lineno} imports {mod} inside a function")
    assert not bad, "\n".join(bad)


def test_core_install_needs_no_local_model_stack():
    "`pip install vlmlens` (no extras) runs API evaluations: importing the run path loads no torch/transformers."
    code = ("import sys, vlmlens.cli, vlmlens.runner, vlmlens.models.openai, vlmlens.models.gemini, vlmlens.benchmarks.demo;"
            "heavy = [m for m in ('torch', 'transformers', 'torchvision', 'matplotlib', 'networkx', 'papermill') if m in sys.modules];"
            "print(','.join(heavy))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "", f"imported on the API path: {r.stdout.strip()}"


def _cells(nb_path):
    return json.loads(nb_path.read_text(encoding="utf-8"))["cells"]


def _src(c): return "".join(c["source"])


def _is_export(c): return c["cell_type"] == "code" and re.match(r"#\|\s*export", _src(c)) is not None


@pytest.mark.parametrize("nb", NBS, ids=lambda p: p.name)
def test_export_cells_are_small(nb):
    "One function (or a class's core) per export cell: at most ~40 lines."
    big = [(len(_src(c).splitlines()), _src(c).splitlines()[1][:60] if len(_src(c).splitlines()) > 1 else "")
           for c in _cells(nb) if _is_export(c) and len(_src(c).splitlines()) - 1 > MAX_EXPORT_LINES]
    assert not big, f"{nb.name}: export cells over {MAX_EXPORT_LINES} lines: {big}"


def _first_def(src):
    "The cell's first definition (or its first code line), to name it in a message."
    m = re.search(r"^(?:async def|def|class) (\w+)|^(\w+)\s*[:=]", src, re.M)
    if m: return m.group(1) or m.group(2)
    lines = src.splitlines()
    return lines[1][:60] if len(lines) > 1 else ""


@pytest.mark.parametrize("nb", NBS, ids=lambda p: p.name)
def test_export_cells_are_small_in_characters(nb):
    "Lines are counted in characters too: an export cell holds at most ~3,000 characters, and no line exceeds 180."
    big, wide = [], []
    for c in _cells(nb):
        if not _is_export(c): continue
        src = _src(c)
        if len(src) > MAX_EXPORT_CHARS: big.append((_first_def(src), len(src)))
        wide += [(_first_def(src), len(l)) for l in src.splitlines() if len(l) > MAX_LINE_CHARS]
    assert not big, f"{nb.name}: export cells over {MAX_EXPORT_CHARS} characters: {big}"
    assert not wide, f"{nb.name}: export-cell lines over {MAX_LINE_CHARS} characters: {wide}"


@pytest.mark.parametrize("nb", NBS, ids=lambda p: p.name)
def test_one_way_to_split_a_class(nb):
    "Methods added after a class is defined use fastcore's @patch, never `Cls.name = func` assignments."
    pat = re.compile(r"^[A-Z]\w*\.\w+(\s*,\s*[A-Z]\w*\.\w+)*\s*=\s*[a-z_]", re.M)
    bad = [pat.search(_src(c)).group(0) for c in _cells(nb) if _is_export(c) and pat.search(_src(c))]
    assert not bad, f"{nb.name}: class patched by assignment: {bad}"


@pytest.mark.parametrize("nb", NBS, ids=lambda p: p.name)
def test_public_functions_have_an_example(nb):
    "Every export cell that defines a public function or class is followed by a (non-export) example/test cell."
    cells = [c for c in _cells(nb) if c["cell_type"] == "code"]
    missing = []
    for i, c in enumerate(cells):
        if not _is_export(c): continue
        names = re.findall(r"^(?:def|class|async def) ([A-Za-z]\w*)", _src(c), re.M)
        if not names: continue
        nxt = cells[i + 1] if i + 1 < len(cells) else None
        if nxt is None or _is_export(nxt): missing.append(names[0])
    assert not missing, f"{nb.name}: no example/test cell right after: {missing}"


@pytest.mark.parametrize("nb", NBS, ids=lambda p: p.name)
def test_notebooks_carry_no_process_notes(nb):
    "Notebooks read like a paper appendix: no 'issue N' or session notes."
    text = "\n".join(_src(c) for c in _cells(nb))
    hits = re.findall(r".{0,30}\bissues? #?\d+.{0,30}", text, re.I)
    assert not hits, f"{nb.name}: {hits[:3]}"


def test_index_notebook_is_the_front_page():
    "settings.ini names an index notebook that exists and is a real front page."
    ini = (ROOT / "settings.ini").read_text(encoding="utf-8")
    name = re.search(r"^readme_nb\s*=\s*(\S+)", ini, re.M).group(1)
    nb = ROOT / "nbs" / name
    assert nb.exists(), f"settings.ini readme_nb = {name}, but nbs/{name} does not exist"
    assert any(c["cell_type"] == "code" and c.get("outputs") for c in _cells(nb)), "index has no rendered example"


def test_notebooks_have_rendered_examples():
    "Each module notebook shows at least one rendered output (an example, a table, a show_doc)."
    bare = [nb.name for nb in NBS if not any(c["cell_type"] == "code" and c.get("outputs") for c in _cells(nb))]
    assert not bare, f"notebooks with no rendered output: {bare}"


def test_backends_transport_options_are_in_the_shared_vocabulary():
    "A backend's transport options (not hashed) must be in core.TRANSPORT_KWARGS, or a run's hash would depend on them."
    import importlib
    from vlmlens.core import TRANSPORT_KWARGS
    from vlmlens.models.registry import BACKEND_MODULES
    for kind, mod in BACKEND_MODULES.items():
        m = importlib.import_module(mod)
        for obj in vars(m).values():
            extra = set(getattr(obj, "transport_kwargs", ()) or ()) - set(TRANSPORT_KWARGS) if isinstance(obj, type) else set()
            assert not extra, f"{mod}.{obj.__name__}: transport options {sorted(extra)} are not in core.TRANSPORT_KWARGS"


HOMES = {"vlmlens.secrets": ["REDACTED", "looks_secret", "remember_secret", "secret_values", "scrub_text", "scrub_secrets"],
         "vlmlens.environment": ["environment_info", "package_git_info"],
         "vlmlens.core": ["parse_kv"]}


def test_each_concept_exported_by_its_own_module():
    "Secret scrubbing, run-environment info and KEY=VALUE parsing live in the module named for them, and nowhere else."
    import importlib
    owners = {}
    for name, _ in _modules():
        for n in getattr(importlib.import_module(name), "__all__", []): owners.setdefault(n, []).append(name)
    for home, names in HOMES.items():
        for n in names: assert owners.get(n) == [home], f"{n} is exported by {owners.get(n)}, expected only {home}"


#: the words of the benchmarks vlmlens ships and of the datasets their videos come from ("demo" is also a plain word)
BENCHMARK_WORDS = ("tvqa", "infinibench", "minerva", "curve", "hd-epic", "hintel")


def test_the_data_module_names_no_benchmark():
    "Adding a benchmark never edits vlmlens.data: its inputs to `data prepare` and the words it prints come with its release."
    from vlmlens.benchmarks.base import known_benchmarks
    words = set(BENCHMARK_WORDS) | set(known_benchmarks()) - {"demo"}
    text = (PKG / "data.py").read_text(encoding="utf-8")
    found = sorted({m.group(0).lower() for m in re.finditer("|".join(map(re.escape, sorted(words))), text, re.I)})
    assert not found, f"vlmlens/data.py names {found}"
