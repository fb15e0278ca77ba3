#!/usr/bin/env python3
"""Ask Hermes's real ``ContextCompressor`` where it would cut a conversation.

Reads JSON lines on stdin, one conversation each:

    {"messages": [{"role": "user", "tokens": 120}, {"role": "calls", "tokens": 45}, ...],
     "made": 0, "tail_budget": 10880}

Roles: ``user``, ``calls`` (an assistant reply with tool calls and no text), ``text`` (an
assistant reply with text only), ``tool`` (the result of the call before it), ``summary`` and
``asummary`` (an earlier compaction's summary, in a user or an assistant message). Each
message is built so that Hermes's own per-message estimate of it is exactly ``tokens``.
``made`` is the session's compaction count so far.

Writes one JSON line per conversation: ``{"plan": "nothing"}`` when Hermes would leave it as
it is, else ``{"start": S, "end": E, "pruned": [indices of pruned results]}``: the steps
``compress()`` takes before its summary call, in its order, through the compressor's own
methods.

With ``"window": W`` in a line, the whole compaction runs instead: ``compress()`` of a
compressor for a W-token window (its summary model answers with exactly the summary budget
Hermes asks for), then the runtime's own restoring of the user's message
(``conversation_compression``). The answer is ``{"messages": [[role, tokens], ...]}``, the
conversation after it in the same terms, and ``"summary"``, the budget asked for.

This file contains no Hermes code: it imports the installed package.

Exit codes: 0 ok; 2 a line that is not such a conversation (the message names the line).
"""

from __future__ import annotations

import json
import sys

from agent.context_compressor import (
    SUMMARY_PREFIX,
    ContextCompressor,
    _estimate_msg_budget_tokens,
)
from agent.conversation_compression import _ensure_compressed_has_user_turn


def fail(line: int, why: str) -> None:
    print(f"stdin:{line}: {why}", file=sys.stderr)
    sys.exit(2)


def text(tokens: int, tag: str, line: int, prefix: str = "") -> str:
    body = 4 * (tokens - 10) - len(prefix) - len(tag)
    if body < 0:
        fail(line, f"{tokens} tokens is too small for this message")
    return prefix + tag + "x" * body


def build(spec: list, line: int) -> list:
    msgs = []
    last_call = None
    for i, m in enumerate(spec):
        role, tokens = m.get("role"), m.get("tokens")
        if not isinstance(tokens, int) or tokens < 10:
            fail(line, f"messages[{i}].tokens: an integer of at least 10")
        tag = f"[{i:05d}] "  # every content distinct: Hermes prunes duplicates
        if role == "user":
            msgs.append({"role": "user", "content": text(tokens, tag, line)})
        elif role == "summary":
            msgs.append({"role": "user", "content": text(tokens, "", line, SUMMARY_PREFIX + tag)})
        elif role == "asummary":
            msgs.append({"role": "assistant",
                         "content": text(tokens, "", line, SUMMARY_PREFIX + tag)})
        elif role == "text":
            msgs.append({"role": "assistant", "content": text(tokens, tag, line)})
        elif role == "calls":
            last_call = f"call_{i}"
            tc = {"id": last_call, "type": "function",
                  "function": {"name": "read_file", "arguments": ""}}
            pad = 4 * (tokens - 10) - len(str(tc))
            if pad < 0:
                fail(line, f"messages[{i}].tokens: {tokens} is too small for a tool call")
            tc["function"]["arguments"] = "a" * pad
            msgs.append({"role": "assistant", "content": "", "tool_calls": [tc]})
        elif role == "tool":
            if last_call is None:
                fail(line, f"messages[{i}]: a tool result with no call before it")
            msgs.append({"role": "tool", "tool_call_id": last_call,
                         "content": text(tokens, tag, line)})
        else:
            fail(line, f"messages[{i}].role: unknown `{role}`")
        if _estimate_msg_budget_tokens(msgs[-1]) != tokens:
            fail(line, f"messages[{i}]: built with {_estimate_msg_budget_tokens(msgs[-1])} "
                       f"tokens, not {tokens}")
    return msgs


def compressor(made: int, tail_budget: int) -> ContextCompressor:
    # Only what the cut reads: no model, no window probe, no network.
    c = object.__new__(ContextCompressor)
    c.protect_first_n = 3
    c.protect_last_n = 20
    c.tail_token_budget = tail_budget
    c.compression_count = made
    c._previous_summary = None
    c.quiet_mode = True
    return c


def describe(m: dict) -> list:
    """A message in the input's terms: its role and Hermes's estimate of it."""
    content = m.get("content") or ""
    summary = ContextCompressor._is_context_summary_content(content)
    if m.get("role") == "tool":
        role = "tool"
    elif m.get("role") == "user":
        role = "summary" if summary else "user"
    elif summary:
        role = "asummary"
    else:
        role = "calls" if m.get("tool_calls") else "text"
    return [role, _estimate_msg_budget_tokens(m)]


def whole(msgs: list, made: int, window: int) -> dict:
    c = ContextCompressor("loopsim-model", quiet_mode=True, config_context_length=window)
    c.compression_count = made
    asked = []

    def summary(turns, **_kw):
        budget = c._compute_summary_budget(turns)
        asked.append(budget)
        return ContextCompressor._with_summary_prefix("S" * (4 * budget))

    c._generate_summary = summary
    out = c.compress([dict(m) for m in msgs])
    _ensure_compressed_has_user_turn(msgs, out)
    return {"messages": [describe(m) for m in out], "summary": asked[0] if asked else None}


def main() -> None:
    for line, raw in enumerate(sys.stdin, start=1):
        if not raw.strip():
            continue
        try:
            case = json.loads(raw)
        except json.JSONDecodeError as e:
            fail(line, f"not JSON: {e}")
        msgs = build(case.get("messages") or [], line)
        if case.get("window"):
            print(json.dumps(whole(msgs, int(case.get("made", 0)), int(case["window"]))))
            continue
        c = compressor(int(case.get("made", 0)), int(case.get("tail_budget", 0)))
        if len(msgs) <= c._protect_head_size(msgs) + 3 + 1:
            print(json.dumps({"plan": "nothing"}))
            continue
        pruned, _ = c._prune_old_tool_results(
            msgs, protect_tail_count=c.protect_last_n, protect_tail_tokens=c.tail_token_budget)
        start = c._align_boundary_forward(pruned, c._protect_head_size(pruned))
        end = c._find_tail_cut_by_tokens(pruned, start)
        if start >= end:
            print(json.dumps({"plan": "nothing"}))
            continue
        changed = [i for i, (a, b) in enumerate(zip(msgs, pruned)) if a != b]
        print(json.dumps({"start": start, "end": end, "pruned": changed}))


if __name__ == "__main__":
    main()
