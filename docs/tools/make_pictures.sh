#!/usr/bin/env bash
# Renders every kind of picture headlab draws to PNG, from tiny runs trained here (a few minutes on
# 2 cores), so that a person can look at them: the attention-map grid, each heads heatmap, the
# training curves, the pruning curves (importance vs random orders with a band), the importance
# heatmap and the ablation chart (heads 1, 2, 4 on a log2 axis).
#
#   docs/tools/make_pictures.sh [BUILD_DIR] [OUT_DIR]     defaults: build/release, docs/images
#
# Needs rsvg-convert (scripts/setup.sh --with-pictures). Every PNG goes to OUT_DIR/all/ (not
# committed: .gitignore); the three the README shows are copied to OUT_DIR: attention_maps.png,
# curves.png, prune.png. The runs themselves stay in a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
out=${2:-docs/images}
hl=$build/apps/headlab
[[ -x $hl ]] || { echo "make_pictures: no $hl: build first (cmake --build --preset release)" >&2; exit 1; }
command -v rsvg-convert > /dev/null ||
  { echo "make_pictures: rsvg-convert is missing: scripts/setup.sh --with-pictures" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/all"

# An SVG as PNG at its own size (a white background is part of every headlab SVG).
png() { rsvg-convert --format png --output "$2" "$1"; echo "  $2 ($(wc -c < "$2") bytes)"; }

echo "make_pictures: training the tiny runs in $work"
# The induction task: a 2-layer attention-only model, enough steps for its heads to take roles.
"$hl" train --task induction --vocab 16 --length 8 --d-model 32 --heads 4 --steps 400 --eval-every 50 \
  --eval-sequences 64 --progress none --run-dir "$work/induction" > /dev/null
"$hl" heads --checkpoint "$work/induction/checkpoint.safetensors" --out "$work/heads" > /dev/null
"$hl" prune --checkpoint "$work/induction/checkpoint.safetensors" --sequences 128 --step 0.25 \
  --out "$work/prune" > /dev/null
"$hl" curves --run-dir "$work/induction" --out "$work/curves.svg" > /dev/null
# The copy task: an encoder-decoder, for its three kinds of attention.
"$hl" train --task copy --length 8 --d-model 32 --heads 2 --ff 64 --layers 1 --steps 300 --eval-every 100 \
  --eval-sequences 64 --progress none --run-dir "$work/copy" > /dev/null
"$hl" heads --checkpoint "$work/copy/checkpoint.safetensors" --out "$work/copy_heads" > /dev/null
# An ablation over head counts, 2 seeds each.
"$hl" ablate --out "$work/sweep" --grid heads=1,2,4 --grid gate=none,headwise --seeds 1,2 -j 2 --metric valid_accuracy -- \
  --task induction --vocab 16 --length 6 --d-model 32 --steps 200 --eval-sequences 64 > /dev/null

echo "make_pictures: rendering to $out/all"
png "$work/heads/attention_maps.svg" "$out/all/attention_maps_induction.png"
png "$work/copy_heads/attention_maps.svg" "$out/all/attention_maps_copy.png"
for score in entropy sink_mass previous_token induction; do
  png "$work/heads/heatmap_$score.svg" "$out/all/heatmap_$score.png"
done
png "$work/curves.svg" "$out/all/curves.png"
png "$work/prune/prune.svg" "$out/all/prune.png"
png "$work/prune/prune_loss.svg" "$out/all/prune_loss.png"
png "$work/prune/importance.svg" "$out/all/importance.png"
png "$work/sweep/chart.svg" "$out/all/ablation.png"
cp "$work/prune/prune.md" "$work/sweep/summary.md" "$out/all/"

cp "$out/all/attention_maps_induction.png" "$out/attention_maps.png"
cp "$out/all/curves.png" "$out/curves.png"
cp "$out/all/prune.png" "$out/prune.png"
echo "make_pictures: the README's three: $out/attention_maps.png, $out/curves.png, $out/prune.png"
