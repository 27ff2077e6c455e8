#!/usr/bin/env bash
# Builds strata with sanitizers and asserts live, and runs the tests under them.
#
#   scripts/sanitize.sh address [BUILD_DIR]   ASan + UBSan, Debug (-O1, asserts on):
#                                             every ctest test but the ISA check of
#                                             the release binary (make check)
#   scripts/sanitize.sh thread [BUILD_DIR]    TSan over the threaded parts: the thread
#                                             pool, the HTTP transport, the engine loop
#                                             and inbox, the KV loader and tier writer,
#                                             the event pump, the router, the KV
#                                             transfer between prefill and decode
#                                             workers, and the server end to end
#                                             (make check-tsan)
#
# Any sanitizer report fails the run (halt_on_error / exitcode); TSan reads
# its suppressions, third-party code only, from tsan.supp. Prints each stage's
# wall time. STRATA_WERROR=ON adds -Werror.
set -euo pipefail
mode=${1:?usage: sanitize.sh address|thread [BUILD_DIR]}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "$mode" in
  address) build=${2:-$root/build-check} ;;
  thread) build=${2:-$root/build-tsan} ;;
  *) echo "sanitize.sh: mode must be address or thread" >&2; exit 2 ;;
esac
jobs=${JOBS:-$(nproc)}

stage() { printf '[sanitize %s] %s: %ss\n' "$mode" "$1" "$(($(date +%s) - $2))"; }

t=$(date +%s)
# A unity build (the sources of a target compiled a batch at a time, so each
# batch parses the shared headers once): half the CPU time of a file-by-file
# build here. The Release build stays file by file, which keeps every source
# compiling on its own includes.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTRATA_SANITIZE="$mode" \
  -DCMAKE_UNITY_BUILD=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WERROR="${STRATA_WERROR:-OFF}" >/dev/null
if [ "$mode" = address ]; then
  cmake --build "$build" -j "$jobs"
else
  cmake --build "$build" -j "$jobs" --target strata strata-mkmodel test_util test_engine test_kvtier test_http \
    test_server test_router test_disagg
fi
stage build "$t"

t=$(date +%s)
"$root/scripts/make-models.sh" "$build" >/dev/null
stage models "$t"

t=$(date +%s)
cd "$build"
if [ "$mode" = address ]; then
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # The ISA check disassembles the release binary's code layout; it says
  # nothing about an instrumented build.
  ctest --output-on-failure -j "$jobs" -E '^isa_confinement$'
else
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tsan.supp"
  # Every test of the threaded libraries (the router's in-process server,
  # probes and proxies among them), then the server end to end (HTTP I/O and
  # worker threads, the event pump, the engine thread in one process). The
  # router's multi-process test stays out: it asserts routing choices that
  # depend on probes answering within their timeout, which a 10x slower
  # instrumented replica does not. TSan runs the suite ~5x slower: the e2e
  # tests' timeout is raised in instrumented builds (tests/CMakeLists.txt).
  # (The loop variable is not `t`: that holds the stage's start time.)
  for bin in test_util test_http test_engine test_kvtier test_server test_router test_disagg; do
    (cd "$root" && "$build/$bin" --gtest_brief=1)
  done
  # Two e2e files stay out; make check runs both under ASan. The tiered
  # cache's (4,000-token prefills, ~2.5 minutes here): its tier threads run
  # under TSan in test_kvtier and test_engine above. The chat templates'
  # (~80 s here, most of it servers it starts to render real templates and
  # split reasoning): the Jinja engine and the reasoning parser share no
  # state between threads, and these requests take the same threaded path
  # as api.test.mjs's.
  STRATA_E2E_SKIP_FILES="kv_tier.test.mjs chat_template.test.mjs" ctest --output-on-failure -R '^server_e2e$'
fi
stage tests "$t"
