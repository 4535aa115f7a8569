"""Convert between authoring scripts (jupytext percent, nbsrc/) and nbdev notebooks (nbs/).

    python tools/nbsync.py nb nbsrc/00_core.py [...]   # -> nbs/00_core.ipynb
    python tools/nbsync.py py nbs/00_core.ipynb [...]  # -> nbsrc/00_core.py
"""
import subprocess
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]


def to_nb(src: Path) -> Path:
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    dest = ROOT / "nbs" / (src.stem + ".ipynb")
    jupytext.write(nb, dest, fmt="ipynb")
    subprocess.run(["nbdev_clean", "--fname", str(dest)], check=True, cwd=ROOT)
    return dest


def to_py(src: Path) -> Path:
    nb = jupytext.read(src)
    dest = ROOT / "nbsrc" / (src.stem + ".py")
    dest.parent.mkdir(exist_ok=True)
    jupytext.write(nb, dest, fmt="py:percent")
    return dest


if __name__ == "__main__":
    mode, *paths = sys.argv[1:]
    for p in paths:
        print((to_nb if mode == "nb" else to_py)(Path(p).resolve()))
