"""Write docs/fidelity.md: the fidelity ledger of every benchmark, as registered by the modules that use each entry.

    python tools/fidelity_docs.py          # rewrite docs/fidelity.md
    python tools/fidelity_docs.py --check  # exit 1 if docs/fidelity.md is out of date (tests/test_fidelity.py does this)
"""
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
def modules() -> list[str]:
    "Every vlmlens module (each registers its ledger entries when imported)."
    import pkgutil
    import vlmlens
    return sorted(m.name for m in pkgutil.walk_packages(vlmlens.__path__, "vlmlens.") if not m.name.endswith(("_modidx", "__main__")))
HEAD = """# Fidelity ledger

Every prompt, rule, metric, default and model id vlmlens takes from the three papers (or their official code), with
its source, how faithful it is, and — where vlmlens departs — the switch that restores the paper. Generated from
`vlmlens.fidelity.LEDGER` by `python tools/fidelity_docs.py`; the report notebooks print the same entries under their
tables. Status: `verbatim` (the paper's printed text or rule), `official` (from the official code or release),
`reading` (the paper is ambiguous or silent; our reading), `departure` (we do otherwise by default; `switch` restores
the paper).

"""


def render() -> str:
    for m in modules(): importlib.import_module(m)
    from vlmlens.fidelity import ledger, ledger_markdown
    benches = sorted({e.benchmark for e in ledger()})
    parts = [HEAD]
    for b in benches:
        n = len(ledger(b))
        parts.append(f"## {b} ({n} entries)\n\n{ledger_markdown(b)}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    out = ROOT / "docs" / "fidelity.md"
    text = render()
    if "--check" in sys.argv:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            sys.exit("docs/fidelity.md is out of date: run python tools/fidelity_docs.py")
    else:
        out.write_text(text, encoding="utf-8")
        print(out)
