"""README.md is the front page written from nbs/index.ipynb (tools/readme.py, nbdev_readme's rendering): it equals the
generated text, stays within a five-minute read, links only to files that exist, and speaks only of the product."""
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _tool():
    spec = importlib.util.spec_from_file_location("readme_tool", REPO / "tools" / "readme.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def test_readme_is_written_from_the_index_notebook():
    tool = _tool()
    assert tool.readme_notebook() == REPO / "nbs" / "index.ipynb"
    assert README.read_text(encoding="utf-8") == tool.render(tool.readme_notebook()), \
        "README.md differs from nbs/index.ipynb: run python tools/readme.py"


def test_the_check_fails_in_one_line_when_the_readme_differs(tmp_path):
    "`tools/readme.py --check` (make check-sync) on a checkout whose README was edited by hand: exit 1, one line."
    for name in ("settings.ini", "README.md"): (tmp_path / name).write_bytes((REPO / name).read_bytes())
    (tmp_path / "tools").mkdir(); (tmp_path / "tools" / "readme.py").write_bytes((REPO / "tools" / "readme.py").read_bytes())
    (tmp_path / "nbs").mkdir(); (tmp_path / "nbs" / "index.ipynb").write_bytes((REPO / "nbs" / "index.ipynb").read_bytes())
    check = lambda: subprocess.run([sys.executable, "tools/readme.py", "--check"], cwd=tmp_path, capture_output=True, text=True)
    assert check().returncode == 0
    (tmp_path / "README.md").write_text(README.read_text(encoding="utf-8") + "\nan edit by hand\n", encoding="utf-8")
    r = check()
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "nbs/index.ipynb" in r.stderr
    assert subprocess.run([sys.executable, "tools/readme.py"], cwd=tmp_path).returncode == 0 and check().returncode == 0


def test_readme_is_a_five_minute_read():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250 and len(text.split()) <= 2500, (len(text.splitlines()), len(text.split()))


def test_readme_shows_a_rendered_example_and_the_safe_first_run():
    text = README.read_text(encoding="utf-8")
    assert "``` python\n" in text and "\n| subset | language | n |" in text          # the demo's table, as Markdown
    assert "--dry-run" in text and "--limit 20" in text and "vlmlens data get minerva --videos --limit 20" in text
    assert "pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu" in text
    for bench in ("InfiniBench", "MINERVA", "CURVE", "HinTel-AlignBench", "demo"): assert f"**{bench}" in text or bench in text


def test_readme_and_guides_link_to_files_that_exist():
    pages = [README, *sorted((REPO / "nbs" / "guides").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target): continue
            if not (page.parent / target).exists(): broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_front_page_and_guides_speak_only_of_the_product():
    process = re.compile(r"\bissues? #?\d+|\bthis session\b|\blent\b|device tool|\bagents?\b|give_back|budget_left|carry=", re.I)
    machine = re.compile(r"\blent\b|device tool|\bagents?\b|give_back|budget_left|carry=", re.I)   # DEVELOPERS quotes the notebook rule
    hits = []
    for page in [README, REPO / "DEVELOPERS.md", *sorted((REPO / "nbs" / "guides").glob("*.md"))]:
        words = machine if page.name == "DEVELOPERS.md" else process
        hits += [f"{page.name}: {m.group(0)}" for m in words.finditer(page.read_text(encoding="utf-8"))]
    assert not hits, hits


def test_the_site_sidebar_lists_every_notebook_and_guide():
    import yaml
    side = yaml.safe_load((REPO / "nbs" / "sidebar.yml").read_text(encoding="utf-8"))
    listed = set()
    def walk(items):
        for it in items:
            if isinstance(it, str): listed.add(it)
            else: walk(it.get("contents", []))
    walk(side["website"]["sidebar"]["contents"])
    want = {p.name for p in (REPO / "nbs").glob("*.ipynb")} | {f"guides/{p.name}" for p in (REPO / "nbs" / "guides").glob("*.md")}
    assert listed == want, (want - listed, listed - want)
    quarto = yaml.safe_load((REPO / "nbs" / "_quarto.yml").read_text(encoding="utf-8"))
    assert quarto["project"]["type"] == "website" and "sidebar.yml" in quarto["metadata-files"]
    assert re.search(r"^custom_sidebar\s*=\s*True", (REPO / "settings.ini").read_text(), re.M)   # nbdev keeps this sidebar
