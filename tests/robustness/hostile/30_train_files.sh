# tests/robustness/hostile/30_train_files.sh: train: memory, config files, run directories and data files.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
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
