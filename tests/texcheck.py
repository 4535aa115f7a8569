"""The paper check for tests: `tools/paper_check.py` (one implementation for users and tests) — compile emitted LaTeX
tables inside a two-column paper, alone and together, and measure saved figures."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("paper_check", Path(__file__).resolve().parents[1] / "tools" / "paper_check.py")
paper_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paper_check)

ENGINES, engine_for, compile_table, compile_tables, figure_problems, check = (
    paper_check.ENGINES, paper_check.engine_for, paper_check.compile_table, paper_check.compile_tables, paper_check.figure_problems,
    paper_check.check)
