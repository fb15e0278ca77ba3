#!/usr/bin/env python3
"""Smoke check of hermes_driver.py: six identical execute_code calls, hard stops on.

Expected (docs/hermes-semantics.md section 16.2):
- installed 0.19.0 package: every call allowed, no halt, no observe field;
- newest tool_guardrails (--hermes-path): after_call allows all six; observe_call gives
  identical_call_streak notices from the 3rd call and records identical_call_streak_halt
  with count 5 at call 5; no stub (result under 512 characters);
- newest with --no-strip and results differing only in duration_seconds and
  kernel.execution_count: no streak, no notice, no halt.
The last run repeats the varying results with stripping on, for contrast (streak again).

Run with the venv's python:  python smoke_check.py [--hermes-path /tmp/hermes_newest]
Exits 1 when an expectation fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = {"code": ""}


def stream(vary: bool) -> str:
    """Six before/after pairs of one execute_code call."""
    lines = []
    for i in range(6):
        body = {"status": "success", "output": "",
                "duration_seconds": round(0.1 + 0.07 * i, 2) if vary else 0.12,
                "kernel": {"execution_count": 7 + i if vary else 7, "mode": "persistent"}}
        lines.append({"op": "before", "tool": "execute_code", "args": ARGS})
        lines.append({"op": "after", "tool": "execute_code", "args": ARGS, "result": json.dumps(body),
                      "failed": None, "tool_call_id": f"call_{i + 1}"})
    return "".join(json.dumps(x) + "\n" for x in lines)


def run(extra: list[str], config: str, vary: bool) -> list[dict]:
    cmd = [sys.executable, os.path.join(HERE, "hermes_driver.py"), "--config", config, *extra]
    out = subprocess.run(cmd, input=stream(vary).encode(), capture_output=True, check=True).stdout
    print("$", " ".join(cmd[1:]), "  # results vary:", vary)
    answers = [json.loads(x) for x in out.decode().splitlines()]
    for line in out.decode().splitlines():
        print("  ", line)
    return answers[1::2]  # the after answers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hermes-path", default="/tmp/hermes_newest")
    newest = ["--hermes-path", ap.parse_args().hermes_path]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write("tool_loop_guardrails:\n  hard_stop_enabled: true\n")
    ok = True
    try:
        old = run([], fh.name, vary=False)
        ok &= all(a["action"] == "allow" and a["halt"] is None and "observe" not in a for a in old)
        new = run(newest, fh.name, vary=False)
        kinds = [a["observe"]["kind"] for a in new]
        halts = [a["halt"] for a in new]
        ok &= all(a["action"] == "allow" for a in new) and kinds == [None, None] + ["identical_call_streak"] * 4
        ok &= halts[:4] == [None] * 4 and halts[4] == halts[5] == {"code": "identical_call_streak_halt", "count": 5}
        ok &= not any(a["observe"]["stub"] for a in new)
        nostrip = run(newest + ["--no-strip"], fh.name, vary=True)
        ok &= all(a["observe"] == {"kind": None, "stub": False} and a["halt"] is None for a in nostrip)
        run(newest, fh.name, vary=True)
    finally:
        os.unlink(fh.name)
    print("smoke:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
