# tests/robustness/hostile/99_faults.sh: faults: a full disk and a second process on one run directory.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
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
