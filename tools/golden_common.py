"""Shared plumbing of the golden-data tools (`tools/golden_*.py`): reading one file of an official checkout, its
provenance, and writing `tests/data/golden/<script>.jsonl`.

An official checkout is either a work tree (the file is read from disk) or a bare git directory such as the one the
`fetch` tool leaves under /work/.mirror/<owner>+<name>/repo (the file is read with `git show HEAD:<path>`). Nothing
read here is ever written into the repository: only the official code's *outputs* on generated inputs are.
"""
import argparse
import datetime
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"


def _git(checkout: Path, *args) -> str | None:
    for flag in (["-C", str(checkout)], [f"--git-dir={checkout}"]):
        try:
            r = subprocess.run(["git", *flag, *args], capture_output=True, check=True)
            return r.stdout.decode("utf-8")
        except (subprocess.CalledProcessError, FileNotFoundError):
            continue
    return None


def official_source(checkout, relpath: str, commit: str | None = None) -> tuple[str, dict]:
    """`(text, provenance)` of `relpath` in an official checkout (work tree or bare git dir).
    `commit` names the commit when the checkout is a plain folder (not a git repository)."""
    checkout = Path(checkout)
    if not checkout.exists():
        sys.exit(f"official checkout not found: {checkout} (see the tool's --help for where to get it)")
    f = checkout / relpath
    text = f.read_bytes().decode("utf-8") if f.is_file() else _git(checkout, "show", f"HEAD:{relpath}")
    if text is None:
        sys.exit(f"{relpath} not found in {checkout}")
    head = (_git(checkout, "rev-parse", "HEAD") or "").strip() or None
    return text, {"file": relpath, "commit": commit or head, "file_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def write_golden(name: str, provenance: dict, rows: list[dict], out: Path | None = None) -> Path:
    "Write `<name>.jsonl`: a provenance header row, then one row per case; returns the path."
    out = Path(out or GOLDEN / f"{name}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    head = {"provenance": {**provenance, "date": datetime.date.today().isoformat(), "n_cases": len(rows),
                           "generator": f"tools/golden_{name}.py"}}
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        for r in [head, *rows]:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{out}: {len(rows)} cases, {out.stat().st_size / 1e6:.2f} MB")
    return out


def arg_parser(doc: str, name: str, repo: str, n: int, default_official: str | None = None) -> argparse.ArgumentParser:
    "The options every golden tool takes: the official checkout, its commit, the number of cases, the seed, the output."
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--official", default=default_official, required=default_official is None,
                    help=f"a checkout of {repo} (work tree or bare git dir)")
    ap.add_argument("--commit", help="the commit, when --official is not a git repository")
    ap.add_argument("--n", type=int, default=n, help=f"number of cases (default {n})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help=f"output file (default tests/data/golden/{name}.jsonl)")
    return ap
