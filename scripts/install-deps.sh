#!/usr/bin/env bash
# Installs what strata needs on Debian 12. Idempotent: it installs only what
# is missing. Run as root (or with sudo).
#   scripts/install-deps.sh          build, test and benchmark (make build/test)
#   scripts/install-deps.sh --serve  only what building and running
#                                    build/strata needs (make serve): no test
#                                    frameworks, oracles, linters or servers
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1:-}" in
  "") ;;
  --serve) mode=serve ;;
  *) echo "usage: $0 [--serve]" >&2; exit 2 ;;
esac

# Compilers, build tools and the libraries build/strata links.
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libpcre2-dev libicu-dev nlohmann-json3-dev libcli11-dev libxxhash-dev libssl-dev
  libcpp-httplib-dev libhiredis-dev libboost1.81-dev
  libopenmpi-dev openmpi-bin libhwloc-dev  # model parallelism (src/parallel)
)
if [ "$mode" = full ]; then
  APT_PACKAGES+=(
    git
    clang libclang-rt-14-dev clang-format-14  # fuzzers, sanitizers, make format-check
    libgtest-dev libgmock-dev libbenchmark-dev
    redis-server    # the Redis KV tier's tests start their own
    python3-jinja2  # the Jinja differential test's reference
    python3-jsonschema  # the structured-output tests' oracle
    prometheus      # promtool lints /metrics (tests/engine/metrics_test.cpp)
  )
  # Node.js and npm run the oracles. Some images ship a Node.js build that
  # bundles npm (so Debian's npm package conflicts with it): install Debian's
  # only when the commands are missing.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    APT_PACKAGES+=(nodejs npm)
  fi
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = full ] || exit 0

# npm oracles, pinned exactly in oracle/package.json. node-llama-cpp must not
# download or build anything: its prebuilt CPU binaries come as a package.
stamp=oracle/node_modules/.strata-installed
if [ ! -f "$stamp" ] || [ oracle/package.json -nt "$stamp" ]; then
  echo "install-deps: npm install (oracle/)"
  (cd oracle && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --omit=optional --ignore-scripts \
      --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
