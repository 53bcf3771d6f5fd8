#!/usr/bin/env bash
# docs/studies/gate_lr_sweep.sh [--quick] OUT_DIR [BUILD_DIR]: the gate's stability claim as one command
# (docs/studies/gate-lr-sweep.md). A learning-rate sweep of the character lm on the King James text:
#
#   gate = none, headwise, elementwise  x  lr = 0.008 .. 1.0 (8 rates, about x2 apart)  x  seeds 1, 2, 3
#
# 72 runs of `headlab train --task lm` (d_model 64, 4 heads, ff 256, 2 pre-LN layers, context 64,
# batch 16, 300 steps of AdamW, cosine schedule after 30 warm-up steps, no gradient clipping),
# two at a time; a run whose loss or weights stop being finite is stopped and recorded
# (--stop-on-divergence). Then OUT_DIR/summary.{csv,md} and one chart per metric against lr:
# OUT_DIR/chart_valid_loss.svg, chart_loss_spikes.svg, chart_max_loss_jump.svg, chart_sink_mass.svg,
# chart_diverged.svg.
#
# --quick: the same recipe at toy size (2 gates x 2 rates, one seed, 30 steps, a few seconds), the
# form ctest runs (cli.gate_lr_sweep_quick). Running it again skips the finished runs (ablate's rule).
set -euo pipefail
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
out=${1:?usage: docs/studies/gate_lr_sweep.sh [--quick] OUT_DIR [BUILD_DIR]}
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$repo/build/release}
hl=$build/apps/headlab
[ -x "$hl" ] || { echo "gate_lr_sweep: $hl not found; build first" >&2; exit 2; }

if [ "$quick" = 1 ]; then
  gates=none,elementwise rates=0.01,0.3 seeds=1
  model=(--d-model 32 --heads 2 --ff 64 --layers 1 --length 16 --batch 8 --steps 30 --warmup 5
         --eval-every 30 --eval-sequences 8)
else
  gates=none,headwise,elementwise rates=0.008,0.016,0.03,0.06,0.12,0.25,0.5,1.0 seeds=1,2,3
  model=(--d-model 64 --heads 4 --ff 256 --layers 2 --length 64 --batch 16 --steps 300 --warmup 30
         --eval-every 100 --eval-sequences 64)
fi
"$hl" ablate --out "$out" --grid gate=$gates --grid lr=$rates --seeds $seeds -j 2 --x lr -- \
  --task lm --text "$repo/datasets/kjv/kjv.txt" "${model[@]}" --schedule cosine --clip-grad-norm 0 \
  --stop-on-divergence
for metric in valid_loss loss_spikes max_loss_jump sink_mass diverged; do
  "$hl" ablate --out "$out" --collect --x lr --metric "$metric" > /dev/null
  cp "$out/chart.svg" "$out/chart_$metric.svg"
done
"$hl" ablate --out "$out" --collect --x lr --metric valid_loss  # summary.md led by valid_loss, printed
