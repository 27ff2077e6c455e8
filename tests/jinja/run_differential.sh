#!/usr/bin/env bash
# The differential test of strata's Jinja engine against Python Jinja2 as
# Hugging Face transformers configures it (ctest: jinja_differential).
#
#   tests/jinja/run_differential.sh BUILD_DIR SOURCE_DIR
#
# 1. tests/jinja/jinja_reference.py extracts the real chat templates from
#    llama.cpp's source in node-llama-cpp@3.22.1 (oracle/, llama/gitRelease.bundle)
#    into BUILD_DIR/jinja_differential_data/templates/ and renders a generated set of
#    conversations per template with Jinja2 (Debian's python3-jinja2);
# 2. BUILD_DIR/jinja_differential renders the same cases with strata and
#    compares byte for byte (and raise_exception messages).
set -euo pipefail
build="$1"
src="$2"
bundle="${src}/oracle/node_modules/node-llama-cpp-source/llama/gitRelease.bundle"
out="${build}/jinja_differential_data"
if [[ ! -f "${bundle}" ]]; then
  echo "*** ORACLE MISSING: ${bundle}"
  echo "*** run 'make deps' (scripts/install-deps.sh) to install oracle/ ***"
  exit 1
fi
if ! /usr/bin/python3 -c 'import jinja2' 2>/dev/null; then
  echo "*** Debian python3-jinja2 missing (scripts/install-deps.sh installs it) ***"
  exit 1
fi
/usr/bin/python3 "${src}/tests/jinja/jinja_reference.py" --bundle "${bundle}" --out "${out}"
"${build}/jinja_differential" "${out}/cases.json" --show 20 --report "${out}/mismatches.txt"
