#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/fuzz_<name>.cpp) with clang (ASan +
# UBSan + libFuzzer) in build-fuzz/ and runs each for SECONDS on a scratch
# copy of its seed corpus fuzz/corpus/<name>/ (with fuzz/<name>.dict as the
# dictionary when there is one). Prints each target's stats and wall time.
# Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer
# report (after running the remaining targets), leaving the reproducers in
# fuzz/corpus-work/artifacts/<name>/.
#
#   scripts/fuzz.sh [SECONDS] [NAME...]   (default 60 s each; all targets)
#
# A new fuzz/fuzz_<name>.cpp needs its entry in fuzz/CMakeLists.txt
# and a committed seed corpus in fuzz/corpus/<name>/.
set -euo pipefail

seconds="${1:-60}"
shift || true
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-fuzz"
work_root="${root}/fuzz/corpus-work"

if [[ $# -gt 0 ]]; then
  names=("$@")
else
  names=()
  for src in "${root}"/fuzz/fuzz_*.cpp; do
    n="$(basename "${src}" .cpp)"
    names+=("${n#fuzz_}")
  done
fi
if [[ ${#names[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz/fuzz_*.cpp targets" >&2
  exit 1
fi
targets=()
for name in "${names[@]}"; do
  [[ -f "${root}/fuzz/fuzz_${name}.cpp" ]] || { echo "fuzz: no fuzz/fuzz_${name}.cpp" >&2; exit 1; }
  if ! compgen -G "${root}/fuzz/corpus/${name}/*" >/dev/null; then
    echo "fuzz: fuzz/corpus/${name}/ is missing or empty: commit a seed corpus" >&2
    exit 1
  fi
  if ! grep -qw "fuzz_${name}" "${root}/fuzz/CMakeLists.txt"; then
    echo "fuzz: fuzz_${name} is not in fuzz/CMakeLists.txt: add it with its library" >&2
    exit 1
  fi
  targets+=("fuzz_${name}")
done

CC=clang CXX=clang++ cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON -DSTRATA_FUZZ=ON -DSTRATA_WERROR="${STRATA_WERROR:-OFF}" \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
cmake --build "${build}" --target "${targets[@]}" -j2

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# A value of the final stats (-print_final_stats=1); empty when missing.
final_stat() { grep -m1 "^stat::$1:" "$2" | awk '{ print $2 }' || true; }

failed=()
summary=()
for name in "${names[@]}"; do
  seeds="${root}/fuzz/corpus/${name}"
  work="${work_root}/${name}"
  artifacts="${work_root}/artifacts/${name}/"
  log="${work_root}/fuzz_${name}.log"
  rm -rf "${work}" "${artifacts}"
  mkdir -p "${work}" "${artifacts}"
  cp "${seeds}"/* "${work}/"
  dict=()
  with_dict=""
  if [[ -f "${root}/fuzz/${name}.dict" ]]; then
    dict=(-dict="${root}/fuzz/${name}.dict")
    with_dict=" with fuzz/${name}.dict"
  fi

  echo "fuzz_${name}: ${seconds}s on $(ls "${seeds}" | wc -l) seeds${with_dict}"
  start=$(date +%s)
  set +e
  "${build}/fuzz_${name}" "${work}" "${seeds}" "${dict[@]}" \
    -max_total_time="${seconds}" -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 \
    -max_len=65536 -artifact_prefix="${artifacts}" -print_final_stats=1 > "${log}" 2>&1
  rc=$?
  set -e
  wall=$(( $(date +%s) - start ))
  # libFuzzer logs every coverage gain; show the last lines (all on failure).
  last=$(grep -E '^#[0-9]+' "${log}" | tail -n 1 | sed -E 's/ +/ /g' || true)
  execs=$(final_stat number_of_executed_units "${log}")
  line="fuzz_${name}: ${execs:-?} execs in ${wall}s ($(final_stat average_exec_per_sec "${log}") exec/s)"
  line+=", $(final_stat new_units_added "${log}") new units, peak RSS $(final_stat peak_rss_mb "${log}") MB; ${last}"
  if [[ ${rc} -ne 0 ]] ||
     grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer" "${log}"; then
    cat "${log}"
    echo "fuzz_${name}: FAILED (exit ${rc}); reproducer(s) in ${artifacts}" >&2
    failed+=("${name}")
    line+=" FAILED"
  else
    tail -n 8 "${log}"
  fi
  summary+=("${line}")
done

echo
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#names[@]} target(s) clean for ${seconds}s each"
