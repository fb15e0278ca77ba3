#!/usr/bin/env python3
"""Runs the real Pydantic AI agent loop (`Agent.iter`, as `Agent.run` drives it) against
`loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime pydantic-ai`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools, offered as function tools
  "cap": 50,                           # UsageLimits.request_limit (null: the default)
  "limits": {"usage": {...}},          # UsageLimits' other fields (null: none), e.g.
                                       # {"tool_calls_limit": 5, "total_tokens_limit": null}
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

What every bridge shares (the spec, the loopback guard, the endpoints, the exit codes) is
`bridges/sdk_bridge.py`.
"""

import sdk_bridge

SPEC = sdk_bridge.start()

try:
    from pydantic_ai import Agent, Tool, UsageLimits, capture_run_messages
    from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
    from pydantic_ai.messages import ModelResponse, repair_messages
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
except ImportError as e:
    sdk_bridge.missing("Pydantic AI", "'pydantic-ai-slim[openai]'", e)

STOP = {"requested": False}


def make_tool(name):
    async def invoke(ctx, **args):
        result, stop = sdk_bridge.tool_result(ctx.tool_call_id, name, args)
        if stop:
            STOP["requested"] = True
        return result

    return Tool.from_schema(
        invoke,
        name=name,
        description=f"The scenario's {name} tool.",
        json_schema={"type": "object", "additionalProperties": True},
        takes_ctx=True,
    )


def requests_in(messages, before):
    return sum(1 for m in messages[before:] if isinstance(m, ModelResponse))


def usage_limits(cap):
    """The run's UsageLimits: the cap and the spec's other limits (Pydantic AI's default
    request_limit stands when the cap is null)."""
    fields = {k: v for k, v in ((SPEC.get("limits") or {}).get("usage") or {}).items()
              if v is not None}
    if cap is not None:
        fields["request_limit"] = cap
    return UsageLimits(**fields) if fields else None


async def run_turn(agent, text, history, cap):
    limits = usage_limits(cap)
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
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=calls, api_calls=calls)
    return exit_reason, after


async def main():
    model = OpenAIChatModel(SPEC["model"], provider=OpenAIProvider(
        base_url=sdk_bridge.SERVER + "/v1", api_key="loopsim"))
    agent = Agent(
        model,
        instructions="You are the agent of a loopsim scenario.",
        tools=[make_tool(t) for t in SPEC["tools"]],
    )
    turns = []
    history = None
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        exit_reason, history = await run_turn(agent, text, history, SPEC.get("cap"))
        turns.append(exit_reason)
    return turns


sdk_bridge.finish(main(), "Pydantic AI", "pydantic-ai-slim")
