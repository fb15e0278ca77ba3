#!/usr/bin/env python3
"""Runs the real Hermes Agent loop against `loopsim serve`.

Usage: live.py SPEC.json

SPEC (written by `loopsim live`): {
  "server": "http://127.0.0.1:PORT",   # loopsim's server (model at /v1, tools at /loopsim/v1)
  "model": "main",                     # the parent's model name
  "config_yaml": "...",                # the scenario's and the user's Hermes config
  "platform": "cli",
  "task": "the first user message",
  "max_background_turns": 3,           # result turns to wait for after the first
  "background_wait_s": 60,
  "child_crashes": false               # children may crash: ask loopsim at each iteration
}

Whichever Hermes is importable runs: hermes-agent from PyPI, or a checkout on PYTHONPATH. Every
tool handler is replaced by a fake that asks loopsim for the scripted result, so no real tool
runs; an audit hook refuses any connection that is not to 127.0.0.1. Hermes's own
`delegate_task` builds the child agents. What Hermes decided (guardrail decisions, each turn's
exit reason, its budget and API calls) is posted to loopsim's event endpoint.

Exit codes: 0 the run finished; 2 bad input or Hermes missing; 3 a connection off loopback
was attempted; 4 Hermes raised.
"""

import json
import os
import shutil
import sys
import tempfile
import threading
import urllib.request

EXIT_BAD_INPUT = 2
EXIT_NETWORK = 3
EXIT_RUNTIME = 4
TAG_PREFIX = "[loopsim agent "


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
except (OSError, ValueError, KeyError) as e:
    fail(EXIT_BAD_INPUT, f"{sys.argv[1]}: {e}")

# --- nothing leaves 127.0.0.1 -------------------------------------------------------------
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
        # A real tool would start a process; none may run here.
        raise PermissionError(f"loopsim live: {event} refused (no real tool runs)")


# --- Hermes's home: a temporary folder with the run's config.yaml -------------------------
HOME = tempfile.mkdtemp(prefix="loopsim-hermes-home.")
CWD = tempfile.mkdtemp(prefix="loopsim-hermes-cwd.")


def cleanup():
    shutil.rmtree(HOME, ignore_errors=True)
    shutil.rmtree(CWD, ignore_errors=True)


os.environ["HERMES_HOME"] = HOME
os.environ["TERMINAL_CWD"] = CWD
os.environ["NO_PROXY"] = "*"
for key in list(os.environ):
    if key.endswith("_API_KEY") or key in (
        "OPENAI_BASE_URL", "HERMES_INFERENCE_PROVIDER", "HERMES_INFERENCE_MODEL",
        "HERMES_MAX_ITERATIONS",
    ):
        os.environ.pop(key, None)
with open(os.path.join(HOME, "config.yaml"), "w", encoding="utf-8") as f:
    f.write(SPEC.get("config_yaml", ""))


def post(path, body):
    req = urllib.request.Request(
        SERVER + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


sys.addaudithook(_audit)

try:
    import run_agent  # noqa: E402
    import model_tools  # noqa: E402
    from tools.registry import registry  # noqa: E402
    from tools import approval as approval_mod  # noqa: E402
    from agent import tool_guardrails  # noqa: E402
except ImportError as e:
    cleanup()
    fail(EXIT_BAD_INPUT, f"Hermes Agent is not importable with {sys.executable}: {e} "
                         "(pip install hermes-agent, or put a checkout on PYTHONPATH)")

try:
    import cli as hermes_cli_main  # noqa: E402  (its config loader reads HERMES_HOME)
    CLI_CONFIG = hermes_cli_main.load_cli_config()
except Exception as e:  # the CLI module may not import in a stripped checkout
    cleanup()
    fail(EXIT_BAD_INPUT, f"Hermes's CLI config loader failed: {e}")


def hermes_version():
    try:
        from importlib.metadata import version
        return version("hermes-agent")
    except Exception:
        return "unknown"


# --- which agent is running ---------------------------------------------------------------
CURRENT = threading.local()
GUARD_OWNER = {}   # id(controller) -> agent name
INTERRUPTED = [False]  # the scenario's user pressed stop
AGENTS = {}        # name -> AIAgent


def agent_name_of(text):
    text = text or ""
    start = text.find(TAG_PREFIX)
    if start < 0:
        return "parent"
    end = text.find("]", start)
    return text[start + len(TAG_PREFIX):end] if end > 0 else "parent"


def report(kind, agent, **fields):
    post("/loopsim/v1/event", dict(fields, kind=kind, agent=agent))


# --- fake tools: every handler asks loopsim ---------------------------------------------
def run_fake(name, args):
    call_id = ""
    try:
        call_id = approval_mod._approval_tool_call_id.get()
    except Exception:
        pass
    answer = post("/loopsim/v1/tool", {"id": call_id, "tool": name, "args": args})
    if answer.get("interrupt"):
        INTERRUPTED[0] = True
        parent = AGENTS.get("parent")
        if parent is not None:
            parent.interrupt("loopsim: the scenario's user pressed stop")
    return answer["result"]


def make_fake(name):
    def handler(args, **_kwargs):
        return run_fake(name, args)
    handler.__name__ = f"loopsim_fake_{name}"
    return handler


KEEP_REAL = {"delegate_task"}  # Hermes's own delegation builds real child agents
for entry in registry._snapshot_entries():
    if entry.name in KEEP_REAL:
        continue
    entry.handler = make_fake(entry.name)
    entry.is_async = False
    entry.check_fn = None  # offered without API keys (web_search and friends)

# Tools the agent loop runs itself bypass the registry: replace their module functions.
import tools.memory_tool  # noqa: E402
import tools.todo_tool  # noqa: E402

import contextvars  # noqa: E402

# The model's own arguments for the call the loop is running (its memory and todo paths pass
# the tool their fields one by one, missing ones as None).
CALL_ARGS = contextvars.ContextVar("loopsim_call_args", default=None)


def loop_tool_fake(name):
    def handler(**kw):
        args = CALL_ARGS.get()
        if args is None:
            args = {k: v for k, v in kw.items() if k != "store"}
        return run_fake(name, args)
    return handler


tools.memory_tool.memory_tool = loop_tool_fake("memory")
tools.todo_tool.todo_tool = loop_tool_fake("todo")
model_tools._clear_tool_defs_cache()

# The loop runs memory and todo itself, outside the registry's dispatch that records the
# call's id: record it around the loop's own middleware too, so their fakes say which call
# they answer.
import agent.tool_executor as tool_executor  # noqa: E402

_loop_middleware = tool_executor._run_agent_tool_execution_middleware


def _middleware_with_call_id(agent, **kw):
    token = approval_mod._approval_tool_call_id.set(kw.get("tool_call_id") or "")
    args = kw.get("function_args")
    args_token = CALL_ARGS.set(dict(args) if isinstance(args, dict) else None)
    try:
        return _loop_middleware(agent, **kw)
    finally:
        CALL_ARGS.reset(args_token)
        approval_mod._approval_tool_call_id.reset(token)


tool_executor._run_agent_tool_execution_middleware = _middleware_with_call_id

# --- what Hermes decided: wrap its guardrail controller (observing, never changing) -------
Controller = tool_guardrails.ToolCallGuardrailController
_before, _after = Controller.before_call, Controller.after_call


def _record(self, decision):
    action = getattr(decision, "action", "allow")
    if action != "allow":
        report("decision", GUARD_OWNER.get(id(self), "parent"),
               tool=getattr(decision, "tool_name", None), action=action,
               code=getattr(decision, "code", ""), count=getattr(decision, "count", 0))
    return decision


Controller.before_call = lambda self, *a, **kw: _record(self, _before(self, *a, **kw))
Controller.after_call = lambda self, *a, **kw: _record(self, _after(self, *a, **kw))

_run_conversation = run_agent.AIAgent.run_conversation


class ScriptedChildCrash(Exception):
    """The scenario's crash of a child: raised where Hermes's loop does not catch it."""


def arm_crashes(agent, name):
    # The top of each iteration of the loop (after its test, before its interrupt check)
    # calls the checkpoint manager's new_turn outside any handler: an exception there leaves
    # run_conversation, as a bug in the child's own code would. loopsim says when.
    mgr = agent._checkpoint_mgr
    inner = mgr.new_turn

    def new_turn(*args, **kwargs):
        if post("/loopsim/v1/iteration", {"agent": name}).get("crash"):
            raise ScriptedChildCrash(f"loopsim: {name} crashed as its scenario scripts")
        return inner(*args, **kwargs)

    mgr.new_turn = new_turn


def run_conversation(self, user_message, *args, **kwargs):
    name = getattr(self, "_loopsim_name", None)
    if name is None:
        name = agent_name_of(user_message if isinstance(user_message, str) else "")
        self._loopsim_name = name
        AGENTS[name] = self
        if SPEC.get("child_crashes") and name != "parent":
            arm_crashes(self, name)
    GUARD_OWNER[id(getattr(self, "_tool_guardrails", None))] = name
    result = _run_conversation(self, user_message, *args, **kwargs)
    GUARD_OWNER[id(getattr(self, "_tool_guardrails", None))] = name
    budget = getattr(self, "iteration_budget", None)
    detail = (result or {}).get("turn_exit_reason")
    if not detail and (result or {}).get("failed") and (result or {}).get("failure_reason"):
        # Hermes returns a call that gave up on provider errors without an exit reason;
        # loopsim names it by the classified reason Hermes does return.
        detail = f"api_call_failed({result['failure_reason']})"
    if not detail and str((result or {}).get("error") or "").startswith(
            "Model generated invalid tool call"):
        # Nor does it name one for a turn it gives up after replies of unknown tools only.
        detail = "invalid_tool_call"
    if not detail and str((result or {}).get("error") or "").startswith(
            "Response truncated due to output length limit"):
        # Nor for one it gives up after replies whose arguments it could not repair.
        detail = "truncated_tool_call"
    report("turn_end", name,
           detail=detail or "unknown",
           budget_used=getattr(budget, "used", None),
           api_calls=(result or {}).get("api_calls"))
    return result


run_agent.AIAgent.run_conversation = run_conversation

_dispatch_delegate = run_agent.AIAgent._dispatch_delegate_task
PENDING_BATCHES = [0]  # the parent's background delegations whose results have not come back


def dispatch_delegate(self, function_args):
    # Hermes runs delegate_task itself (real children); loopsim hears what it was asked and
    # what it answered.
    result = _dispatch_delegate(self, function_args)
    if getattr(self, "_loopsim_name", "parent") == "parent" and '"error"' not in str(result)[:200]:
        PENDING_BATCHES[0] += 1
    report("delegated", getattr(self, "_loopsim_name", "parent"),
           args=function_args, result=result if isinstance(result, str) else json.dumps(result))
    return result


run_agent.AIAgent._dispatch_delegate_task = dispatch_delegate

import tools.delegate_tool as delegate_tool  # noqa: E402

_run_single_child = delegate_tool._run_single_child


def run_single_child(*args, **kwargs):
    # Hermes's own record of a child whose run raised: its status, exit reason and the API
    # calls it counted (a child that ended its turn reported it above).
    entry = _run_single_child(*args, **kwargs)
    child = kwargs.get("child", args[2] if len(args) > 2 else None)
    if isinstance(entry, dict) and entry.get("status") == "error" and child is not None:
        budget = getattr(child, "iteration_budget", None)
        report("child_crash", getattr(child, "_loopsim_name", "unknown"),
               detail=entry.get("exit_reason") or "unknown",
               call=entry.get("api_calls"),
               budget_used=getattr(budget, "used", None))
    return entry


delegate_tool._run_single_child = run_single_child


# --- the parent, built as Hermes's CLI builds it ----------------------------------------
def max_turns():
    # The CLI's order: agent.max_turns, then a root-level max_turns, then the environment,
    # then 90 (a falsy value falls through, as in Hermes).
    agent_cfg = CLI_CONFIG.get("agent") or {}
    for value in (agent_cfg.get("max_turns"), CLI_CONFIG.get("max_turns")):
        if value:
            return int(value)
    return 90


def main():
    from hermes_cli.runtime_provider import resolve_runtime_provider
    runtime = resolve_runtime_provider(requested=None, target_model=MODEL)
    parent = run_agent.AIAgent(
        base_url=runtime.get("base_url"),
        api_key=runtime.get("api_key"),
        provider=runtime.get("provider"),
        api_mode=runtime.get("api_mode"),
        model=MODEL,
        max_iterations=max_turns(),
        enabled_toolsets=SPEC.get("toolsets") or [
            "terminal", "file", "web", "code_execution", "memory", "delegation", "todo",
            "skills"],
        quiet_mode=True,
        platform=SPEC.get("platform") or "cli",
        skip_context_files=True,
        skip_memory=True,
        tool_delay=0.0,
        save_trajectories=False,
    )
    parent._loopsim_name = "parent"
    AGENTS["parent"] = parent
    from tools.process_registry import process_registry, format_process_notification
    import queue

    turns = []
    history = None

    def run_turn(text):
        nonlocal history
        result = parent.run_conversation(text, conversation_history=history)
        turns.append(result.get("turn_exit_reason"))
        history = result.get("messages")

    def drain_background():
        # Background children report as a new turn once the parent's turn has ended, as the
        # CLI does with the completion queue. The queue fills in wall-clock order; the
        # scenario's world finishes children in virtual time: wait for every batch, then
        # open the result turns in the order loopsim says they finished.
        notes = []
        while PENDING_BATCHES[0] > 0 and not INTERRUPTED[0]:
            try:
                event = process_registry.completion_queue.get(
                    timeout=float(SPEC.get("background_wait_s", 60)))
            except queue.Empty:
                break
            PENDING_BATCHES[0] -= 1
            notes.append(format_process_notification(event))
        if notes and not INTERRUPTED[0]:
            order = post("/loopsim/v1/order", {"notes": notes})["order"]
            for i in order[: int(SPEC.get("max_background_turns", 0))]:
                run_turn(notes[i])

    # The task, then the user's later messages (each after the turns before it, as the
    # scenario's `turns` say); a stop ends only the turn it came in.
    for text in [SPEC.get("task") or "Do the task."] + list(SPEC.get("user_turns") or []):
        INTERRUPTED[0] = False
        run_turn(text)
        drain_background()
    try:
        parent.close()
    except Exception:
        pass
    return turns


try:
    TURNS = main()
except SystemExit:
    raise
except BaseException as e:  # noqa: BLE001 (the harness reports whatever Hermes raised)
    cleanup()
    if OFF_LOOPBACK:
        fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
    fail(EXIT_RUNTIME, f"Hermes raised {type(e).__name__}: {e}")
cleanup()
if OFF_LOOPBACK:
    fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
print(json.dumps({"ok": True, "hermes": hermes_version(), "turns": TURNS}))
