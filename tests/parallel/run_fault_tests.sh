#!/usr/bin/env bash
# Faults in a model-parallel group, on real processes: `strata serve` under
# `mpirun -np 2 --tensor-parallel-size 2`, then one rank is
#   A. killed (SIGKILL) while the group is idle,
#   B. killed while rank 0 is inside a step (rank 1 is stopped first, so the
#      step is certainly waiting for it when the kill comes),
#   C. stopped (SIGSTOP: alive but silent) while idle;
# every time all ranks must be gone within 10 s, mpirun must exit non-zero,
# and the output must hold a line naming the rank (strata's own, or mpirun's
# when it ended the job first). In C rank 0's server must answer 503 before
# it goes. Usage: run_fault_tests.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: run_fault_tests.sh BUILD_DIR}
strata="$build/strata"
model="$build/models/llama-f32-peaky.gguf"
[ -e "$model" ] || { echo "no models in $build/models (run make models)"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun missing"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
mpirun_pid=""
rank_pids=()
cleanup() {
  for p in "${rank_pids[@]}" $mpirun_pid; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
num_failed=0
num_passed=0
pass() { echo "ok: $*"; num_passed=$((num_passed + 1)); }
fail() { echo "FAIL: $*"; num_failed=$((num_failed + 1)); }

# start LOG: serve on a free port under mpirun; sets mpirun_pid, rank_pids
# (by OMPI_COMM_WORLD_RANK) and port.
start() {
  local log=$1
  : > "$log"
  mpirun -np 2 "$strata" serve -m "$model" --port 0 -t 1 --tensor-parallel-size 2 \
    > "$log" 2>&1 &
  mpirun_pid=$!
  port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  rank_pids=()
  for c in $(pgrep -P "$mpirun_pid"); do
    local r
    r=$(tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ -n "$r" ] && rank_pids[$r]=$c
  done
  [ -n "$port" ] && [ -n "${rank_pids[0]:-}" ] && [ -n "${rank_pids[1]:-}" ]
}

# gone_within SECONDS: mpirun and every rank exited; sets rc (mpirun's).
gone_within() {
  local limit=$1 t0
  t0=$(date +%s%N)
  while :; do
    local alive=0
    for p in "${rank_pids[@]}" "$mpirun_pid"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    [ $(( ($(date +%s%N) - t0) / 1000000 )) -gt $((limit * 1000)) ] && return 1
    sleep 0.05
  done
  wait "$mpirun_pid"
  rc=$?
  elapsed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  return 0
}

names_rank() {  # names_rank LOG RANK PID
  grep -Eq "strata: rank $2 \(pid $3 on [^)]*\) (died|stopped responding)|process rank $2 .*exited on signal" "$1"
}

request() {  # request PORT: one small completion, its HTTP status
  curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://127.0.0.1:$1/v1/completions" \
    -H 'content-type: application/json' -d '{"prompt":"hello","max_tokens":4,"temperature":0}'
}

# A. SIGKILL while idle.
if start "$tmp/a.log" && [ "$(request "$port")" = 200 ]; then
  victim=${rank_pids[1]}
  kill -9 "$victim"
  if gone_within 10 && [ "$rc" -ne 0 ] && names_rank "$tmp/a.log" 1 "$victim"; then
    pass "A: SIGKILL of rank 1 while idle: all gone in ${elapsed_ms} ms, mpirun rc $rc"
  else
    fail "A: SIGKILL while idle (rc=${rc:-none})"; tail -8 "$tmp/a.log"
  fi
else
  fail "A: the group did not start"; tail -5 "$tmp/a.log"
fi

# B. SIGKILL during a step: rank 1 stopped, a request enters a step and
# waits for it, then rank 1 is killed.
if start "$tmp/b.log"; then
  victim=${rank_pids[1]}
  kill -STOP "$victim"
  request "$port" > "$tmp/b.status" &
  curl_pid=$!
  sleep 0.5
  kill -9 "$victim"
  if gone_within 10 && [ "$rc" -ne 0 ] && names_rank "$tmp/b.log" 1 "$victim"; then
    pass "B: SIGKILL of rank 1 during a step: all gone in ${elapsed_ms} ms, mpirun rc $rc"
  else
    fail "B: SIGKILL during a step (rc=${rc:-none})"; tail -8 "$tmp/b.log"
  fi
  wait "$curl_pid" 2>/dev/null
else
  fail "B: the group did not start"; tail -5 "$tmp/b.log"
fi

# C. SIGSTOP (alive but silent): only the heartbeat can tell. A request
# sent meanwhile waits in its step until the group fails, then gets a 503.
if start "$tmp/c.log"; then
  victim=${rank_pids[1]}
  kill -STOP "$victim"
  request "$port" > "$tmp/c.status" &
  curl_pid=$!
  if gone_within 10 && [ "$rc" -ne 0 ] &&
     grep -Eq "strata: rank 1 \(pid $victim on [^)]*\) stopped responding: no heartbeat" "$tmp/c.log"; then
    wait "$curl_pid"
    if [ "$(cat "$tmp/c.status")" = 503 ]; then
      pass "C: SIGSTOP of rank 1: the request in flight got 503, all gone in ${elapsed_ms} ms, mpirun rc $rc"
    else
      fail "C: the request in flight got $(cat "$tmp/c.status"), not 503"; tail -8 "$tmp/c.log"
    fi
  else
    fail "C: SIGSTOP (rc=${rc:-none})"; tail -8 "$tmp/c.log"
  fi
else
  fail "C: the group did not start"; tail -5 "$tmp/c.log"
fi

echo "parallel faults: $num_passed passed, $num_failed failed"
[ "$num_failed" -eq 0 ]
