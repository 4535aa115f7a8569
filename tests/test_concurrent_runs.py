"""Several processes on one run folder, against the loopback API server: no item is asked twice, a kill costs only
what was in flight, and the summary left behind covers every shard's items."""
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter

import pandas as pd

from loopback import Reply

CONCURRENCY = 4

# One process of a run: waits at a barrier until every process of the test has started (imports take seconds on a
# loaded machine), then runs the configuration on the loopback server. `stall` makes the main thread stop for good
# after its next prediction once that file exists (a stuck disk); `slow_summary` holds the process between reading
# the predictions and writing the summary; `pause_mark` touches that file once it holds the summary lock, then
# dawdles a second there (so that the test can stop it with SIGSTOP while it holds the lock).
CHILD = r'''
import json, sys, time
from pathlib import Path
a = json.loads(sys.argv[1])
from vlmlens.core import RunConfig, Sample
from vlmlens.models.openai import OpenAIBackend
from vlmlens.store import RunStore
import vlmlens.runner as runner
if a.get("stall"):
    _append = RunStore.append_prediction
    def append(self, p):
        _append(self, p)
        if Path(a["stall"]).exists(): time.sleep(600)
    RunStore.append_prediction = append
if a.get("slow_summary"):
    _rows = runner.score_rows
    def rows(*args, **kw):
        out = _rows(*args, **kw); time.sleep(a["slow_summary"]); return out
    runner.score_rows = rows
if a.get("pause_mark"):
    _scored = runner.score_rows
    def scored(*args, **kw):
        if not Path(a["pause_mark"]).exists():
            Path(a["pause_mark"]).touch(); time.sleep(1.0)     # inside the summary lock: the test stops us here
        return _scored(*args, **kw)
    runner.score_rows = scored
items = [Sample(f"item{i:03d}", "demo", question=f"Question {i:03d}?", options=["a", "b"], answer=0) for i in range(a["n"])]
backend = OpenAIBackend("loop-model", compatible=True, base_url=a["base_url"], cache=a["cache"], concurrency=a["concurrency"],
                        progress=False)
cfg = RunConfig("demo", "loop-model", modality="text", output_root=a["root"], run_name="shared", shard=a["shard"], progress=False)
Path(a["barrier"], a["name"]).touch()
t0 = time.time()
while len(list(Path(a["barrier"]).iterdir())) < a["processes"] and time.time() - t0 < 240: time.sleep(0.02)
runner.run(cfg, backend=backend, samples=items)
'''


def _start(tmp_path, server, name, shard=None, *, n, processes, cache=False, **kw):
    (tmp_path / "barrier").mkdir(exist_ok=True)
    args = dict(name=name, shard=shard, n=n, processes=processes, barrier=str(tmp_path / "barrier"), root=str(tmp_path),
                base_url=server.openai_base_url, cache=cache, concurrency=CONCURRENCY, **kw)
    env = {**os.environ, "OPENAI_API_KEY": "test-openai-key.not-real.000000000000"}
    return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], env=env, stderr=subprocess.PIPE, text=True)


def _item(call) -> str:
    return re.search(r"Question (\d+)\?", call.text)[1]


def _wait(procs, timeout=300):
    for p in procs:
        rc = p.wait(timeout=timeout)
        assert rc == 0, p.stderr.read()[-3000:]


def _cached(path) -> int:
    import sqlite3
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try: return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error: return 0
    finally: con.close()


def _lines(run):
    return [json.loads(l) for f in sorted(run.glob("predictions*.jsonl")) for l in f.read_text().splitlines() if l.strip()]


def test_shards_and_an_unsharded_run_at_once_ask_each_item_once(server, tmp_path):
    "0/2, 1/2, 0/4 and an unsharded run of one configuration, started together: every item asked exactly once."
    n, counts, lock = 48, Counter(), threading.Lock()

    def reply(call):
        with lock: counts[_item(call)] += 1
        return Reply(text="The answer is A.", delay=0.1)
    server.responder = reply
    procs = [_start(tmp_path, server, f"p{k}", shard, n=n, processes=4) for k, shard in enumerate(["0/2", "1/2", "0/4", None])]
    _wait(procs)
    assert sorted(counts) == [f"{i:03d}" for i in range(n)]
    assert max(counts.values()) == 1, {k: v for k, v in counts.items() if v > 1}
    assert sorted(p["sample_id"] for p in _lines(tmp_path / "shared")) == [f"item{i:03d}" for i in range(n)]   # one line each
    overall = json.loads((tmp_path / "shared" / "summary.json").read_text())["overall"]
    assert (overall["n"], overall["n_missing"], overall["n_errors"]) == (n, 0, 0)
    assert not (tmp_path / "shared" / ".claims").exists() and not (tmp_path / "shared" / ".workers").exists()


def test_a_killed_process_costs_only_the_requests_in_flight(server, tmp_path):
    """Killed while its main thread is stuck: every answer that reached the client is in the response cache, so the
    rerun asks again only the requests the server never answered (at most `concurrency` of them)."""
    n, k, stall = 40, 12, tmp_path / "stall"
    seen, hanging, lock = [], set(), threading.Lock()

    def first(call):
        with lock:
            seen.append(_item(call))
            if len(seen) < k: return Reply(text="The answer is A.", delay=0.05)
            stall.touch(); hanging.add(seen[-1])
        return Reply(hang=True)                              # from the k-th request on, the server answers nothing
    server.responder = first
    cache = str(tmp_path / "cache.sqlite")
    p = _start(tmp_path, server, "p0", n=n, processes=1, cache=cache, stall=str(stall))
    t0 = time.time()
    while not stall.exists() and time.time() - t0 < 240 and p.poll() is None: time.sleep(0.02)
    assert stall.exists(), p.stderr.read()[-3000:]
    t0 = time.time()                                         # give the k - 1 answers sent time to reach the cache
    while _cached(cache) < k - 1 and time.time() - t0 < 20: time.sleep(0.05)
    p.kill(); p.wait(timeout=60)
    asked_before = set(seen)
    again = []

    def second(call):
        with lock: again.append(_item(call))
        return Reply(text="The answer is A.")
    server.responder = second
    stall.unlink()
    (tmp_path / "barrier" / "p0").unlink()
    _wait([_start(tmp_path, server, "p0", n=n, processes=1, cache=cache)])
    re_asked = asked_before & set(again)
    assert len(hanging) <= CONCURRENCY, hanging
    assert re_asked <= hanging, (sorted(re_asked - hanging), sorted(hanging))
    assert sorted(set(again) | asked_before) == [f"{i:03d}" for i in range(n)]
    overall = json.loads((tmp_path / "shared" / "summary.json").read_text())["overall"]
    assert (overall["n"], overall["n_missing"], overall["n_errors"]) == (n, 0, 0)


def test_a_shard_delayed_before_writing_the_summary_does_not_leave_a_stale_one(server, tmp_path):
    """Shard 0 finishes first and stops between reading the predictions and writing the summary while shard 1 finishes:
    the summary and scores.csv left behind cover both shards."""
    from vlmlens.core import shard_of
    n = 24

    def reply(call):
        sid = f"item{_item(call)}"
        return Reply(text="The answer is A.", delay=0.4 if shard_of(sid, 2) == 1 else 0.0)
    server.responder = reply
    procs = [_start(tmp_path, server, "p0", "0/2", n=n, processes=2, slow_summary=3.0),
             _start(tmp_path, server, "p1", "1/2", n=n, processes=2)]
    _wait(procs)
    run = tmp_path / "shared"
    overall = json.loads((run / "summary.json").read_text())["overall"]
    assert (overall["n"], overall["n_missing"]) == (n, 0), overall
    assert len(pd.read_csv(run / "scores.csv")) == n


def test_a_shard_paused_while_writing_the_summary_stops_no_other(server, tmp_path):
    """Four shards; the first to finish is stopped (SIGSTOP: Slurm's suspend, a hung host) while it holds the summary lock.
    The other three, their own items done, exit at once; once it resumes, the summary it leaves covers every item, and
    no claim or worker file is left."""
    import signal
    from vlmlens.core import shard_of
    n, mark = 24, tmp_path / "in-summary"

    def reply(call):
        sid = f"item{_item(call)}"
        return Reply(text="The answer is A.", delay=0.0 if shard_of(sid, 4) == 0 else 0.5)
    server.responder = reply
    first = _start(tmp_path, server, "p0", "0/4", n=n, processes=4, pause_mark=str(mark))
    others = [_start(tmp_path, server, f"p{k}", f"{k}/4", n=n, processes=4) for k in (1, 2, 3)]
    t0 = time.time()
    while not mark.exists() and time.time() - t0 < 240 and first.poll() is None: time.sleep(0.01)
    assert mark.exists(), first.stderr.read()[-3000:]
    os.kill(first.pid, signal.SIGSTOP)
    try:
        stopped = time.time()
        _wait(others, timeout=120)                         # before the fix: blocked on the lock for as long as p0 is stopped
        assert first.poll() is None                        # still stopped, still holding the lock
        assert time.time() - stopped < 60
        run = tmp_path / "shared"
        assert not (run / "summary.json").exists()          # left to the holder, which sees their results when it resumes
    finally: os.kill(first.pid, signal.SIGCONT)
    _wait([first])
    overall = json.loads((run / "summary.json").read_text())["overall"]
    assert (overall["n"], overall["n_missing"], overall["n_errors"]) == (n, 0, 0), overall
    assert len(pd.read_csv(run / "scores.csv")) == n
    assert not (run / ".claims").exists() and not (run / ".workers").exists(), sorted(p.name for p in run.iterdir())
