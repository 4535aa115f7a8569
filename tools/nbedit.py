"""Edit an nbdev notebook as a text script, safely: the notebook in `nbs/` stays the only source.

Jupyter is the normal way to edit `nbs/*.ipynb`. This tool is for people (and agents) who prefer a
text editor. It makes a *temporary* jupytext percent copy outside the repository, and writes it back
only if the notebook has not changed since the copy was taken; cell ids travel in the `# %%` markers,
so unchanged cells keep their ids (and the exported modules' `# %% ... #<id>` comments do not churn).

    python tools/nbedit.py get nbs/03_media.ipynb          # -> $TMPDIR/vlmlens-nbedit-<checkout>/03_media.py (prints the path)
    python tools/nbedit.py put /tmp/vlmlens-nbedit-<checkout>/03_media.py [--run]   # -> nbs/03_media.ipynb, cleaned
    python tools/nbedit.py new /path/to/60_new.py          # a new notebook (refuses to overwrite one)
    python tools/nbedit.py run nbs/03_media.ipynb          # execute and save outputs (rendered examples)

`put` refuses when the notebook changed after `get` (someone edited it in Jupyter): take a fresh copy.
`--run` executes the notebook (cells flagged `#| slow`, `#| notest` or `#| eval: false` are skipped) and
saves the outputs, so that the examples under each function are rendered in the notebook.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^# nbedit: source=(?P<src>\S+) sha256=(?P<sha>[0-9a-f]{64})\n")
SKIP_FLAGS = re.compile(r"^#\|\s*(slow|notest|eval:\s*false)\s*$", re.M)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scratch_dir() -> Path:
    "`$NBEDIT_DIR`, else one scratch folder per checkout (two checkouts never share, so never overwrite, a copy)."
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]
    d = Path(os.environ.get("NBEDIT_DIR") or Path(tempfile.gettempdir()) / f"vlmlens-nbedit-{tag}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def get(nb_path: Path, dest: Path | None = None) -> Path:
    "Write a percent script of `nb_path` (cell ids in the markers, the notebook's hash in a header)."
    nb = jupytext.read(nb_path)
    for c in nb.cells:
        c.metadata = {**c.metadata, "id": c.get("id")}
    dest = dest or scratch_dir() / (nb_path.stem + ".py")
    rel = nb_path.resolve().relative_to(ROOT)
    dest.write_text(f"# nbedit: source={rel} sha256={_sha(nb_path)}\n" + jupytext.writes(nb, fmt="py:percent"),
                    encoding="utf-8")
    return dest


def _to_notebook(text: str) -> nbformat.NotebookNode:
    nb = jupytext.reads(text, fmt="py:percent")
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    seen = set()
    for c in nb.cells:
        cid = c.metadata.pop("id", None)
        if not cid or cid in seen: cid = secrets.token_hex(4)
        seen.add(cid)
        c["id"] = cid
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def _write(nb, nb_path: Path, run: bool):
    old = nbformat.read(nb_path, as_version=4) if nb_path.exists() else None
    if old is not None:  # keep the outputs of cells whose source did not change
        outs = {c.get("id"): c for c in old.cells if c.cell_type == "code"}
        for c in nb.cells:
            o = outs.get(c.get("id"))
            if c.cell_type == "code" and o is not None and o.source == c.source: c.outputs = o.get("outputs", [])
    tmp = nb_path.with_name(f".{nb_path.name}.{os.getpid()}.tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, nb_path)  # atomic: a concurrent nbdev_export never reads half a notebook
    if run: execute(nb_path)
    subprocess.run(["nbdev_clean", "--fname", str(nb_path)], check=True, cwd=ROOT)


def put(script: Path, run: bool = False) -> Path:
    "Write `script` back to the notebook it came from, unless that notebook changed since `get`."
    text = script.read_text(encoding="utf-8")
    m = HEADER.match(text)
    if not m: sys.exit(f"nbedit: {script} has no nbedit header; use `new` for a new notebook")
    nb_path = ROOT / m["src"]
    if nb_path.exists() and _sha(nb_path) != m["sha"]:
        sys.exit(f"nbedit: {nb_path.relative_to(ROOT)} changed after this copy was taken; nothing written. "
                 f"Take a fresh copy with `get` and redo the edit there.")
    _write(_to_notebook(text[m.end():]), nb_path, False)
    _stamp(script, nb_path, text[m.end():])
    if run: _run_and_stamp(script, nb_path, text[m.end():])
    return nb_path


def _stamp(script: Path, nb_path: Path, body: str):
    "Record the notebook's current hash in the script header (the copy is in sync with the notebook again)."
    script.write_text(f"# nbedit: source={nb_path.relative_to(ROOT)} sha256={_sha(nb_path)}\n" + body, encoding="utf-8")


def _run_and_stamp(script: Path, nb_path: Path, body: str):
    "Execute the notebook and save its outputs; the script stays in sync even when a cell fails."
    try:
        execute(nb_path)
        subprocess.run(["nbdev_clean", "--fname", str(nb_path)], check=True, cwd=ROOT)
    finally: _stamp(script, nb_path, body)


def new(script: Path, run: bool = False) -> Path:
    "Create `nbs/<stem>.ipynb` from a percent script (never overwrites an existing notebook)."
    nb_path = ROOT / "nbs" / (script.stem + ".ipynb")
    if nb_path.exists(): sys.exit(f"nbedit: {nb_path.relative_to(ROOT)} exists; use get/put to edit it")
    text = script.read_text(encoding="utf-8")
    m = HEADER.match(text)
    body = text[m.end():] if m else text
    _write(_to_notebook(body), nb_path, False)
    _stamp(script, nb_path, body)
    if run: _run_and_stamp(script, nb_path, body)
    return nb_path


def execute(nb_path: Path):
    "Run the notebook's cells in order (skipping slow/notest/eval:false cells) and save their outputs."
    from execnb.nbio import read_nb, write_nb
    from execnb.shell import CaptureShell
    nb = read_nb(nb_path)
    skipped = [c for c in nb.cells if c.cell_type == "code" and SKIP_FLAGS.search(c.source)]
    sources = {id(c): c.source for c in skipped}
    for c in skipped: c.source = ""
    cwd = os.getcwd()
    os.chdir(nb_path.parent)
    try: CaptureShell().run_all(nb, exc_stop=True)
    finally: os.chdir(cwd)
    for c in skipped: c.source, c.outputs = sources[id(c)], []
    write_nb(nb, nb_path)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["get", "put", "new", "run"])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--run", action="store_true", help="execute the notebook and save outputs after writing it")
    a = p.parse_args()
    for path in a.paths:
        path = path.resolve()
        if a.mode == "get": print(get(path))
        elif a.mode == "put": print(put(path, a.run))
        elif a.mode == "new": print(new(path, a.run))
        else:
            execute(path)
            subprocess.run(["nbdev_clean", "--fname", str(path)], check=True, cwd=ROOT)
            print(path)
