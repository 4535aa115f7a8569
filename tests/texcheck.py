"""The paper check for tests: `vlmlens.paper_check` (one implementation for users and tests) — compile emitted LaTeX
tables together, twice, in ACL, NeurIPS and IEEE papers, and measure saved figures."""
from vlmlens import paper_check
from vlmlens.paper_check import ENGINES, check, check_latex, compile_paper, compile_tables, engine_for, figure_problems
