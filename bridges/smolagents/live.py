#!/usr/bin/env python3
"""Runs the real smolagents loop (`ToolCallingAgent.run`) against `loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime smolagents`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools
  "tool_inputs": {"terminal": ["command"], ...},  # the argument names each tool is passed
  "cap": 20,                           # the agent's max_steps (null: the default)
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages, each a run of its own
  "streamed": false                    # unused: a user's stop interrupts before the next step
}

Each scenario tool is a smolagents `Tool` declaring every argument name the scripted model
passes it (any type, each optional: smolagents checks a call's arguments against them); its
`forward` asks loopsim for the scripted result. smolagents does not tell a tool its call's
id, so the tool asks by tool and arguments, and loopsim finds the call it issued. The agent
runs a reply's calls on one worker thread (`max_tool_threads=1`), so they reach loopsim in the
reply's order; what the model sees is unchanged. The model answers through smolagents' own
`final_answer` tool, which loopsim's server calls for the scripted answer. A user's stop
interrupts the agent (`agent.interrupt()`), which ends the run before its next step. Each
run's end and its model calls (counted by the model object) are posted to loopsim's event
endpoint.

What every bridge shares (the spec, the loopback guard, the endpoints, the exit codes) is
`bridges/sdk_bridge.py`.
"""

import sdk_bridge

SPEC = sdk_bridge.start()

try:
    from smolagents import OpenAIModel, Tool, ToolCallingAgent
    from smolagents.memory import PlanningStep
    from smolagents.utils import AgentError
except ImportError as e:
    sdk_bridge.missing("smolagents", "'smolagents[openai]'", e)

STATE = {"stop": False, "calls": 0, "agent": None}


class CountingModel(OpenAIModel):
    """The server's model; counts the run's calls (the final-answer call at the cap too)."""

    def generate(self, *args, **kwargs):
        STATE["calls"] += 1
        return super().generate(*args, **kwargs)


def make_tool(name, arg_names):
    def forward(self, **args):
        result, stop = sdk_bridge.tool_result(None, name, args)
        if stop and not STATE["stop"]:
            STATE["stop"] = True
            STATE["agent"].interrupt()
        return result

    inputs = {
        a: {"type": "any", "description": f"The {a} argument.", "nullable": True}
        for a in arg_names
    }
    cls = type(f"LoopsimTool_{name}", (Tool,), {
        "name": name,
        "description": f"The scenario's {name} tool.",
        "inputs": inputs,
        "output_type": "string",
        "skip_forward_signature_validation": True,
        "forward": forward,
    })
    return cls()


def plans(agent):
    return sum(1 for s in agent.memory.steps if isinstance(s, PlanningStep))


def run_turn(agent, text, first):
    STATE["stop"] = False
    STATE["calls"] = 0
    planned = 0 if first else plans(agent)
    exit_reason = "text_response(finish_reason=stop)"
    try:
        result = agent.run(text, reset=first, return_full_result=True)
        if result.state == "max_steps_error":
            exit_reason = "max_steps_error"
    except AgentError:
        if not STATE["stop"]:
            raise
        exit_reason = "interrupted_by_user"
    # Planning calls are not steps, and not the loop's model calls.
    calls = STATE["calls"] - (plans(agent) - planned)
    # The final-answer call at max_steps is not a step.
    steps = calls - 1 if exit_reason == "max_steps_error" else calls
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=steps, api_calls=calls)
    return exit_reason


async def main():
    model = CountingModel(SPEC["model"], api_base=sdk_bridge.SERVER + "/v1", api_key="loopsim")
    inputs = SPEC.get("tool_inputs") or {}
    kwargs = {} if SPEC.get("cap") is None else {"max_steps": SPEC["cap"]}
    if SPEC.get("planning_interval") is not None:
        kwargs["planning_interval"] = SPEC["planning_interval"]
    agent = ToolCallingAgent(
        tools=[make_tool(t, inputs.get(t, [])) for t in SPEC["tools"]],
        model=model,
        max_tool_threads=1,
        verbosity_level=-1,
        **kwargs,
    )
    STATE["agent"] = agent
    turns = []
    texts = [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or [])
    for k, text in enumerate(texts):
        turns.append(run_turn(agent, text, k == 0))
    return turns


sdk_bridge.finish(main(), "smolagents", "smolagents")
