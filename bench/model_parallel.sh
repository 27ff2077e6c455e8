#!/usr/bin/env bash
# Model parallelism on this machine: one process with THREADS threads
# against TP=2 and PP=2 under mpirun with THREADS/2 threads per rank, on the
# 1.1B TinyLlama shape (Q8_0, strata-mkmodel), through `strata bench
# throughput`:
#   decode b1  decode tok/s, 1 request  (16-token prompt, 64 generated)
#   decode b8  decode tok/s, 8 requests at once
#   pp512      prompt tok/s of one 512-token prompt (512 / TTFT)
# plus, for the groups, rank 0's share of step time spent in exchanges
# (transfers and waiting for the slowest peer). pp2 keeps one micro-batch
# per stage in flight; pp2-serial is the same group one step at a time
# (--no-pipeline-micro-batches), as before micro-batches; only batches of
# several requests can overlap (b8), one request is one micro-batch. Runs are interleaved and the
# best of REPS is kept (the machine may be shared). Prints the CPU name.
#   usage: bench/model_parallel.sh [BUILD_DIR]
#   env:   MODEL=path.gguf  REPS=3  THREADS=2  CONFIGS="single tp2 pp2 pp2-serial"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
CONFIGS=${CONFIGS:-single tp2 pp2 pp2-serial}
STRATA=$BUILD/strata
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "${MODEL:-}" ]; then
  MODEL=$BUILD/models/bench/1.1b-q8_0.gguf
  if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$BUILD/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
      --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1 -o "$MODEL" >/dev/null
  fi
fi
per_rank=$(( THREADS / 2 > 0 ? THREADS / 2 : 1 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run CONFIG WORKLOAD -> stdout of bench throughput
  local config=$1 workload=$2 args
  case $workload in
    b1) args="--num-prompts 1 --input-len 16 --output-len 64" ;;
    b8) args="--num-prompts 8 --input-len 16 --output-len 64" ;;
    pp512) args="--num-prompts 1 --input-len 512 --output-len 1" ;;
  esac
  # shellcheck disable=SC2086
  case $config in
    single) "$STRATA" bench throughput -m "$MODEL" $args -t "$THREADS" ;;
    tp2) mpirun -np 2 --bind-to core "$STRATA" bench throughput -m "$MODEL" $args \
           -t "$per_rank" --tensor-parallel-size 2 2>/dev/null ;;
    pp2) mpirun -np 2 --bind-to core "$STRATA" bench throughput -m "$MODEL" $args \
           -t "$per_rank" --pipeline-parallel-size 2 2>/dev/null ;;
    pp2-serial) mpirun -np 2 --bind-to core "$STRATA" bench throughput -m "$MODEL" $args \
           -t "$per_rank" --pipeline-parallel-size 2 --no-pipeline-micro-batches 2>/dev/null ;;
  esac
}

value() {  # value WORKLOAD FILE -> the figure
  case $1 in
    b1|b8) sed -n 's/^decode tokens\/s *\([0-9.]*\).*/\1/p' "$2" ;;
    pp512) awk '/^TTFT/ { printf "%.1f", 512 / $3 }' "$2" ;;
  esac
}
comm() { sed -n 's/^communication *\([0-9.]*%\).*(\([0-9.]*\) of \([0-9.]*\) ms.*/\1 (\2 of \3 ms)/p' "$1"; }

for rep in $(seq 1 "$REPS"); do
  for w in b1 b8 pp512; do
    for c in $CONFIGS; do
      run "$c" "$w" > "$tmp/$c.$w.$rep" 2>/dev/null || echo "model_parallel: $c $w failed" >&2
    done
  done
done

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "model: $MODEL; one process $THREADS threads, groups $per_rank thread(s) per rank; best of $REPS"
printf '%-10s %12s %12s %12s   %s\n' config "decode b1" "decode b8" "pp512" "rank 0 in exchanges (b1 / b8 / pp512)"
for c in $CONFIGS; do
  line=$(printf '%-10s' "$c")
  comms=""
  for w in b1 b8 pp512; do
    best=0
    best_file=""
    for rep in $(seq 1 "$REPS"); do
      v=$(value "$w" "$tmp/$c.$w.$rep")
      [ -z "$v" ] && continue
      if awk -v a="$v" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$v; best_file=$tmp/$c.$w.$rep; fi
    done
    line="$line $(printf '%12s' "$best tok/s")"
    [ -n "$best_file" ] && [ "$c" != single ] && comms="$comms $(comm "$best_file") /"
  done
  echo "$line  ${comms% /}"
done
