#!/usr/bin/env bash
# The HTTP front, old against new, same model and engine flags (issue 13):
#   - RSS idle, with 5,000 idle keep-alive connections held open (and how
#     long a canary /health takes meanwhile), and after 150 x 1 MB /tokenize;
#   - `strata bench serve` at 64 and 256 concurrent streams: output tok/s and
#     p99 ITL.
# Usage: bench/front_compare.sh OLD_STRATA NEW_STRATA [MODEL] [RESULTS_DIR]
# Each binary serves MODEL (default models/default.gguf) on a free port in
# turn; only processes this script starts are killed, by PID.
set -euo pipefail
old=${1:?usage: front_compare.sh OLD_STRATA NEW_STRATA [MODEL] [RESULTS_DIR]}
new=${2:?usage: front_compare.sh OLD_STRATA NEW_STRATA [MODEL] [RESULTS_DIR]}
model=${3:-models/default.gguf}
out=${4:-$(mktemp -d)}
mkdir -p "$out"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
engine_flags=(--max-num-seqs 256 --kv-cache-memory 64MiB -t 2 --log-interval 0)
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /cpu: /'

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Holds N idle connections for HOLD seconds, then prints how long a /health
# took on a fresh connection while they were open.
hold_idle() {
  python3 - "$1" "$2" "$3" <<'PY'
import socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.socket(); s.setblocking(True); s.connect(("127.0.0.1", port)); socks.append(s)
time.sleep(1.0)
t0 = time.time()
c = socket.create_connection(("127.0.0.1", port), timeout=30)
c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = c.recv(4096)
    if not d: break
    data += d
print(f"canary_ms={1000*(time.time()-t0):.1f} status={data[9:12].decode()}")
sys.stdout.flush()
time.sleep(hold)
PY
}

tokenize_flood() {
  python3 - "$1" <<'PY'
import http.client, json, sys, concurrent.futures
port = int(sys.argv[1])
body = json.dumps({"prompt": "word " * 200000}).encode()  # ~1 MB
def one(_):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/tokenize", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read(); c.close(); return r.status
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    codes = list(ex.map(one, range(150)))
print("tokenize statuses:", {c: codes.count(c) for c in set(codes)})
PY
}

start_server() {  # BIN LOGFILE -> sets pid, port
  port=$(free_port)
  # Timeouts long enough that the idle connections stay for the measurement.
  "$1" serve -m "$model" --port "$port" "${engine_flags[@]}" --idle-timeout 60 \
    --header-timeout 60 --max-body-bytes 4MiB >"$2" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server $1 did not start"; kill $pid; exit 1
}

# Memory: the front's share is the growth over the idle process.
for which in old new; do
  bin=$old; [ "$which" = new ] && bin=$new
  start_server "$bin" "$out/$which.log"
  echo "== $which ($bin)"
  echo "rss_idle_kb=$(rss_kb $pid)"
  hold_idle "$port" 5000 3 >"$out/$which.idle" 2>&1 &
  hp=$!
  sleep 3.5
  echo "rss_5000_idle_kb=$(rss_kb $pid) threads=$(ls /proc/$pid/task | wc -l)"
  wait $hp || true
  grep -E "canary|Error" "$out/$which.idle" | tail -1
  sleep 1
  tokenize_flood "$port"
  echo "rss_after_tokenize_kb=$(rss_kb $pid)"
  kill -TERM $pid
  wait $pid || true
done

# Throughput: rounds alternate old and new, so drift on a shared machine
# hits both; medians over the rounds.
rounds=${ROUNDS:-3}
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    start_server "$bin" "$out/$which-r$r.log"
    for c in 64 256; do
      "$new" bench serve --base-url "http://127.0.0.1:$port" --dataset-name random \
        --input-len 32 --output-len 96 --num-prompts $((c * 3)) --max-concurrency $c \
        --num-warmups 2 >"$out/$which-c$c-r$r.txt" 2>&1 || true
    done
    kill -TERM $pid
    wait $pid || true
  done
done
for c in 64 256; do
  for which in old new; do
    tput=$(grep -h "Output token throughput" "$out"/$which-c$c-r*.txt | awk '{print $NF}' | sort -n |
      awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    itl=$(grep -h "P99 ITL" "$out"/$which-c$c-r*.txt | awk '{print $NF}' | sort -n |
      awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "c=$c $which: output tok/s median $tput, p99 ITL median $itl ms ($rounds rounds)"
  done
done
echo "results in $out"
