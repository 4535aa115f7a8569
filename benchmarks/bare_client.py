"""The baseline two benchmarks share: a bare aiohttp client POSTing JSON bodies to a loopback server.

What it measures is what the server, the loopback network and the timers cost with no client work to speak of, so
that a harness's ratio can be read against it (``api_concurrency.py``, ``translate.py``).
"""
from __future__ import annotations

import asyncio
import time


def bare_post_wall(url: str, bodies: list, concurrency: int) -> float:
    "Wall seconds for a bare aiohttp client to POST every body to `url`, `concurrency` at a time (after one warm-up)."
    import aiohttp

    async def go():
        sem = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession() as s:
            async def one(body):
                async with sem:
                    async with s.post(url, json=body) as r: await r.read()
            await one(bodies[0])
            t0 = time.perf_counter()
            await asyncio.gather(*[one(b) for b in bodies])
            return time.perf_counter() - t0
    return asyncio.run(go())
