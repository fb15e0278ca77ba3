"""Writes real Hermes sessions with Hermes's own session store (hermes_state.SessionDB).

Usage: python make_sessions.py HERMES_HOME [--leave-wal] [--lock-journal]

Creates HERMES_HOME/state.db and HERMES_HOME/logs/agent.log (through Hermes's logging
setup) with these sessions, each as the runtime would have persisted it:

- spin-1 (telegram): 3 ordinary calls, then 40 identical no-op execute_code calls whose
  results differ only in volatile fields, until the user stops it; agent.log has every call.
- healthy-1 (cli): two turns with answers and one delegate_task call; a terminal failing three times with different
  commands draws the 0.19.0 controller's real same_tool_failure_warning. Tool calls are stored
  in Hermes's own {name, arguments} shape (no ids). No agent.log lines.
- blocked-1 (cli, hard stops on): one read_file repeated with an unchanged result; the
  0.19.0 controller warns from the 2nd and refuses the 6th; Hermes's halt reply follows.
- compacted-1 (cli): a turn, an in-place compaction (archive_and_compact), then a second turn.
- spin-newer-1 (telegram): the spin-wait as newer Hermes stores it (see spin_newer).
- same-ids-1, stopped-1, compact-loop-1, quoted-1: shapes an import must not miscount (see
  shapes).

With --leave-wal the process exits without closing the database, so the last writes stay in
state.db-wal (a database still in WAL mode, as while Hermes runs). The sessions' guardrail
lines come from the 0.19.0 controller itself (append_toolguard_guidance,
toolguard_synthetic_result).
"""

import json
import logging
import os
import sys
from pathlib import Path

import hermes_logging
import hermes_state
from agent import tool_guardrails as tg

T0 = 1_796_000_000.0
MODEL_LATENCY = 9.5
TOOL_LATENCY = 0.4


class Writer:
    """Appends one session's rows with explicit timestamps, as the runtime flushes them."""

    def __init__(self, db, sid, source, model, config=None, with_ids=True, log=False):
        self.db, self.sid, self.t = db, sid, T0
        self.with_ids, self.log, self.calls, self.n = with_ids, log, 0, 0
        self.ctrl = tg.ToolCallGuardrailController(tg.ToolCallGuardrailConfig.from_mapping(config or {}))
        self.tokens = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        db.create_session(sid, source, model=model)
        self.model = model

    def user(self, text):
        self.t += 30.0
        self.ctrl.reset_for_turn()
        self.db.append_message(self.sid, "user", text, timestamp=self.t)

    def model_call(self):
        self.calls += 1
        self.t += MODEL_LATENCY
        prompt = 12_000 + 150 * self.calls
        cached = prompt - 400
        out = 120 + self.calls % 7
        written = 64
        self.tokens["input"] += prompt - cached - written
        self.tokens["cache_read"] += cached
        self.tokens["cache_write"] += written
        self.tokens["output"] += out
        if self.log:
            # The exact line conversation_loop logs after each call, through Hermes's logger.
            logging.getLogger("agent.conversation_loop").info(
                "API call #%d: model=%s provider=%s in=%d out=%d total=%d latency=%.1fs%s",
                self.calls, self.model, "openrouter", prompt, out, prompt + out, MODEL_LATENCY,
                f" cache={cached}/{prompt} ({100 * cached / prompt:.0f}%)",
            )

    def tools(self, calls, results, failed=None):
        """One model reply with tool calls, then each call through the 0.19.0 guardrails."""
        self.model_call()
        stored = []
        for i, (name, args) in enumerate(calls):
            self.n += 1
            cid = f"call_{self.n:04d}"
            entry = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            stored.append(entry if self.with_ids else {"name": name, "arguments": json.dumps(args)})
        self.db.append_message(self.sid, "assistant", "", tool_calls=stored, finish_reason="tool_calls", timestamp=self.t)
        for i, (name, args) in enumerate(calls):
            self.t += TOOL_LATENCY
            d = self.ctrl.before_call(name, args)
            if not d.allows_execution:
                content = tg.toolguard_synthetic_result(d)
            else:
                res = results[i]
                bad = failed[i] if failed else tg.classify_tool_failure(name, res)[0]
                d = self.ctrl.after_call(name, args, res, failed=bad)
                content = tg.append_toolguard_guidance(res, d) if d.action in {"warn", "halt"} else res
            self.db.append_message(self.sid, "tool", content, tool_name=name,
                                   tool_call_id=stored[i].get("id", f"call_{self.n - len(calls) + i + 1:04d}"),
                                   timestamp=self.t)
        halt = self.ctrl.halt_decision
        if halt is not None:
            # The runtime's own reply after a halt (not a model call).
            self.db.append_message(self.sid, "assistant", f"stopped: {halt.code} after {halt.count}", timestamp=self.t)
            return True
        return False

    def answer(self, text):
        self.model_call()
        self.db.append_message(self.sid, "assistant", text, finish_reason="stop", timestamp=self.t)

    def close(self, end_reason):
        self.db.update_token_counts(
            self.sid, input_tokens=self.tokens["input"], output_tokens=self.tokens["output"],
            cache_read_tokens=self.tokens["cache_read"], cache_write_tokens=self.tokens["cache_write"],
            api_call_count=self.calls, model=self.model,
        )
        self.db.end_session(self.sid, end_reason)


def spin(db):
    w = Writer(db, "spin-1", "telegram", "anthropic/claude-sonnet-4", log=True)
    hermes_logging.set_session_context("spin-1")
    w.user("Start the ten report jobs in the background and tell me when they are done.")
    w.tools([("terminal", {"command": "ls reports"})], ['{"output": "a b c", "exit_code": 0}'])
    w.tools([("read_file", {"path": "jobs.yaml"})], ['{"content": "jobs: 10"}'])
    w.tools([("terminal", {"command": "./start-jobs.sh"})], ['{"output": "started 10", "exit_code": 0}'])
    code = {"code": "import time\ntime.sleep(0)\nprint('')"}
    for k in range(40):
        res = json.dumps({"status": "success", "output": "", "duration_seconds": round(0.2 + (k % 5) * 0.07, 2),
                          "kernel": {"execution_count": 7 + k, "mode": "persistent"}})
        w.tools([("execute_code", code)], [res])
    hermes_logging.clear_session_context()
    w.close("user_stop")


def ordinal(n):
    return f"{n}th" if 10 <= n % 100 <= 13 else f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def spin_newer(db):
    """The spin-wait as a newer Hermes (stall guards, telegram hard stops) stores it: notices
    appended from the 3rd identical poll, the streak halt appended at the 5th, then the halt
    reply. The 0.19.0 package has no stall guards, so the fixture writes the appended lines in
    the layout newer Hermes uses (label or note prefix, code, count), with its own words."""
    w = Writer(db, "spin-newer-1", "telegram", "anthropic/claude-sonnet-4")
    w.user("Tell me when the jobs are done.")
    w.tools([("terminal", {"command": "./start-jobs.sh"})], ['{"output": "started", "exit_code": 0}'])
    code = {"code": "print('')"}
    for k in range(1, 11):
        w.model_call()
        w.n += 1
        cid = f"call_{w.n:04d}"
        call = {"id": cid, "type": "function", "function": {"name": "execute_code", "arguments": json.dumps(code)}}
        db.append_message(w.sid, "assistant", "", tool_calls=[call], finish_reason="tool_calls", timestamp=w.t)
        w.t += TOOL_LATENCY
        res = json.dumps({"status": "success", "output": "", "duration_seconds": 0.1 * k,
                          "kernel": {"execution_count": 40 + k}})
        if k >= 5:
            res += "\n\n[Tool loop hard stop: identical_call_streak_halt; count=5; (fixture words)]"
        if k >= 3:
            res += f"\n\n[hermes note: this is the {ordinal(k)} (fixture words)]"
        db.append_message(w.sid, "tool", res, tool_name="execute_code", tool_call_id=cid, timestamp=w.t)
        if k == 5:
            db.append_message(w.sid, "assistant", "stopped: identical_call_streak_halt after 5", timestamp=w.t)
            break
    w.close("guardrail_halt")


def healthy(db):
    w = Writer(db, "healthy-1", "cli", "gpt-4o", with_ids=False)
    w.user("Summarise the README.")
    w.tools([("read_file", {"path": "README.md"}), ("search_files", {"pattern": "TODO"})],
            ['{"content": "# Demo"}', '{"matches": []}'])
    # A child's work comes back as the delegate_task result (its own calls are its own session).
    w.tools([("delegate_task", {"goal": "check the docs folder"})],
            ['{"status": "completed", "summary": "docs/ has two pages"}'])
    w.answer("The README is a one-line title; no TODOs.")
    w.user("Now run the tests.")
    for cmd in ["pytest", "python -m pytest", "./run-tests"]:
        w.tools([("terminal", {"command": cmd})], ['{"output": "not found", "exit_code": 127}'])
    w.tools([("terminal", {"command": "make test"})], ['{"output": "12 passed", "exit_code": 0}'])
    w.answer("All 12 tests pass.")
    w.close("user_exit")


def blocked(db):
    cfg = {"hard_stop_enabled": True}
    w = Writer(db, "blocked-1", "cli", "claude-haiku-4-5", config=cfg)
    w.user("Wait until config.json says ready.")
    for _ in range(8):
        if w.tools([("read_file", {"path": "config.json"})], ['{"content": "{\\"ready\\": false}"}']):
            break
    w.user("Thanks, I fixed it myself.")
    w.answer("Good to hear.")
    w.close("user_exit")


def compacted(db):
    w = Writer(db, "compacted-1", "cli", "mystery-model-9")
    w.user("Look at the logs.")
    w.tools([("read_file", {"path": "app.log"})], ['{"content": "error at 12:00"}'])
    w.tools([("search_files", {"pattern": "12:00"})], ['{"matches": ["app.log:3"]}'])
    w.answer("One error at 12:00.")
    # In-place compaction: the turns are archived (active=0, compacted=1) and the summary plus
    # the kept tail are inserted again as live rows, as conversation_compression does.
    rows = db.get_messages_as_conversation("compacted-1")
    summary = {"role": "user", "content": "[CONTEXT COMPACTION \u2014 REFERENCE ONLY] summary\nThe user asked about logs."}
    db.archive_and_compact("compacted-1", [summary] + rows[-3:])
    w.user("And the other server?")
    w.tools([("read_file", {"path": "other.log"})], ['{"content": "fine"}'])
    w.answer("The other server is fine.")
    w.close("user_exit")


def shapes(db):
    """Shapes Hermes writes that an import must not miscount."""
    # Codex-style deterministic ids: identical calls share one tool_call_id.
    w = Writer(db, "same-ids-1", "telegram", "gpt-5")
    w.user("Wait for the build.")
    for _ in range(6):
        w.model_call()
        call = {"id": "fc_poll_0", "type": "function",
                "function": {"name": "terminal", "arguments": json.dumps({"command": "status"})}}
        db.append_message(w.sid, "assistant", "", tool_calls=[call], finish_reason="tool_calls", timestamp=w.t)
        w.t += TOOL_LATENCY
        db.append_message(w.sid, "tool", '{"output": "building", "exit_code": 0}', tool_name="terminal",
                          tool_call_id="fc_poll_0", timestamp=w.t)
    w.close("user_stop")

    # /stop after a tool result: the runtime closes the turn with its own reply (no
    # finish_reason), then the user goes on; the next message comes two days later.
    w = Writer(db, "stopped-1", "telegram", "gpt-4o")
    w.user("Poll the queue.")
    for _ in range(4):
        w.tools([("terminal", {"command": "queue status"})], ['{"output": "3 waiting", "exit_code": 0}'])
    from agent.message_sanitization import close_interrupted_tool_sequence
    closing = [{"role": "tool", "content": "x"}]
    close_interrupted_tool_sequence(closing, None)
    db.append_message(w.sid, "assistant", closing[-1]["content"], timestamp=w.t + 1)
    w.t += 2 * 86_400
    w.user("Is it empty now?")
    w.answer("Yes.")
    w.close("user_exit")

    # A loop that goes on after an in-place compaction: the kept tail is copied (with its
    # timestamps), then the same poll continues.
    w = Writer(db, "compact-loop-1", "telegram", "gpt-4o")
    w.user("Tell me when the job is done.")
    for _ in range(6):
        w.tools([("terminal", {"command": "job status"})], ['{"output": "pending", "exit_code": 0}'])
    rows = db.get_messages_as_conversation(w.sid)
    summary = {"role": "user", "content": "[CONTEXT COMPACTION \u2014 REFERENCE ONLY] summary"}
    db.archive_and_compact(w.sid, [summary] + rows[-2:])
    for _ in range(6):
        w.tools([("terminal", {"command": "job status"})], ['{"output": "pending", "exit_code": 0}'])
    w.answer("Done.")
    w.close("user_exit")

    # A reply with malformed tool-call JSON is retried: agent.log has a line for it, the
    # database no row.
    w = Writer(db, "retry-1", "cli", "gpt-4o", log=True)
    hermes_logging.set_session_context(w.sid)
    w.user("List the files.")
    w.model_call()  # the malformed reply: logged, never stored
    w.calls -= 1
    w.tools([("terminal", {"command": "ls"})], ['{"output": "a b", "exit_code": 0}'])
    w.answer("Two files: a and b.")
    hermes_logging.clear_session_context()
    w.close("user_exit")

    # A tool's output that quotes a guardrail line in the middle is the tool's output.
    w = Writer(db, "quoted-1", "cli", "gpt-4o")
    w.user("Show me the old log.")
    w.tools([("read_file", {"path": "old.log"})],
            ['line 1\n\n[Tool loop hard stop: same_tool_failure_halt; count=8; old]\nline 3'])
    w.tools([("read_file", {"path": "new.log"})], ['{"content": "fine"}'])
    w.answer("The old log quotes a hard stop.")
    w.close("user_exit")


def main():
    home = Path(sys.argv[1])
    home.mkdir(parents=True, exist_ok=True)
    hermes_logging.setup_logging(hermes_home=home, force=True)
    db = hermes_state.SessionDB(home / "state.db")
    spin(db)
    spin_newer(db)
    healthy(db)
    blocked(db)
    compacted(db)
    shapes(db)
    logging.shutdown()
    if "--leave-wal" in sys.argv:
        # Neither SQLite nor Hermes's own periodic checkpoint may move these rows out of the WAL.
        db._conn.execute("PRAGMA wal_autocheckpoint=0")
        db._CHECKPOINT_EVERY_N_WRITES = 10**9
        db.create_session("late-1", "cli", model="gpt-4o")
        db.append_message("late-1", "user", "hello", timestamp=T0)
        db.append_message("late-1", "assistant", "hi", finish_reason="stop", timestamp=T0 + 2)
        sys.stdout.flush()
        os._exit(0)
    db.close()


if __name__ == "__main__":
    main()
