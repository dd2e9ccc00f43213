"""Benchmark the read arrays' cost in a frames-only ingest, A/B against another checkout, whole process.

A synthetic set (``synth --bias qm9``, one NPZ) is ingested with ``stages=["frames"]`` into a fresh data
folder, then opened in a fresh process (the view, one molecule, both tables' map data: where a code
without stored read arrays builds them). Each step runs under ``/usr/bin/time``; the two codes alternate
run by run, and each row records the 1-minute load at its start. The baseline is a checkout whose
``backend/`` is imported as ``orientscope`` (``--base /path/to/checkout``: a package folder linking it is
made beside the data). Figures are CPU (user + sys) and wall seconds.

Run: ``python -m tests.bench.bench_read_arrays --base /tmp/base_c79 [--n 250000] [--pairs 3]``
(the BENCHMARKS.md section "Issue 41 items 4 and 5" holds the results, written by hand).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.common import ROOT

_INGEST = """
import shutil, sys
from pathlib import Path
from orientscope.pipeline.sharded_ingest import ingest_files
data = Path(sys.argv[1]); shutil.rmtree(data, ignore_errors=True); data.mkdir(parents=True)
ingest_files(data, [sys.argv[2]], "set", stages=["frames"])
"""

_OPEN = """
import sys
from pathlib import Path
from orientscope.services.cache import get_view
from orientscope.services.map_data import load_map_data
from orientscope.services.molecules import molecule_detail
data = Path(sys.argv[1])
get_view(data, "set")
molecule_detail(data, "set", sys.argv[2])
for table in ("original", "control"):
    load_map_data(data, "set", table)
"""


def timed(code: str, args: list[str], pythonpath: str | None) -> tuple[float, float]:
    """(CPU, wall) seconds of ``python -c code args`` as one whole process."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %e", sys.executable, "-c", code, *args],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    user, system, wall = map(float, out.stderr.strip().splitlines()[-1].split())
    return user + system, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="checkout of the baseline commit")
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-read-arrays")
    args = parser.parse_args()
    from orientscope.pipeline.synth import SynthSpec, write_synth

    work = args.work
    npz = work / "npz"
    if not (npz / "synth.json").is_file():
        write_synth(npz, SynthSpec(n=args.n, bias="qm9", seed=0, shard_size=args.n))
    package = work / "base-package"
    package.mkdir(parents=True, exist_ok=True)
    link = package / "orientscope"
    if not link.exists():
        link.symlink_to(args.base.resolve() / "backend")
    first = str(sorted(npz.glob("*.npz"))[0])
    print("pair side load ingest_cpu ingest_wall open_cpu open_wall")
    for pair in range(1, args.pairs + 1):
        for side, path in (("base", str(package)), ("new", None)):
            load = os.getloadavg()[0]
            data = str(work / f"data-{side}")
            ingest = timed(_INGEST, [data, first], path)
            opened = timed(_OPEN, [data, "1_0"], path)
            print(pair, side, f"{load:.1f}", *(f"{v:.2f}" for v in (*ingest, *opened)), flush=True)


if __name__ == "__main__":
    main()
