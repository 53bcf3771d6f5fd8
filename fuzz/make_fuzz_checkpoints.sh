#!/usr/bin/env bash
# Makes the seed checkpoints of fuzz_safetensors: one tiny trained model of each task (copy,
# translate, induction; a few KB each, under the fuzzer's 64 KiB -max_len), so that mutations start
# from files that load and reach the decoding step of fuzz/fuzz_safetensors.cpp.
#
#   fuzz/make_fuzz_checkpoints.sh [HEADLAB_BINARY]     (default build/release/apps/headlab)
#
# tests/train/test_loading.cpp checks that every checkpoint in the corpus loads and decodes.
set -euo pipefail
cd "$(dirname "$0")/.."
H=${1:-build/release/apps/headlab}
out=fuzz/corpus/fuzz_safetensors
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--d-model 8 --heads 2 --ff 8 --layers 1 --steps 2 --eval-every 2 --progress none)

"$H" train --task copy --vocab 6 --length 4 --batch 2 --eval-sequences 2 "${tiny[@]}" --run-dir "$tmp/copy"
cp "$tmp/copy/checkpoint.safetensors" "$out/tiny_copy_checkpoint.safetensors"

"$H" train --task induction --vocab 8 --length 4 --batch 2 --eval-sequences 2 "${tiny[@]}" --run-dir "$tmp/induction"
cp "$tmp/induction/checkpoint.safetensors" "$out/tiny_induction_checkpoint.safetensors"

printf 'a b c\tx y z\na b\tx y\nb c\ty z\na c\tx z\n' > "$tmp/train.tsv"
printf 'a b\tx y\n' > "$tmp/valid.tsv"
"$H" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --max-tokens 32 --max-len 8 \
    "${tiny[@]}" --run-dir "$tmp/translate"
cp "$tmp/translate/best.safetensors" "$out/tiny_translate_best.safetensors"
ls -l "$out"
