#!/usr/bin/env bash
# Generates strata's test and default models into BUILD_DIR/models/ with the
# tiny-model writer (seeded: the same bytes on every machine):
#   - the parity matrix: {llama, qwen2, qwen3} x {f32 f16 bf16 q8_0 q4_0 q4_k q6_k}
#     (+ llama q4_k_m), 2 layers, hidden 256, ffn 512, 4 heads, 2 kv heads,
#     vocab 512, ctx 256; qwen2 has q/k/v biases, qwen3 has q/k norms, a free
#     head_dim (128) and a tied output head;
#   - peaky variants (sharp distributions) for greedy-continuation tests;
#   - default.gguf: the model `strata generate`/`serve` use without -m.
# Also writes models/manifest.tsv (name, file, mkmodel arguments), which
# scripts/gen_llamacpp_goldens.mjs reads. Idempotent: a model is rewritten
# only when its arguments changed or strata-mkmodel is newer than it.
# Usage: scripts/make-models.sh BUILD_DIR
set -euo pipefail
build_dir=${1:?usage: make-models.sh BUILD_DIR}
mkmodel="$build_dir/strata-mkmodel"
[ -x "$mkmodel" ] || { echo "make-models: $mkmodel not built" >&2; exit 1; }
out="$build_dir/models"
mkdir -p "$out"
manifest="$out/manifest.tsv.tmp"
: > "$manifest"
num_written=0

# make NAME ARGS...: writes $out/NAME.gguf from the arguments.
make_model() {
  local name=$1; shift
  local file="$out/$name.gguf" args="$*"
  printf '%s\t%s.gguf\t%s\n' "$name" "$name" "$args" >> "$manifest"
  if [ -f "$file" ] && [ -f "$file.args" ] && [ "$(cat "$file.args")" = "$args" ] &&
     [ "$file" -nt "$mkmodel" ]; then
    return
  fi
  "$mkmodel" "$@" -o "$file"
  printf '%s' "$args" > "$file.args"
  num_written=$((num_written + 1))
}

small="--layers 2 --hidden 256 --ffn 512 --heads 4 --kv-heads 2 --vocab 512 --ctx 256"
for type in f32 f16 bf16 q8_0 q4_0 q4_k q6_k; do
  make_model "llama-$type" --arch llama --type "$type" $small --seed 11
  make_model "qwen2-$type" --arch qwen2 --type "$type" $small --seed 12 --rope-base 1000000
  make_model "qwen3-$type" --arch qwen3 --type "$type" $small --head-dim 128 --seed 13 \
    --rope-base 1000000 --tied
done
make_model "llama-q4_k_m" --arch llama --type q4_k_m $small --seed 14
# Peaky seeds are picked so that llama.cpp's 32-token greedy path has no
# near-tie (gen_llamacpp_goldens.mjs prints the smallest top-2 margin; the
# test compares only up to the first margin below its top-1 threshold).
make_model "llama-f32-peaky" --arch llama --type f32 $small --seed 21 --peaky
make_model "qwen2-q8_0-peaky" --arch qwen2 --type q8_0 $small --seed 22 --rope-base 1000000 --peaky
make_model "qwen3-q4_k-peaky" --arch qwen3 --type q4_k $small --head-dim 128 --seed 26 \
  --rope-base 1000000 --peaky
make_model "default" --arch llama --type f16 --layers 4 --hidden 512 --ffn 1536 --heads 8 \
  --kv-heads 4 --vocab 2000 --ctx 2048 --seed 1

mv "$manifest" "$out/manifest.tsv"
echo "make-models: $num_written written, $(wc -l < "$out/manifest.tsv") in $out"
