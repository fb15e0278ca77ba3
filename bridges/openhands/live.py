#!/usr/bin/env python3
"""Runs a real OpenHands SDK conversation (`Conversation(...).run()`) against `loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live --runtime openhands`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "tools": ["terminal", ...],          # the scenario's tools
  "cap": 500,                          # max_iteration_per_run (null: the default)
  "stuck_detection": {...} or false,   # stuck_detection_thresholds, or the detector off
  "task": "the first user message",
  "user_turns": ["..."],               # later user messages: send_message, then run() again
  "streamed": false                    # unused: a user's stop pauses the conversation
}

Each scenario tool is an OpenHands tool taking any JSON object (a one-field action holding
the arguments as given), whose executor asks loopsim's tool endpoint for the scripted result
under the call's id (read from the conversation's action event) and returns it as the
observation, flagged as an error when the scripted call failed; when loopsim says the user
stopped, it pauses the conversation (`conversation.pause()`), which ends the run before its
next step. The agent has no other tools
(no finish or think tool: a text reply ends the run), a short system prompt of its own, one
HTTP attempt per model call, and no reasoning effort; the conversation keeps its defaults
otherwise: its stuck detector as the spec says (its thresholds, or off), `max_iteration_per_run`
as the spec says. Each run's end (its
status: FINISHED, ERROR at the cap, STUCK) and its model calls are posted to loopsim's event
endpoint.

litellm's model price map is read from the package (no download), OpenHands' banner and
telemetry are off, HOME is a temporary folder (no plugins or skills of the user's), and every
connection off loopback and every process start is refused (`bridges/sdk_bridge.py`).
"""

import os
import tempfile

HOME = tempfile.mkdtemp(prefix="loopsim-openhands-")

import sdk_bridge

SPEC = sdk_bridge.start(env={
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OPENHANDS_SUPPRESS_BANNER": "1",
    "HOME": HOME,
})

try:
    from typing import Any

    from pydantic import Field, SecretStr

    from openhands.sdk import LLM, Agent, Conversation
    from openhands.sdk.conversation.state import ConversationExecutionStatus
    from openhands.sdk.event import ActionEvent, MessageEvent
    from openhands.sdk.tool import (
        Action,
        Observation,
        Tool,
        ToolAnnotations,
        ToolDefinition,
        ToolExecutor,
        register_tool,
    )
except ImportError as e:
    sdk_bridge.missing("OpenHands", "openhands-sdk (Python 3.12 or later)", e)


class ScenarioAction(Action):
    """A call's arguments, whatever they are."""

    data: dict[str, Any] = Field(default_factory=dict)


class ScenarioObservation(Observation):
    pass


class ScenarioExecutor(ToolExecutor):
    def __init__(self, name):
        self.name = name

    def __call__(self, action, conversation=None):
        call_id = None
        if conversation is not None:
            for ev in reversed(list(conversation.state.events)):
                if isinstance(ev, ActionEvent) and ev.action is action:
                    call_id = ev.tool_call_id
                    break
        answer = sdk_bridge.post("/loopsim/v1/tool",
                                 {"id": call_id, "tool": self.name, "args": dict(action.data)})
        if answer.get("interrupt") and conversation is not None:
            # The user's stop: the conversation pauses before its next step.
            conversation.pause()
        return ScenarioObservation.from_text(text=answer["result"],
                                             is_error=bool(answer.get("failed")))


class ScenarioTool(ToolDefinition[ScenarioAction, ScenarioObservation]):
    tool_name: str

    @property
    def name(self) -> str:  # the scenario's name, not the class's
        return self.tool_name

    @classmethod
    def create(cls, conv_state=None, **params):
        raise NotImplementedError("built by make_tool")

    def action_from_arguments(self, arguments):
        return ScenarioAction(data=dict(arguments))

    def _get_tool_schema(self, add_security_risk_prediction=False, action_type=None):
        return {"type": "object", "properties": {}, "additionalProperties": True}


def make_tool(name):
    register_tool(name, ScenarioTool(
        tool_name=name,
        description=f"The scenario's {name} tool.",
        action_type=ScenarioAction,
        observation_type=ScenarioObservation,
        executor=ScenarioExecutor(name),
        annotations=ToolAnnotations(readOnlyHint=True),
    ))
    return Tool(name=name)


def model_calls(events, since):
    """Model replies among the events from `since` on: one per distinct LLM response of
    its actions, and one per agent message."""
    responses, calls = set(), 0
    for ev in events[since:]:
        if isinstance(ev, ActionEvent):
            if ev.llm_response_id not in responses:
                responses.add(ev.llm_response_id)
                calls += 1
        elif isinstance(ev, MessageEvent) and ev.source == "agent":
            calls += 1
    return calls


def run_turn(conversation, text):
    before = len(list(conversation.state.events))
    conversation.send_message(text)
    conversation.run()
    status = conversation.state.execution_status
    if status == ConversationExecutionStatus.FINISHED:
        exit_reason = "text_response(finish_reason=stop)"
    elif status == ConversationExecutionStatus.PAUSED:
        exit_reason = "interrupted_by_user"
    elif status == ConversationExecutionStatus.STUCK:
        exit_reason = "conversation_stuck"
    elif status == ConversationExecutionStatus.ERROR:
        codes = [getattr(ev, "code", None) for ev in list(conversation.state.events)[before:]]
        if "MaxIterationsReached" not in codes:
            raise RuntimeError(f"the conversation ended in ERROR: {codes}")
        exit_reason = "conversation_error(MaxIterationsReached)"
    else:
        raise RuntimeError(f"the conversation ended {status}")
    calls = model_calls(list(conversation.state.events), before)
    sdk_bridge.report("turn_end", detail=exit_reason, budget_used=calls, api_calls=calls)
    return exit_reason


async def main():
    llm = LLM(model="openai/" + SPEC["model"], base_url=sdk_bridge.SERVER + "/v1",
              api_key=SecretStr("loopsim"), usage_id="agent", num_retries=1,
              reasoning_effort=None)
    agent = Agent(llm=llm, tools=[make_tool(t) for t in SPEC["tools"]],
                  include_default_tools=[],
                  system_prompt="You are the agent of a loopsim scenario.")
    kwargs = {} if SPEC.get("cap") is None else {"max_iteration_per_run": SPEC["cap"]}
    stuck = SPEC.get("stuck_detection", True)
    if stuck is False:
        kwargs["stuck_detection"] = False
    elif isinstance(stuck, dict):
        kwargs["stuck_detection_thresholds"] = dict(stuck)
    workspace = os.path.join(HOME, "workspace")
    os.makedirs(workspace, exist_ok=True)
    conversation = Conversation(agent, workspace=workspace, visualizer=None, **kwargs)
    turns = []
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        turns.append(run_turn(conversation, text))
    return turns


sdk_bridge.finish(main(), "OpenHands", "openhands-sdk")
