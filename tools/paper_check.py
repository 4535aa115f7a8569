"""Check what vlmlens emits as a paper would take it: every LaTeX table compiled inside a two-column paper (6.9 in text
width, 3.3 in columns, 10 pt, booktabs; pdfLaTeX, or XeLaTeX with fontspec for a table that says it needs it), alone
and all of one folder together, and again all together inside an ACL-style skeleton (A4, two 7.7 cm columns 0.6 cm
apart, 11 pt, Times); and every saved figure measured: its cropped size against the width it was made for (6.9 in
text, 3.3 in column), its text at that size (at least 8 pt) and labels that overlap, from the sidecar `<name>.json`
that `save_figure` writes (font sizes and text boxes at save time), else from what the file itself tells (a PDF's
page and font sizes, a PNG's pixels over its dpi).

    python tools/paper_check.py outputs/report [more folders or .tex/.pdf/.png files]

One line per problem, naming the file: a compile error, an overfull box (past the column or text width), text set
below 8 pt (a resize or a smaller size command), a float taller than the page or lost, a label defined twice, a
missing glyph; a figure wider than the width it was made for, text under 8 pt at that width, overlapping labels,
Type 3 fonts. Exit 1 when there is a problem, 0 when everything
fits. TeX Live comes with `make tex`; without an engine the tables are reported as not checked."""
import math
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
#: the ACL style's page (acl.sty: A4, 2.5 cm margins, two 7.7 cm columns, 11 pt Times), built here, not downloaded
ACL_PREAMBLE = r"""\documentclass[twocolumn,11pt]{article}
\usepackage[a4paper,textwidth=16cm,columnsep=0.6cm,textheight=24.7cm]{geometry}
\usepackage{booktabs}
\usepackage{graphicx}
"""
PAPERS = {"two-column": PREAMBLE, "acl": ACL_PREAMBLE}
#: Times for pdfLaTeX (texlive-fonts-recommended, in `make tex`); without it the ACL page is set in Computer Modern,
#: whose wider glyphs make the overfull-box check stricter, not looser
TIMES = bool(shutil.which("kpsewhich")) and bool(subprocess.run(["kpsewhich", "ptmr7t.tfm"], capture_output=True, text=True).stdout.strip())
TEXT_IN, COLUMN_IN, MIN_PT = 6.9, 3.3, 8.0
SHRUNK = re.compile(r"\\(resizebox|scalebox|tiny|scriptsize)\b")
LOG_PROBLEMS = ("Overfull \\hbox", "Missing character", "Float too large", "Float(s) lost", "multiply defined",
                "Too many unprocessed floats")


def engine_for(tex: str) -> str:
    "xelatex for a table that names XeLaTeX in its comments, else pdflatex."
    return "xelatex" if re.search(r"^%.*XeLaTeX", tex, re.M) else "pdflatex"


def compile_table(tex: str, folder: Path, name: str = "table", paper: str = "two-column") -> list[str]:
    "Problems compiling `tex` inside a paper-like page (`PAPERS`): errors, overfull boxes, text below 8 pt, floats too tall, labels twice."
    shrunk = [f"{name}: text set below 8 pt ({m.group(0)})" for m in SHRUNK.finditer(tex)]
    engine = engine_for(tex)
    if not ENGINES[engine]: return shrunk + [f"{name}: not compiled ({engine} is not installed: make tex)"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-body.tex").write_text(tex, encoding="utf-8")
    fonts = {"xelatex": r"\usepackage{fontspec}", "pdflatex": r"\usepackage{times}" if paper == "acl" and TIMES else ""}[engine]
    doc = PAPERS[paper] + fonts + "\n" + \
        rf"\begin{{document}}\input{{{name}-body.tex}}\end{{document}}" + "\n"
    (folder / f"{name}.tex").write_text(doc, encoding="utf-8")
    p = subprocess.run([ENGINES[engine], "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=folder,
                       capture_output=True, text=True, errors="replace", timeout=300)
    log = (folder / f"{name}.log").read_text(encoding="utf-8", errors="replace") if (folder / f"{name}.log").exists() else p.stdout
    problems = [l for l in log.splitlines() if l.startswith("!") or any(x in l for x in LOG_PROBLEMS)]
    if p.returncode and not problems: problems = [f"{engine} exited {p.returncode}"]
    where = f"{engine}, {paper} paper" if paper != "two-column" else engine
    return shrunk + [f"{name} ({where}): {l}" for l in problems]


def _blame(problem: str, names: list, starts: list) -> str:
    "A problem of a joined document named by the table its input line falls in ('... at lines 12--14')."
    m = re.search(r"at lines? (\d+)", problem)
    if not m: return problem
    i = max((j for j, s in enumerate(starts) if s <= int(m.group(1))), default=0)
    return f"{names[i]}: {problem}"

def compile_tables(texs: dict, folder: Path, name: str = "tables", paper: str = "two-column") -> list[str]:
    "Problems compiling every table of one output in one document per engine (each flushed with \\clearpage), each named by its table where the log says the line."
    by_engine: dict = {}
    for k, tex in texs.items(): by_engine.setdefault(engine_for(tex), {})[k] = tex
    out = []
    for engine, mine in by_engine.items():
        starts, line = [], 1
        for tex in mine.values(): starts.append(line); line += tex.count("\n") + 2                # joined by "\n\\clearpage\n"
        names = [k.split("-", 1)[-1] for k in mine]
        out += [_blame(p, names, starts) for p in compile_table("\n\\clearpage\n".join(mine.values()), folder, f"{name}-{engine}", paper)]
    return out


def _pdf_font_sizes(raw: bytes) -> list[float]:
    "The sizes (pt) of the fonts a PDF's pages set text in (`/F1 8 Tf`), read from its (zlib) content streams."
    import zlib
    sizes = []
    for m in re.finditer(rb"stream\r?\n(.*?)endstream", raw, re.S):
        try: body = zlib.decompress(m.group(1))
        except zlib.error: body = m.group(1)
        sizes += [float(x) for x in re.findall(rb"/[\w.+-]+\s+([\d.]+)\s+Tf\b", body)]
    return sizes

def record_problems(record: dict, figure: Path) -> list[str]:
    "Problems a `save_figure` sidecar shows: cropped wider than the width it was made for, text under 8 pt at print size, overlapping labels."
    made_for, width = record.get("made_for_in", TEXT_IN), record["width_in"]
    out = [f"{figure}: {width:.2f} in wide after cropping, more than the {made_for} in it was made for"] if width > made_for + 0.01 else []
    scale = min(1.0, made_for / width) if width else 1.0                        # a wider file is shrunk to fit
    small = sorted({(round(t["pt"] * scale, 1), t["text"][:20]) for t in record["texts"] if t["pt"] * scale < MIN_PT - 0.01})
    out += [f"{figure}: text {txt!r} is {pt:g} pt at {min(width, made_for):.2f} in (under {MIN_PT:g} pt)" for pt, txt in small[:5]]
    def clash(a, b, tol=0.5 / 72):
        (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1), rot = a["box"], b["box"], a.get("rotation", 0)
        if not (ax0 < bx1 - tol and bx0 < ax1 - tol and ay0 < by1 - tol and by0 < ay1 - tol): return False
        if rot != b.get("rotation", 0) or not rot % 90: return True            # slanted alike: apart across the slant?
        dx, dy = bx1 - ax1, by1 - ay1
        return abs(dx * math.sin(math.radians(rot)) - dy * math.cos(math.radians(rot))) < 1.1 * max(a["pt"], b["pt"]) / 72
    ts = record["texts"]
    over = [(a["text"], b["text"]) for i, a in enumerate(ts) for b in ts[i + 1:] if clash(a, b)]
    return out + [f"{figure}: text {a[:30]!r} overlaps {b[:30]!r}" for a, b in list(dict.fromkeys(over))[:5]]

def figure_problems(path: Path) -> list[str]:
    "A saved figure wider than the 6.9 in text width (PDF: its page; PNG: pixels over dpi), a PDF with Type 3 fonts or, without a sidecar, text under 8 pt."
    path = Path(path)
    sidecar = path.with_suffix(".json").is_file()
    if path.suffix == ".pdf":
        raw = path.read_bytes()
        box = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", raw)
        out = [f"{path}: Type 3 fonts"] if b"/Type3" in raw else []
        if box and not sidecar:
            width = (float(box.group(3)) - float(box.group(1))) / 72
            if width > TEXT_IN + 0.01: out.append(f"{path}: {width:.2f} in wide, more than the {TEXT_IN} in text width")
            sizes = [x * min(1.0, TEXT_IN / width) for x in _pdf_font_sizes(raw)]
            if sizes and min(sizes) < MIN_PT - 0.01: out.append(f"{path}: text set in {min(sizes):.1f} pt at print size (under {MIN_PT:g} pt)")
        return out
    if path.suffix == ".png" and not sidecar:
        from PIL import Image
        with Image.open(path) as im:
            dpi = (im.info.get("dpi") or (None,))[0]
            if dpi and im.size[0] / dpi > TEXT_IN + 0.01:
                return [f"{path}: {im.size[0] / dpi:.2f} in wide at {dpi:.0f} dpi, more than the {TEXT_IN} in text width"]
    if path.suffix == ".json":
        import json
        rec = json.loads(path.read_text(encoding="utf-8"))
        figure = next((f for f in (path.with_suffix(".pdf"), path.with_suffix(".png")) if f.exists()), None)
        if figure and isinstance(rec, dict) and {"width_in", "texts"} <= set(rec): return record_problems(rec, figure)
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
    if texs: problems += compile_tables(texs, work / "acl", "acl", paper="acl")
    return problems + [p for f in files if f.suffix in (".pdf", ".png", ".json") for p in figure_problems(f)]


def report_check(run_dirs, vs_paper: bool = False, judge_reading: bool = False, include_departures: bool = False,
                 work: Path | None = None) -> int:
    "`vlmlens report … --check`: what that report prints, as LaTeX, written to `<work>/report.tex` and checked as `check` does; one line per problem on stderr; 1 when any."
    import contextlib
    import io
    import tempfile
    from vlmlens.cli import report
    work = Path(work or tempfile.mkdtemp(prefix="report-check-"))
    (work / "emitted").mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        report(run_dirs, "latex", vs_paper, judge_reading, include_departures)
    emitted = work / "emitted" / "report.tex"
    emitted.write_text(buf.getvalue(), encoding="utf-8")
    found = [p if p.startswith(str(emitted)) else f"{emitted}: {p.split(': ', 1)[-1]}" for p in check([emitted], work / "check")]
    for line in found: print(line, file=sys.stderr)
    print(f"paper check of {emitted}: {len(found)} problem{'s' if len(found) != 1 else ''}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or any(not Path(a).exists() for a in sys.argv[1:]):
        print(f"usage: python tools/paper_check.py <report folders or files> (no such path: "
              f"{', '.join(a for a in sys.argv[1:] if not Path(a).exists()) or 'none given'})", file=sys.stderr)
        sys.exit(2)
    found = check(sys.argv[1:])
    for line in found: print(line)
    print(f"paper check: {len(found)} problem{'s' if len(found) != 1 else ''}", file=sys.stderr)
    sys.exit(1 if found else 0)
