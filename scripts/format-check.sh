#!/usr/bin/env bash
# Checks that every C++ file (*.h, *.cpp) under src/ tests/ tools/ bench/
# fuzz/ is formatted as .clang-format says, with Debian's clang-format 14
# (another major version formats differently, so it is refused). Lists the
# files that differ and exits non-zero if there is any; fix one with
# `clang-format-14 -i FILE`. Changes nothing.
#
#   scripts/format-check.sh   (CLANG_FORMAT=... to pick the binary)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
clang_format="${CLANG_FORMAT:-clang-format-14}"
if ! command -v "${clang_format}" >/dev/null; then
  echo "format-check: ${clang_format} not found (apt-get install clang-format-14)" >&2
  exit 1
fi
version="$("${clang_format}" --version)"
if [[ ! "${version}" =~ version\ 14\. ]]; then
  echo "format-check: needs clang-format 14, ${clang_format} is: ${version}" >&2
  exit 1
fi

mapfile -t files < <(find src tests tools bench fuzz -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
num_bad=0
for f in "${files[@]}"; do
  if ! "${clang_format}" --dry-run --Werror "${f}" >/dev/null 2>&1; then
    echo "needs clang-format: ${f}"
    num_bad=$((num_bad + 1))
  fi
done
if [[ ${num_bad} -gt 0 ]]; then
  echo "format-check: ${num_bad} of ${#files[@]} files differ from .clang-format" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files formatted"
