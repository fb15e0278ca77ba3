#!/usr/bin/env python3
"""loopsim's engine bridge to Hermes: serves the engine protocol (docs/engine-protocol.md)
on stdin/stdout with the guardrail controller of the installed `hermes-agent` package, one
controller per agent. Started by `loopsim run --engine hermes-python[=PYTHON]`.

Replies are written and flushed one line per request. On a bad request or a Hermes exception
it answers {"op":"error","message":...} and exits.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hermes_guard import RequestError, answer, build_controller, dump, reject_constant  # noqa: E402

PROTOCOL = 1


def fail(message: str) -> int:
    sys.stdout.write(dump({"op": "error", "message": message}) + "\n")
    sys.stdout.flush()
    return 2


def main() -> int:
    lines = iter(sys.stdin.buffer)
    try:
        hello = json.loads(next(lines).decode("utf-8"))
    except StopIteration:
        return 0
    except ValueError as exc:
        return fail(f"the first line must be a hello request ({exc})")
    if not isinstance(hello, dict) or hello.get("op") != "hello":
        return fail("the first line must be a hello request")
    if hello.get("protocol") != PROTOCOL:
        return fail(f"protocol {hello.get('protocol')!r} is not supported; this adapter speaks {PROTOCOL}")
    try:
        import agent.tool_guardrails as tg
        from importlib.metadata import version

        hermes = version("hermes-agent")
    except ImportError as exc:
        return fail(f"cannot import hermes-agent ({exc}); install it with: pip install --no-deps hermes-agent==0.19.0 pyyaml")
    section = hello.get("tool_loop_guardrails") or {}
    platform = hello.get("platform")
    controllers = {}
    sys.stdout.write(dump({"op": "hello", "protocol": PROTOCOL, "engine": "hermes-python", "hermes": hermes}) + "\n")
    sys.stdout.flush()
    for n, raw in enumerate(lines, 2):
        try:
            req = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
            if not isinstance(req, dict):
                raise RequestError("not a JSON object")
            agent = req.get("agent")
            if not isinstance(agent, str):
                raise RequestError("field 'agent' must be a string")
            if agent not in controllers:
                controllers[agent] = build_controller(tg, section, platform)
            reply = answer(tg, controllers[agent], req)
        except (RequestError, ValueError) as exc:
            return fail(f"request {n}: {exc}")
        except Exception as exc:  # Hermes itself raised
            return fail(f"request {n}: Hermes raised {type(exc).__name__}: {exc}")
        sys.stdout.write(dump(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
