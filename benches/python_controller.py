#!/usr/bin/env python3
"""Time Hermes's ToolCallGuardrailController in-process on a loopsim bench call sequence.

    python benches/python_controller.py CALLS.jsonl [--reps N]

CALLS.jsonl is written by `cargo bench --bench loopsim` (target/loopsim-bench/calls.jsonl):
one `{"tool","args","result","failed"}` object per call, `{"reset":true}` at turn boundaries.
Each repetition runs the whole sequence on a fresh controller (hard stops on, the same
config as the Rust bench `engine/v0_19_before_after`): ``before_call`` then
``after_call(..., failed=failed)`` per call, ``reset_for_turn()`` at resets. Prints the best
ns per call over N repetitions (time.perf_counter_ns) on stdout, and the decision tally on
stderr (`actions: allow=.. warn=.. block=.. halt=..`) to check both sides did the same work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import agent.tool_guardrails as tg


def load(path):
    items, calls = [], 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if obj.get("reset"):
                items.append(None)
            else:
                items.append((obj["tool"], obj["args"], obj["result"], obj["failed"]))
                calls += 1
    return items, calls


def run(items, config, tally=None):
    ctrl = tg.ToolCallGuardrailController(config)
    before, after, reset = ctrl.before_call, ctrl.after_call, ctrl.reset_for_turn
    for item in items:
        if item is None:
            reset()
            continue
        tool, args, result, failed = item
        b = before(tool, args)
        a = after(tool, args, result, failed=failed)
        if tally is not None:
            tally[b.action] += 1
            tally[a.action] += 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calls")
    ap.add_argument("--reps", type=int, default=30)
    opts = ap.parse_args(argv)

    items, calls = load(opts.calls)
    config = tg.ToolCallGuardrailConfig(hard_stop_enabled=True)
    tally = {"allow": 0, "warn": 0, "block": 0, "halt": 0}
    run(items, config, tally)  # warm-up and tally
    best = None
    for _ in range(max(1, opts.reps)):
        t0 = time.perf_counter_ns()
        run(items, config)
        dt = time.perf_counter_ns() - t0
        best = dt if best is None else min(best, dt)
    print("actions: " + " ".join(f"{k}={v}" for k, v in tally.items()), file=sys.stderr)
    print(f"{best / calls:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
