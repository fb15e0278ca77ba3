#!/usr/bin/env bash
# Writes every output a refactor must leave byte-identical, and a manifest of their hashes.
#
#   scripts/outputs-identical.sh BIN MANIFEST     run BIN over the suite; write MANIFEST
#   diff MANIFEST-before MANIFEST-after           nothing printed: nothing changed
#
# Covers every committed scenario x 3 seeds x every profile (a profile that cannot express a
# scenario is refused: its exit code and message are outputs too), a sweep, a check with
# --junit, a gate, an explore with --faults, an import of a session written by Hermes's own
# session store (when LOOPSIM_PYTHON has hermes-agent) and replays. Every command runs in the
# same folder (target/identical/work) so paths written into reports match between builds.
set -euo pipefail
BIN=$(realpath "$1")
MANIFEST=$(realpath -m "$2")
cd "$(dirname "$0")/.."
ROOT=$PWD
W=$ROOT/target/identical/work
rm -rf "$W"
mkdir -p "$W/runs"
PROFILES=$("$BIN" run --help | sed -n 's/.*possible values: \(.*\)\]/\1/p' | head -1 | tr -d ',')
test -n "$PROFILES" || { echo "no profiles found in run --help" >&2; exit 2; }

# One run: its exit code, stdout and stderr, and every file of its report folder.
one() {
  local sc=$1 seed=$2 prof=$3 name
  name=$(basename "$sc" .toml)
  local out="$W/runs/$name-$seed-$prof"
  set +e
  "$BIN" run "$sc" --seed "$seed" --profile "$prof" --out "$out" >"$out.stdout" 2>"$out.stderr"
  echo $? >"$out.code"
  return 0
}
export -f one
export BIN W
for sc in scenarios/*.toml; do
  for seed in 1 7 42; do
    for prof in $PROFILES; do echo "$sc $seed $prof"; done
  done
done | xargs -P "$(nproc)" -n 3 bash -c 'one "$@"' _

cmd() { # NAME ARGS...: a whole command's exit code, stdout and stderr
  local name=$1; shift
  set +e
  (cd "$ROOT" && "$BIN" "$@") >"$W/$name.stdout" 2>"$W/$name.stderr"
  echo $? >"$W/$name.code"
  set -e
}
cmd sweep sweep scenarios/incident-*.toml scenarios/healthy-*.toml scenarios/poller-exempt.toml \
  --profiles hermes-main --seeds 0..4 \
  --grid tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=8 \
  --grid tool_loop_guardrails.hard_stop_enabled=false,true --out "$W/sweep"
cmd check check --junit "$W/junit.xml"
cmd gate gate --baseline reports/baseline.json --max-increase 5%
cmd explore explore scenarios --seeds 0..40 --faults
cmd run-compare run scenarios/execute-code-spin-wait.toml --out "$W/compare" \
  --compare-profiles hermes-main,hermes-v0.21.5
cmd replay replay "$W/runs/two-call-cycle-1-hermes-0.19.0/trace.jsonl"
cmd what-if replay "$W/runs/two-call-cycle-1-hermes-0.19.0/trace.jsonl" --profile hermes-main \
  --out "$W/what-if"
# Every command's JSON, which the Python API will read.
cmd replay-json replay "$W/runs/two-call-cycle-1-hermes-0.19.0/trace.jsonl" --format json
cmd what-if-json replay "$W/runs/two-call-cycle-1-hermes-0.19.0/trace.jsonl" --profile hermes-main \
  --out "$W/what-if-json" --format json
cmd check-json check --format json
cmd gate-json gate --baseline reports/baseline.json --format json
cmd explore-json explore scenarios/two-call-cycle.toml --seeds 0..20 --format json
cmd sweep-json sweep scenarios/two-call-cycle.toml --grid faults.rate_limit=0,0.2 --seeds 0..2 \
  --out "$W/sweep-json" --format json
cmd compare-json compare scenarios/two-call-cycle.toml scenarios/healthy-progressing-poll.toml \
  --out "$W/compare-json" --format json
cmd list-json list --format json
cmd codes-json codes --format json
cmd validate-json validate scenarios --format json
cmd diff-json diff scenarios/two-call-cycle.toml --engine builtin --engine builtin --format json
if [ -n "${LOOPSIM_PYTHON:-}" ] && "$LOOPSIM_PYTHON" -c 'import hermes_state' 2>/dev/null; then
  "$LOOPSIM_PYTHON" tests/import/make_sessions.py "$W/hermes-home" >/dev/null
  cmd import-list import "$W/hermes-home/state.db" --list --format json
  cmd import import "$W/hermes-home/state.db" --session spin-1 --out "$W/import"
  cmd import-replay replay "$W/import/trace.jsonl" --profile hermes-main --out "$W/import-what-if"
  cmd import-json import "$W/hermes-home/state.db" --session spin-1 --out "$W/import-json" --format json
else
  echo "SKIPPED import: LOOPSIM_PYTHON has no hermes-agent" >&2
fi
# Hermes's session store stamps the wall clock into its own files and the session list.
(cd "$W" && find . -type f ! -path './hermes-home/*' ! -name 'import-list.*' | sort | xargs sha256sum) >"$MANIFEST"
echo "$(wc -l <"$MANIFEST") files hashed into $MANIFEST"
