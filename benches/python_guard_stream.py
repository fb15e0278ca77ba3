#!/usr/bin/env python3
"""Time Hermes's guardrail controller in-process on a `loopsim guard` request stream.

    python benches/python_guard_stream.py STREAM.jsonl [--reps N]

The requests are read and parsed first (not timed); each repetition then answers every
request on a fresh controller with the same code `tests/conformance/hermes_driver.py` runs
(`bridges/hermes/hermes_guard.answer`: Hermes's `before_call`, `after_call`,
`reset_for_turn`), without writing the answers out. Prints the best ns per request over N
repetitions (time.perf_counter_ns) on stdout.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bridges" / "hermes"))
from hermes_guard import answer, build_controller, import_guardrails, reject_constant  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stream")
    ap.add_argument("--reps", type=int, default=3)
    opts = ap.parse_args(argv)

    with open(opts.stream, "rb") as fh:
        reqs = [json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
                for raw in fh if raw.strip()]
    tg = import_guardrails(None, False)
    best = None
    for _ in range(max(1, opts.reps)):
        ctrl = build_controller(tg, None, None)
        t0 = time.perf_counter_ns()
        for req in reqs:
            answer(tg, ctrl, req)
        dt = time.perf_counter_ns() - t0
        best = dt if best is None else min(best, dt)
    print(f"{best / len(reqs):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
