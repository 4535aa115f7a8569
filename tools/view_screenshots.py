"""Render the README's screenshots of the results viewer: `python tools/view_screenshots.py` (needs Debian's chromium + chromium-driver).

The viewer's browser tests (tests/test_view.py) take the screenshots; by default they go to a temporary folder, so that
running the tests never rewrites a tracked file. This script runs those tests with `VLMLENS_SCREENSHOTS=docs/figures`,
which writes `view_item.png`, `view_list.png` and `view_evidence.png` there.
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = ("test_an_item_shows_its_frames_and_a_deep_link_opens_it", "test_moved_media_and_errors_show_in_the_page",
         "test_judge_reply_and_evidence_graph_show_beside_the_answer")


def main() -> int:
    out = REPO / "docs" / "figures"
    env = {**os.environ, "VLMLENS_SCREENSHOTS": str(out), "PYTHONPATH": str(REPO)}
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-x", str(REPO / "tests" / "test_view.py"), "-k", " or ".join(TESTS)],
                         env=env, cwd=REPO)
    if rc == 0: print("wrote", ", ".join(str(out / f"view_{n}.png") for n in ("item", "list", "evidence")))
    return rc


if __name__ == "__main__":
    sys.exit(main())
