"""Run every benchmark, then write the results table and charts.

    python bench/run.py --out bench                  # `make bench`
    python bench/run.py --quick --out build/bench-quick   # `make bench-quick`

Each comparison runs in its own process (one process per comparison, both
sides timed side by side within it), bounded by a time limit; then
`report.py` writes `<out>/results.md`, `<out>/results.json` and the charts
(`<out>/*.png`). A full run into `bench/` also refreshes the table in the
README's Performance section.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, ROOT, machine_info
from report import write_report

# (name, script, time limit of a full run in seconds, venv: None for this one)
SECTIONS = (
    ("wire", "bench_wire.py", 120, None),
    ("codec", "bench_codec.py", 300, None),
    ("format", "bench_format.py", 600, None),
    ("loop", "bench_loop.py", 600, None),
    ("parse", "bench_parse.py", 600, None),
    ("service", "bench_service.py", 900, None),
    # AgentScope 2.x and the A2A SDK (`make bench` builds .venv-as2 first).
    ("loop_as2", "bench_loop_as2.py", 300, ".venv-as2"),
    ("agents", "bench_agents.py", 450, ".venv-as2"),
    ("hub", "bench_hub.py", 300, ".venv-as2"),
    ("profile", "profile_hot.py", 300, None),
)


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run, under a minute")
    parser.add_argument("--out", type=Path, required=True, help="directory for results and charts")
    parser.add_argument("--only", nargs="*", help="run only these sections (for development)")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    results: dict[str, Any] = {
        "quick": args.quick,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)),
        "machine": machine_info(),
        "load_before": _load(),
        "seconds": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, script, limit, venv in SECTIONS:
            if args.only and name not in args.only:
                continue
            raw = Path(tmp) / f"{name}.json"
            python = ROOT / venv / "bin" / "python" if venv else Path(sys.executable)
            if not python.exists():
                raise SystemExit(f"bench: {name} needs {python} (make {venv}/.installed)")
            command = [str(python), str(BENCH_DIR / script), "--json", str(raw)]
            if args.quick:
                command.append("--quick")
            print(f"[bench] {name} ...", flush=True)
            t0 = time.perf_counter()
            subprocess.run(command, check=True, cwd=ROOT, timeout=limit / (4 if args.quick else 1))
            results["seconds"][name] = round(time.perf_counter() - t0, 1)
            print(f"[bench] {name} done in {results['seconds'][name]} s", flush=True)
            results[name] = json.loads(raw.read_text(encoding="utf-8"))
    results["load_after"] = _load()
    results["total_seconds"] = round(time.time() - started, 1)
    full_into_bench = not args.quick and not args.only and out == BENCH_DIR
    write_report(results, out, readme=ROOT / "README.md" if full_into_bench else None)
    print(f"[bench] wrote {out / 'results.md'} in {results['total_seconds']} s", flush=True)


if __name__ == "__main__":
    main()
