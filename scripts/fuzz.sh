#!/usr/bin/env bash
# Builds a fuzzer with clang (ASan + UBSan + libFuzzer) in build-fuzz/ and
# runs it for SECONDS on a scratch copy of its seed corpus
# (fuzz/corpus/<name>/ for fuzz_<name>).
# Exits non-zero on any crash, leak, timeout or sanitizer report.
#
#   scripts/fuzz.sh [SECONDS] [TARGET]   (defaults 60, fuzz_gguf)
set -euo pipefail

seconds="${1:-60}"
target="${2:-fuzz_gguf}"
name="${target#fuzz_}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-fuzz"
seeds="${root}/fuzz/corpus/${name}"
work="${root}/fuzz/corpus-work/${name}"
artifacts="${root}/fuzz/corpus-work/artifacts-${name}/"

CC=clang CXX=clang++ cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_FUZZ=ON \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
cmake --build "${build}" --target "${target}" -j2

rm -rf "${work}" "${artifacts}"
mkdir -p "${work}" "${artifacts}"
cp "${seeds}"/* "${work}/"

log="${root}/fuzz/corpus-work/${target}.log"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
set +e
"${build}/${target}" "${work}" "${seeds}" \
  -max_total_time="${seconds}" -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 \
  -max_len=65536 -artifact_prefix="${artifacts}" -print_final_stats=1 > "${log}" 2>&1
rc=$?
set -e
# libFuzzer logs every coverage gain; CI shows the last lines (all on failure).

if [[ ${rc} -ne 0 ]] || grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer" "${log}"; then
  cat "${log}"
  echo "${target}: FAILED (exit ${rc}); reproducer(s) in ${artifacts}" >&2
  exit 1
fi
tail -n 12 "${log}"
echo "${target}: clean for ${seconds}s"
