# tests/robustness/hostile/80_generate_explore.sh: generate and explore: prompts, sampling values and outputs.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== generate: prompts and sampling values it cannot take"
lm=$tmp/induction/checkpoint.safetensors
check generate_copy_checkpoint 2 "decoder-only" -- "$hl" generate --checkpoint "$ckpt" --prompt-ids "1 2"
check generate_translate_checkpoint 2 "decoder-only" -- "$hl" generate --checkpoint "$tmp/translate/checkpoint.safetensors" \
  --prompt-ids "1 2"
check generate_text_prompt_no_vocabulary 2 "holds no text vocabulary; give --prompt-ids" -- \
  "$hl" generate --checkpoint "$lm" --prompt "once upon a time"
check generate_no_prompt 2 "--prompt-ids" -- "$hl" generate --checkpoint "$lm"
check generate_empty_prompt 2 "at least one token id" -- "$hl" generate --checkpoint "$lm" --prompt-ids "   "
check generate_id_huge 2 "not a token id" -- "$hl" generate --checkpoint "$lm" --prompt-ids "1 99999999999999999999999"
check generate_id_not_a_number 2 "not a token id" -- "$hl" generate --checkpoint "$lm" --prompt-ids "1 x"
check generate_long_word 2 "bytes\\) is not a token id" -- "$hl" generate --checkpoint "$lm" --prompt-ids "$long"
check generate_temperature_negative 2 "--temperature" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature -0.5
check generate_temperature_inf 2 "--temperature" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature inf
check generate_top_p_0 2 "--top-p" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --top-p 0
check generate_top_p_nan 2 "--top-p" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --top-p nan
check generate_top_k_1e20 2 "--top-k" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --top-k 1e20
check generate_max_new_tokens_huge 2 "--max-new-tokens" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 \
  --max-new-tokens 99999999999
check generate_top_k_when_greedy 2 "--top-k has no effect with --temperature 0" -- \
  "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature 0 --top-k 5
check generate_top_p_when_greedy 2 "--top-p has no effect with --temperature 0" -- \
  "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature 0 --top-p 0.9
check generate_top_k_and_top_p_when_greedy 2 "--top-k and --top-p have no effect with --temperature 0" -- \
  "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature 0 --top-k 5 --top-p 0.9
check generate_greedy 0 "^1( [0-9]+){3}$" -- "$hl" generate --checkpoint "$lm" --prompt-ids 1 --temperature 0 --max-new-tokens 3

echo "== explore: bad input names its option, and nothing is written"
check explore_align_pair_without_align_data 2 "--align-pair requires --align-data" -- \
  "$hl" explore --checkpoint "$ckpt" --align-pair 2 --out "$tmp/align_pair.html"
check explore_align_count_without_align_data 2 "--align-count requires --align-data" -- \
  "$hl" explore --checkpoint "$ckpt" --align-count 5 --out "$tmp/align_count.html"
check explore_missing_checkpoint 1 "no-such.safetensors" -- "$hl" explore --checkpoint "$tmp/no-such.safetensors" \
  --out "$tmp/explore_missing.html"
check explore_without_out 2 "--out" -- "$hl" explore --checkpoint "$ckpt"
mkdir -p "$tmp/explore_existing"
echo "an earlier page" > "$tmp/explore_existing/page.html"
check explore_existing_out 2 "--out: .*exists; give --overwrite" --keeps "$tmp/explore_existing" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/explore_existing/page.html"
check explore_existing_dump_json 2 "--dump-json: .*exists; give --overwrite" --keeps "$tmp/explore_existing" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/explore_existing/new.html" --dump-json "$tmp/explore_existing/page.html"
check explore_out_is_a_directory 2 "--out: .* is a directory" -- "$hl" explore --checkpoint "$ckpt" --out "$tmp"
# Where the output goes is checked before the probe runs (it once ran for seconds, then failed to write).
check explore_out_in_missing_folder 2 "--out: .*: the folder '.*no_such_folder' does not exist" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/no_such_folder/page.html" --probe-sequences 20000
check explore_out_empty 2 "--out: an empty path" -- "$hl" explore --checkpoint "$ckpt" --out ""
echo "a file" > "$tmp/plain_file"
check heads_out_under_a_file 2 "--out: .*: '.*plain_file' is not a directory" -- \
  "$hl" heads --checkpoint "$ckpt" --out "$tmp/plain_file/heads" --probe-sequences 20000
mkdir -p "$tmp/explore_out"
check explore_bad_input_id 2 "--input: '99999' is not a token id" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --input "1 99999" --out "$tmp/explore_out/page.html"
check explore_input_word 2 "--input: 'x' is not a token id" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --input "1 x" --out "$tmp/explore_out/page.html"
check explore_long_input_word 2 "bytes\\) is not a token id" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --input "$long" --out "$tmp/explore_out/page.html"
check explore_input_too_long 2 "--input: give 1 to" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --input "$(yes 2 | head -n 200 | tr '\n' ' ')" --out "$tmp/explore_out/page.html"
check explore_empty_input 2 "--input: give 1 to" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --input "   " --out "$tmp/explore_out/page.html"
check explore_block_too_long 2 "block 50 gives" --keeps "$tmp/explore_out" -- \
  "$hl" explore --checkpoint "$ckpt" --block 50 --out "$tmp/explore_out/page.html"
check explore_probe_sequences_0 2 "--probe-sequences" -- "$hl" explore --checkpoint "$ckpt" --probe-sequences 0 \
  --out "$tmp/explore_out/page.html"
mkdir -p "$tmp/explore_bad_prune/prune"
cp "$ckpt" "$tmp/explore_bad_prune/checkpoint.safetensors"
printf 'order,pruned,fraction,loss,metric,removed\nimportance,zero,0,1,1,\n' > "$tmp/explore_bad_prune/prune/prune.csv"
check explore_bad_prune_csv 1 "prune.csv:2: pruned 'zero' is not a whole number" -- "$hl" explore \
  --checkpoint "$tmp/explore_bad_prune/checkpoint.safetensors" --out "$tmp/explore_out/page.html"
[ -e "$tmp/explore_out/page.html" ] && { echo "  FAIL  a refused explore wrote its page"; failed+=(explore_wrote_page); }
