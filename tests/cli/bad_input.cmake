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

# Out-of-range model options of `train`.
expect_exit(cli.train_zero_heads_exits_2 2 "num_heads" ${HL} train --heads 0 --steps 1)
expect_exit(cli.train_heads_not_dividing_d_model_exits_2 2 "does not divide d_model" ${HL} train --heads 3 --steps 1)
expect_exit(cli.train_kv_heads_not_dividing_heads_exits_2 2 "kv" ${HL} train --heads 4 --kv-heads 3 --steps 1)
expect_exit(cli.train_negative_dropout_exits_2 2 "--dropout" ${HL} train --dropout -0.1 --steps 1)
expect_exit(cli.train_label_smoothing_too_big_exits_2 2 "label-smoothing" ${HL} train --label-smoothing 1.5 --steps 1)
expect_exit(cli.train_unknown_task_exits_2 2 "--task" ${HL} train --task poetry)
expect_exit(cli.translate_task_without_valid_exits_2 2 "--valid" ${HL} train --task translate --train x.tsv)

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
