#!/usr/bin/env bash
# The binary runs on CPUs without AVX-512 (and without AVX2): instructions of
# those ISAs may only appear in the kernels picked at run time, whose names
# say their ISA (strata::avx2::, strata::avx512::, avx512_kquant::,
# avx512_float::, *_avx2, *_avx512, *_vnni). A std:: template instantiated
# in a file compiled with -mavx512* and chosen by the linker for everyone
# would break that; this test fails if any other function uses a ymm/zmm
# register, xmm16-31 (EVEX only) or an AVX-512 mask, or if any function
# outside strata::amx:: (matmul_amx.cpp, called only after amx_support()
# said yes) uses an AMX tile register or tile configuration.
# Usage: isa_confinement.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: isa_confinement.sh BUILD_DIR}
if ! command -v objdump >/dev/null; then
  echo "objdump not found (binutils)" >&2
  exit 1
fi
for bin in "$build/strata" "$build/strata-mkmodel"; do
  [ -x "$bin" ] || { echo "missing $bin" >&2; exit 1; }
  leaks=$(objdump -d --no-show-raw-insn -C "$bin" |
    awk '/^[0-9a-f]+ <.*>:$/ { name = $0; next }
         /%[yz]mm[0-9]|%xmm(1[6-9]|2[0-9]|3[01])|\{%k[1-7]\}/ { print name }' |
    sort -u |
    grep -v -E 'strata::avx2::|strata::avx512::|strata::avx512_kquant::|strata::avx512_float::|strata::amx::|_avx2\(|_avx512\(|_vnni\(|_amx\(' || true)
  if [ -n "$leaks" ]; then
    echo "$bin: AVX2/AVX-512 instructions outside the ISA-specific kernels:" >&2
    echo "$leaks" >&2
    exit 1
  fi
  amx_leaks=$(objdump -d --no-show-raw-insn -C "$bin" |
    awk '/^[0-9a-f]+ <.*>:$/ { name = $0; next }
         /%tmm[0-7]|ldtilecfg|sttilecfg|tilerelease/ { print name }' |
    sort -u | grep -v -E 'strata::amx::|_amx\(' || true)
  if [ -n "$amx_leaks" ]; then
    echo "$bin: AMX instructions outside the AMX kernels:" >&2
    echo "$amx_leaks" >&2
    exit 1
  fi
  echo "$bin: vector ISA confined to the dispatched kernels"
done
