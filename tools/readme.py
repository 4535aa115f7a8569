"""Write README.md from the front-page notebook, as `nbdev_readme` does where Quarto is installed.

    python tools/readme.py            # writes README.md from settings.ini's readme_nb (nbs/index.ipynb)
    python tools/readme.py --check    # exit 1 with one line when README.md differs from what the notebook gives

The rendering follows nbdev's README (Quarto's `gfm` output): markdown cells as they are; code cells not marked
`#| hide` (nor `#| echo: false`) as ```` ``` python ```` blocks without their `#|` directives, followed by their
outputs (not for `#| output: false`): text/markdown as it is, an HTML table (a DataFrame) as a Markdown pipe table,
anything else by its text/plain form indented four spaces, as Quarto writes a plain output. Images are not
written (the front page has none). No network, no Quarto, no execution: the notebook's saved outputs are used, so
render them first (`python tools/nbedit.py run nbs/index.ipynb`).
"""
from __future__ import annotations

import argparse
import configparser
import html
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIRECTIVE = re.compile(r"^#\|\s*(.*?)\s*$")


def readme_notebook(root: Path = ROOT) -> Path:
    "The notebook settings.ini names as `readme_nb`, under `nbs_path`."
    cfg = configparser.ConfigParser()
    cfg.read(root / "settings.ini", encoding="utf-8")
    d = cfg["DEFAULT"]
    return root / d.get("nbs_path", "nbs") / d.get("readme_nb", "index.ipynb")


class _Tables(HTMLParser):
    "The tables (rows of cell texts) and the paragraphs outside them of an HTML output, in order."
    def __init__(self):
        super().__init__(); self.parts, self._row, self._cell, self._para, self._depth = [], None, None, None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "table": self._depth += 1; self.parts.append(("table", []))
        elif tag == "tr" and self._depth: self._row = []
        elif tag in ("td", "th") and self._row is not None: self._cell = []
        elif tag == "p" and not self._depth: self._para = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split())); self._cell = None
        elif tag == "tr" and self._row is not None:
            self.parts[-1][1].append(self._row); self._row = None
        elif tag == "table": self._depth -= 1
        elif tag == "p" and self._para is not None:
            self.parts.append(("p", " ".join("".join(self._para).split()))); self._para = None

    def handle_data(self, data):
        if self._cell is not None: self._cell.append(data)
        elif self._para is not None: self._para.append(data)


def html_tables_markdown(text: str) -> str | None:
    "Each <table> of an HTML output as a Markdown pipe table (first row the header), with the paragraphs around them; None without a table."
    p = _Tables(); p.feed(text)
    if not any(kind == "table" and rows for kind, rows in p.parts): return None
    cell = lambda s: html.unescape(s).replace("|", "\\|")
    out = []
    for kind, rows in p.parts:
        if kind == "p":
            if rows: out.append(html.unescape(rows))
            continue
        if not rows: continue
        width = max(len(r) for r in rows)
        lines = ["| " + " | ".join(cell(c) for c in r + [""] * (width - len(r))) + " |" for r in rows]
        lines.insert(1, "|" + "---|" * width)
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _text(x) -> str:
    return "".join(x) if isinstance(x, list) else str(x)


def render_output(out: dict) -> str | None:
    "One cell output as nbdev's README shows it."
    if out.get("output_type") == "stream":
        return "\n".join("    " + l if l.strip() else "" for l in _text(out.get("text", "")).rstrip("\n").splitlines())
    if out.get("output_type") == "error": return None
    data = out.get("data", {})
    if "text/markdown" in data: return _text(data["text/markdown"]).strip("\n")
    if "text/html" in data and (table := html_tables_markdown(_text(data["text/html"]))): return table
    if "text/plain" in data:
        return "\n".join("    " + l if l.strip() else "" for l in _text(data["text/plain"]).rstrip("\n").splitlines())
    return None


def render_cell(cell: dict) -> str | None:
    "A markdown cell as it is; a code cell as a python block and its outputs, unless its directives hide it."
    src = _text(cell.get("source", ""))
    if cell["cell_type"] == "markdown": return src.strip("\n")
    if cell["cell_type"] != "code": return None
    lines = src.splitlines()
    opts = {m.group(1).replace(" ", "") for l in lines if (m := DIRECTIVE.match(l))}
    if "hide" in opts or "include:false" in opts: return None
    parts = []
    code = "\n".join(l for l in lines if not DIRECTIVE.match(l)).strip("\n")
    if code and "echo:false" not in opts: parts.append(f"``` python\n{code}\n```")
    if "output:false" not in opts:
        parts += [r for o in cell.get("outputs", []) if (r := render_output(o))]
    return "\n\n".join(parts) or None


def render(nb_path: Path) -> str:
    "README.md's text from a notebook: its cells rendered, one blank line between them."
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return "\n\n".join(r for c in nb["cells"] if (r := render_cell(c))) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with README.md instead of writing it")
    a = p.parse_args(argv)
    nb, readme = readme_notebook(), ROOT / "README.md"
    text = render(nb)
    if a.check:
        if not readme.exists() or readme.read_text(encoding="utf-8") != text:
            print(f"README.md differs from {nb.relative_to(ROOT)} (run python tools/readme.py and commit README.md)", file=sys.stderr)
            return 1
        return 0
    readme.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
