#!/usr/bin/env python3
"""Runs the real OpenAI Agents SDK loop (`Runner.run`) against `loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime openai-agents`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as function tools
  "cap": 10,                           # Runner.run's max_turns (null: the SDK's default)
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages, each a run of its own
  "streamed": false                    # Runner.run_streamed, so a user's stop can cancel
}

Each scenario tool is a FunctionTool whose handler asks loopsim for the scripted result, so no
real tool runs; an audit hook refuses any connection that is not to loopback and any process
start, and the SDK's tracing (which would export to the network) is off. The handler blocks
the event loop while it asks, so the calls of one reply reach loopsim one after another in the
reply's order (the SDK starts them in that order); what the model sees is unchanged. Each
run's end (its final output, or the exception it raised) and its model calls are posted to
loopsim's event endpoint.

Exit codes: 0 the run finished; 2 bad input or the SDK missing; 3 a connection off loopback
was attempted; 4 the SDK raised something other than its turn limit.
"""

import asyncio
import json
import os
import sys
import urllib.request

EXIT_BAD_INPUT = 2
EXIT_NETWORK = 3
EXIT_RUNTIME = 4


def fail(code, message):
    print(f"live.py: {message}", file=sys.stderr)
    sys.exit(code)


if len(sys.argv) != 2:
    fail(EXIT_BAD_INPUT, "usage: live.py SPEC.json")
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        SPEC = json.load(f)
    SERVER = SPEC["server"].rstrip("/")
    MODEL = SPEC["model"]
    TOOLS = list(SPEC["tools"])
except (OSError, ValueError, KeyError, TypeError) as e:
    fail(EXIT_BAD_INPUT, f"{sys.argv[1]}: {e}")

# --- nothing leaves loopback ----------------------------------------------------------------
OFF_LOOPBACK = []


def _is_loopback(host):
    return host in ("localhost", "::1") or str(host).startswith("127.")


def _audit(event, args):
    if event == "socket.connect":
        addr = args[1]
        if isinstance(addr, tuple) and not _is_loopback(addr[0]):
            OFF_LOOPBACK.append(str(addr))
            raise ConnectionRefusedError(f"loopsim live: {addr} is not loopback")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if host is not None and not _is_loopback(host) and not str(host).replace(".", "").isdigit():
            OFF_LOOPBACK.append(str(host))
            raise ConnectionRefusedError(f"loopsim live: {host} is not loopback")
    elif event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork"):
        raise PermissionError(f"loopsim live: {event} refused (no real tool runs)")


for key in list(os.environ):
    if key.endswith("_API_KEY") or key in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        os.environ.pop(key, None)
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ["NO_PROXY"] = "*"


def post(path, body):
    req = urllib.request.Request(
        SERVER + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


sys.addaudithook(_audit)

try:
    from openai import AsyncOpenAI  # noqa: E402
    from agents import (  # noqa: E402
        Agent, FunctionTool, MaxTurnsExceeded, OpenAIChatCompletionsModel, RunHooks, Runner,
        set_tracing_disabled,
    )
except ImportError as e:
    fail(EXIT_BAD_INPUT, f"the OpenAI Agents SDK is not importable with {sys.executable}: {e} "
                         "(pip install openai-agents)")
set_tracing_disabled(True)


def sdk_version():
    try:
        from importlib.metadata import version
        return version("openai-agents")
    except Exception:
        return "unknown"


def report(kind, **fields):
    post("/loopsim/v1/event", dict(fields, kind=kind, agent="parent"))


# --- the scenario's tools, each asking loopsim ------------------------------------------------
STOP = {"requested": False, "run": None}


def make_tool(name):
    async def invoke(ctx, args_text):
        try:
            args = json.loads(args_text) if args_text else {}
        except ValueError:
            args = args_text
        # Blocking on purpose: the reply's calls reach loopsim in the order the SDK started them.
        answer = post("/loopsim/v1/tool", {"id": ctx.tool_call_id, "tool": name, "args": args})
        if answer.get("interrupt") and STOP["run"] is not None:
            # The user's stop: the SDK finishes this turn's tools, then makes no further call.
            STOP["requested"] = True
            STOP["run"].cancel(mode="after_turn")
        return answer["result"]

    return FunctionTool(
        name=name,
        description=f"The scenario's {name} tool.",
        params_json_schema={"type": "object", "additionalProperties": True},
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


class CountCalls(RunHooks):
    def __init__(self):
        self.calls = 0

    async def on_llm_start(self, context, agent, system_prompt, input_items):
        self.calls += 1


async def run_turn(agent, items, max_turns):
    hooks = CountCalls()
    kwargs = {"hooks": hooks}
    if max_turns is not None:
        kwargs["max_turns"] = max_turns
    STOP["requested"] = False
    try:
        if SPEC.get("streamed"):
            run = Runner.run_streamed(agent, items, **kwargs)
            STOP["run"] = run
            async for _ in run.stream_events():
                pass
            result = run
        else:
            result = await Runner.run(agent, items, **kwargs)
        exit_reason = ("interrupted_by_user" if STOP["requested"]
                       else "text_response(finish_reason=stop)")
        history = result.to_input_list()
    except MaxTurnsExceeded:
        exit_reason = "raised(MaxTurnsExceeded)"
        history = None
    finally:
        STOP["run"] = None
    report("turn_end", detail=exit_reason, budget_used=hooks.calls, api_calls=hooks.calls)
    return exit_reason, history


async def main():
    client = AsyncOpenAI(base_url=SERVER + "/v1", api_key="loopsim")
    agent = Agent(
        name="parent",
        instructions="You are the agent of a loopsim scenario.",
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=[make_tool(t) for t in TOOLS],
    )
    turns = []
    history = []
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        items = history + [{"role": "user", "content": text}]
        exit_reason, after = await run_turn(agent, items, SPEC.get("cap"))
        turns.append(exit_reason)
        # A run that raised keeps no history of its own: the next message starts from the last.
        history = after if after is not None else items
    await client.close()
    return turns


try:
    TURNS = asyncio.run(main())
except SystemExit:
    raise
except BaseException as e:  # noqa: BLE001 (the harness reports whatever the SDK raised)
    if OFF_LOOPBACK:
        fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
    fail(EXIT_RUNTIME, f"the OpenAI Agents SDK raised {type(e).__name__}: {e}")
if OFF_LOOPBACK:
    fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
print(json.dumps({"ok": True, "version": sdk_version(), "turns": TURNS}))
