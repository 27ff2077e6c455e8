#!/usr/bin/env bash
# Builds test binaries with clang -fsanitize=thread in build-tsan/ and runs
# them with the repository's suppressions (tsan.supp). Exits non-zero on any
# ThreadSanitizer report or test failure.
#
#   scripts/tsan.sh [TARGET...]   (default: test_http)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-tsan"
targets=("$@")
((${#targets[@]})) || targets=(test_http)

CC=clang CXX=clang++ cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DSTRATA_BUILD_BENCH=OFF >/dev/null
cmake --build "${build}" --target "${targets[@]}" -j2

status=0
for t in "${targets[@]}"; do
  log="${build}/${t}.tsan.log"
  set +e
  (cd "${root}" && TSAN_OPTIONS="suppressions=${root}/tsan.supp halt_on_error=0 exitcode=66" \
    "${build}/${t}" >"${log}" 2>&1)
  rc=$?
  set -e
  if [[ ${rc} -ne 0 ]] || grep -q "WARNING: ThreadSanitizer" "${log}"; then
    grep -A30 "WARNING: ThreadSanitizer" "${log}" | head -200 || tail -50 "${log}"
    echo "tsan: ${t} FAILED (exit ${rc}); full log in ${log}" >&2
    status=1
  else
    echo "tsan: ${t} clean ($(grep -E '^\[  PASSED  \]' "${log}" || echo 'no summary'))"
  fi
done
exit ${status}
