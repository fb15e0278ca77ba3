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

What every bridge shares (the spec, the loopback guard, the endpoints, the exit codes) is
`bridges/sdk_bridge.py`.
"""

import sdk_bridge

SPEC = sdk_bridge.start({k: "false" for k in (
    "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")})

try:
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI
    from langgraph.errors import GraphRecursionError
except ImportError as e:
    sdk_bridge.missing("LangGraph", "langchain langgraph langchain-openai", e)

STOP = {"requested": False}


class UserStop(Exception):
    """The scenario's user stopped the run: no further model call."""


class ScenarioTool(BaseTool):
    """A scenario tool: takes any JSON object, and answers with loopsim's scripted result."""

    args_schema: dict = {"type": "object", "additionalProperties": True}

    def _answer(self, call):
        result, stop = sdk_bridge.tool_result(call.get("id"), self.name, call.get("args") or {})
        if stop:
            STOP["requested"] = True
        return ToolMessage(content=result, tool_call_id=call.get("id"), name=self.name)

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
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=counter.calls,
                      api_calls=counter.calls)
    return exit_reason, list(after)


async def main():
    model = ChatOpenAI(model=SPEC["model"], base_url=sdk_bridge.SERVER + "/v1", api_key="loopsim")
    agent = create_agent(
        model,
        tools=[ScenarioTool(name=t, description=f"The scenario's {t} tool.") for t in SPEC["tools"]],
        system_prompt="You are the agent of a loopsim scenario.",
    )
    turns = []
    history = []
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        messages = history + [{"role": "user", "content": text}]
        exit_reason, history = await run_turn(agent, messages, SPEC.get("cap"))
        turns.append(exit_reason)
    return turns


sdk_bridge.finish(main(), "LangGraph", "langgraph")
