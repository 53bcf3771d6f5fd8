# tests/robustness/hostile/91_readers.sh: readers: FIFOs, devices, byte-order marks, nesting, subnormals and sizes.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
echo "== readers: FIFOs and devices refused, byte-order marks dropped, nesting and subnormals bounded"
mkfifo "$tmp/outputs/ref_fifo"
check bleu_ref_fifo 1 "--ref: .*not a regular file \\(a FIFO\\)" -- "$hl" bleu --ref "$tmp/outputs/ref_fifo" --hyp "$tmp/outputs/target.html"
check bleu_ref_dev_zero 1 "--ref: '/dev/zero': not a regular file" -- "$hl" bleu --ref /dev/zero --hyp "$tmp/outputs/target.html"
printf '\357\273\277the cat sat on the mat\n' > "$tmp/outputs/bom.txt"
printf 'the cat sat on the mat\n' > "$tmp/outputs/plain.txt"
check bleu_byte_order_mark 0 "^BLEU = 100.00" -- "$hl" bleu --ref "$tmp/outputs/plain.txt" --hyp "$tmp/outputs/bom.txt"
printf 't\000h\000e\000 \000c\000a\000t\000\n\000' > "$tmp/outputs/utf16.txt"  # UTF-16 of ASCII: valid UTF-8 bytes
printf 'ein\000Haus\ta house\n' > "$tmp/outputs/nul.tsv"
check train_tsv_with_nul 1 "nul.tsv:1: a NUL byte: not a text file" -- \
  "$hl" train --task translate --train "$tmp/outputs/nul.tsv" --valid "$tmp/outputs/nul.tsv" --steps 1 --run-dir "$tmp/nul_run"
# A translate run's default pairs are its --valid file as given; from another directory a relative
# one is not there (read_parallel_tsv's bare "cannot open" before).
mkdir -p "$tmp/rel" && cp "$tmp/valid.tsv" "$tmp/rel/valid_rel.tsv"
(cd "$tmp/rel" && "$hl" train --task translate $small_translate --steps 2 --eval-every 2 --train "$tmp/train.tsv" \
  --valid valid_rel.tsv --run-dir run > /dev/null) || exit 1
check prune_run_valid_file_elsewhere 1 "the run's --valid file 'valid_rel.tsv' .* give the pairs with --data" -- \
  env -C "$tmp/outputs" "$hl" prune --checkpoint "$tmp/rel/run/checkpoint.safetensors" --out "$tmp/rel_prune"
# Another directory's valid_rel.tsv is another file (its SHA-256 differs from the checkpoint's): it
# was scored without a word before.
printf 'ein Haus\ta house\n' > "$tmp/outputs/valid_rel.tsv"
check prune_run_valid_file_differs 1 "the run's --valid file 'valid_rel.tsv' .* is not the file the model was trained with" -- \
  env -C "$tmp/outputs" "$hl" prune --checkpoint "$tmp/rel/run/checkpoint.safetensors" --out "$tmp/rel_prune"
rm "$tmp/outputs/valid_rel.tsv"
check bleu_utf16_refused 1 "utf16.txt'?:1: holds a NUL byte: not a text file \\(UTF-16" -- \
  "$hl" bleu --ref "$tmp/outputs/plain.txt" --hyp "$tmp/outputs/utf16.txt"
rm -rf "$tmp/nested" && cp -r "$tmp/copy" "$tmp/nested"
python3 -c 'import sys; open(sys.argv[1], "a").write("{\"step\": 99, \"x\": " + "[" * 100000 + "]" * 100000 + "}\n")' "$tmp/nested/metrics.jsonl"
check curves_nested_metrics 1 "JSON nested deeper than 32 levels" -- "$hl" curves --run-dir "$tmp/nested" --out "$tmp/nested.svg"
check explore_nested_metrics 1 "JSON nested deeper than 32 levels" -- "$hl" explore --checkpoint "$tmp/nested/checkpoint.safetensors" \
  --out "$tmp/nested.html"
rm -rf "$tmp/textloss" && cp -r "$tmp/copy" "$tmp/textloss"
sed -i '2s/"loss":[^,]*/"loss":"low"/' "$tmp/textloss/metrics.jsonl"
check curves_text_loss 1 "textloss/metrics.jsonl: metrics row [0-9]+: 'loss' is not a number: " -- \
  "$hl" curves --run-dir "$tmp/textloss" --out "$tmp/textloss.svg"
check explore_text_loss 1 "textloss/metrics.jsonl: metrics row [0-9]+: 'loss' is not a number: " -- \
  "$hl" explore --checkpoint "$tmp/textloss/checkpoint.safetensors" --out "$tmp/textloss.html"
check train_resume_text_loss 0 "warning: .*textloss/metrics.jsonl: metrics row 2: 'loss' is not a number: 'low'.*loss.svg is not drawn" -- \
  "$hl" train --task copy $small --steps 21 --eval-every 20 --eval-sequences 4 --resume --run-dir "$tmp/textloss"
rm -rf "$tmp/subnormal" && cp -r "$tmp/copy" "$tmp/subnormal"
sed -i 's/"loss":[^,]*/"loss":5e-324/' "$tmp/subnormal/metrics.jsonl"
check curves_log_y_subnormal_loss 0 "wrote" -- "$hl" curves --run-dir "$tmp/subnormal" --log-y --out "$tmp/subnormal.svg"
# Sizes bounded before the work, messages bounded (check: no line over 400 bytes), at 600 MB of
# address space: a 10 MB word is refused before it is encoded (before: 5 s and 1.8 GB), a 100 MB line
# before it is split (before: 3.4 GB), a 1 GB merges file from its size (before: 5 GB).
small_memory=(sh -c 'ulimit -v 600000; exec "$@"' sh)
python3 -c 'import sys; open(sys.argv[1], "w").write("ein " + "a" * 10000000 + "\n")' "$tmp/outputs/word_10mb.txt"
python3 -c 'import sys; open(sys.argv[1], "w").write("ein " + "a" * 1000000 + "\n")' "$tmp/outputs/word_1mb.txt"
check translate_1mb_word_refused_before_encoding 1 "stdin line 1 has at least [0-9]+ ids with </s>" -- \
  sh -c 'ulimit -v 600000; exec "$0" translate --checkpoint "$1" < "$2"' "$hl" "$tr_ckpt" "$tmp/outputs/word_1mb.txt"
check tokenize_1mb_word_refused_before_encoding 1 "word_1mb.txt:1 has at least [0-9]+ ids with </s>" -- \
  "${small_memory[@]}" "$hl" tokenize --checkpoint "$tr_ckpt" --file "$tmp/outputs/word_1mb.txt"
check tokenize_10mb_word_refused 1 "a line of 10000004 bytes, more than the 1 MiB" -- \
  "${small_memory[@]}" "$hl" tokenize --checkpoint "$tr_ckpt" --file "$tmp/outputs/word_10mb.txt"
head -c 100000000 /dev/zero | tr '\0' x > "$tmp/outputs/line_100mb.txt"
check bleu_100mb_line_refused 1 "--ref: .*:1: a line of 100000000 bytes, more than the 1 MiB" -- \
  "${small_memory[@]}" "$hl" bleu --ref "$tmp/outputs/line_100mb.txt" --hyp "$tmp/outputs/plain.txt"
rm -f "$tmp/outputs/line_100mb.txt"
truncate -s 1G "$tmp/outputs/merges_1gb.txt"
check tokenize_merges_1gb_refused_by_size 1 "--merges: .*more than 64 MiB \(1073741824 bytes\)" -- \
  "${small_memory[@]}" "$hl" tokenize --merges "$tmp/outputs/merges_1gb.txt" x
rm -f "$tmp/outputs/merges_1gb.txt"
rm -rf "$tmp/huge_number" && cp -r "$tmp/copy" "$tmp/huge_number"
cp -r "$tmp/huge_number" "$tmp/huge_line"
python3 -c 'import sys; open(sys.argv[1], "a").write("{\"step\": 99, \"loss\": " + "1" * 500000 + "}\n")' "$tmp/huge_number/metrics.jsonl"
check curves_500kb_number_message_bounded 1 "metrics.jsonl.: line [0-9]+: not valid JSON: number overflow parsing '1111.*\.\.\. \(" -- \
  "$hl" curves --run-dir "$tmp/huge_number" --out "$tmp/huge_number.svg"
python3 -c 'import sys; open(sys.argv[1], "a").write("{\"step\": 99, \"loss\": " + "1" * 100000000 + "}\n")' "$tmp/huge_line/metrics.jsonl"
check curves_100mb_line_refused 1 "metrics.jsonl.: line [0-9]+: longer than 1 MiB" -- \
  "${small_memory[@]}" "$hl" curves --run-dir "$tmp/huge_line" --out "$tmp/huge_line.svg"
rm -rf "$tmp/huge_line"
check translate_stdin_10mb_line_refused 1 "stdin line 1 is longer than 1 MiB" -- \
  sh -c 'ulimit -v 600000; head -c 10000000 /dev/zero | tr "\\0" x | "$0" translate --checkpoint "$1"' "$hl" "$tr_ckpt"
# A byte-order mark before the first word is no part of it (--strict refused "ein" with a BOM in it);
# a NUL byte is refused, naming the line.
check translate_stdin_byte_order_mark 0 "." -- \
  sh -c 'printf "\357\273\277ein Haus\n" | "$0" translate --checkpoint "$1" --strict' "$hl" "$tr_ckpt"
check translate_stdin_nul 1 "stdin line 2 holds a NUL byte" -- \
  sh -c 'printf "ein Haus\nein\000Haus\n" | "$0" translate --checkpoint "$1"' "$hl" "$tr_ckpt"
token=$(head -c 60000 /dev/zero | tr '\0' w)
craft "$tr_ckpt" "$tmp/bad/vocab_long_token.safetensors" meta src_vocab="<pad>
<s>
</s>
<unk>
$token
$token"
check checkpoint_60kb_duplicate_token_message_bounded 1 "vocabulary line 6: duplicate token 'www.*\.\.\.' \(60000 bytes\)" -- \
  "$hl" translate --checkpoint "$tmp/bad/vocab_long_token.safetensors" < "$tmp/outputs/plain.txt"
# The head probe's memory is estimated before it runs (before: --probe-sequences 100000 took 4-8 GB).
check heads_probe_over_max_memory 2 "heads --probe-sequences 100000 needs about [0-9.]+ GB .*lower --probe-sequences" -- \
  "${small_memory[@]}" "$hl" heads --checkpoint "$tr_ckpt" --probe-sequences 100000 --max-memory 1G --out "$tmp/heads_big"
check explore_probe_over_max_memory 2 "explore --probe-sequences 100000 needs about [0-9.]+ GB" -- \
  "${small_memory[@]}" "$hl" explore --checkpoint "$tr_ckpt" --probe-sequences 100000 --max-memory 1G --out "$tmp/big.html"
check heads_max_memory_not_a_size 2 "--max-memory: 'lots' is not a memory size" -- \
  "$hl" heads --checkpoint "$tr_ckpt" --max-memory lots --out "$tmp/heads_lots"

# Ctrl-C during a step of a billion accumulated batches: the stop is taken between two batches (the
# step used to run on for minutes, deaf to SIGINT and SIGTERM alike).
check train_interrupted_inside_grad_accum 0 "interrupted during step 1 \\(its partial gradient dropped\\)" -- \
  sh -c 'timeout -s INT -k 10 2 "$@"; echo "exit $?"' sh "$hl" train --task copy --d-model 16 --heads 2 --ff 32 \
  --layers 1 --batch 4 --steps 3 --progress none --grad-accum 1000000000 --run-dir "$tmp/grad_accum_stop"
