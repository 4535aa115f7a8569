"""The guide pages (`nbs/guides/*.md`) as the tests read them: sections by heading, fenced blocks, commands.

A test that executes a guide's command blocks declares, at module level, which sections it runs:

    GUIDE_BLOCKS = [("hintel.md", "## Evaluate an API model")]     # (page, heading); heading None = the whole page

and reads the blocks it runs with `blocks(page, heading)`. `tests/test_guides.py` reads every test file's
declaration (statically, with `ast`) and fails when a ```bash block of a guide is in no declared section.
"""
from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUIDES = REPO / "nbs" / "guides"
TESTS = REPO / "tests"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _headings(text: str) -> list[tuple[int, int, str]]:
    "(offset, level, line) of each Markdown heading outside fenced blocks."
    out, fenced, pos = [], False, 0
    for line in text.splitlines(keepends=True):
        if line.startswith("```"): fenced = not fenced
        elif not fenced and (m := re.match(r"^(#{1,6}) \S", line)): out.append((pos, len(m.group(1)), line.rstrip("\n")))
        pos += len(line)
    return out


def section(page: str, heading: str | None = None, root: Path = GUIDES) -> str:
    "A page's text, or the part under `heading` (the exact heading line) up to the next heading of its level or above."
    text = (root / page).read_text(encoding="utf-8")
    if heading is None: return text
    hs = _headings(text)
    i = next((k for k, h in enumerate(hs) if h[2] == heading), None)
    if i is None: raise KeyError(f"{page}: no heading {heading!r}")
    end = next((h[0] for h in hs[i + 1:] if h[1] <= hs[i][1]), len(text))
    return text[hs[i][0]:end]


def blocks(page: str, heading: str | None = None, lang: str | None = "bash", root: Path = GUIDES) -> list[str]:
    "The fenced blocks of one language (None: every language, as (lang, text)) in a page or one of its sections."
    found = [(m.group(1), m.group(2)) for m in FENCE.finditer(section(page, heading, root))]
    return found if lang is None else [t for l, t in found if l == lang]


def commands(block: str) -> list[str]:
    "A bash block's commands: continuation lines joined, comment lines and trailing `  # ...` comments dropped."
    lines = block.replace("\\\n", " ").splitlines()
    return [l.split("  #")[0].strip() for l in lines if l.strip() and not l.strip().startswith("#")]


def run_commands(block: str, *, env_subs: dict | None = None) -> list[str]:
    """Execute a bash block's commands as printed, in this process: `vlmlens ...` through `vlmlens.cli.main`,
    `python -c CODE` through `exec`. Each must exit 0; returns the commands run."""
    from vlmlens.cli import main
    ran = []
    for cmd in commands(block):
        argv = shlex.split(cmd)
        if argv[0] == "vlmlens":
            rc = main(argv[1:])
            assert rc in (0, None), f"{cmd!r} exited {rc}"
        elif argv[:2] == ["python", "-c"]:
            exec(compile(argv[2], "<guide>", "exec"), {"__name__": "__guide__"})
        else:
            raise AssertionError(f"a guide command this runner does not know: {cmd}")
        ran.append(cmd)
    return ran


def declared(tests: Path = TESTS) -> dict[tuple[str, str | None], list[str]]:
    "Every (page, heading) some test file declares in GUIDE_BLOCKS, with the files declaring it."
    out: dict = {}
    for f in sorted(tests.glob("test_*.py")):
        for node in ast.parse(f.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "GUIDE_BLOCKS" for t in node.targets):
                for page, heading in ast.literal_eval(node.value): out.setdefault((page, heading), []).append(f.name)
    return out


def unrun_blocks(root: Path = GUIDES, tests: Path = TESTS, not_run: dict | None = None) -> list[str]:
    """Each ```bash block of a guide page that no test declares it runs (and that is not in `not_run`, a mapping of
    (page, the block's first line) to the reason), as 'page: first line'."""
    claimed = declared(tests)
    covered = {(p, t) for (p, h) in claimed if (root / p).exists() for t in _safe_blocks(p, h, root)}
    missing = []
    for page in sorted(q.name for q in root.glob("*.md")):
        for b in blocks(page, root=root):
            first = b.splitlines()[0] if b.strip() else ""
            if (page, b) not in covered and (page, first) not in (not_run or {}): missing.append(f"{page}: {first}")
    return missing


def _safe_blocks(page, heading, root):
    try: return blocks(page, heading, root=root)
    except KeyError: return []
