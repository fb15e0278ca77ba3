#!/usr/bin/env python3
"""Generate deterministic `loopsim guard` request streams for conformance tests.

``--seed N --lines M`` writes exactly M JSON request lines (docs/guard-protocol.md) to
stdout; the same seed always gives the same bytes (``random.Random(seed)``). The stream is
a random sequence of small episodes, often separated by `reset` lines (turn boundaries):

- before/after pairs for the same call (a few lone `before` lines, as for a call the
  runtime never ran, and a few batches: all `before` lines, then all `after` lines);
- long runs of identical calls (warn/block/halt thresholds, identical-call streaks, stubs
  for results of 512+ characters), repeated identical failures, one tool failing with
  varied args, failure-tolerant tools, progress-reset tools between failures;
- idempotent tools with same/changing results, cycles A,B / A,B,C / A,B,C,D, pollers
  (process_manage, x_poll, y_get_result), web_search runs past 50, delegate_task with
  tasks lists, goals and list/steer/stop actions plus `spawn` requests;
- execute_code results differing only in duration_seconds / kernel.execution_count;
- `failed` true/false/null/absent; classifier edge cases (terminal exit_code 0/1/"0"/false/
  0.0/true/null, memory "exceed the limit", leading "Error", '"error"' before/after the
  first 500 characters, landed write_file/patch, guardrail_refusal, null results);
- hashing edge cases: unicode (é, U+2028 raw in the line, astral, lone surrogates written
  as \\ud800 escapes), floats (1.0, 1e16, 1e-7, -0.0, 1e400 written literally, NaN and
  Infinity only inside result text), 30-digit integers, nested and non-object args (list,
  string, number, null), duplicate keys, whitespace around result JSON, the text "null",
  control characters that make result text invalid JSON.

Deliberately avoided, because they make Hermes itself raise (the runtime would crash too),
so there is no answer to compare:
- memory results with "success": false whose "error" is present but not a string (null,
  number): Hermes evaluates `"exceed the limit" in error` and raises TypeError;
- integers of more than 4300 digits (Python's int limit: ValueError when parsing the
  request line or when hashing); nesting deeper than 500 levels (RecursionError);
- NaN/Infinity literals outside strings: not JSON, so not valid request lines.

``--no-spawn`` omits `spawn` requests (profiles without loop caps, e.g. hermes-0.19.0).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys

LONE = "\ud800"          # lone high surrogate (written as an escape)
LONE_LOW = "\udfff"
ASTRAL = "\U0001F600"
LS = "\u2028"            # written raw: JSON allows it, splitlines() would not

# Number literals that Python's json.dumps cannot produce; swapped in after dumping.
RAW_NUMBERS = ("1e400", "-1e400", "1e16", "1E16", "1e-7", "-0.0", "1.5e300", "0.1e1", "1.0")
_RAW_RE = re.compile(r'"@@raw:([^"@]+)@@"')
_SURROGATE_RE = re.compile("[\ud800-\udfff]")

IDEMPOTENT = ["read_file", "search_files", "web_search", "web_extract", "session_search",
              "skill_view", "skills_list", "browser_snapshot", "mcp_filesystem_read_file"]
MUTATING = ["terminal", "execute_code", "write_file", "patch", "todo_list", "todo", "memory",
            "process_manage", "process", "browser_navigate", "browser_click", "send_message",
            "cronjob", "skill_manage"]
TOLERANT = ["terminal", "execute_code", "process_manage", "process", "browser_navigate", "web_extract"]
POLLERS = ["process_manage", "x_poll", "y_get_result"]
OTHER = ["my_custom_tool", "mcp_github_get_issue", "tool_é", "clarify"]
ALL_TOOLS = IDEMPOTENT + MUTATING + POLLERS[1:] + OTHER


def raw(literal: str) -> str:
    """Placeholder for a number literal emitted verbatim into the request line."""
    return f"@@raw:{literal}@@"


def encode(req: dict) -> str:
    """One request line: compact JSON, raw UTF-8, lone surrogates as \\uXXXX escapes."""
    text = json.dumps(req, ensure_ascii=False, separators=(",", ":"))
    text = _SURROGATE_RE.sub(lambda m: "\\u%04x" % ord(m.group()), text)
    return _RAW_RE.sub(lambda m: m.group(1), text)


def jd(obj, **kw) -> str:
    """Tool-result JSON text (Hermes tools use json.dumps defaults)."""
    return json.dumps(obj, ensure_ascii=kw.pop("ensure_ascii", False), **kw)


class Gen:
    """Builds episodes of requests from one seeded RNG."""

    def __init__(self, seed: int, spawn: bool):
        self.r = random.Random(seed)
        self.spawn = spawn
        self.out: list[dict] = []
        self.call_no = 0

    # ── primitives ────────────────────────────────────────────────────────
    def before(self, tool, args):
        self.out.append({"op": "before", "tool": tool, "args": args})

    def after(self, tool, args, result, failed="pick"):
        r = self.r
        req = {"op": "after", "tool": tool, "args": args, "result": result}
        if failed == "pick":
            failed = r.choice([None, None, "absent", True, False])
        if failed != "absent":
            req["failed"] = failed
        if r.random() < 0.7:
            self.call_no += 1
            req["tool_call_id"] = f"call_{self.call_no}"
        self.out.append(req)

    def call(self, tool, args, result, failed="pick"):
        self.before(tool, args)
        if self.r.random() < 0.04:  # never ran (blocked earlier in the runtime, interrupted)
            return
        self.after(tool, args, result, failed)

    def reset(self):
        self.out.append({"op": "reset"})

    # ── value catalogues ──────────────────────────────────────────────────
    def weird_value(self):
        r = self.r
        return r.choice([
            1.0, 1e16, 1e-7, -0.0, 0.5, 123456789012345678901234567890, -98765432109876543210987654321,
            raw(r.choice(RAW_NUMBERS)), "é", LS, ASTRAL, LONE, "a" + LONE_LOW + "b", "tab\tnl\nq\"b\\",
            "\x7f\x01", True, False, None, [], {}, [1, [2, [3, {"d": None}]]], {"z": {"y": {"x": [1.0, "é"]}}},
        ])

    def args_for(self, tool, variant=None):
        r = self.r
        v = r.randrange(6) if variant is None else variant
        kind = r.random()
        if kind < 0.05:  # non-object args count as {}
            return r.choice([[1, 2], "ls -la", 42, None, True, [], 1.5])
        if kind < 0.15:
            keys = ["b", "a", "é", LONE, "\ue000", ASTRAL, "A", "aa", ""]
            r.shuffle(keys)
            return {k: self.weird_value() for k in keys[: r.randrange(1, 6)]}
        if tool == "terminal":
            return {"command": f"pytest -x tests/test_{v}.py", "timeout": r.choice([60, 60.0, raw("1e16")])}
        if tool in ("read_file", "mcp_filesystem_read_file"):
            return {"path": f"/src/m{v}.py", "offset": r.choice([0, 1, 1.0])}
        if tool in ("web_search", "search_files", "session_search"):
            return {"query": r.choice(["rust wtf-8", "café", "x" + LS + "y", ASTRAL + " emoji", "q"]) + str(v)}
        if tool == "execute_code":
            return {"code": r.choice(["", "print(1)", "import time; time.sleep(1)"]) + "#" * v}
        if tool in ("write_file", "patch"):
            return {"path": f"/src/m{v}.py", "content": "x = 1\n"}
        return {"id": v, "opts": {"deep": {"n": [v, 1.0, None]}, "z": "é"}}

    def result_for(self, tool, fail: bool, v=0):
        """A plausible result text for the tool; `fail` picks a failing shape."""
        r = self.r
        if tool == "terminal":
            code = r.choice([1, 2, "0", True, -1]) if fail else r.choice([0, 0.0, False, -0.0, None])
            body = {"output": f"run {v}", "exit_code": code, "error": None}
            if r.random() < 0.2:
                del body["exit_code"]
            return jd(body)
        if tool == "execute_code":
            return self.exec_result(v, r.random() < 0.5, status="error" if fail else "success")
        if tool == "memory":
            if fail:
                return jd({"success": False, "error": "Memory full: adding this would exceed the limit of 2200 chars."})
            return jd({"success": True, "message": f"saved {v}"})
        if tool == "write_file":
            return jd({"error": f"Permission denied {v}"}) if fail else jd({"bytes_written": 10 + v})
        if tool == "patch":
            return jd({"success": False, "error": "no match"}) if fail else jd({"success": True, "diff": f"@@ {v}"})
        if fail:
            return r.choice([f"Error: boom {v}", jd({"error": f"not found {v}"}), jd({"status": "FAILED", "n": v}),
                             '{"ERROR": "upper"}', jd({"result": "x", "failed": v})])
        return r.choice([f"content {v}", jd({"results": [v, "é"], "total": v}), jd({"ok": True, "v": v})])

    def exec_result(self, v, vary: bool, status="success"):
        r = self.r
        dur = round(r.uniform(0.01, 3.0), 3) if vary else 0.12
        count = r.randrange(1, 200) if vary else 7
        body = {"status": status, "output": f"out{v}" if v else "", "duration_seconds": dur,
                "kernel": {"execution_count": count, "mode": "persistent"}}
        roll = r.random()
        if roll < 0.1:
            body["kernel"] = "persistent"           # non-object kernel: nothing to strip inside
        elif roll < 0.2:
            body["nested"] = {"duration_seconds": dur}  # deeper fields are never stripped
        elif roll < 0.25:
            body["kernel"] = {"execution_count": count}  # emptied kernel stays {}
        return jd(body)

    def edge_result(self):
        """(tool, result) pairs aimed at the failure classifier and the result hash."""
        r = self.r
        pad = "x" * r.choice([480, 490, 495, 496, 497, 600])
        return r.choice([
            ("terminal", jd({"output": "", "exit_code": r.choice([0, 1, "0", False, 0.0, True, None, "", [], -0.0])})),
            ("terminal", "Error: command not found"),
            ("terminal", "   " + jd({"exit_code": 3}) + "\n"),
            ("memory", jd({"success": False, "error": "would exceed the limit"})),
            ("memory", jd({"success": False, "error": "other problem"})),
            ("memory", jd({"success": False})),
            ("memory", jd({"success": True, "error": None})),
            (r.choice(ALL_TOOLS), "Error executing tool: timeout"),
            (r.choice(ALL_TOOLS), "error: lower case"),
            (r.choice(ALL_TOOLS), " Error leading space"),
            (r.choice(ALL_TOOLS), jd({"pad": pad, "error": "late"})),
            (r.choice(ALL_TOOLS), pad + '"failed"'),
            (r.choice(ALL_TOOLS), jd({"message": "bad", "success": False})),
            ("write_file", jd({"bytes_written": 0, "error": ""})),
            ("write_file", jd({"bytes_written": 5, "error": "disk"})),
            ("write_file", "  " + jd({"bytes_written": 5}) + "  "),
            ("patch", jd({"success": True, "error": None})),
            ("patch", jd({"success": "true"})),
            ("patch", jd({"success": 1})),
            (r.choice(["read_file", "search_files", "web_search"]),
             jd({"error": "duplicate read refused", "guardrail_refusal": r.choice([True, 1, "true", False])})),
            (r.choice(ALL_TOOLS), None),
            (r.choice(ALL_TOOLS), "null"),
            (r.choice(ALL_TOOLS), " null "),
            (r.choice(ALL_TOOLS), ""),
            (r.choice(IDEMPOTENT), '{"a":1,"a":2}'),
            (r.choice(IDEMPOTENT), '{"a":2}'),
            (r.choice(IDEMPOTENT), '\n {"v": [NaN, Infinity, -Infinity]} \t'),
            (r.choice(IDEMPOTENT), '{"v":[1e400,1E400,-1e400,1e16,1e-7,-0.0,1.0,100000000000000000000000000000]}'),
            (r.choice(IDEMPOTENT), '{"s":"\\ud800 lone","t":"\\ud83d\\ude00"}'),
            (r.choice(IDEMPOTENT), '{"s":"bad\tcontrol"}'),
            (r.choice(IDEMPOTENT), "caf\u00e9 " + LS + " " + ASTRAL + " " + LONE),
            (r.choice(IDEMPOTENT), r.choice(["[1,2]", '"str"', "42", "true", "1.0", "NaN", "-0"])),
        ])

    # ── episodes ──────────────────────────────────────────────────────────
    def ep_identical_run(self):
        r = self.r
        tool = r.choice(ALL_TOOLS)
        args, fail = self.args_for(tool), r.random() < 0.3
        result = self.result_for(tool, fail)
        if r.random() < 0.25:
            result = result + " " + "L" * r.choice([511, 512, 600])
        for _ in range(r.randrange(3, 10)):
            self.call(tool, args, result, r.choice(["pick", None, fail]))

    def ep_identical_failures(self):
        r = self.r
        tool = r.choice(ALL_TOOLS)
        args, result = self.args_for(tool), self.result_for(tool, True)
        for _ in range(r.randrange(2, 9)):
            self.call(tool, args, result, r.choice([True, None, "absent"]))

    def ep_varied_failures(self):
        r = self.r
        tool = r.choice(TOLERANT + ["read_file", "search_files", "my_custom_tool", "patch", "skill_view"])
        for i in range(r.randrange(3, 11)):
            v = i if r.random() < 0.8 else 0
            self.call(tool, self.args_for(tool, v), self.result_for(tool, True, v), r.choice([True, None]))
            if r.random() < 0.1:  # an interleaved success of the same tool
                self.call(tool, self.args_for(tool, 99), self.result_for(tool, False, 99), False)

    def ep_progress_reset(self):
        r = self.r
        tool = r.choice(["read_file", "my_custom_tool", "terminal", "search_files"])
        args, bad = self.args_for(tool), self.result_for(tool, True)
        for _ in range(r.randrange(1, 6)):
            self.call(tool, args, bad, True)
        fixer = r.choice(["write_file", "patch", "terminal", "todo", "memory", "delegate_task",
                          "read_file", "browser_scroll", "write_file"])
        self.call(fixer, self.args_for(fixer), self.result_for(fixer, r.random() < 0.2), r.choice([None, False]))
        for _ in range(r.randrange(1, 7)):
            self.call(tool, args, bad, r.choice([True, None]))

    def ep_idempotent(self):
        r = self.r
        tool = r.choice(IDEMPOTENT)
        args = self.args_for(tool)
        pool = [self.result_for(tool, False, v) for v in range(r.randrange(1, 4))]
        for _ in range(r.randrange(2, 10)):
            self.call(tool, args, r.choice(pool), r.choice([None, False, "absent"]))

    def ep_cycle(self):
        r = self.r
        period = r.choice([2, 2, 3, 4])
        tools = [r.choice(ALL_TOOLS + POLLERS) for _ in range(period)]
        if r.random() < 0.2:
            tools = [r.choice(POLLERS) for _ in range(period)]
        calls = [(t, self.args_for(t, i), self.result_for(t, r.random() < 0.2, i)) for i, t in enumerate(tools)]
        laps = r.randrange(2, 8)
        for lap in range(laps):
            for t, a, res in calls:
                if r.random() < 0.03:
                    res = res + " changed"
                self.call(t, a, res, r.choice([None, "absent", False]))

    def ep_pollers(self):
        r = self.r
        tool = r.choice(POLLERS)
        args = {"action": "poll", "session_id": "p1"}
        result = jd({"status": "running", "output": "." * r.choice([10, 600])})
        for _ in range(r.randrange(3, 9)):
            self.call(tool, args, result, r.choice([None, False]))

    def ep_web_search_run(self):
        r = self.r
        n = r.randrange(8, 60) if r.random() < 0.6 else r.randrange(48, 58)
        for i in range(n):
            q = {"query": f"topic {i % r.choice([1, 3, 60])}"}
            self.call("web_search", q, jd({"results": [f"r{i % 4}"]}), None)

    def ep_delegate(self):
        r = self.r
        big = r.random() < 0.15  # enough spawns in one turn to pass the default cap of 50
        for _ in range(r.randrange(10, 17) if big else r.randrange(1, 8)):
            shape = r.random() * (0.6 if big else 1.0)
            if shape < 0.2:
                args = {"action": r.choice(["list", "steer", "stop", " STOP ", "List"]), "subagent_id": "a1"}
                spawn = 0
            elif shape < 0.6:
                tasks = [{"goal": f"goal {i} é"} for i in range(r.randrange(3 if big else 0, 7))]
                if tasks and r.random() < 0.2:
                    tasks.append("not a mapping")
                args = {"tasks": tasks}
                spawn = len(tasks) or 1
            elif shape < 0.7:
                args = {"tasks": jd([{"goal": "from string"}, {"goal": ""}])}
                spawn = 1
            else:
                args = {"goal": r.choice(["solo", "", 5])}
                spawn = 1
            self.before("delegate_task", args)
            if self.spawn and r.random() < 0.9:
                self.out.append({"op": "spawn", "count": max(0, spawn + r.choice([0, 0, 0, -1, 1]))})
            result = jd({"status": "dispatched", "mode": "background", "count": spawn}) if r.random() < 0.8 \
                else jd({"error": "too many tasks"})
            self.after("delegate_task", args, result)

    def ep_execute_code(self):
        r = self.r
        args = self.args_for("execute_code", r.randrange(2))
        vary, out = r.random() < 0.7, r.choice([0, 1])
        for _ in range(r.randrange(3, 9)):
            self.call("execute_code", args, self.exec_result(out, vary), r.choice([None, False, "absent"]))

    def ep_edges(self):
        for _ in range(self.r.randrange(1, 6)):
            tool, result = self.edge_result()
            args = self.args_for(tool)
            for _ in range(self.r.choice([1, 1, 2, 3])):
                self.call(tool, args, result, self.r.choice([None, None, "absent", True, False]))

    def ep_batch(self):
        r = self.r
        calls = []
        for i in range(r.randrange(2, 5)):
            t = r.choice(ALL_TOOLS)
            calls.append((t, self.args_for(t, i), self.result_for(t, r.random() < 0.3, i)))
        for t, a, _ in calls:
            self.before(t, a)
        for t, a, res in calls:
            self.after(t, a, res)

    def ep_random(self):
        r = self.r
        for _ in range(r.randrange(1, 6)):
            t = r.choice(ALL_TOOLS)
            self.call(t, self.args_for(t), self.result_for(t, r.random() < 0.4, r.randrange(3)))

    EPISODES = [
        (ep_identical_run, 12), (ep_identical_failures, 8), (ep_varied_failures, 7), (ep_progress_reset, 7),
        (ep_idempotent, 8), (ep_cycle, 8), (ep_pollers, 4), (ep_web_search_run, 2), (ep_delegate, 5),
        (ep_execute_code, 6), (ep_edges, 12), (ep_batch, 4), (ep_random, 6),
    ]

    def generate(self, lines: int) -> list[str]:
        funcs = [f for f, _ in self.EPISODES]
        weights = [w for _, w in self.EPISODES]
        while len(self.out) < lines:
            self.r.choices(funcs, weights)[0](self)
            if self.r.random() < 0.35:
                self.reset()
        return [encode(req) for req in self.out[:lines]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--lines", type=int, required=True)
    ap.add_argument("--no-spawn", action="store_true", help="omit spawn requests")
    opts = ap.parse_args(argv)
    data = "".join(line + "\n" for line in Gen(opts.seed, not opts.no_spawn).generate(opts.lines))
    sys.stdout.buffer.write(data.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
