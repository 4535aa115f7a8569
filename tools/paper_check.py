"""Check what vlmlens emits as a paper would take it: every LaTeX table compiled inside a two-column paper (6.9 in text
width, 3.3 in columns, 10 pt, booktabs; pdfLaTeX, or XeLaTeX with fontspec for a table that says it needs it), alone
and all of one folder together, and every saved figure measured.

    python tools/paper_check.py outputs/report [more folders or .tex/.pdf/.png files]

One line per problem, naming the file: a compile error, an overfull box (past the column or text width), text set
below 8 pt (a resize or a smaller size command), a float taller than the page or lost, a label defined twice, a
missing glyph; a figure wider than 6.9 in or with Type 3 fonts. Exit 1 when there is a problem, 0 when everything
fits. TeX Live comes with `make tex`; without an engine the tables are reported as not checked."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

ENGINES = {"pdflatex": shutil.which("pdflatex"), "xelatex": shutil.which("xelatex")}
PREAMBLE = r"""\documentclass[twocolumn,10pt]{article}
\usepackage[letterpaper,textwidth=6.9in,columnsep=0.3in,textheight=9in]{geometry}
\usepackage{booktabs}
\usepackage{graphicx}
"""
TEXT_IN = 6.9
SHRUNK = re.compile(r"\\(resizebox|scalebox|tiny|scriptsize)\b")
LOG_PROBLEMS = ("Overfull \\hbox", "Missing character", "Float too large", "Float(s) lost", "multiply defined",
                "Too many unprocessed floats")


def engine_for(tex: str) -> str:
    "xelatex for a table that names XeLaTeX in its comments, else pdflatex."
    return "xelatex" if re.search(r"^%.*XeLaTeX", tex, re.M) else "pdflatex"


def compile_table(tex: str, folder: Path, name: str = "table") -> list[str]:
    "Problems compiling `tex` inside a paper-like page: errors, overfull boxes, text below 8 pt, floats too tall, labels twice."
    shrunk = [f"{name}: text set below 8 pt ({m.group(0)})" for m in SHRUNK.finditer(tex)]
    engine = engine_for(tex)
    if not ENGINES[engine]: return shrunk + [f"{name}: not compiled ({engine} is not installed: make tex)"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-body.tex").write_text(tex, encoding="utf-8")
    doc = PREAMBLE + (r"\usepackage{fontspec}" + "\n" if engine == "xelatex" else "") + \
        rf"\begin{{document}}\input{{{name}-body.tex}}\end{{document}}" + "\n"
    (folder / f"{name}.tex").write_text(doc, encoding="utf-8")
    p = subprocess.run([ENGINES[engine], "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=folder,
                       capture_output=True, text=True, errors="replace", timeout=300)
    log = (folder / f"{name}.log").read_text(encoding="utf-8", errors="replace") if (folder / f"{name}.log").exists() else p.stdout
    problems = [l for l in log.splitlines() if l.startswith("!") or any(x in l for x in LOG_PROBLEMS)]
    if p.returncode and not problems: problems = [f"{engine} exited {p.returncode}"]
    return shrunk + [f"{name} ({engine}): {l}" for l in problems]


def compile_tables(texs: dict, folder: Path, name: str = "tables") -> list[str]:
    "Problems compiling every table of one output in one document per engine (each flushed with \\clearpage)."
    by_engine: dict = {}
    for k, tex in texs.items(): by_engine.setdefault(engine_for(tex), {})[k] = tex
    return [p for engine, mine in by_engine.items() for p in compile_table("\n\\clearpage\n".join(mine.values()), folder, f"{name}-{engine}")]


def figure_problems(path: Path) -> list[str]:
    "A saved figure wider than the 6.9 in text width (PDF: its page; PNG: pixels over dpi), or a PDF with Type 3 fonts."
    path = Path(path)
    if path.suffix == ".pdf":
        raw = path.read_bytes()
        box = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", raw)
        out = [f"{path}: Type 3 fonts"] if b"/Type3" in raw else []
        if box:
            width = (float(box.group(3)) - float(box.group(1))) / 72
            if width > TEXT_IN + 0.01: out.append(f"{path}: {width:.2f} in wide, more than the {TEXT_IN} in text width")
        return out
    if path.suffix == ".png":
        from PIL import Image
        with Image.open(path) as im:
            dpi = (im.info.get("dpi") or (None,))[0]
            if dpi and im.size[0] / dpi > TEXT_IN + 0.01:
                return [f"{path}: {im.size[0] / dpi:.2f} in wide at {dpi:.0f} dpi, more than the {TEXT_IN} in text width"]
    return []


def check(paths, work: Path | None = None) -> list[str]:
    "Every problem in the tables and figures under `paths` (folders searched recursively), one line each."
    import tempfile
    work = Path(work or tempfile.mkdtemp(prefix="paper-check-"))
    files = [f for p in map(Path, paths) for f in (sorted(p.rglob("*")) if p.is_dir() else [p]) if f.is_file()]
    texs = {f"{i}-{f.stem}": t for i, f in enumerate(x for x in files if x.suffix == ".tex")
            if "\\documentclass" not in (t := f.read_text(encoding="utf-8"))}                     # tables, not compiled documents
    files = [f for f in files if not (f.suffix == ".pdf" and f.with_suffix(".tex").exists())]      # a compiled document is no figure
    problems = [f"{k.split('-', 1)[1]}: {p}" for k, tex in texs.items() for p in compile_table(tex, work / "one", k)]
    if len(texs) > 1: problems += compile_tables(texs, work / "all", "all")
    return problems + [p for f in files if f.suffix in (".pdf", ".png") for p in figure_problems(f)]


if __name__ == "__main__":
    if len(sys.argv) < 2 or any(not Path(a).exists() for a in sys.argv[1:]):
        print(f"usage: python tools/paper_check.py <report folders or files> (no such path: "
              f"{', '.join(a for a in sys.argv[1:] if not Path(a).exists()) or 'none given'})", file=sys.stderr)
        sys.exit(2)
    found = check(sys.argv[1:])
    for line in found: print(line)
    print(f"paper check: {len(found)} problem{'s' if len(found) != 1 else ''}", file=sys.stderr)
    sys.exit(1 if found else 0)
