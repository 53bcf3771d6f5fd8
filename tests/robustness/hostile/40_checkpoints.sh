# tests/robustness/hostile/40_checkpoints.sh: checkpoints that cannot be used, from every command that reads one.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== checkpoints that cannot be used, from every command that reads one"
mkdir -p "$tmp/bad"
head -c 3000 "$ckpt" > "$tmp/bad/truncated.safetensors"
echo "not a checkpoint" > "$tmp/bad/text.safetensors"
: > "$tmp/bad/empty.safetensors"
craft "$ckpt" "$tmp/bad/nan.safetensors" nan
craft "$ckpt" "$tmp/bad/layers0.safetensors" option layers=0
craft "$ckpt" "$tmp/bad/layers_2_64.safetensors" option layers=18446744073709551616
craft "$ckpt" "$tmp/bad/d_model_huge.safetensors" option d_model=1000000000
craft "$ckpt" "$tmp/bad/step_text.safetensors" meta step=twelve
craft "$ckpt" "$tmp/bad/header_huge.safetensors" header-size 1000000000000
craft "$ckpt" "$tmp/bad/grown.safetensors" grow 4096
truncate -s 12G "$tmp/bad/sparse_12g.safetensors"
mkfifo "$tmp/bad/fifo.safetensors"
mkdir "$tmp/bad/dir.safetensors"
for bad in truncated text empty nan layers0 layers_2_64 d_model_huge step_text header_huge grown \
           sparse_12g fifo dir; do
  file=$tmp/bad/$bad.safetensors
  mkdir -p "$tmp/run_$bad"
  [ -e "$tmp/run_$bad/checkpoint.safetensors" ] || ln -s "$file" "$tmp/run_$bad/checkpoint.safetensors"
  check "eval_$bad" 1 "$bad" -- "$hl" eval --run-dir "$tmp/run_$bad" --sequences 4
  check "decode_$bad" 1 "$bad" -- "$hl" decode --run-dir "$tmp/run_$bad" --input "1 4 2 9"
  check "heads_$bad" 1 "$bad" -- "$hl" heads --checkpoint "$file" --out "$tmp/heads_$bad" --probe-sequences 2
  check "prune_$bad" 1 "$bad" -- "$hl" prune --checkpoint "$file" --out "$tmp/prune_$bad" --sequences 4
  check "translate_$bad" 1 "$bad" -- sh -c "echo 'ein Haus' | '$hl' translate --checkpoint '$file'"
  check "eval_data_$bad" 1 "$bad" -- "$hl" eval --checkpoint "$file" --data "$tmp/valid.tsv"
  check "generate_$bad" 1 "$bad" -- "$hl" generate --checkpoint "$file" --prompt-ids "1 2"
  check "explore_$bad" 1 "$bad" -- "$hl" explore --checkpoint "$file" --out "$tmp/explore_$bad.html" --probe-sequences 2
  check "composition_$bad" 1 "$bad" -- "$hl" composition --checkpoint "$file" --out "$tmp/composition_$bad"
  check "patch_$bad" 1 "$bad" -- "$hl" patch --checkpoint "$file" --out "$tmp/patch_$bad" --rows 4
  check "attribute_$bad" 1 "$bad" -- "$hl" attribute --checkpoint "$file" --out "$tmp/attribute_$bad" --rows 4
  check "cache_$bad" 1 "$bad" -- "$hl" cache --checkpoint "$file" --out "$tmp/cache_$bad.safetensors"
done
# A best row edited by hand: named before any step (it was read as 1, or stopped the run at its first evaluation).
rm -rf "$tmp/best_true" && cp -r "$tmp/copy" "$tmp/best_true"
printf '{"step":21,"loss":1}\n' >> "$tmp/best_true/metrics.jsonl"  # a line past the checkpoint: kept by a refusal
craft "$tmp/copy/best.safetensors" "$tmp/best_true/best.safetensors" meta best_metrics='{"step":20,"valid_loss":true}'
check train_resume_best_metrics_true 1 "best.safetensors: best_metrics: 'valid_loss' is not a number: 'true'" \
  --keeps "$tmp/best_true" -- "$hl" train --task copy $small --steps 40 --eval-every 20 --eval-sequences 4 --resume \
  --run-dir "$tmp/best_true"
