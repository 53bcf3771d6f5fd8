# Bad input at the command line: every case must end with a clear message and a
# known exit status (2: a usage error, 1: a file or run that cannot be used, 130:
# interrupted), never a crash. Included from tests/CMakeLists.txt.
set(HL $<TARGET_FILE:headlab_cli>)
set(BAD_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_bad_input)
file(MAKE_DIRECTORY ${BAD_DIR})

# expect_exit(NAME STATUS REGEX COMMAND...): the command exits with STATUS and prints REGEX (stdout or stderr).
# (With PASS_REGULAR_EXPRESSION CTest ignores the exit status, so the status is printed and matched too.)
function(expect_exit name status regex)
  list(JOIN ARGN " " command)
  add_test(NAME ${name} COMMAND sh -c "${command} > ${BAD_DIR}/${name}.out 2>&1; s=$?; cat ${BAD_DIR}/${name}.out; echo \"exit status $s\"")
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}.*exit status ${status}\n")
endfunction()

# Counts past 2^64 - 1 are refused, not printed wrapped around (4e27 parameters read 1.3e19).
expect_exit(cli.stats_parameters_times_layers_overflow_exits_2 2 "--layers 1000000000: 4000000004000000000 parameters a layer times 1000000000 layers is more than a 64-bit count holds"
            ${HL} stats --d-model 1000000000 --heads 1 --layers 1000000000)
# A count past 2^53 is printed with the 15 digits a double keeps (it printed 23 digits as exact).
add_test(NAME cli.stats_large_counts_not_printed_as_exact
         COMMAND ${HL} stats --d-model 999999 --heads 1 --seq-len 999999 --layers 999)
set_tests_properties(cli.stats_large_counts_not_printed_as_exact PROPERTIES
                     PASS_REGULAR_EXPRESSION "forward FLOPs \\(T = 999999\\) +1[.][0-9]+e[+]19 +1[.][0-9]+e[+]22"
                     FAIL_REGULAR_EXPRESSION "[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]")
expect_exit(cli.stats_parameters_overflow_exits_2 2 "invalid configuration: an attention of d_model 2147483647.* has more parameters than a 64-bit count holds"
            ${HL} stats --d-model 2147483647 --heads 1 --gate elementwise)

# Out-of-range model options of `train`.
expect_exit(cli.train_zero_heads_exits_2 2 "num_heads" ${HL} train --heads 0 --steps 1)
expect_exit(cli.train_heads_not_dividing_d_model_exits_2 2 "does not divide d_model" ${HL} train --heads 3 --steps 1)
expect_exit(cli.train_kv_heads_not_dividing_heads_exits_2 2 "kv" ${HL} train --heads 4 --kv-heads 3 --steps 1)
expect_exit(cli.train_negative_dropout_exits_2 2 "--dropout" ${HL} train --dropout -0.1 --steps 1)
expect_exit(cli.train_label_smoothing_too_big_exits_2 2 "label-smoothing" ${HL} train --label-smoothing 1.5 --steps 1)
expect_exit(cli.train_unknown_task_exits_2 2 "--task" ${HL} train --task poetry)
expect_exit(cli.translate_task_without_valid_exits_2 2 "--valid" ${HL} train --task translate --train x.tsv)
# An option the task does not read is refused, naming its task (before: --train was ignored by copy).
expect_exit(cli.train_option_of_another_task_refused 2 "--train is for --task translate\; this run's task is copy"
            ${HL} train --task copy --train x.tsv --steps 1)
expect_exit(cli.train_option_of_another_task_refused_induction 2 "--stop-at-perfect is for --task copy\; this run's task is induction"
            ${HL} train --task induction --stop-at-perfect --steps 1)
file(WRITE ${BAD_DIR}/copy_with_beam.ini "[train]\ntask=copy\nbeam=8\n")
expect_exit(cli.train_config_option_of_another_task_refused 2 "copy_with_beam.ini:3: --beam is for --task translate"
            ${HL} train --config ${BAD_DIR}/copy_with_beam.ini --steps 1)
file(WRITE ${BAD_DIR}/copy_with_default_beam.ini "[train]\ntask=copy\nbeam=4\n")
expect_exit(cli.train_config_default_of_another_task_accepted 0 "steps=1"
            ${HL} train --config ${BAD_DIR}/copy_with_default_beam.ini --steps 1 --print-config)

# Data files.
file(WRITE ${BAD_DIR}/malformed.tsv "ein Haus\ta house\nzwei Häuser ohne Tab\n")
file(WRITE ${BAD_DIR}/empty.tsv "")
expect_exit(cli.train_malformed_tsv_names_line 1 "malformed.tsv:2: no tab"
            ${HL} train --task translate --train ${BAD_DIR}/malformed.tsv --valid ${BAD_DIR}/malformed.tsv --steps 1)
expect_exit(cli.train_empty_tsv_exits_1 1 "no sentence pairs"
            ${HL} train --task translate --train ${BAD_DIR}/empty.tsv --valid ${BAD_DIR}/empty.tsv --steps 1)
expect_exit(cli.train_missing_tsv_exits_1 1 "no_such_file.tsv"
            ${HL} train --task translate --train ${BAD_DIR}/no_such_file.tsv --valid ${BAD_DIR}/empty.tsv --steps 1)

# Checkpoints: a truncated copy of a real one, and a file that is not a checkpoint at all.
add_test(NAME cli.eval_truncated_checkpoint_exits_1
         COMMAND sh -c "mkdir -p ${BAD_DIR}/truncated && head -c 3000 ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run/checkpoint.safetensors > ${BAD_DIR}/truncated/checkpoint.safetensors && ${HL} eval --run-dir ${BAD_DIR}/truncated; test $? -eq 1")
set_tests_properties(cli.eval_truncated_checkpoint_exits_1 PROPERTIES FIXTURES_REQUIRED tiny_run
                     PASS_REGULAR_EXPRESSION "headlab: error: .*checkpoint.safetensors")
add_test(NAME cli.eval_text_file_as_checkpoint_exits_1
         COMMAND sh -c "mkdir -p ${BAD_DIR}/text && echo 'not a checkpoint' > ${BAD_DIR}/text/checkpoint.safetensors && ${HL} eval --run-dir ${BAD_DIR}/text; test $? -eq 1")
set_tests_properties(cli.eval_text_file_as_checkpoint_exits_1 PROPERTIES PASS_REGULAR_EXPRESSION "headlab: error: ")
add_test(NAME cli.translate_with_copy_checkpoint_exits_2
         COMMAND sh -c "echo 'ein Haus' | ${HL} translate --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run/checkpoint.safetensors; test $? -eq 2")
set_tests_properties(cli.translate_with_copy_checkpoint_exits_2 PROPERTIES FIXTURES_REQUIRED tiny_run
                     PASS_REGULAR_EXPRESSION "not a translation model")

# SIGINT during training: the step finishes, the checkpoint is saved, exit 130; --resume continues.
add_test(NAME cli.train_sigint_saves_and_resumes
         COMMAND sh -c "rm -rf ${BAD_DIR}/sigint; ${HL} train --steps 100000 --eval-every 100000 --progress none --run-dir ${BAD_DIR}/sigint & pid=$!; sleep 3; kill -INT $pid; wait $pid; s=$?; test $s -eq 130 && test -f ${BAD_DIR}/sigint/checkpoint.safetensors && ${HL} train --steps 100000 --eval-every 100000 --progress none --run-dir ${BAD_DIR}/sigint --resume --time-budget 1")
set_tests_properties(cli.train_sigint_saves_and_resumes PROPERTIES PASS_REGULAR_EXPRESSION "resumed from .* at step [1-9]")

# Numbers in the option's own terms (headlab/core/user_input.hpp): whole numbers within a stated
# range (no sign, no exponent, no wrap or saturation), finite reals, booleans true/false/1/0; for
# every subcommand. Each was accepted, wrapped or answered with CLI11's 309-digit bounds before.
expect_exit(cli.train_negative_steps_in_own_terms 2 "--steps: must be a whole number from 0 to 1000000000, got '-5'"
            ${HL} train --steps -5)
expect_exit(cli.train_steps_exponent_refused 2 "--steps: must be a whole number from 0 to 1000000000, got '1e20'"
            ${HL} train --steps 1e20)
expect_exit(cli.train_negative_seed_refused 2 "--seed: must be a whole number from 0 to 18446744073709551615, got '-1'"
            ${HL} train --seed -1 --steps 1)
expect_exit(cli.train_rope_2_refused 2 "--rope: must be true, false, 1 or 0, got '2'" ${HL} train --rope=2 --steps 1)
expect_exit(cli.train_nan_lr_factor_refused 2 "--lr-factor: must be a finite number, got 'nan'"
            ${HL} train --lr-factor nan --steps 1)
expect_exit(cli.train_induction_length_2_refused_up_front 2 "--length: must be from 3 to 100000 for task induction"
            ${HL} train --task induction --length 2 --steps 1)
expect_exit(cli.mlp_demo_negative_steps_in_own_terms 2 "--steps: must be a whole number from 2 to 1000000, got '-5'"
            ${HL} mlp-demo --steps -5)
# One step cannot show the loss falling: it was accepted, then failed every time (exit 1).
expect_exit(cli.mlp_demo_one_step_exits_2 2 "--steps: must be a whole number from 2 to 1000000, got '1'"
            ${HL} mlp-demo --steps 1)
expect_exit(cli.heads_negative_seed_refused 2 "--seed: must be a whole number from 0 to 18446744073709551615"
            ${HL} heads --checkpoint x.safetensors --seed -1)
expect_exit(cli.eval_sequences_exponent_refused 2 "--sequences: must be a whole number from 1 to 1000000000, got '1e20'"
            ${HL} eval --run-dir x --sequences 1e20)
expect_exit(cli.prune_nan_step_refused 2 "--step: must be a number from 0.001 to 1, got 'nan'"
            ${HL} prune --checkpoint x.safetensors --step nan)
expect_exit(cli.translate_nan_length_penalty_refused 2 "--length-penalty: must be a number from 0 to 1000, got 'nan'"
            ${HL} translate --checkpoint x.safetensors --length-penalty nan)
expect_exit(cli.stats_exponent_refused 2 "--d-model: must be a whole number" ${HL} stats --d-model 1e3)

# A hostile value is quoted clipped (200 bytes and its size), in our messages and in CLI11's own.
string(REPEAT "9" 300 nines)
expect_exit(cli.train_huge_value_clipped 2 "--steps: must be a whole number .*'99999.*\\.\\.\\.' \\(100000 bytes\\)"
            ${HL} train --steps "`head -c 100000 /dev/zero | tr -c 9 9`")
set_tests_properties(cli.train_huge_value_clipped PROPERTIES FAIL_REGULAR_EXPRESSION "${nines}")
expect_exit(cli.unexpected_huge_argument_clipped 2 "unexpected argument: .*\\.\\.\\.' \\(100000 bytes\\)"
            ${HL} mlp-demo "`head -c 100000 /dev/zero | tr -c 9 9`")
set_tests_properties(cli.unexpected_huge_argument_clipped PROPERTIES FAIL_REGULAR_EXPRESSION "${nines}")

# Config files read strictly (headlab/train/config_file.hpp): FILE:LINE: why, exit 2.
set(CFG ${BAD_DIR}/config)
file(MAKE_DIRECTORY ${CFG})
string(ASCII 239 187 191 bom)
file(WRITE ${CFG}/bom.ini "${bom}[train]\nsteps=50\n")
file(WRITE ${CFG}/outside.ini "steps=50\n[train]\nheads=2\n")
file(WRITE ${CFG}/misspelt.ini "[train]\nstpes=50\n")
file(WRITE ${CFG}/field_name.ini "[train]\nd_model=32\n")
file(WRITE ${CFG}/duplicate.ini "[train]\nsteps=50\nheads=2\nsteps=60\n")
file(WRITE ${CFG}/section.ini "[train]\nsteps=50\n[eval]\nsequences=5\n")
file(WRITE ${CFG}/bool.ini "# hand-written\n[train]\nrope=2\n")
file(WRITE ${CFG}/steps50.ini "[train]\nsteps = 50\nheads = 2\n")
expect_exit(cli.config_bom_is_skipped 0 "\nsteps=50\n" ${HL} train --config ${CFG}/bom.ini --print-config)
# NAME|FILE|what the message says: each file above refused naming its line.
foreach(case "key_outside_train_refused|outside.ini|outside.ini:1: 'steps' stands before the \\[train\\] section"
             "unknown_key_suggests|misspelt.ini|misspelt.ini:2: unknown key 'stpes' \\(did you mean steps\\?\\)"
             "field_name_suggests_flag|field_name.ini|field_name.ini:2: unknown key 'd_model' \\(did you mean d-model\\?\\)"
             "duplicate_key_refused|duplicate.ini|duplicate.ini:4: duplicate key 'steps' \\(first set on line 2\\)"
             "other_section_refused|section.ini|section.ini:3: unknown section '\\[eval\\]'"
             "bad_boolean_names_line|bool.ini|bool.ini:3: rope: must be true, false, 1 or 0, got '2'")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 file)
  list(GET parts 2 message)
  expect_exit(cli.config_${name} 2 "${message}" ${HL} train --config ${CFG}/${file} --print-config)
endforeach()
expect_exit(cli.config_binary_file_refused 2 "binary.ini:1: a NUL byte"
            "head -c 64 /dev/zero > ${CFG}/binary.ini && " ${HL} train --config ${CFG}/binary.ini --print-config)
expect_exit(cli.config_directory_refused 2 "is a directory" ${HL} train --config ${CFG} --print-config)
expect_exit(cli.config_fifo_refused_without_blocking 2 "not a regular file"
            "rm -f ${CFG}/fifo.ini && mkfifo ${CFG}/fifo.ini && timeout 20" ${HL} train --config ${CFG}/fifo.ini --print-config)
expect_exit(cli.config_flag_wins_over_file 0 "\nheads=2\n.*\nsteps=7\n"
            ${HL} train --config ${CFG}/steps50.ini --steps 7 --print-config)

# CLI11's words in the user's terms, after the command's name (before: "--heads: At Most 1 required
# but received 2"; "This should be caught in your main function, see examples"; extras last first).
expect_exit(cli.flag_given_twice 2 "^headlab stats: --heads: given 2 times\\; give it once" ${HL} stats --heads 2 --heads 4)
expect_exit(cli.unexpected_arguments_in_order 2 "^headlab study report: unexpected arguments: '--bogus' '1'"
            ${HL} study report x.ini --bogus 1)
expect_exit(cli.ablate_train_help 2 "train would refuse its flags: --help prints the help and runs nothing"
            ${HL} ablate --out ${BAD_DIR}/ablate_help --emit-jobs ${BAD_DIR}/ablate_help.txt --grid heads=1,2 -- --task copy --help)
expect_exit(cli.ablate_train_threads 2 "unexpected arguments: '--threads' '2' \\(--threads and --flush-denormals are headlab's own flags"
            ${HL} ablate --out ${BAD_DIR}/ablate_threads --emit-jobs ${BAD_DIR}/ablate_threads.txt --grid heads=1,2 -- --task copy --threads 2)
# A sweep whose runs would train nothing: --print-config after --, and --seeds '' (it ran seed 1).
expect_exit(cli.ablate_print_config 2 "'--print-config' after '--': it prints the options and trains nothing"
            ${HL} ablate --out ${BAD_DIR}/ablate_print --grid heads=1,2 -- --task copy --print-config)
expect_exit(cli.ablate_empty_seeds 2 "--seeds: empty: name the seeds" ${HL} ablate --out ${BAD_DIR}/ablate_seeds --grid heads=1,2 --seeds "''" -- --task copy)
# An unexpected argument holding a space stays one word ("'b' 'a'" when rebuilt from CLI11's text).
expect_exit(cli.unexpected_argument_with_space 2 "^headlab stats: unexpected arguments: 'x' 'foo bar' 'y'" ${HL} stats x "'foo bar'" y)
