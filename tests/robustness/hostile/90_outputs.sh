# tests/robustness/hostile/90_outputs.sh: outputs: what is not a regular file, is an input, or is another program's file.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
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
check curves_out_is_metrics 2 "curves --out: .* is also an input" --keeps "$tmp/copy" -- \
  "$hl" curves --run-dir "$tmp/copy" --out "$tmp/copy/metrics.jsonl"
# A file that exists and is not the command's own earlier output is kept (they replaced any file).
echo "my notes" > "$tmp/outputs/notes.txt"
check curves_out_unrelated_file 2 "curves --out: .*notes.txt' exists and is not a chart headlab drew" \
  --keeps "$tmp/outputs" -- "$hl" curves --run-dir "$tmp/copy" --out "$tmp/outputs/notes.txt"
check mlp_demo_dot_unrelated_file 2 "mlp-demo --dot: .*notes.txt' exists and is not a graph headlab wrote" \
  --keeps "$tmp/outputs" -- "$hl" mlp-demo --steps 2 --dot "$tmp/outputs/notes.txt"
check ablate_emit_jobs_unrelated_file 2 "--emit-jobs: .*notes.txt' exists and is not a jobs file headlab wrote" \
  --keeps "$tmp/outputs" -- "$hl" ablate --out "$tmp/sweep" --emit-jobs "$tmp/outputs/notes.txt" "${sweep_flags[@]}"
printf 'mkdir -p out && { make all; }' > "$tmp/outputs/build.sh"  # no newline: not a job line cut short
check ablate_emit_jobs_onto_a_short_script 2 "--emit-jobs: .*build.sh' exists and is not a jobs file headlab wrote" \
  --keeps "$tmp/outputs" -- "$hl" ablate --out "$tmp/sweep" --emit-jobs "$tmp/outputs/build.sh" "${sweep_flags[@]}"
cp "$tmp/sweep_jobs.txt" "$tmp/outputs/jobs.txt"
check ablate_emit_slurm_onto_a_jobs_file 2 "--emit-slurm: .*jobs.txt' exists and is not a SLURM script headlab wrote" \
  --keeps "$tmp/outputs" -- "$hl" ablate --out "$tmp/sweep" --emit-slurm "$tmp/outputs/jobs.txt" "${sweep_flags[@]}"
mkdir -p "$tmp/own_outputs"
"$hl" curves --run-dir "$tmp/copy" --out "$tmp/own_outputs/chart.svg" > /dev/null || exit 1
check curves_redraws_its_own_chart 0 "wrote .*chart.svg" -- "$hl" curves --run-dir "$tmp/copy" --out "$tmp/own_outputs/chart.svg"
"$hl" ablate --out "$tmp/own_outputs/sweep" --emit-jobs "$tmp/own_outputs/jobs.txt" "${sweep_flags[@]}" > /dev/null || exit 1
check ablate_emit_jobs_again 0 "wrote 2 jobs" -- \
  "$hl" ablate --out "$tmp/own_outputs/sweep" --emit-jobs "$tmp/own_outputs/jobs.txt" "${sweep_flags[@]}"
head -n 1 "$tmp/own_outputs/jobs.txt" | bash || exit 1  # one run finished: the file is emitted again for the other
check ablate_emit_jobs_after_a_finished_run 0 "wrote 1 jobs" -- \
  "$hl" ablate --out "$tmp/own_outputs/sweep" --emit-jobs "$tmp/own_outputs/jobs.txt" "${sweep_flags[@]}"
cp "$tmp/copy/loss.svg" "$tmp/own_outputs/loss_before.svg"
check curves_redraws_the_loss_svg_train_drew 0 "wrote .*copy/loss.svg" -- "$hl" curves --run-dir "$tmp/copy"
check stats_to_full_disk 1 "writing to stdout failed" -- sh -c '"$0" stats --d-model 64 --heads 4 > /dev/full' "$hl"
check bleu_to_closed_stdout 1 "writing to stdout failed" -- \
  sh -c '"$0" bleu --ref "$1" --hyp "$1" >&-' "$hl" "$tmp/outputs/target.html"
# A file or directory option given as "" (an unset shell variable): refused, naming it, before any
# work; read as "no file" or as the default it ran something else (ablate --emit-jobs "" ran the sweep).
check ablate_emit_jobs_empty 2 "headlab ablate: --emit-jobs: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" ablate --out "$tmp/outputs/sweep" --grid heads=1 --emit-jobs "" -- --task copy --steps 1 $small
check explore_dump_json_empty 2 "headlab explore: --dump-json: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/outputs/e.html" --dump-json ""
check explore_align_data_empty 2 "headlab explore: --align-data: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" explore --checkpoint "$ckpt" --out "$tmp/outputs/e.html" --align-data ""
for command in heads prune composition patch attribute; do
  check "${command}_out_empty" 2 "headlab $command: --out: an empty path; .*omit --out for its default" \
    --keeps "$tmp/copy" -- "$hl" "$command" --checkpoint "$ckpt" --out ""
done
check align_out_empty 2 "headlab align: --out: an empty path" --keeps "$tmp/copy" -- \
  "$hl" align --checkpoint "$ckpt" --data "$tmp/outputs/none.tsv" --out ""
check cache_out_empty 2 "headlab cache: --out: an empty path" --keeps "$tmp/copy" -- \
  "$hl" cache --checkpoint "$ckpt" --out ""
check patch_data_empty 2 "headlab patch: --data: an empty path" --keeps "$tmp/copy" -- \
  "$hl" patch --checkpoint "$ckpt" --data ""
check curves_out_empty 2 "headlab curves: --out: an empty path" --keeps "$tmp/copy" -- \
  "$hl" curves --run-dir "$tmp/copy" --out ""
check train_config_empty 2 "headlab train: --config: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" train --config "" --task copy --steps 1 $small
check decode_run_dir_empty 2 "headlab decode: --run-dir: an empty path" -- "$hl" decode --run-dir "" --input "1 2"
check tokenize_merges_empty 2 "headlab tokenize: --merges: an empty path" -- "$hl" tokenize --merges "" a b
check course_tests_empty 2 "headlab course status: --tests: an empty path" -- "$hl" course status --tests ""
check study_recipe_empty 2 "headlab study report: recipe: an empty path; give a file or directory name$" -- \
  "$hl" study report ""
check heads_text_empty 2 "headlab heads: --text: an empty path" --keeps "$tmp/copy" -- \
  "$hl" heads --checkpoint "$ckpt" --text "" --out "$tmp/outputs/heads"
check ablate_train_config_empty 2 "headlab train would refuse its flags: --config: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" ablate --out "$tmp/outputs/sweep" --grid heads=1 --emit-jobs "$tmp/outputs/jobs.txt" -- --task copy --steps 1 --config ""
check ablate_collect_empty 2 "headlab ablate: --collect: an empty path" --keeps "$tmp/outputs" -- \
  "$hl" ablate --out "$tmp/outputs/sweep" --collect "" ""
