"""Check a report folder as a paper takes it (`vlmlens.paper_check.check`): every LaTeX table set together, twice, in ACL,
NeurIPS and IEEE papers, and every saved figure measured in the venue it was made for.

    python tools/paper_check.py outputs/report [more folders or .tex/.pdf/.png files]

One line per problem, naming the table or file; exit 1 when there is a problem, 0 when everything fits, 2 on a path
that does not exist. `vlmlens report RUNS --check` does the same for what that report prints."""
import sys
from pathlib import Path

from vlmlens.paper_check import check

if __name__ == "__main__":
    if len(sys.argv) < 2 or any(not Path(a).exists() for a in sys.argv[1:]):
        print(f"usage: python tools/paper_check.py <report folders or files> (no such path: "
              f"{', '.join(a for a in sys.argv[1:] if not Path(a).exists()) or 'none given'})", file=sys.stderr)
        sys.exit(2)
    found = check(sys.argv[1:])
    for line in found: print(line)
    print(f"paper check: {len(found)} problem{'s' if len(found) != 1 else ''}", file=sys.stderr)
    sys.exit(1 if found else 0)
