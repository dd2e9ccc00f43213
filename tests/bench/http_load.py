"""A lean closed-loop HTTP/1.1 load driver on raw asyncio streams.

Each client holds one keep-alive connection and sends its next GET as soon as
the previous answer is read. It parses only the status line and the body
framing (Content-Length or chunked), so on a shared 2-core machine it leaves
most of the CPU to the server under test, unlike a full client such as httpx.
"""

from __future__ import annotations

import asyncio
import random
import time

import numpy as np


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length, chunked = None, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status


async def _client(host, port, paths, deadline, seed, latencies, errors, gzip) -> None:
    rng = random.Random(seed)
    reader, writer = await asyncio.open_connection(host, port)
    extra = b"Accept-Encoding: gzip\r\n" if gzip else b""
    try:
        while time.perf_counter() < deadline:
            path = rng.choice(paths)
            t0 = time.perf_counter()
            writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + extra + b"\r\n")
            try:
                status = await _read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                errors.append(0)
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def _drive(host, port, paths, clients, seconds, seed, gzip) -> dict:
    latencies: list[float] = []
    errors: list[int] = []
    deadline = time.perf_counter() + seconds
    t0 = time.perf_counter()
    await asyncio.gather(
        *(_client(host, port, paths, deadline, seed + k, latencies, errors, gzip) for k in range(clients))
    )
    elapsed = time.perf_counter() - t0
    ms = np.asarray(latencies) * 1000 if latencies else np.array([np.nan])
    return {
        "n": len(latencies),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "p99": float(np.percentile(ms, 99)),
        "rps": len(latencies) / elapsed,
        "errors": len(errors),
    }


def drive(
    port: int,
    paths: list[str],
    clients: int,
    seconds: float,
    seed: int = 0,
    host: str = "127.0.0.1",
    gzip: bool = True,
) -> dict:
    """Closed-loop load: n, p50/p95/p99 latency (ms), requests per second and errors (non-200 or dropped)."""
    return asyncio.run(_drive(host, port, paths, clients, seconds, seed, gzip))
