# tests/robustness/hostile/50_other_commands.sh: other commands: values out of range.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== other commands: values out of range"
check mlp_demo_steps_negative 2 "--steps" -- "$hl" mlp-demo --steps -5
check heads_seed_negative 2 "--seed" -- "$hl" heads --checkpoint "$ckpt" --seed -1
check eval_sequences_1e20 2 "--sequences" -- "$hl" eval --run-dir "$tmp/copy" --sequences 1e20
check prune_step_nan 2 "--step" -- "$hl" prune --checkpoint "$ckpt" --step nan
check patch_rows_1e20 2 "--rows" -- "$hl" patch --checkpoint "$ckpt" --rows 1e20
check patch_rows_5000 2 "--rows" -- "$hl" patch --checkpoint "$ckpt" --rows 5000
check attribute_seed_negative 2 "--seed" -- "$hl" attribute --checkpoint "$ckpt" --seed -1
check patch_slot_nan 2 "--slot" -- "$hl" patch --checkpoint "$ckpt" --slot nan
check cache_input_not_ids 2 "--input" -- "$hl" cache --checkpoint "$ckpt" --input "1 x 3" --out "$tmp/cache_x.safetensors"
check cache_input_too_long 2 "--input" -- "$hl" cache --checkpoint "$ckpt" --input "$(seq -s ' ' 1 400)" --out "$tmp/cache_y.safetensors"
check cache_out_directory 2 "is a directory" -- "$hl" cache --checkpoint "$ckpt" --out "$tmp"
check prune_random_orders_1000 2 "--random-orders" -- "$hl" prune --checkpoint "$ckpt" --random-orders 1000
check translate_length_penalty_nan 2 "--length-penalty" -- sh -c \
  "echo 'ein Haus' | '$hl' translate --checkpoint '$tmp/translate/checkpoint.safetensors' --length-penalty nan"
check translate_beam_0 2 "--beam" -- sh -c \
  "echo 'ein Haus' | '$hl' translate --checkpoint '$tmp/translate/checkpoint.safetensors' --beam 0"
check decode_token_out_of_range 2 "99999" -- "$hl" decode --run-dir "$tmp/copy" --input "1 99999"
check decode_not_a_number 2 "" -- "$hl" decode --run-dir "$tmp/copy" --input "1 x 2"
check decode_empty_input 2 "" -- "$hl" decode --run-dir "$tmp/copy" --input ""
check stats_long_value 2 "" -- "$hl" stats --gate "$long"
mkdir -p "$tmp/curves_garbage" "$tmp/curves_task"
cp "$tmp/copy/config.ini" "$tmp/curves_garbage/" && printf '{"step":1,"loss":2}\nnot json\n' > "$tmp/curves_garbage/metrics.jsonl"
printf '[train]\ntask=nope\n' > "$tmp/curves_task/config.ini" && cp "$tmp/copy/metrics.jsonl" "$tmp/curves_task/"
check curves_metrics_garbage 1 "metrics.jsonl.: line 2: not valid JSON" -- "$hl" curves --run-dir "$tmp/curves_garbage"
check curves_bad_task 1 "'nope' is not a known task" -- "$hl" curves --run-dir "$tmp/curves_task"
check curves_out_is_a_directory 2 "curves" --keeps "$tmp/copy" -- "$hl" curves --run-dir "$tmp/copy" --out "$tmp/copy"
