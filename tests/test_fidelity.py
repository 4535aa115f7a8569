"""The fidelity ledger: complete for the three papers, and docs/fidelity.md generated from it."""
import subprocess
import sys

from vlmlens.fidelity import ledger


def test_docs_fidelity_md_is_current(repo_root):
    r = subprocess.run([sys.executable, "tools/fidelity_docs.py", "--check"], cwd=repo_root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_paper_has_its_prompts_rules_and_model_ids_in_the_ledger():
    import vlmlens.benchmarks.hintel, vlmlens.benchmarks.infinibench, vlmlens.benchmarks.minerva  # noqa: F401 (they register)
    for bench in ("hintel", "infinibench", "curve"):
        kinds = {e.kind for e in ledger(bench)}
        assert {"prompt", "rule"} <= kinds, (bench, kinds)
        assert any(e.kind in ("model_id", "default") for e in ledger(bench)), bench
    for e in ledger():
        assert e.source.strip(), e
        if e.status == "departure": assert e.switch.strip(), e
