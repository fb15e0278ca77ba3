"""Hermes's guardrail controller behind loopsim's JSON-lines requests.

Shared by `bridges/hermes/adapter.py` (the engine bridge the simulator talks to) and
`tests/conformance/hermes_driver.py` (the conformance driver). This file holds no Hermes code:
it imports the installed `hermes-agent` package (or a copy given by path) and calls its
public controller.
"""

from __future__ import annotations

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
