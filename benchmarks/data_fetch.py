"""Throughput of `vlmlens data get` on a loopback hub against plain parallel HTTP over the same files.

    python benchmarks/data_fetch.py [--files 16] [--mb 8] [--workers 8] [--repeats 3]

Both sides download the same files from the same loopback server (tests/loopback_hub.py) in the same run:
the baseline is a thread pool of bare `requests` GETs writing each file; vlmlens goes through the hub client
(commit resolution, tree listing, resolve URLs) and its resumable downloader. Prints both throughputs and the
ratio (target >= 0.8). The server runs in this process, so both sides share the same CPU budget.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from loopback_hub import HubServer  # noqa: E402

REPO = "Vision-CAIR/InfiniBench"


def plain(url: str, names, dest: Path, workers: int):
    import requests
    def one(n):
        p = dest / n; p.parent.mkdir(parents=True, exist_ok=True)
        with requests.get(f"{url}/datasets/{REPO}/resolve/main/{n}", stream=True) as r, open(p, "wb") as f:
            for b in r.iter_content(1 << 20): f.write(b)
    with ThreadPoolExecutor(workers) as ex: list(ex.map(one, names))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=16); ap.add_argument("--mb", type=int, default=8)
    ap.add_argument("--workers", type=int, default=8); ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    repo = tmp / "repo"; (repo / "test" / "skills_json").mkdir(parents=True)
    names = [f"test/skills_json/part_{i:02d}.json" for i in range(a.files)]
    for n in names: (repo / n).write_bytes(os.urandom(a.mb << 20))
    total = a.files * a.mb
    with HubServer(repo, REPO) as srv:
        os.environ.update(HF_ENDPOINT=srv.url, VLMLENS_DATA=str(tmp / "data"), HF_HOME=str(tmp / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
        os.environ.pop("HF_HUB_OFFLINE", None); os.environ.pop("TRANSFORMERS_OFFLINE", None)
        from vlmlens import data
        rel = data.Release("bench", "hub", REPO, "-", "-", "-", ("test",), ("{split}/skills_json/*",))
        best = {"plain": float("inf"), "vlmlens": float("inf")}
        for _ in range(a.repeats):
            for side in ("plain", "vlmlens"):
                dest = tmp / side; shutil.rmtree(dest, ignore_errors=True); dest.mkdir()
                t = time.perf_counter()
                if side == "plain": plain(srv.url, names, dest, a.workers)
                else: data.fetch_hub(rel, "test", False, dest, progress=False, workers=a.workers)
                best[side] = min(best[side], time.perf_counter() - t)
                assert all((dest / n).stat().st_size == a.mb << 20 for n in names)
    shutil.rmtree(tmp, ignore_errors=True)
    mbps = {k: total / v for k, v in best.items()}
    print(f"{a.files} files x {a.mb} MiB, {a.workers} workers, best of {a.repeats}")
    print(f"plain parallel HTTP : {mbps['plain']:8.1f} MiB/s")
    print(f"vlmlens data (hub)  : {mbps['vlmlens']:8.1f} MiB/s")
    print(f"ratio               : {mbps['vlmlens'] / mbps['plain']:.2f}x (target >= 0.8)")


if __name__ == "__main__":
    main()
