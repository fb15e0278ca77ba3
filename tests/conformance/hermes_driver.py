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
import inspect
import json
import sys

OPS = ("before", "after", "reset", "spawn")


class RequestError(Exception):
    """A request line that does not follow the protocol."""


def reject_constant(name: str):
    """NaN and Infinity are not JSON: refuse them in request lines (result text may hold them)."""
    raise ValueError(f"{name} is not JSON")


def dump(obj) -> str:
    """Compact JSON, the protocol's answer encoding."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def load_guardrail_section(path: str | None):
    """Return the `tool_loop_guardrails` value of a config.yaml ({} without a file)."""
    if path is None:
        return {}
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return data.get("tool_loop_guardrails", {}) if isinstance(data, dict) else {}


def import_guardrails(hermes_path: str | None, no_strip: bool):
    """Import agent.tool_guardrails (from hermes_path when given) and apply --no-strip."""
    if hermes_path:
        sys.path.insert(0, hermes_path)
    import agent.tool_guardrails as tg

    if hermes_path and not tg.__file__.startswith(hermes_path.rstrip("/") + "/"):
        raise SystemExit(f"error: agent.tool_guardrails came from {tg.__file__}, not {hermes_path}")
    if no_strip:
        if not hasattr(tg, "_without_execute_code_metadata"):
            raise SystemExit("error: --no-strip: this tool_guardrails has no _without_execute_code_metadata")
        tg._without_execute_code_metadata = lambda parsed: parsed
    return tg


def build_controller(tg, section, platform: str | None):
    """Construct the controller the way Hermes does, adding platform= where supported."""
    kwargs = {}
    if platform is not None:
        if "platform" in inspect.signature(tg.ToolCallGuardrailConfig.from_mapping).parameters:
            kwargs["platform"] = platform
        else:
            print(f"note: from_mapping takes no platform; --platform {platform} ignored", file=sys.stderr)
    return tg.ToolCallGuardrailController(tg.ToolCallGuardrailConfig.from_mapping(section, **kwargs))


def field(req: dict, name: str, kinds, *, required: bool = True, what: str = ""):
    """Fetch and type-check one request field."""
    if name not in req:
        if required:
            raise RequestError(f"field {name!r} is missing")
        return None
    value = req[name]
    if kinds is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
        raise RequestError(f"field {name!r} must be {what}")
    return value


def halt_of(ctrl):
    """The controller's recorded halt decision as {code,count} or None."""
    h = ctrl.halt_decision
    return None if h is None else {"code": h.code, "count": h.count}


def decision_answer(tg, ctrl, decision, tool, args) -> dict:
    """Answer fields shared by `before` and `after`, in protocol order."""
    sig = decision.signature
    if sig is None:
        sig = tg.ToolCallSignature.from_call(tool, args if isinstance(args, dict) else {})
    return {
        "action": decision.action,
        "code": decision.code,
        "count": decision.count,
        "args_hash": sig.args_hash,
        "halt": halt_of(ctrl),
    }


def answer(tg, ctrl, req: dict) -> dict:
    """Apply one request to the controller and build its answer."""
    op = field(req, "op", str, what="a string")
    if op not in OPS:
        raise RequestError(f"field 'op' has unknown value {op!r}")
    if op == "reset":
        ctrl.reset_for_turn()
        return {"op": "reset"}
    if op == "spawn":
        count = field(req, "count", (int,), what="an integer >= 0")
        if count < 0:
            raise RequestError("field 'count' must be an integer >= 0")
        if not hasattr(tg, "reserve_subagent_spawns"):
            raise RequestError("op 'spawn' needs loop caps; this Hermes has no reserve_subagent_spawns")
        tg._set_active_subagent_guardrail(ctrl)
        try:
            reservation = tg.reserve_subagent_spawns(count)
            admitted = reservation.commit(reservation.count)
        finally:
            tg._set_active_subagent_guardrail(None)
        return {"op": "spawn", "admitted": admitted}

    tool = field(req, "tool", str, what="a string")
    args = field(req, "args", None)
    if op == "before":
        return decision_answer(tg, ctrl, ctrl.before_call(tool, args), tool, args)

    result = field(req, "result", (str, type(None)), what="a string or null")
    failed = field(req, "failed", (bool, type(None)), required=False, what="true, false or null")
    call_id = field(req, "tool_call_id", str, required=False, what="a string") or ""
    decision = ctrl.after_call(tool, args, result, failed=failed)
    out = decision_answer(tg, ctrl, decision, tool, args)
    if hasattr(ctrl, "observe_call"):
        effective = bool(failed) if failed is not None else tg.classify_tool_failure(tool, result)[0]
        obs = ctrl.observe_call(tool, args, result, tool_call_id=call_id, failed=effective)
        if (obs.notice is None) != (obs.kind is None):
            raise RuntimeError(f"observation with notice/kind mismatch: kind={obs.kind!r}")
        out["halt"] = halt_of(ctrl)
        out["observe"] = {"kind": obs.kind, "stub": bool(obs.stub)}
    return out


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
