#!/usr/bin/env bash
# The head explorer's browser test (ctest test browser.explorer, label "browser"):
#   tests/browser/explorer_test.sh HEADLAB_BINARY WORK_DIR
# trains four tiny checkpoints (copy with 1 head, translate with 4 gated heads, induction with 2 and
# pruning results, lm with 16 heads), writes for each the `headlab heads` output (the independent numbers)
# and the explorer page on the same input, then checks the pages in headless Chromium
# (explorer_test.js) and leaves a screenshot in WORK_DIR/explorer.png.
# Exit 77 (ctest SKIP_RETURN_CODE) with a "skipped: ..." line when Chromium, node or the npm
# modules (npm ci in tests/browser; scripts/setup.sh --with-browser) are missing.
set -euo pipefail
headlab=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

# HEADLAB_REQUIRE_BROWSER=1 (.ci/run): a missing piece fails the test instead.
skip() {
  if [[ ${HEADLAB_REQUIRE_BROWSER:-0} == 1 ]]; then echo "FAIL (HEADLAB_REQUIRE_BROWSER=1): $1"; exit 1; fi
  echo "skipped: $1"
  exit 77
}
[[ -x /usr/bin/chromium ]] || skip "chromium not found at /usr/bin/chromium (scripts/setup.sh --with-browser)"
command -v node >/dev/null || skip "node not found (scripts/setup.sh --with-browser)"
[[ -f "$here/node_modules/playwright-core/package.json" ]] ||
  skip "playwright-core not installed in tests/browser (run: npm ci --prefix tests/browser, or scripts/setup.sh --with-browser)"

rm -rf "$work"
mkdir -p "$work"
quiet() { "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log"; echo "FAIL: $*"; exit 1; }; }
toy=$source_dir/tests/fixtures/translate
common=(--progress none --overwrite)

# Four runs, a few steps each: the page needs attention, not a good model.
quiet "$headlab" train --task copy --heads 1 --d-model 16 --ff 32 --layers 1 --steps 20 --eval-every 10 \
  --eval-sequences 16 --run-dir "$work/copy" "${common[@]}"
quiet "$headlab" train --task translate --train "$toy/toy_train.tsv" --valid "$toy/toy_valid.tsv" --d-model 32 \
  --heads 4 --gate headwise --ff 64 --layers 1 --max-tokens 256 --steps 20 --eval-every 10 --run-dir "$work/translate" "${common[@]}"
quiet "$headlab" train --task induction --vocab 16 --length 6 --d-model 32 --heads 2 --layers 2 --steps 40 \
  --eval-every 20 --eval-sequences 32 --run-dir "$work/induction" "${common[@]}"
quiet "$headlab" prune --checkpoint "$work/induction/checkpoint.safetensors" --sequences 32 --step 0.5 --overwrite
quiet "$headlab" train --task lm --text "$source_dir/datasets/kjv/kjv.txt" --d-model 32 --heads 16 --ff 64 \
  --layers 1 --length 128 --batch 4 --steps 10 --warmup 2 --eval-every 5 --eval-sequences 4 --run-dir "$work/lm" "${common[@]}"

# prune writes one random order ("random") today, K of them ("random-1".."random-K") with --random-orders.
random_orders=$(cut -d, -f1 "$work/induction/prune/prune.csv" | grep '^random' | sort -u | wc -l)

cases="["
add_case() {  # name checkpoint prune [input]
  local name=$1 checkpoint=$2 prune=$3
  shift 3
  quiet "$headlab" heads --checkpoint "$checkpoint" --out "$work/$name.heads" --overwrite "$@"
  quiet "$headlab" explore --checkpoint "$checkpoint" --out "$work/$name.html" --overwrite "$@"
  cases+="$( [[ $cases == "[" ]] || echo ,){\"name\":\"$name\",\"page\":\"$work/$name.html\",\"heads_dir\":\"$work/$name.heads\","
  cases+="\"config\":\"$(dirname "$checkpoint")/config.ini\",\"prune\":$prune,\"random_orders\":$random_orders"
  # The circuits view's independent numbers: `headlab patch` (induction, copy) and `attribute` (pre-LN).
  case $name in
    induction|induction_k|copy)
      quiet "$headlab" patch --checkpoint "$checkpoint" --out "$work/$name.patch" --overwrite
      cases+=",\"patch_csv\":\"$work/$name.patch/patch_heads.csv\"" ;;
  esac
  if [[ $name == induction* ]]; then
    quiet "$headlab" attribute --checkpoint "$checkpoint" --out "$work/$name.attribute" --overwrite
    cases+=",\"attribution_csv\":\"$work/$name.attribute/attribution.csv\""
  fi
  cases+="}"
}
add_case induction "$work/induction/checkpoint.safetensors" true
add_case copy "$work/copy/checkpoint.safetensors" false --input "1 4 2 9 5"
add_case translate "$work/translate/best.safetensors" false --input "w1 w2 w3 w4"
add_case lm "$work/lm/checkpoint.safetensors" false --block 60  # 121 tokens, 16 heads
# The K random orders of `prune --random-orders K` ("random-1".."random-K"): the induction run again,
# its random rows written as 3 orders whose metric differs, so that the page draws mean +- sd bands.
cp -r "$work/induction" "$work/induction_k"
awk -F, -v OFS=, 'NR == 1 || $1 == "importance" { print; next }
                  $1 ~ /^random/ { for (k = 1; k <= 3; k++) { $1 = "random-" k; m = $5; $5 = m * (0.8 + 0.1 * k); print; $5 = m } }' \
  "$work/induction/prune/prune.csv" > "$work/induction_k/prune/prune.csv"
random_orders=3
add_case induction_k "$work/induction_k/checkpoint.safetensors" true
# Gold links (--align-data): the toy's validation pairs with links i-i (word wK -> vK; "." unlinked),
# the third pair shown; `headlab align` on the same 20 pairs gives the independent AER of each head.
awk -F '\t' '{ n = split($1, w, " "); l = ""; for (i = 0; i < n; i++) l = l (i ? " " : "") i "-" i; print $0 "\t" l }' \
  "$toy/toy_valid.tsv" > "$work/aligned.tsv"
quiet "$headlab" explore --checkpoint "$work/translate/best.safetensors" --out "$work/gold.html" --overwrite \
  --align-data "$work/aligned.tsv" --align-pair 3 --align-count 20
quiet "$headlab" align --checkpoint "$work/translate/best.safetensors" --data "$work/aligned.tsv" --count 20 \
  --out "$work/gold.align" --overwrite
gold_words=$(sed -n 3p "$toy/toy_valid.tsv" | cut -f1 | wc -w)
cases+=",{\"name\":\"gold\",\"page\":\"$work/gold.html\",\"align_csv\":\"$work/gold.align/alignment.csv\",\"gold_words\":$gold_words}"
cases+="]"
echo "$cases" >"$work/cases.json"

cd "$here"
node explorer_test.js "$work/cases.json" "$work/explorer.png"
