"""Compile emitted LaTeX tables the way a paper would: a two-column page with a 6.9 in text width and 3.3 in columns,
booktabs and graphicx; pdfLaTeX, or XeLaTeX with fontspec for a table that says it needs it. A table that fails to
compile, runs past its column or the text width (an overfull box), is shrunk below 8 pt (a resize or a smaller size
command), is taller than the page, or shares a label with another table of the same output, is reported."""
import re
import shutil
import subprocess
from pathlib import Path

ENGINES = {"pdflatex": shutil.which("pdflatex"), "xelatex": shutil.which("xelatex")}
PREAMBLE = r"""\documentclass[twocolumn,10pt]{article}
\usepackage[letterpaper,textwidth=6.9in,columnsep=0.3in,textheight=9in]{geometry}
\usepackage{booktabs}
\usepackage{graphicx}
"""


def engine_for(tex: str) -> str:
    "xelatex for a table that names XeLaTeX in its comments, else pdflatex."
    return "xelatex" if re.search(r"^%.*XeLaTeX", tex, re.M) else "pdflatex"


SHRUNK = re.compile(r"\\(resizebox|scalebox|tiny|scriptsize)\b")
LOG_PROBLEMS = ("Overfull \\hbox", "Missing character", "Float too large", "Float(s) lost", "multiply defined", "Too many unprocessed floats")


def compile_tables(texs: dict, folder: Path, name: str = "tables") -> list[str]:
    "Problems compiling every table of one output in one document (each flushed with \\clearpage), as a paper's appendix holds them."
    by_engine: dict = {}
    for k, tex in texs.items(): by_engine.setdefault(engine_for(tex), {})[k] = tex
    out = []
    for engine, mine in by_engine.items():
        body = "\n\\clearpage\n".join(mine.values())
        out += compile_table(body, folder, f"{name}-{engine}")
    return out


def compile_table(tex: str, folder: Path, name: str = "table") -> list[str]:
    "Problems compiling `tex` inside a paper-like page: errors, overfull boxes, text below 8 pt, floats too tall, labels twice (empty when it typesets cleanly)."
    shrunk = [f"{name}: text set below 8 pt ({m.group(0)})" for m in SHRUNK.finditer(tex)]
    engine = engine_for(tex)
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
