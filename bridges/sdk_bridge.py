"""What every agent-SDK bridge to `loopsim serve` shares: the spec, nothing off loopback, the
server's endpoints, and how a bridge ends (its exit codes and its last line).

`loopsim live` writes this file beside the runtime's `live.py`, which imports it. A bridge:

    SPEC = sdk_bridge.start()           # reads SPEC.json, then refuses the network from here on
    ... import the runtime, build its agent, run each turn with sdk_bridge.report("turn_end", ...)
    sdk_bridge.finish(main(), "the OpenAI Agents SDK", "openai-agents")

Exit codes: 0 the run finished; 2 bad input or the runtime missing; 3 a connection off loopback
was attempted; 4 the runtime raised something other than the exceptions a run ends with.
"""

import asyncio
import json
import os
import sys
import urllib.request

EXIT_BAD_INPUT = 2
EXIT_NETWORK = 3
EXIT_RUNTIME = 4

OFF_LOOPBACK = []
SERVER = ""


def fail(code, message):
    print(f"live.py: {message}", file=sys.stderr)
    sys.exit(code)


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


def start(env=None):
    """Reads the spec named on the command line, clears credentials and endpoints from the
    environment (then sets `env`), and refuses every connection off loopback and every process
    start from here on. Returns the spec."""
    global SERVER
    if len(sys.argv) != 2:
        fail(EXIT_BAD_INPUT, "usage: live.py SPEC.json")
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            spec = json.load(f)
        SERVER = spec["server"].rstrip("/")
        spec["model"], spec["tools"] = str(spec["model"]), list(spec["tools"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(EXIT_BAD_INPUT, f"{sys.argv[1]}: {e}")
    for key in list(os.environ):
        if key.endswith("_API_KEY") or key in ("OPENAI_BASE_URL", "OPENAI_ORG_ID",
                                               "OPENAI_PROJECT_ID"):
            os.environ.pop(key, None)
    os.environ["NO_PROXY"] = "*"
    os.environ.update(env or {})
    sys.addaudithook(_audit)
    return spec


def post(path, body):
    req = urllib.request.Request(
        SERVER + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def tool_result(call_id, tool, args):
    """The scripted result of a call, and whether the scenario's user stopped with it.
    Blocking on purpose: a reply's calls reach loopsim in the order the runtime started them."""
    answer = post("/loopsim/v1/tool", {"id": call_id, "tool": tool, "args": args})
    return answer["result"], bool(answer.get("interrupt"))


def report(kind, **fields):
    post("/loopsim/v1/event", dict(fields, kind=kind, agent="parent"))


def missing(runtime, install, error):
    fail(EXIT_BAD_INPUT, f"{runtime} is not importable with {sys.executable}: {error} "
                         f"(pip install {install})")


def finish(coroutine, runtime, package):
    """Runs the bridge's main coroutine (which returns each turn's exit reason) and ends the
    process as `loopsim live` expects: the last line of stdout is the run's summary."""
    try:
        turns = asyncio.run(coroutine)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 (the harness reports whatever the runtime raised)
        if OFF_LOOPBACK:
            fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
        fail(EXIT_RUNTIME, f"{runtime} raised {type(e).__name__}: {e}")
    if OFF_LOOPBACK:
        fail(EXIT_NETWORK, f"connections off loopback were attempted: {OFF_LOOPBACK}")
    try:
        from importlib.metadata import version
        v = version(package)
    except Exception:
        v = "unknown"
    print(json.dumps({"ok": True, "version": v, "turns": turns}))
