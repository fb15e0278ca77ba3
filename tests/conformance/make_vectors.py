#!/usr/bin/env python3
"""Write the committed guard conformance vectors for profiles that cannot be pip-installed.

Profiles hermes-main and hermes-v0.21.5 use the newest Hermes ``agent/tool_guardrails.py``
(NousResearch/hermes-agent @06c25ac9), which no released wheel ships. Give --hermes-path a
directory holding a copy of the installed hermes-agent 0.19.0 package with that file (and a
``tool_result_classification.py`` that has ``is_guardrail_refusal``) dropped into ``agent/``;
see traces/conformance/README.md. For each setting below this script runs gen_sequences.py
and hermes_driver.py and writes traces/conformance/<name>.jsonl:

  line 1   {"format":"loopsim-guard-vectors","version":1,"profile":..,"platform":..,
            "tool_loop_guardrails":{..},"source":..,"seed":N}
  then     {"in":REQUEST,"out":ANSWER}   one per request, REQUEST byte-for-byte as generated

The files hold inputs and outputs only, no Hermes code. Run it with the venv's python:
  python tests/conformance/make_vectors.py --hermes-path /tmp/hermes_newest
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "traces", "conformance"))
SOURCE = "hermes-agent agent/tool_guardrails.py @06c25ac9 (+ no-strip for v0.21.5)"
# The newest file as read from the repository (39,444 characters).
EXPECTED_SHA256 = "d1ecf00eccc9359de321da4584a82f2cd3575f301612589419b18c2a8dce7408"
LINES = 3000

CUSTOM = {  # nested keys win over flat ones; junk and values below 1 fall back to defaults
    "hard_stop_enabled": "yes",
    "warnings_enabled": " On ",
    "exact_failure_warn_after": 7,
    "warn_after": {"exact_failure": 3, "same_tool_failure": "2"},
    "no_progress_warn_after": "junk",
    "hard_stop_after": {"idempotent_no_progress": 3},
    "exact_failure_block_after": 4,
    "same_tool_failure_halt_after": 0,
    "loop_caps": {"max_web_searches": 10, "max_subagents": 4},
}

# (file name, profile, platform, tool_loop_guardrails mapping, seed)
SETTINGS = [
    ("hermes-main-cli", "hermes-main", "cli", {}, 101),
    ("hermes-main-telegram", "hermes-main", "telegram", {}, 102),
    ("hermes-main-custom", "hermes-main", None, CUSTOM, 103),
    ("hermes-v0.21.5-cron", "hermes-v0.21.5", "cron", {}, 104),
    ("hermes-v0.21.5-cli", "hermes-v0.21.5", "cli", {}, 105),
]


def check_hermes_path(path: str) -> None:
    """Refuse a --hermes-path that does not hold the expected newest file."""
    target = os.path.join(path, "agent", "tool_guardrails.py")
    with open(target, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    if digest != EXPECTED_SHA256:
        raise SystemExit(f"error: {target} has sha256 {digest}, expected {EXPECTED_SHA256}")


def make(name, profile, platform, mapping, seed, hermes_path, lines) -> int:
    """Generate one vector file; returns its number of request lines."""
    requests = subprocess.run(
        [sys.executable, os.path.join(HERE, "gen_sequences.py"), "--seed", str(seed), "--lines", str(lines)],
        capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, encoding="utf-8") as fh:
        json.dump({"tool_loop_guardrails": mapping}, fh)  # JSON is valid YAML
    cmd = [sys.executable, os.path.join(HERE, "hermes_driver.py"), "--config", fh.name, "--hermes-path", hermes_path]
    if platform is not None:
        cmd += ["--platform", platform]
    if profile == "hermes-v0.21.5":
        cmd.append("--no-strip")
    try:
        proc = subprocess.run(cmd, input=requests, capture_output=True)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise SystemExit(f"error: driver failed for {name}: {proc.stderr.decode()}")
    ins = requests.decode("utf-8").split("\n")[:-1]
    outs = proc.stdout.decode("utf-8").split("\n")[:-1]
    if len(ins) != len(outs):
        raise SystemExit(f"error: {name}: {len(ins)} requests but {len(outs)} answers")
    header = {"format": "loopsim-guard-vectors", "version": 1, "profile": profile, "platform": platform,
              "tool_loop_guardrails": mapping, "source": SOURCE, "seed": seed}
    body = [json.dumps(header, separators=(",", ":"), ensure_ascii=False)]
    body += ['{"in":' + i + ',"out":' + o + "}" for i, o in zip(ins, outs)]
    with open(os.path.join(OUT_DIR, name + ".jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(body) + "\n")
    return len(ins)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hermes-path", required=True)
    ap.add_argument("--lines", type=int, default=LINES)
    opts = ap.parse_args(argv)
    hermes_path = os.path.abspath(opts.hermes_path)
    check_hermes_path(hermes_path)
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, profile, platform, mapping, seed in SETTINGS:
        n = make(name, profile, platform, mapping, seed, hermes_path, opts.lines)
        print(f"{name}.jsonl: {n} vectors (profile {profile}, platform {platform}, seed {seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
