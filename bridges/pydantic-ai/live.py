#!/usr/bin/env python3
"""Runs the real Pydantic AI agent loop (`Agent.iter`, as `Agent.run` drives it) against
`loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime pydantic-ai`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as function tools
  "cap": 50,                           # UsageLimits.request_limit (null: the default)
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages, each a run of its own
  "streamed": false                    # unused: a user's stop ends the run between nodes
}

Each scenario tool is a `Tool.from_schema` tool whose handler asks loopsim for the scripted
result, so no real tool runs; an audit hook refuses any connection that is not to loopback and
any process start. The handler blocks the event loop while it asks, so the calls of one reply
reach loopsim one after another in the reply's order (Pydantic AI starts them in that order);
what the model sees is unchanged. The run is driven node by node with `Agent.iter`, which makes
the requests `Agent.run` makes; a user's stop ends it before its next model request. Each run's
end (its output, or the exception it raised) and its model requests are posted to loopsim's
event endpoint.

Exit codes: 0 the run finished; 2 bad input or Pydantic AI missing; 3 a connection off loopback
was attempted; 4 Pydantic AI raised something other than the exceptions a run ends with.
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
    from pydantic_ai import Agent, Tool, UsageLimits, capture_run_messages  # noqa: E402
    from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded  # noqa: E402
    from pydantic_ai.messages import ModelResponse, repair_messages  # noqa: E402
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
except ImportError as e:
    fail(EXIT_BAD_INPUT, f"Pydantic AI is not importable with {sys.executable}: {e} "
                         "(pip install 'pydantic-ai-slim[openai]')")


def sdk_version():
    try:
        from importlib.metadata import version
        return version("pydantic-ai-slim")
    except Exception:
        return "unknown"


def report(kind, **fields):
    post("/loopsim/v1/event", dict(fields, kind=kind, agent="parent"))


# --- the scenario's tools, each asking loopsim ------------------------------------------------
STOP = {"requested": False}


def make_tool(name):
    async def invoke(ctx, **args):
        # Blocking on purpose: the reply's calls reach loopsim in the order they were started.
        answer = post("/loopsim/v1/tool", {"id": ctx.tool_call_id, "tool": name, "args": args})
        if answer.get("interrupt"):
            STOP["requested"] = True
        return answer["result"]

    return Tool.from_schema(
        invoke,
        name=name,
        description=f"The scenario's {name} tool.",
        json_schema={"type": "object", "additionalProperties": True},
        takes_ctx=True,
    )


def requests_in(messages, before):
    return sum(1 for m in messages[before:] if isinstance(m, ModelResponse))


async def run_turn(agent, text, history, cap):
    limits = UsageLimits(request_limit=cap) if cap is not None else None
    STOP["requested"] = False
    exit_reason = "text_response(finish_reason=stop)"
    with capture_run_messages() as messages:
        try:
            async with agent.iter(text, message_history=history, usage_limits=limits) as run:
                pending = []
                async for node in run:
                    if STOP["requested"] and Agent.is_model_request_node(node):
                        # The user's stop: no further model request. The request it would have
                        # made carries the tools' results, which did run: keep them.
                        exit_reason = "interrupted_by_user"
                        pending = [node.request]
                        break
            after = run.all_messages() + pending
        except UsageLimitExceeded:
            exit_reason = "raised(UsageLimitExceeded)"
            after = list(messages)
        except UnexpectedModelBehavior:
            exit_reason = "raised(UnexpectedModelBehavior)"
            after = list(messages)
    calls = requests_in(after, len(history or []))
    # A run that raised before sending its tools' results leaves their calls open; Pydantic AI
    # refuses a new prompt on such a history and names this repair for it.
    after = repair_messages(after)
    report("turn_end", detail=exit_reason, budget_used=calls, api_calls=calls)
    return exit_reason, after


async def main():
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=SERVER + "/v1",
                                                           api_key="loopsim"))
    agent = Agent(
        model,
        instructions="You are the agent of a loopsim scenario.",
        tools=[make_tool(t) for t in TOOLS],
    )
    turns = []
    history = None
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        exit_reason, history = await run_turn(agent, text, history, SPEC.get("cap"))
        turns.append(exit_reason)
    return turns


try:
    TURNS = asyncio.run(main())
except SystemExit:
    raise
except BaseException as e:  # noqa: BLE001 (the harness reports whatever Pydantic AI raised)
    if OFF_LOOPBACK:
        fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
    fail(EXIT_RUNTIME, f"Pydantic AI raised {type(e).__name__}: {e}")
if OFF_LOOPBACK:
    fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
print(json.dumps({"ok": True, "version": sdk_version(), "turns": TURNS}))
