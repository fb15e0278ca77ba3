#!/usr/bin/env python3
"""Drive Hermes's real ``ToolCallGuardrailController`` with the `loopsim guard` protocol.

Reads JSON-lines requests on stdin (docs/guard-protocol.md) and writes one compact JSON
answer per request on stdout, in the same format as `loopsim guard`, so the two can be
compared line by line. This file contains no Hermes code: it imports the installed
package (or a copy of it given with --hermes-path) and calls its public controller.

Options:
  --config FILE       a Hermes config.yaml; its top-level `tool_loop_guardrails` section is
                      passed to ``ToolCallGuardrailConfig.from_mapping`` (as Hermes does).
  --platform NAME     passed as ``platform=`` only when from_mapping accepts that keyword.
  --hermes-path DIR   put DIR first on sys.path, so DIR/agent/tool_guardrails.py is used.
  --no-strip          make ``_without_execute_code_metadata`` the identity (profile
                      hermes-v0.21.5: execute_code results hashed with their volatile fields).

`after` calls ``after_call(tool, args, result, failed=failed)`` and then, when the
controller has ``observe_call``, ``observe_call(..., tool_call_id=..., failed=F)``. The
runtime always passes the failure it detected itself to both; when a request's `failed` is
null or absent, F is ``classify_tool_failure(tool, result)[0]`` (the mirror of that
detection), while after_call receives None and classifies by itself.

Exit codes: 0 ok; 2 bad request or option (message names the line and field); 3 Hermes raised.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bridges" / "hermes"))
from hermes_guard import (  # noqa: E402
    RequestError,
    answer,
    build_controller,
    dump,
    import_guardrails,
    load_guardrail_section,
    reject_constant,
)



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config")
    ap.add_argument("--platform")
    ap.add_argument("--hermes-path")
    ap.add_argument("--no-strip", action="store_true")
    opts = ap.parse_args(argv)

    tg = import_guardrails(opts.hermes_path, opts.no_strip)
    ctrl = build_controller(tg, load_guardrail_section(opts.config), opts.platform)
    out = sys.stdout
    # Binary lines split on b"\n" only: a raw U+2028 inside a JSON string is not a line break.
    for lineno, raw in enumerate(sys.stdin.buffer, 1):
        if not raw.strip():
            continue
        try:
            try:
                req = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
            except (UnicodeDecodeError, ValueError) as exc:
                raise RequestError(f"not valid JSON ({exc})") from None
            if not isinstance(req, dict):
                raise RequestError("not a JSON object")
            reply = answer(tg, ctrl, req)
        except RequestError as exc:
            print(f"error: line {lineno}: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # Hermes itself raised on this input
            print(f"error: line {lineno}: Hermes raised {type(exc).__name__}: {exc}", file=sys.stderr)
            return 3
        out.write(dump(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
