# tests/robustness/hostile/10_train_values.sh: train: numbers, booleans and values out of range.
# Sourced by tests/robustness/hostile_inputs.sh, in the order of the file names, after its fixtures:
# it uses check, craft, $hl, $tmp, $repo, $ckpt, $small and what earlier parts made.
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
