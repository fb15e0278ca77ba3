#!/usr/bin/env python3
"""Gate on instruction counts: compare the Callgrind counts that
`cargo bench --bench instructions -- --save-summary=json` wrote under target/gungraun/ with
the limits committed in benches/instructions.json. A count more than 5% above its recorded
value fails (exit 1); a missing or unknown benchmark is an error (exit 2).

    python3 benches/check_instructions.py           # check
    python3 benches/check_instructions.py --update  # record the current counts
"""

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMITS = pathlib.Path(os.environ.get("LOOPSIM_INSTRUCTION_LIMITS", ROOT / "benches" / "instructions.json"))
RESULTS = pathlib.Path(os.environ.get("LOOPSIM_GUNGRAUN_RESULTS", ROOT / "target" / "gungraun" / "loopsim" / "instructions"))
TOLERANCE = 0.05


def measured():
    """Instructions (Ir) per benchmark, keyed `group/function.id`."""
    counts = {}
    for path in sorted(RESULTS.glob("*/*/summary.json")):
        data = json.loads(path.read_text())
        metrics = data["profiles"][0]["data"]["parts"][0]["metrics"]
        key = f"{data['group']}/{data['function_name']}.{data['id']}"
        counts[key] = int(metrics["Ir"]["values"]["new"])
    return counts


def main():
    counts = measured()
    if not counts:
        print(f"no results under {RESULTS}: run `cargo bench --bench instructions -- --save-summary=json` first")
        return 2
    if "--update" in sys.argv:
        LIMITS.write_text(json.dumps({"tolerance": TOLERANCE, "instructions": counts}, indent=2, sort_keys=True) + "\n")
        print(f"recorded {len(counts)} instruction counts in {LIMITS}")
        return 0
    recorded = json.loads(LIMITS.read_text())["instructions"]
    status = 0
    print(f"| benchmark | recorded | now | change | limit +{TOLERANCE:.0%} |")
    print("| --- | --- | --- | --- | --- |")
    for key in sorted(set(recorded) | set(counts)):
        if key not in counts or key not in recorded:
            print(f"| {key} | {recorded.get(key, 'missing')} | {counts.get(key, 'missing')} | - | ERROR |")
            status = 2
            continue
        old, new = recorded[key], counts[key]
        change = (new - old) / old
        verdict = "FAIL" if change > TOLERANCE else "ok"
        if verdict == "FAIL" and status == 0:
            status = 1
        print(f"| {key} | {old} | {new} | {change:+.2%} | {verdict} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
