#!/bin/sh
# check_pictures.sh: what the pictures and tables of `headlab heads` and `headlab prune` must show,
# read from their SVG and Markdown text.
#   check_pictures.sh heads DIR KEYS     DIR from `heads`; KEYS = the probe's length (entropy max ln KEYS)
#   check_pictures.sh prune DIR ORDERS   DIR from `prune --random-orders ORDERS` (ORDERS >= 2)
# Prints PICTURES-OK when every check passes, else the first failed check (exit 1).
set -eu
kind=$1 dir=$2 n=$3
fail() { echo "check_pictures: $kind: $*"; exit 1; }
# The texts of an SVG's <text> elements of a class / with an attribute, one a line.
texts() { grep -o "$2[^>]*>[^<]*</text>" "$1" | sed 's/.*>\([^<]*\)<\/text>/\1/'; }
# The title of an SVG (its 15 px text) must not hold the path of the directory it was written in.
title_without_path() {
  title=$(texts "$1" 'font-size="15"' | head -1)
  [ -n "$title" ] || fail "$1 has no title"
  case "$title" in */*) fail "$1: a path in the title '$title'" ;; esac
  ! grep -qF "$(cd "$dir/.." && pwd)" "$1" || fail "$1 holds the checkpoint's directory"
}
case $kind in
heads)
  maps=$dir/attention_maps.svg
  title_without_path "$maps"
  panels=$(grep -c 'class="panel"' "$maps")
  [ "$(texts "$maps" 'text-anchor="middle"' | grep -c '^query$')" -eq "$panels" ] || fail "not one 'query' title per panel"
  [ "$(texts "$maps" 'text-anchor="middle"' | grep -c '^key$')" -eq "$panels" ] || fail "not one 'key' title per panel"
  grep -q '>&lt;s&gt;</text>' "$maps" || fail "the start token is not drawn as <s>"
  [ "$(texts "$maps" 'font-size="11"' | grep -Ec '^head [0-9]+(: (induction|prev-token|sink) 0\.[4-9][0-9]|: (induction|prev-token|sink) 1\.00| \(no role\))$')" -eq "$panels" ] ||
    fail "a panel title lacks its head's role score (> 0.4) or '(no role)'"
  [ "$(texts "$maps" 'class="scale-tick"' | tr '\n' ' ')" = "0 0.5 1 " ] || fail "attention colour bar ticks"
  want=$(awk -v s="$n" 'BEGIN { printf "%.3g %.3g 0 ", log(s), log(s) / 2 }')
  got=$(texts "$dir/heatmap_entropy.svg" 'class="scale-tick"' | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "entropy scale '$got', want '$want' (0..ln $n)"
  for score in sink_mass previous_token induction; do
    got=$(texts "$dir/heatmap_$score.svg" 'class="scale-tick"' | tr '\n' ' ')
    [ "$got" = "1 0.5 0 " ] || fail "heatmap_$score.svg scale '$got', want 0..1"
    grep -q '>red line: uniform attention = 0\.[0-9]*</text>' "$dir/heatmap_$score.svg" ||
      fail "heatmap_$score.svg has no uniform-attention reference"
    title_without_path "$dir/heatmap_$score.svg"
  done
  ;;
prune)
  [ "$(head -1 "$dir/prune.csv")" = "order,pruned,fraction,loss,metric,removed" ] || fail "prune.csv header"
  steps=$(grep -c '^importance,' "$dir/prune.csv")
  for k in $(seq 1 "$n"); do
    [ "$(grep -c "^random-$k," "$dir/prune.csv")" -eq "$steps" ] || fail "order random-$k has not $steps rows"
  done
  [ "$(grep -c '^random' "$dir/prune.csv")" -eq $((n * steps)) ] || fail "rows of orders beyond random-$n"
  for svg in prune.svg prune_loss.svg; do
    [ "$(grep -c 'class="band"' "$dir/$svg")" -eq 1 ] || fail "$svg has no band of the random orders"
    grep -q "mean ± sd of $n)" "$dir/$svg" || fail "$svg legend does not name the $n orders"
    title_without_path "$dir/$svg"
  done
  header=$(head -1 "$dir/prune.md" | tr -s " ")
  case "$header" in "| heads pruned | fraction | "*" (importance) | "*"(random, mean ± sd of $n) | loss (importance) |"*) ;;
    *) fail "prune.md header '$header'" ;; esac
  ! grep -Eq '^By importance, 0 of' "$dir/prune.md" || fail "a verdict that reads as a contradiction"
  grep -Eq '^(By importance, [1-9][0-9]* of|By importance, all|Pruning even)' "$dir/prune.md" || fail "no verdict line"
  grep -Eq "In $n random orders, [0-9.]+ ± [0-9.]+ heads go before" "$dir/prune.md" || fail "no count of the random orders"
  # survivors.csv: one row per head of importance.csv; its survivors are the ones survivors.md counts
  [ "$(head -1 "$dir/survivors.csv" | cut -d, -f1-8)" = "site,kind,layer,head,importance,removal_rank,removed_at,survives" ] ||
    fail "survivors.csv header"
  heads=$(($(wc -l < "$dir/importance.csv") - 1))
  [ "$(($(wc -l < "$dir/survivors.csv") - 1))" -eq "$heads" ] || fail "survivors.csv has not one row per head ($heads)"
  kept=$(awk -F, 'NR > 1 && $8 == 1' "$dir/survivors.csv" | wc -l)
  grep -q ": $kept of $heads\." "$dir/survivors.md" || fail "survivors.md does not count the $kept survivors of survivors.csv"
  ranks=$(awk -F, 'NR > 1 {print $6}' "$dir/survivors.csv" | sort -n | uniq | wc -l)
  [ "$ranks" -eq "$heads" ] || fail "removal ranks are not 1..$heads"
  ;;
*) fail "unknown kind" ;;
esac
echo PICTURES-OK
