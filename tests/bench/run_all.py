"""`make bench`: run every benchmark script in tests/bench/ (bench_*.py) in turn."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem for p in here.glob("bench_*.py"))
    failed = []
    sys.argv = sys.argv[:1]  # a benchmark that reads its own arguments runs with its defaults here
    for name in names:
        print(f"== {name}", flush=True)
        try:
            importlib.import_module(f"tests.bench.{name}").main()
        except Exception as err:  # one broken benchmark must not hide the others
            print(f"!! {name} failed: {err!r}", flush=True)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
