#!/usr/bin/env python3
"""Runs the real LangGraph loop, as LangChain's `create_agent` builds it, against
`loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime langgraph`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as LangChain tools
  "cap": 9999,                         # the run's recursion_limit (null: create_agent's own)
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages, each a run of its own
  "streamed": false                    # unused: a user's stop ends the run at its next model call
}

Each scenario tool is a LangChain tool whose handler asks loopsim for the scripted result (under
the model's call id), so no real tool runs; an audit hook refuses any connection that is not to
loopback and any process start, and LangSmith tracing is off. The handler blocks the event loop
while it asks, so the calls of one reply reach loopsim one after another in the reply's order;
what the model sees is unchanged. A callback counts the model calls and, once the user has
stopped, ends the run before the next one. Each run's end (its final message, or the exception
it raised) and its model calls are posted to loopsim's event endpoint.

Exit codes: 0 the run finished; 2 bad input or LangGraph missing; 3 a connection off loopback
was attempted; 4 LangGraph raised something other than its recursion limit.
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
for key in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[key] = "false"


def post(path, body):
    req = urllib.request.Request(
        SERVER + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


sys.addaudithook(_audit)

try:
    from langchain.agents import create_agent  # noqa: E402
    from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
    from langchain_core.messages import ToolMessage  # noqa: E402
    from langchain_core.tools import BaseTool  # noqa: E402
    from langchain_openai import ChatOpenAI  # noqa: E402
    from langgraph.errors import GraphRecursionError  # noqa: E402
except ImportError as e:
    fail(EXIT_BAD_INPUT, f"LangGraph is not importable with {sys.executable}: {e} "
                         "(pip install langchain langgraph langchain-openai)")


def sdk_version():
    try:
        from importlib.metadata import version
        return version("langgraph")
    except Exception:
        return "unknown"


def report(kind, **fields):
    post("/loopsim/v1/event", dict(fields, kind=kind, agent="parent"))


# --- the scenario's tools, each asking loopsim ------------------------------------------------
STOP = {"requested": False}


class UserStop(Exception):
    """The scenario's user stopped the run: no further model call."""


class ScenarioTool(BaseTool):
    """A scenario tool: takes any JSON object, and answers with loopsim's scripted result."""

    args_schema: dict = {"type": "object", "additionalProperties": True}

    def _answer(self, call):
        # Blocking on purpose: the reply's calls reach loopsim in the order they were started.
        answer = post("/loopsim/v1/tool",
                      {"id": call.get("id"), "tool": self.name, "args": call.get("args") or {}})
        if answer.get("interrupt"):
            STOP["requested"] = True
        return ToolMessage(content=answer["result"], tool_call_id=call.get("id"), name=self.name)

    def invoke(self, input, config=None, **kwargs):
        return self._answer(input)

    async def ainvoke(self, input, config=None, **kwargs):
        return self._answer(input)

    def _run(self, *args, **kwargs):
        raise NotImplementedError("ScenarioTool answers tool calls only")


class ModelCalls(BaseCallbackHandler):
    """Counts the run's model calls; after the user's stop, ends the run before the next."""

    raise_error = True

    def __init__(self):
        self.calls = 0

    def on_chat_model_start(self, serialized, messages, **kwargs):
        if STOP["requested"]:
            raise UserStop()
        self.calls += 1


async def run_turn(agent, messages, cap):
    counter = ModelCalls()
    config = {"callbacks": [counter]}
    if cap is not None:
        config["recursion_limit"] = cap
    STOP["requested"] = False
    try:
        result = await agent.ainvoke({"messages": messages}, config)
        exit_reason = "text_response(finish_reason=stop)"
        after = result["messages"]
    except GraphRecursionError:
        exit_reason = "raised(GraphRecursionError)"
        after = messages
    except UserStop:
        exit_reason = "interrupted_by_user"
        after = messages
    report("turn_end", detail=exit_reason, budget_used=counter.calls, api_calls=counter.calls)
    return exit_reason, list(after)


async def main():
    model = ChatOpenAI(model=MODEL, base_url=SERVER + "/v1", api_key="loopsim")
    agent = create_agent(
        model,
        tools=[ScenarioTool(name=t, description=f"The scenario's {t} tool.") for t in TOOLS],
        system_prompt="You are the agent of a loopsim scenario.",
    )
    turns = []
    history = []
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        messages = history + [{"role": "user", "content": text}]
        exit_reason, history = await run_turn(agent, messages, SPEC.get("cap"))
        turns.append(exit_reason)
    return turns


try:
    TURNS = asyncio.run(main())
except SystemExit:
    raise
except BaseException as e:  # noqa: BLE001 (the harness reports whatever LangGraph raised)
    if OFF_LOOPBACK:
        fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
    fail(EXIT_RUNTIME, f"LangGraph raised {type(e).__name__}: {e}")
if OFF_LOOPBACK:
    fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
print(json.dumps({"ok": True, "version": sdk_version(), "turns": TURNS}))
