# tests/robustness/hostile/70_eval.sh: eval: held-out sequences and --data files.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== eval --data: files the pairs cannot come from, and flags that do not go together"
tr_ckpt=$tmp/translate/checkpoint.safetensors
printf 'ein Haus\ta house\nzwei H\303\244user ohne Tab\n' > "$tmp/eval_no_tab.tsv"
printf 'ein Haus\ta house\nein \377\376\ta\n' > "$tmp/eval_bad_utf8.tsv"
printf 'ein Haus\ta house\n\n' > "$tmp/eval_blank_line.tsv"
: > "$tmp/eval_empty.tsv"
{ printf 'ein Haus\ta house\n'; printf 'ein %.0s' $(seq 200); printf '\tein\n'; } > "$tmp/eval_too_long.tsv"
mkfifo "$tmp/eval_fifo.tsv"
# Held-out sequences scored in one batch: the memory they need is checked before any is drawn (before:
# 10 million failed after seconds, naming train's --max-memory).
check eval_sequences_beyond_memory 2 "eval: --sequences 100000000 of .* needs about .* give fewer --sequences" -- \
  "$hl" eval --checkpoint "$ckpt" --sequences 100000000
check eval_data_missing 1 "no_such_pairs.tsv" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/no_such_pairs.tsv"
check eval_data_no_tab 1 "eval_no_tab.tsv:2: no tab" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/eval_no_tab.tsv"
check eval_data_bad_utf8 1 "eval_bad_utf8.tsv:2" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/eval_bad_utf8.tsv"
check eval_data_blank_line 1 "eval_blank_line.tsv:2" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/eval_blank_line.tsv"
check eval_data_empty 1 "no sentence pairs" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/eval_empty.tsv"
check eval_data_too_long 1 "eval_too_long.tsv:2: the pair is longer than --max-len" -- "$hl" eval --checkpoint "$tr_ckpt" \
  --data "$tmp/eval_too_long.tsv"
check eval_data_fifo 1 "not a regular file" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/eval_fifo.tsv"
check eval_data_directory 1 "not a regular file" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp"
# patch --data: the same files, a gold alignment that is not one, links past the sentence, none at all.
printf 'ein Haus\ta house\t0-0 1-x\n' > "$tmp/patch_bad_links.tsv"
printf 'ein Haus\ta house\t0-0 7-9\n' > "$tmp/patch_far_links.tsv"
check patch_data_missing 1 "no_such_pairs.tsv" -- "$hl" patch --checkpoint "$tr_ckpt" --data "$tmp/no_such_pairs.tsv" --out "$tmp/p1"
check patch_data_fifo 1 "not a regular file" -- "$hl" patch --checkpoint "$tr_ckpt" --data "$tmp/eval_fifo.tsv" --out "$tmp/p2"
check patch_data_directory 1 "not a regular file" -- "$hl" patch --checkpoint "$tr_ckpt" --data "$tmp" --out "$tmp/p3"
check patch_data_bad_links 1 "patch_bad_links.tsv:1" -- "$hl" patch --checkpoint "$tr_ckpt" --data "$tmp/patch_bad_links.tsv" --out "$tmp/p4"
check patch_data_far_links 1 "patch_far_links.tsv:1: alignment link 7-9 is out of range" -- "$hl" attribute --checkpoint "$tr_ckpt" \
  --data "$tmp/patch_far_links.tsv" --out "$tmp/p5"
check patch_data_no_links 2 "eval_too_long.tsv has two aligned source words" -- "$hl" patch --checkpoint "$tr_ckpt" \
  --data "$tmp/eval_too_long.tsv" --out "$tmp/p6"
check patch_data_on_copy 2 "--data is for translate checkpoints" -- "$hl" patch --checkpoint "$ckpt" --data "$tmp/patch_bad_links.tsv" --out "$tmp/p7"
check eval_data_dev_zero 1 "not a regular file" -- "$hl" eval --checkpoint "$tr_ckpt" --data /dev/zero
check eval_data_long_path 1 "read_parallel_tsv" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$long"
check eval_beam_0 2 "--beam" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/valid.tsv" --beam 0
check eval_beam_1e20 2 "--beam" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/valid.tsv" --beam 1e20
check eval_length_penalty_nan 2 "--length-penalty" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/valid.tsv" \
  --beam 2 --length-penalty nan
check eval_length_penalty_greedy 2 "beam search" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/valid.tsv" \
  --length-penalty 1
check eval_translate_without_data 2 "give --data" -- "$hl" eval --checkpoint "$tr_ckpt"
check eval_translate_sequences 2 "--sequences is not read" -- "$hl" eval --checkpoint "$tr_ckpt" --data "$tmp/valid.tsv" \
  --sequences 4
check eval_copy_data 2 "'copy' checkpoint" -- "$hl" eval --run-dir "$tmp/copy" --data "$tmp/valid.tsv"
check eval_induction_data 2 "'induction' checkpoint" -- "$hl" eval --run-dir "$tmp/induction" --data "$tmp/valid.tsv"
check eval_copy_beam 2 "--beam is not read" -- "$hl" eval --run-dir "$tmp/copy" --beam 4
check eval_dir_and_checkpoint 2 "excludes" -- "$hl" eval --run-dir "$tmp/copy" --checkpoint "$tr_ckpt"
check eval_long_checkpoint 1 "" -- "$hl" eval --checkpoint "$long" --data "$tmp/valid.tsv"
