# tests/robustness/hostile/20_subwords.sh: subwords: the tokenizer's options, merges files and the tokenize command.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== subwords: the tokenizer's options, merges files and the tokenize command"
check tokenizer_unknown 2 "--tokenizer: sentencepiece not in \\{char,word,bpe\\}" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --tokenizer sentencepiece
check vocab_size_with_words 2 "--vocab-size: is for --tokenizer bpe" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --tokenizer word --vocab-size 500
check vocab_size_tiny 2 "--vocab-size: 3 is too small" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --vocab-size 3
check merges_and_vocab_size 2 "give --merges or --vocab-size, not both" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --vocab-size 500 --merges 100
check bpe_for_lm 2 "'bpe' is not char or word \\(task lm\\)" -- "$hl" train --task lm --text "$repo"/datasets/kjv/kjv.txt --tokenizer bpe
printf '#headlab-bpe-merges 1\na b\na b\n' > "$tmp/repeated_merges.txt"
# Flags that do nothing where they are given are refused (they were ignored).
check tokenize_side_with_merges 2 "--merges excludes --side" -- "$hl" tokenize --merges "$tmp/repeated_merges.txt" \
  --side target x
check merges_repeated 1 "line 3: the merge 'a b' repeats" -- "$hl" tokenize --merges "$tmp/repeated_merges.txt" x
printf 'a b\n' > "$tmp/headerless_merges.txt"
check merges_without_header 1 "line 1: expected the header" -- "$hl" tokenize --merges "$tmp/headerless_merges.txt" x
check merges_missing 1 "cannot|No such file" -- "$hl" tokenize --merges "$tmp/none.txt" x
printf 'ok\n\377\376\n' > "$tmp/not_utf8.txt"
check tokenize_not_utf8 1 "not_utf8.txt:2: tokenize: invalid UTF-8" -- "$hl" tokenize --merges "$tmp/translate/bpe.source.txt" --file "$tmp/not_utf8.txt"
python3 -c 'import random, sys; random.seed(1); open(sys.argv[1], "w").write("".join(random.choice("abcdefgh") for _ in range(200000)) + "\n")' "$tmp/long_word.txt"
check tokenize_200k_character_word 0 "^[0-9]+ bytes of pieces" -- sh -c 'out=$("$0" tokenize --merges "$1" --file "$2") && echo "${#out} bytes of pieces"' \
  "$hl" "$tmp/translate/bpe.source.txt" "$tmp/long_word.txt"
check tokenize_copy_checkpoint 1 "is a copy model; tokenize reads translation models" -- "$hl" tokenize --checkpoint "$tmp/copy/checkpoint.safetensors" x
check tokenize_bad_side 2 "--side" -- "$hl" tokenize --checkpoint "$tmp/translate/checkpoint.safetensors" --side middle x
craft "$tmp/translate/checkpoint.safetensors" "$tmp/merges_lost.safetensors" meta src_merges="#headlab-bpe-merges 1
a"
check checkpoint_bad_merges 1 "src_merges|line 2: expected two symbols" -- "$hl" tokenize --checkpoint "$tmp/merges_lost.safetensors" x
check course_unknown_subcommand 2 "A subcommand is required" -- "$hl" course teach
check course_bad_seed 2 "--seed" -- "$hl" course status --seed -3
check course_missing_tests 2 "--tests .*no_such_tests. does not exist" -- "$hl" course grade --tests "$tmp/no_such_tests" --out "$tmp/grade.json"
# There, but no program: named as such ("are not built: cmake --build ..." before).
check course_tests_dev_zero 2 "--tests '/dev/zero' is not a regular file" -- "$hl" course status --tests /dev/zero
check course_tests_directory 2 "--tests '.*' is not a regular file" -- "$hl" course status --tests "$tmp"
printf '#!/bin/sh\necho "[doctest] test cases: 99999999999999999999999 | 1 passed | 0 failed | 0 skipped"\n' > "$tmp/huge_counts.sh"
chmod +x "$tmp/huge_counts.sh"  # a summary line no doctest prints (a test may print anything): no raw "stoul"
check course_grade_huge_counts 0 "0 of [0-9]+ tasks pass" -- "$hl" course grade --tests "$tmp/huge_counts.sh" --out "$tmp/grade.json"
check flag_of_another_task 2 "--beam is for --task translate" -- "$hl" train --task copy --beam 8
check seed_negative 2 "--seed" -- "$hl" train --seed -1
check rope_2 2 "--rope" -- "$hl" train --rope=2
check layers_0 2 "--layers" -- "$hl" train --layers 0
check d_model_0 2 "d.model" -- "$hl" train --d-model 0
check heads_not_dividing 2 "does not divide" -- "$hl" train --heads 3
check lr_factor_nan 2 "--lr-factor" -- "$hl" train --lr-factor nan
check lr_factor_inf 2 "--lr-factor" -- "$hl" train --lr-factor inf
check dropout_1_5 2 "dropout" -- "$hl" train --dropout 1.5
check optimizer_unknown 2 "--optimizer" -- "$hl" train --optimizer rmsprop
check betas_one_number 2 "--betas.*two numbers" -- "$hl" train --betas 0.9
check betas_of_sgd 2 "--betas: is for --optimizer adam and adamw" -- "$hl" train --optimizer sgd --betas 0.8,0.9
check momentum_of_adam 2 "--momentum: is for --optimizer sgd" -- "$hl" train --momentum 0.9
check lr_with_noam 2 "--lr: is not read by --schedule noam" -- "$hl" train --lr 1e-3
check cosine_without_lr 2 "--schedule cosine needs --lr" -- "$hl" train --schedule cosine
check cosine_without_steps 2 "no step count" -- "$hl" train --schedule cosine --lr 1e-3 --time-budget 5
check grad_accum_0 2 "--grad-accum" -- "$hl" train --grad-accum 0
check lm_without_text 2 "--text: task lm needs a text" -- "$hl" train --task lm
check lm_text_missing 1 "no_such_text.txt" -- "$hl" train --task lm --text "$tmp/no_such_text.txt" --steps 1
printf 'abc\377def' > "$tmp/lm_bad_utf8.txt"
check lm_text_bad_utf8 1 "lm_bad_utf8.txt: not valid UTF-8 at byte 3" -- "$hl" train --task lm --text "$tmp/lm_bad_utf8.txt" --steps 1
printf 'abc' > "$tmp/lm_short.txt"
check lm_text_too_short 1 "fewer than one window" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --steps 1
check lm_text_directory 1 "not a regular file" -- "$hl" train --task lm --text "$tmp" --steps 1
check lm_valid_fraction_0_9 2 "--valid-fraction" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --valid-fraction 0.9
check lm_select_accuracy 2 "task lm has valid_loss" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --select accuracy
check text_for_copy 2 "--text is for --task lm" -- "$hl" train --task copy --text "$tmp/lm_short.txt"
check lm_tokenizer_bpe 2 "--tokenizer" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --tokenizer bpe
check lm_min_freq_for_chars 2 "--min-freq: is for --tokenizer word" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --min-freq 5
check lm_sinks_without_window 2 "--sinks: keeps the first positions visible" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --sinks 2
check lm_rope_dim_without_latent 2 "--rope-dim: is the rotary key of latent K/V" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --rope-dim 4
check lm_latent_with_gqa 2 "--kv-heads: latent K/V" -- "$hl" train --task lm --text "$tmp/lm_short.txt" --latent-dim 16 --kv-heads 2
check window_for_copy 2 "--window is for --task induction, --task lm or --task recall" -- "$hl" train --task copy --window 4
check length_penalty_nan 2 "--length-penalty" -- "$hl" train --task translate --length-penalty nan \
  --train "$tmp/train.tsv" --valid "$tmp/valid.tsv"
check induction_length_2 2 "--length" -- "$hl" train --task induction --length 2 --steps 300
check copy_length_1 2 "--length" -- "$hl" train --task copy --length 1
check unknown_task 2 "--task" -- "$hl" train --task poetry
check long_value 2 "--run-dir|--task" -- "$hl" train --task "$long"
check long_unknown_flag 2 "" -- "$hl" train "--$long"
