# headlab ablate end to end (a few seconds in all): a tiny real sweep of the copy task, heads=1,2
# x seeds 1,2, two runs at a time; its rerun; the same sweep as a jobs file run by bash and then
# --collect; a sweep interrupted by SIGINT and resumed; and bad input, which must exit with its
# status (2: usage, 1: a run or file that failed, 130: interrupted) and a message naming the problem.
# Included from tests/CMakeLists.txt.
set(HL $<TARGET_FILE:headlab_cli>)
set(ABLATE_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_ablate)
file(MAKE_DIRECTORY ${ABLATE_DIR})
set(ABLATE_GRID "--grid heads=1,2 --seeds 1,2")
set(ABLATE_TRAIN "--task copy --steps 30 --d-model 16 --ff 32 --layers 1 --eval-every 30 --eval-sequences 50")
separate_arguments(ABLATE_GRID_ARGS UNIX_COMMAND "${ABLATE_GRID}")
separate_arguments(ABLATE_TRAIN_ARGS UNIX_COMMAND "${ABLATE_TRAIN}")
# Two cells (heads 1 and 2), each with n = 2 finished runs: the CSV rows start "1,2," and "2,2,".
set(ABLATE_TWO_CELLS "test $(grep -c '^[12],2,' SWEEP/summary.csv) -eq 2 && test $(wc -l < SWEEP/summary.csv) -eq 3")

# ablate_expect(NAME STATUS REGEX COMMAND...): COMMAND exits with STATUS and prints REGEX (stdout or stderr).
# (PASS_REGULAR_EXPRESSION alone ignores the exit status, so the status is echoed and matched too.)
function(ablate_expect name status regex)
  list(JOIN ARGN " " command)
  add_test(NAME ${name}
           COMMAND sh -c "${command} > ${ABLATE_DIR}/${name}.out 2>&1; s=$?; cat ${ABLATE_DIR}/${name}.out; echo \"exit status $s\"")
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}.*exit status ${status}\n")
endfunction()

# The sweep: 4 runs, summary.csv with the field names the trainers write, chart.svg, and the table on stdout.
string(REPLACE SWEEP ${ABLATE_DIR}/sweep two_cells "${ABLATE_TWO_CELLS}")
add_test(NAME cli.ablate_tiny_sweep
         COMMAND sh -c "rm -rf ${ABLATE_DIR}/sweep && \"$0\" ablate --out ${ABLATE_DIR}/sweep ${ABLATE_GRID} -j 2 -- ${ABLATE_TRAIN} && ${two_cells} && test -f ${ABLATE_DIR}/sweep/chart.svg && head -n 1 ${ABLATE_DIR}/sweep/summary.csv && echo 'two cells of n=2'"
                 ${HL})
set_tests_properties(cli.ablate_tiny_sweep PROPERTIES
                     PASS_REGULAR_EXPRESSION "All 4 runs finished.*heads,n,valid_loss_mean,valid_loss_std,valid_accuracy_mean.*two cells of n=2"
                     FIXTURES_SETUP ablate_sweep)
# The same command again runs nothing.
add_test(NAME cli.ablate_rerun_skips_finished
         COMMAND headlab_cli ablate --out ${ABLATE_DIR}/sweep ${ABLATE_GRID_ARGS} -j 2 -- ${ABLATE_TRAIN_ARGS})
set_tests_properties(cli.ablate_rerun_skips_finished PROPERTIES PASS_REGULAR_EXPRESSION "skipping 4 finished runs.*0 to run"
                     FIXTURES_REQUIRED ablate_sweep)
add_test(NAME cli.ablate_collect COMMAND headlab_cli ablate --out ${ABLATE_DIR}/sweep --collect --metric valid_accuracy)
# --metric first in the table; the metrics every run shares (parameters, at a fixed d_model) under it.
set_tests_properties(cli.ablate_collect PROPERTIES PASS_REGULAR_EXPRESSION "\\| heads \\| runs \\| valid_accuracy \\| valid_loss .*The same in every run: parameters = [0-9]+.*All 4 runs finished"
                     FIXTURES_REQUIRED ablate_sweep)
# A different grid in the same directory is refused instead of mixing the results.
ablate_expect(cli.ablate_different_sweep_exits_2 2 "holds a different sweep \\(the grid differs: heads=1,2 there, heads=1,2,4 here\\)"
              ${HL} ablate --out ${ABLATE_DIR}/sweep --grid heads=1,2,4 --seeds 1,2 -- ${ABLATE_TRAIN})
set_tests_properties(cli.ablate_different_sweep_exits_2 PROPERTIES FIXTURES_REQUIRED ablate_sweep)
# One ablate at a time in the sweep directory: a second is refused while the first holds its lock.
set_tests_properties(cli.ablate_tiny_sweep cli.ablate_rerun_skips_finished cli.ablate_collect
                     cli.ablate_different_sweep_exits_2 PROPERTIES RESOURCE_LOCK cli_ablate_sweep_dir)

# --emit-jobs writes one command per run and runs nothing; bash runs them; --collect summarises.
string(REPLACE SWEEP ${ABLATE_DIR}/jobs two_cells "${ABLATE_TWO_CELLS}")
add_test(NAME cli.ablate_emit_jobs_then_collect
         COMMAND sh -c "rm -rf ${ABLATE_DIR}/jobs && \"$0\" ablate --out ${ABLATE_DIR}/jobs ${ABLATE_GRID} --emit-jobs ${ABLATE_DIR}/jobs.sh -- ${ABLATE_TRAIN} && test $(wc -l < ${ABLATE_DIR}/jobs.sh) -eq 4 && test ! -d ${ABLATE_DIR}/jobs/runs && bash ${ABLATE_DIR}/jobs.sh && \"$0\" ablate --out ${ABLATE_DIR}/jobs --collect && ${two_cells} && echo 'jobs ran, collected two cells of n=2'"
                 ${HL})
set_tests_properties(cli.ablate_emit_jobs_then_collect PROPERTIES
                     PASS_REGULAR_EXPRESSION "wrote 4 jobs to .*All 4 runs finished.*jobs ran, collected two cells of n=2")

# SIGINT to the sweep alone: it passes the signal on, the runs save their checkpoints and exit 130,
# the sweep exits 130; the same command again resumes both runs and finishes. The signal is sent once
# both runs have printed their header (their handlers are set by then; a slow start, as under ASan on
# a loaded machine, would otherwise see the signal first: cli.ablate_sigint_while_starting).
set(ABLATE_LONG "--grid heads=1,2 -j 2 -- --steps 100000 --eval-every 100000 --time-budget 3 --d-model 16 --ff 32 --layers 1 --eval-sequences 20")
add_test(NAME cli.ablate_sigint_then_resume
         COMMAND sh -c "rm -rf ${ABLATE_DIR}/sigint; \"$0\" ablate --out ${ABLATE_DIR}/sigint ${ABLATE_LONG} > ${ABLATE_DIR}/sigint.out 2>&1 & pid=$!; for i in $(seq 600); do n=$(cat ${ABLATE_DIR}/sigint/runs/*/log.txt 2>/dev/null | grep -c '^copy task'); test \"$n\" -ge 2 && break; sleep 0.1; done; sleep 0.5; kill -INT $pid; wait $pid; s=$?; cat ${ABLATE_DIR}/sigint.out; test $s -eq 130 && \"$0\" ablate --out ${ABLATE_DIR}/sigint ${ABLATE_LONG} && echo 'resumed after SIGINT'"
                 ${HL})
set_tests_properties(cli.ablate_sigint_then_resume PROPERTIES
                     PASS_REGULAR_EXPRESSION "interrupted.*Run the same command again to resume.*resume heads=1,seed=1.*All 2 runs finished.*resumed after SIGINT")

# SIGINT as soon as the second run is spawned: a run ended by the passed-on signal before it could
# catch it counts as interrupted ("while starting"), not FAILED, and the rerun finishes both.
add_test(NAME cli.ablate_sigint_while_starting
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ablate_sigint_while_starting.py ${HL} ${ABLATE_DIR}/sigint_starting)
set_tests_properties(cli.ablate_sigint_while_starting PROPERTIES PASS_REGULAR_EXPRESSION "STOPPED WHILE STARTING, THEN FINISHED")

# Bad input: usage errors exit 2 before anything runs, naming the flag and the value.
set(BAD_OUT --out ${ABLATE_DIR}/bad)
ablate_expect(cli.ablate_malformed_grid_exits_2 2 "--grid 'heads': expected KEY=V1,V2" ${HL} ablate ${BAD_OUT} --grid heads)
ablate_expect(cli.ablate_empty_grid_value_exits_2 2 "--grid 'heads=1,,2': value 2 is empty"
              ${HL} ablate ${BAD_OUT} --grid heads=1,,2)
ablate_expect(cli.ablate_duplicate_grid_key_exits_2 2 "the key 'heads' is given twice"
              ${HL} ablate ${BAD_OUT} --grid heads=1,2 --grid heads=4)
ablate_expect(cli.ablate_seed_as_grid_key_exits_2 2 "--grid seed=1,2: the seed is not a grid key\; give the seeds with --seeds"
              ${HL} ablate ${BAD_OUT} --grid seed=1,2)
ablate_expect(cli.ablate_grid_key_after_dashes_exits_2 2 "'--heads' after '--' sets --heads, which is also the --grid key 'heads'"
              ${HL} ablate ${BAD_OUT} --grid heads=1,2 -- --heads 2)
ablate_expect(cli.ablate_unknown_grid_key_exits_2 2 "--grid colour: `headlab train` has no flag --colour"
              ${HL} ablate ${BAD_OUT} --grid colour=red,blue)
ablate_expect(cli.ablate_bad_grid_value_exits_2 2 "run heads=3,seed=1: headlab train would refuse its flags"
              ${HL} ablate ${BAD_OUT} --grid heads=1,3 -- --d-model 16)
ablate_expect(cli.ablate_x_not_a_grid_key_exits_2 2 "--x layers: not a grid key" ${HL} ablate ${BAD_OUT} --grid heads=1,2 --x layers)
ablate_expect(cli.ablate_bad_seeds_exits_2 2 "--seeds '1,x': 'x' is not a non-negative integer"
              ${HL} ablate ${BAD_OUT} --grid heads=1,2 --seeds 1,x)
ablate_expect(cli.ablate_collect_without_sweep_exits_1 1 "cannot read '.*nowhere/sweep.json'"
              ${HL} ablate --out ${ABLATE_DIR}/nowhere --collect)
# Runs that fail (here: a corpus that does not exist) are reported with their logs; the sweep exits 1.
ablate_expect(cli.ablate_failed_runs_exit_1 1 "FAILED heads=1,seed=1 \\(exit 1\\).*no_such_file.tsv.*2 of 2 runs failed"
              ${HL} ablate --out ${ABLATE_DIR}/failing --grid heads=1,2 -j 2 -- --task translate
              --train ${ABLATE_DIR}/no_such_file.tsv --valid ${ABLATE_DIR}/no_such_file.tsv --steps 1)
