#!/usr/bin/env python3
"""Runs the real OpenAI Agents SDK loop (`Runner.run`) against `loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime openai-agents`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as function tools
  "cap": 10,                           # Runner.run's max_turns (null: the SDK's default)
  "max_turns_handler": false,          # error_handlers["max_turns"]: a final output at the cap
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

What every bridge shares (the spec, the loopback guard, the endpoints, the exit codes) is
`bridges/sdk_bridge.py`.
"""

import json

import sdk_bridge

SPEC = sdk_bridge.start({"OPENAI_AGENTS_DISABLE_TRACING": "1"})

try:
    from openai import AsyncOpenAI
    from agents import (
        Agent, FunctionTool, MaxTurnsExceeded, OpenAIChatCompletionsModel, RunHooks, Runner,
        set_tracing_disabled,
    )
    from agents.run_error_handlers import RunErrorHandlerResult
except ImportError as e:
    sdk_bridge.missing("the OpenAI Agents SDK", "openai-agents", e)
set_tracing_disabled(True)

STOP = {"requested": False, "run": None}


def make_tool(name):
    async def invoke(ctx, args_text):
        try:
            args = json.loads(args_text) if args_text else {}
        except ValueError:
            args = args_text
        result, stop = sdk_bridge.tool_result(ctx.tool_call_id, name, args)
        if stop and STOP["run"] is not None:
            # The user's stop: the SDK finishes this turn's tools, then makes no further call.
            STOP["requested"] = True
            STOP["run"].cancel(mode="after_turn")
        return result

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


def max_turns_handler(handled):
    """The spec's `error_handlers["max_turns"]`: a handler that answers for the exception
    with a final output of its own, and notes that it did."""
    def handler(data):
        handled["max_turns"] = True
        return RunErrorHandlerResult(final_output="loopsim: the turn limit was reached")
    return handler


async def run_turn(agent, items, max_turns):
    hooks = CountCalls()
    kwargs = {"hooks": hooks}
    if max_turns is not None:
        kwargs["max_turns"] = max_turns
    handled = {"max_turns": False}
    if SPEC.get("max_turns_handler"):
        kwargs["error_handlers"] = {"max_turns": max_turns_handler(handled)}
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
                       else "max_turns_handled" if handled["max_turns"]
                       else "text_response(finish_reason=stop)")
        history = result.to_input_list()
    except MaxTurnsExceeded:
        exit_reason = "raised(MaxTurnsExceeded)"
        history = None
    finally:
        STOP["run"] = None
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=hooks.calls,
                      api_calls=hooks.calls)
    return exit_reason, history


async def main():
    client = AsyncOpenAI(base_url=sdk_bridge.SERVER + "/v1", api_key="loopsim")
    agent = Agent(
        name="parent",
        instructions="You are the agent of a loopsim scenario.",
        model=OpenAIChatCompletionsModel(model=SPEC["model"], openai_client=client),
        tools=[make_tool(t) for t in SPEC["tools"]],
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


sdk_bridge.finish(main(), "the OpenAI Agents SDK", "openai-agents")
