#!/usr/bin/env bash
# tests/robustness/hostile_inputs.sh [BUILD_DIR]: the command line against bad input and faults, as a
# careful user and an attacker would try it. Run by ctest (cli.hostile_inputs) and by hand.
#
# Every case gives the command, the exit status it must end with (2: a usage error or a bad value,
# 1: a file that cannot be used or a run that failed; docs/training.md, "Conventions of every command") and a pattern its output
# must contain. Every case must also:
#   - end within 30 s (a hang or a long allocation is a failure),
#   - print no line longer than 400 bytes (a hostile value is quoted clipped, not echoed whole),
#   - show no crash: no "bad_alloc", "terminate called", sanitizer report or signal exit status,
#   - and, where it names a run directory that holds a run, leave every file there byte-identical.
# Prints one line per case and "N cases, N handled"; exits 1 if any case was not handled.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build/release}
hl=$(cd "$build" && pwd)/apps/headlab
[ -x "$hl" ] || { echo "hostile_inputs: $hl not found; build first"; exit 2; }
export HEADLAB_THREADS=1
repo=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2  # a command that wrongly starts training writes its default run dir here
total=0
handled=0
failed=()

# The state of a run directory: one line "sha256 name" per file.
dir_state() { (cd "$1" && find . -type f ! -name '.lock' -print0 | sort -z | xargs -0 -r sha256sum); }

# check NAME STATUS PATTERN [--keeps DIR] -- COMMAND...: runs one case (see the header).
check() {
  local name=$1 want=$2 pattern=$3 keeps="" before="" out=$tmp/out.txt status why=""
  shift 3
  if [ "$1" = --keeps ]; then keeps=$2; shift 2; fi
  [ "$1" = -- ] && shift
  [ -n "$keeps" ] && before=$(dir_state "$keeps")
  # At most 8 GB of address space: a missing memory check fails fast instead of exhausting the machine.
  (ulimit -v 8000000; exec timeout 30 "$@") > "$out" 2>&1 < /dev/null
  status=$?
  total=$((total + 1))
  if [ "$status" -eq 124 ]; then why="did not end within 30 s"
  elif [ "$status" -ne "$want" ]; then why="exit status $status, expected $want"
  elif ! grep -Eq -- "$pattern" "$out"; then why="output does not match /$pattern/"
  elif grep -Eq 'bad_alloc|terminate called|AddressSanitizer|runtime error:|Segmentation' "$out"; then why="crash text in the output"
  elif [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$out")" -gt 400 ]; then why="a line longer than 400 bytes"
  elif [ -n "$keeps" ] && [ "$(dir_state "$keeps")" != "$before" ]; then why="changed files in $keeps"
  fi
  if [ -z "$why" ]; then
    handled=$((handled + 1))
    printf '  ok    %s\n' "$name"
  else
    printf '  FAIL  %s: %s\n' "$name" "$why"
    head -c 600 "$out" | sed 's/^/        | /'
    echo
    failed+=("$name")
  fi
}

# A safetensors file changed in Python: craft SRC DST EDIT [ARG]. EDIT is one of
#   nan            every float of the first model tensor becomes NaN
#   option K=V     the metadata's options text gets K = V
#   meta K=V       a metadata entry K is set to V
#   header-size N  the 8-byte header length becomes N
#   grow N         N zero bytes are appended (a file larger than its header says)
craft() {
  python3 - "$@" <<'EOF'
import json, re, struct, sys
src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
arg = sys.argv[4] if len(sys.argv) > 4 else ""
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = data[8 + n:]
if edit == "nan":
    name = next(k for k in header if k.startswith("model."))
    a, b = header[name]["data_offsets"]
    body[a:b] = struct.pack("<f", float("nan")) * ((b - a) // 4)
elif edit == "option":
    key, value = arg.split("=", 1)
    text = header["__metadata__"]["options"]
    text = re.sub(r"(?m)^%s = .*$" % re.escape(key), "%s = %s" % (key, value), text)
    header["__metadata__"]["options"] = text
elif edit == "meta":
    key, value = arg.split("=", 1)
    header["__metadata__"][key] = value
if edit in ("nan", "option", "meta"):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    data = struct.pack("<Q", len(h)) + h + body
elif edit == "header-size":
    data[:8] = struct.pack("<Q", int(arg))
elif edit == "grow":
    data += b"\0" * int(arg)
open(dst, "wb").write(bytes(data))
EOF
}

echo "== fixtures: tiny finished runs of each task"
small="--d-model 16 --heads 2 --ff 32 --layers 1 --batch 4 --progress none"
small_translate="--d-model 16 --heads 2 --ff 32 --layers 1 --max-tokens 256 --progress none"  # no --batch: translate does not read it
"$hl" train --task copy $small --steps 20 --eval-every 20 --eval-sequences 4 --run-dir "$tmp/copy" > /dev/null || exit 1
head -n 300 "$repo"/datasets/de-en/small/train.tsv > "$tmp/train.tsv"
head -n 20 "$repo"/datasets/de-en/small/valid.tsv > "$tmp/valid.tsv"
"$hl" train --task translate $small_translate --steps 10 --eval-every 10 --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
  --run-dir "$tmp/translate" > /dev/null || exit 1
"$hl" train --task induction $small --steps 10 --eval-every 10 --run-dir "$tmp/induction" > /dev/null || exit 1
ckpt=$tmp/copy/checkpoint.safetensors
long=$(head -c 100000 /dev/zero | tr '\0' 'x')  # a 100 kB value (one argument may hold 128 kB)

echo "== train: numbers, booleans and values out of range"
check steps_negative 2 "--steps" -- "$hl" train --steps -5
check steps_1e20 2 "--steps" -- "$hl" train --steps 1e20
check steps_huge_integer 2 "--steps" -- "$hl" train --steps 99999999999999999999999
check steps_empty 2 "--steps" -- "$hl" train --steps ""
check stop_on_divergence_value 2 "--stop-on-divergence" -- "$hl" train --stop-on-divergence=maybe
# A rate that blows the weights up: without --stop-on-divergence an error naming the step (exit 1),
# with it a result (exit 0, summary.json says diverged 1).
check diverging_rate_fails 1 "the loss became .* at step" -- "$hl" train --task copy $small --steps 20 --lr-factor 1e30 \
  --clip-grad-norm 0
check diverging_rate_stopped 0 "diverged at step [0-9]+ " -- "$hl" train --task copy $small --steps 20 --lr-factor 1e30 \
  --clip-grad-norm 0 --stop-on-divergence --run-dir "$tmp/diverged"
check steps_0_without_budget 2 "--steps: 0 means no step cap" -- "$hl" train --steps 0
check threads_zero 2 "--threads: must be a whole number from 1 to 1024" -- "$hl" train --threads 0
check threads_negative 2 "--threads" -- "$hl" --threads -1 stats
check threads_huge 2 "--threads" -- "$hl" train --threads 99999999999999999999999
check threads_empty 2 "--threads" -- "$hl" stats --threads ""
check threads_env_zero 2 "HEADLAB_THREADS \\(the default of --threads\\)" -- env HEADLAB_THREADS=0 "$hl" stats
check threads_env_text 2 "HEADLAB_THREADS" -- env HEADLAB_THREADS="$(head -c 3000 /dev/zero | tr '\0' 'x')" "$hl" stats

echo "== subwords: the tokenizer's options, merges files and the tokenize command"
check tokenizer_unknown 2 "--tokenizer: sentencepiece not in \\{char,word,bpe\\}" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --tokenizer sentencepiece
check vocab_size_with_words 2 "--vocab-size: is for --tokenizer bpe" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --tokenizer word --vocab-size 500
check vocab_size_tiny 2 "--vocab-size: 3 is too small" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --vocab-size 3
check merges_and_vocab_size 2 "give --merges or --vocab-size, not both" -- "$hl" train --task translate --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --vocab-size 500 --merges 100
check bpe_for_lm 2 "'bpe' is not char or word \\(task lm\\)" -- "$hl" train --task lm --text "$repo"/datasets/kjv/kjv.txt --tokenizer bpe
printf '#headlab-bpe-merges 1\na b\na b\n' > "$tmp/repeated_merges.txt"
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

echo "== train: memory it cannot have"
check layers_100000 2 "memory|GB|GiB" -- "$hl" train --layers 100000
check wide_deep_model 2 "memory|GB|GiB" -- "$hl" train --d-model 8192 --ff 32768 --layers 12 --heads 8

echo "== train: config files"
printf '[train]\nstpes = 50\n' > "$tmp/unknown_key.ini"
check config_unknown_key 2 "unknown_key.ini:2" -- "$hl" train --config "$tmp/unknown_key.ini"
printf '[train]\nd_model = 32\n' > "$tmp/field_name.ini"
check config_field_name_as_key 2 "field_name.ini:2" -- "$hl" train --config "$tmp/field_name.ini"
printf '[model]\nsteps = 50\n' > "$tmp/other_section.ini"
check config_other_section 2 "other_section.ini" -- "$hl" train --config "$tmp/other_section.ini"
printf '[train]\nsteps = 5\nbatch = 4\nsteps = 6\n' > "$tmp/duplicate.ini"
check config_duplicate_key 2 "duplicate.ini:4" -- "$hl" train --config "$tmp/duplicate.ini"
head -c 3000 "$ckpt" > "$tmp/binary.ini"
check config_binary_file 2 "binary.ini" -- "$hl" train --config "$tmp/binary.ini"
printf '[train]\nrope = 2\n' > "$tmp/bool.ini"
check config_boolean_2 2 "bool.ini:2" -- "$hl" train --config "$tmp/bool.ini"
printf '[train]\nsteps = %s\n' "$long" > "$tmp/long_value.ini"
check config_long_value 2 "long_value.ini:2" -- "$hl" train --config "$tmp/long_value.ini"
mkfifo "$tmp/fifo.ini"
check config_fifo 2 "fifo.ini" -- "$hl" train --config "$tmp/fifo.ini"
check config_directory 2 "" -- "$hl" train --config "$tmp"
check config_missing 2 "no_such.ini" -- "$hl" train --config "$tmp/no_such.ini"

echo "== train: run directories that hold a run"
check train_into_finished_run 2 "--resume|--overwrite" --keeps "$tmp/copy" -- \
  "$hl" train --task copy $small --steps 5 --run-dir "$tmp/copy"
check train_from_its_config 2 "belongs to the run" --keeps "$tmp/copy" -- \
  "$hl" train --config "$tmp/copy/config.ini"
check resume_with_other_options 2 "d-model|d_model" --keeps "$tmp/copy" -- \
  "$hl" train --task copy $small --d-model 32 --steps 30 --resume --run-dir "$tmp/copy"
check resume_with_other_seed 2 "seed" --keeps "$tmp/copy" -- \
  "$hl" train --task copy $small --seed 7 --steps 30 --eval-every 20 --eval-sequences 4 --resume --run-dir "$tmp/copy"
cp -r "$tmp/copy" "$tmp/copy_torn"
head -c 2000 "$ckpt" > "$tmp/copy_torn/checkpoint.safetensors"
check resume_from_truncated_checkpoint 1 "checkpoint" --keeps "$tmp/copy_torn" -- \
  "$hl" train --task copy $small --steps 30 --eval-every 20 --eval-sequences 4 --resume --run-dir "$tmp/copy_torn"

echo "== train: data files"
{ head -n 5 "$tmp/valid.tsv"; printf '%s\t%s\n' "$(head -c 5000 /dev/zero | tr '\0' 'a' | sed 's/a/a /g')" "b"; } \
  > "$tmp/long_line.tsv"
check test_file_long_line_before_step_1 2 "long_line.tsv:6" -- \
  "$hl" train --task translate $small_translate --steps 100000 --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
  --test "$tmp/long_line.tsv" --run-dir "$tmp/new_translate"
printf 'ein Haus\ta house\nkein Tab hier\n' > "$tmp/no_tab.tsv"
check valid_file_malformed 1 "no_tab.tsv:2" -- \
  "$hl" train --task translate $small_translate --train "$tmp/train.tsv" --valid "$tmp/no_tab.tsv" --run-dir "$tmp/new_translate2"
mkfifo "$tmp/fifo.tsv"
check train_file_fifo 1 "fifo.tsv" -- \
  "$hl" train --task translate $small_translate --train "$tmp/fifo.tsv" --valid "$tmp/valid.tsv" --run-dir "$tmp/new_translate3"
cp -r "$tmp/translate" "$tmp/translate_edited"
sed '1,3s/^[^\t]*/Ungewöhnlichkeit Zwischenfall Zusammenhang/' "$tmp/train.tsv" > "$tmp/train_edited.tsv"
check translate_resume_other_vocabulary 2 "vocabular" --keeps "$tmp/translate_edited" -- \
  "$hl" train --task translate $small_translate --steps 20 --eval-every 10 --train "$tmp/train_edited.tsv" \
  --valid "$tmp/valid.tsv" --resume --run-dir "$tmp/translate_edited"

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
check curves_out_is_a_directory 1 "curves" --keeps "$tmp/copy" -- "$hl" curves --run-dir "$tmp/copy" --out "$tmp/copy"

echo "== ablate: jobs for other schedulers and runs collected from elsewhere"
sweep_flags=(--grid heads=1,2 -- --task copy --steps 20)
"$hl" ablate --out "$tmp/sweep" --emit-jobs "$tmp/sweep_jobs.txt" "${sweep_flags[@]}" > /dev/null || exit 1
check ablate_emit_slurm_no_such_directory 2 "--emit-slurm .*does not exist" -- \
  "$hl" ablate --out "$tmp/sweep" --emit-slurm "$tmp/nowhere/x.sbatch" "${sweep_flags[@]}"
check ablate_emit_jobs_to_a_directory 2 "--emit-jobs .*is a directory" -- \
  "$hl" ablate --out "$tmp/sweep" --emit-jobs "$tmp" "${sweep_flags[@]}"
check ablate_emit_jobs_line_break_in_out 2 "--run-dir: contains a control character" -- \
  "$hl" ablate --out "$tmp/line
break" --emit-jobs "$tmp/jobs_nl.txt" "${sweep_flags[@]}"
check ablate_emit_slurm_line_break_in_flag 2 "--train: contains a control character" -- \
  "$hl" ablate --out "$tmp/sweep_nl" --emit-slurm "$tmp/nl.sbatch" --grid heads=1,2 -- --task translate \
  --train "$tmp/train
.tsv" --valid "$tmp/valid.tsv"
check ablate_collect_long_directory 2 "--collect 'xxx.*no such directory" --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" --collect "$long"
check ablate_collect_a_file 2 "not a directory" --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" --collect "$tmp/sweep_jobs.txt"
check ablate_collect_run_of_another_sweep 2 "not a run of this sweep" --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" --collect "$tmp/copy"
mkdir -p "$tmp/renamed"
cp -r "$tmp/copy" "$tmp/renamed/heads=1,seed=1"
check ablate_collect_run_with_other_flags 2 "from another sweep: " --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" --collect "$tmp/renamed"
check ablate_collect_missing_runs_exits_1 1 "^  heads=1,seed=1: not started" -- \
  "$hl" ablate --out "$tmp/sweep" --collect
mkdir -p "$tmp/sweep/runs" && cp -r "$tmp/copy" "$tmp/sweep/runs/heads=2,seed=1"
check ablate_run_of_other_options_in_runs_refused 2 "heads=2,seed=1: from another sweep: " --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" "${sweep_flags[@]}"
check ablate_emit_with_run_of_other_options_refused 2 "heads=2,seed=1: from another sweep: " --keeps "$tmp/sweep" -- \
  "$hl" ablate --out "$tmp/sweep" --emit-jobs "$tmp/other_jobs.txt" "${sweep_flags[@]}"
mkdir -p "$tmp/not_a_sweep" && echo "mine" > "$tmp/not_a_sweep/summary.csv"
check ablate_out_not_a_sweep_refused 2 "not a sweep directory \(no sweep.json\) but it holds summary.csv" \
  --keeps "$tmp/not_a_sweep" -- "$hl" ablate --out "$tmp/not_a_sweep" "${sweep_flags[@]}"
check ablate_slurm_time_injection 2 "--time '1:00 --wrap=id': not a value SLURM takes" -- \
  "$hl" ablate --out "$tmp/sweep_t" --emit-slurm "$tmp/t.sbatch" --time "1:00 --wrap=id" "${sweep_flags[@]}"
check ablate_slurm_account_line_break 2 "--account .*not a value SLURM takes" -- \
  "$hl" ablate --out "$tmp/sweep_t" --emit-slurm "$tmp/t.sbatch" --account "a
#SBATCH --x" "${sweep_flags[@]}"
check ablate_emit_jobs_to_a_device_before_planning 2 "--emit-jobs: '/dev/null' exists and is a device" -- \
  "$hl" ablate --out "$tmp/sweep_dev" --emit-jobs /dev/null "${sweep_flags[@]}"
[ ! -e "$tmp/sweep_dev" ] || { echo "  FAIL  ablate --emit-jobs /dev/null made the sweep directory"; failed+=(ablate_emit_dev_dir); }
check ablate_slurm_flag_without_emit_slurm 2 "go into the script of --emit-slurm" -- \
  "$hl" ablate --out "$tmp/sweep_t" --mem 4G "${sweep_flags[@]}"
check prune_data_on_a_copy_checkpoint 2 "--data is the evaluation TSV of a translate checkpoint" -- \
  "$hl" prune --checkpoint "$tmp/copy/checkpoint.safetensors" --data "$tmp/no_such.tsv" --out "$tmp/prune_data"
check tokenize_without_a_source_exits_2 2 "give --checkpoint \(a translation model\) or --merges" -- "$hl" tokenize x
check course_grade_out_directory_before_tests 2 "--out: '.*' exists and is a directory" -- \
  "$hl" course grade --tests /bin/false --out "$tmp"

echo "== eval --data: files the pairs cannot come from, and flags that do not go together"
tr_ckpt=$tmp/translate/checkpoint.safetensors
printf 'ein Haus\ta house\nzwei H\303\244user ohne Tab\n' > "$tmp/eval_no_tab.tsv"
printf 'ein Haus\ta house\nein \377\376\ta\n' > "$tmp/eval_bad_utf8.tsv"
printf 'ein Haus\ta house\n\n' > "$tmp/eval_blank_line.tsv"
: > "$tmp/eval_empty.tsv"
{ printf 'ein Haus\ta house\n'; printf 'ein %.0s' $(seq 200); printf '\tein\n'; } > "$tmp/eval_too_long.tsv"
mkfifo "$tmp/eval_fifo.tsv"
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

echo "== explore: bad input names its option, and nothing is written"
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

echo "== outputs: never replace what is not a regular file or is an input; lost stdout is an error"
mkdir -p "$tmp/outputs"
mkfifo "$tmp/outputs/fifo"
ln -s "$tmp/outputs/target.html" "$tmp/outputs/link.html"
echo "kept" > "$tmp/outputs/target.html"
cp "$ckpt" "$tmp/outputs/c.safetensors"
check explore_out_fifo 2 "--out: .* exists and is a FIFO" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/outputs/fifo" --overwrite
check explore_out_symlink 2 "--out: .* exists and is a symbolic link" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/outputs/link.html" --overwrite
check explore_out_is_checkpoint 2 "--out: .* is also an input" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$tmp/outputs/c.safetensors" --out "$tmp/outputs/./c.safetensors" --overwrite
check explore_dump_json_is_checkpoint 2 "--dump-json: .* is also an input" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$tmp/outputs/c.safetensors" --out "$tmp/outputs/new.html" \
  --dump-json "$tmp/outputs/c.safetensors" --overwrite
check curves_out_is_metrics 1 "curves --out: .* is also an input" --keeps "$tmp/copy" -- \
  "$hl" curves --run-dir "$tmp/copy" --out "$tmp/copy/metrics.jsonl"
check stats_to_full_disk 1 "writing to stdout failed" -- sh -c '"$0" stats --d-model 64 --heads 4 > /dev/full' "$hl"
check bleu_to_closed_stdout 1 "writing to stdout failed" -- \
  sh -c '"$0" bleu --ref "$1" --hyp "$1" >&-' "$hl" "$tmp/outputs/target.html"

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
check curves_text_loss 1 "textloss/metrics.jsonl: metrics row [0-9]+: 'loss' is a text, not a number" -- \
  "$hl" curves --run-dir "$tmp/textloss" --out "$tmp/textloss.svg"
check explore_text_loss 1 "textloss/metrics.jsonl: metrics row [0-9]+: 'loss' is a text, not a number" -- \
  "$hl" explore --checkpoint "$tmp/textloss/checkpoint.safetensors" --out "$tmp/textloss.html"
check train_resume_text_loss 0 "warning: .*textloss/metrics.jsonl: metrics row 2: 'loss' is a text.*loss.svg is not drawn" -- \
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
echo "== faults: a full disk (a file size limit) and a second process on one run directory"
full=(sh -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' sh)  # at most 8 blocks written per file
check heads_full_disk 1 "heads|No space|too large|File too large" -- "${full[@]}" "$hl" heads --checkpoint "$ckpt" \
  --out "$tmp/heads_full" --probe-sequences 2
if grep -q '^wrote' "$tmp/out.txt"; then echo "  FAIL  heads_full_disk printed 'wrote'"; failed+=(heads_full_disk_wrote); fi
full_small=(sh -c 'trap "" XFSZ; ulimit -f 4; exec "$@"' sh)  # prune's files are smaller
check prune_full_disk 1 "prune|No space|too large" -- "${full_small[@]}" "$hl" prune --checkpoint "$ckpt" --out "$tmp/prune_full" \
  --sequences 4
cp -r "$tmp/copy" "$tmp/copy_full"
check train_full_disk_keeps_checkpoint 1 "File too large|No space" -- "${full[@]}" "$hl" train --task copy $small --steps 40 \
  --eval-every 20 --eval-sequences 4 --resume --run-dir "$tmp/copy_full"
"$hl" eval --run-dir "$tmp/copy_full" --sequences 4 > /dev/null 2>&1 ||
  { echo "  FAIL  the checkpoint after a full disk does not load"; failed+=(train_full_disk_checkpoint_loads); }
"$hl" train --task copy $small --steps 100000 --eval-every 100000 --run-dir "$tmp/busy" > /dev/null 2>&1 &
busy=$!
sleep 2
check second_train_on_one_dir 2 "$busy" -- "$hl" train --task copy $small --steps 100000 --resume --run-dir "$tmp/busy"
kill -INT "$busy"; wait "$busy"

echo "== hostile_inputs: $total cases, $handled handled, ${#failed[@]} not handled"
[ "${#failed[@]}" -eq 0 ] || { printf '   not handled: %s\n' "${failed[*]}"; exit 1; }
