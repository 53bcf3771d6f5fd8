# tests/robustness/hostile/60_ablate.sh: ablate: jobs for other schedulers and runs collected from elsewhere.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
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
