"""Shared test set-up: an isolated vlmlens cache (tiny model, demo data) for the whole session.

The environment variable is set at import time so that subprocesses started by
tests (the CLI, papermill kernels) use the same cache and do not rebuild it.
"""
import os
import tempfile
from pathlib import Path

import pytest

if "VLMLENS_TEST_CACHE" not in os.environ:
    os.environ["VLMLENS_TEST_CACHE"] = tempfile.mkdtemp(prefix="vlmlens-test-cache-")
os.environ["VLMLENS_CACHE"] = os.environ["VLMLENS_TEST_CACHE"]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def _loopback():
    """One loopback OpenAI/Gemini server for the whole session (see tests/loopback.py)."""
    from loopback import LoopbackServer
    with LoopbackServer() as s:
        yield s


@pytest.fixture
def server(_loopback):
    """The loopback server, reset to its defaults before and after each test."""
    _loopback.reset()
    _loopback.latency, _loopback.processing_polls, _loopback.default_text = 0.0, 1, "A"
    yield _loopback
    _loopback.reset()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """An unexpected skip is a failure: tests carry their own data and tools, so nothing may silently not run."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not item.get_closest_marker("skip") and not item.get_closest_marker("skipif"):
        rep.outcome = "failed"
        rep.longrepr = f"unexpected skip (tests must not skip): {rep.longrepr}"
