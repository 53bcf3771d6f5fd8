# `headlab eval --data FILE` on a translation checkpoint (issue 18, item 4): it gives the trainer's
# own numbers for the same weights (eval_matches_trainer.cmake), and refuses, before scoring anything,
# a file it cannot use (naming it, and the line of a malformed pair) and flags the checkpoint's task
# does not read. Uses expect_exit and BAD_DIR of bad_input.cmake and the toy run of translate.cmake.
set(HL $<TARGET_FILE:headlab_cli>)
set(EVAL_BEST ${TOY_RUN}/best.safetensors)
set(EVAL_COPY ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run/checkpoint.safetensors)

add_test(NAME cli.eval_data_matches_trainer
         COMMAND ${CMAKE_COMMAND} -DHL=${HL} -DTOY=${TOY} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_eval_matches_trainer
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/eval_matches_trainer.cmake)
set_tests_properties(cli.eval_data_matches_trainer PROPERTIES PASS_REGULAR_EXPRESSION "EVAL-MATCHES-TRAINER"
                     ENVIRONMENT "HEADLAB_THREADS=1")

# The human lines (no ';' in the pattern: CTest would split it into alternatives): sentences, tokens, unknown-token rates, loss, BLEU. Two words the toy vocabularies
# lack (one per side) among 4 source and 5 target tokens: 25% and 20%; the loss counts 5 + 2 </s>.
file(WRITE ${BAD_DIR}/eval_unknown.tsv "w1 zebra w2\tv1 v2 .\nw3\tquagga .\n")
expect_exit(cli.eval_data_human_lines 0
            "on [^\n]*eval_unknown.tsv: 2 sentences, 4 source / 5 target tokens. unknown to the vocabularies: 25.00% source, 20.00% target\nloss [0-9.]+ \\(mean NLL per target token, </s> included, no label smoothing. 7 tokens\\)\nBLEU [0-9.]+ \\(greedy. precisions"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${BAD_DIR}/eval_unknown.tsv)
set_tests_properties(cli.eval_data_human_lines PROPERTIES FIXTURES_REQUIRED toy_translate)
expect_exit(cli.eval_data_json 0 "^\\{\"checkpoint\":\"[^\"]*best.safetensors\",\"task\":\"translate\",\"step\":[0-9]+,.*\"source_unknown_rate\":0.25,.*\"bleu\":[-0-9.e]+,[^\n]*\\}\n"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${BAD_DIR}/eval_unknown.tsv --json)
set_tests_properties(cli.eval_data_json PROPERTIES FIXTURES_REQUIRED toy_translate)

# Refused: the file, its lines, and flags that do not go together.
expect_exit(cli.eval_data_missing_file_exits_1 1 "no_such_pairs.tsv"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${BAD_DIR}/no_such_pairs.tsv)
expect_exit(cli.eval_data_malformed_line_exits_1 1 "malformed.tsv:2: no tab"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${BAD_DIR}/malformed.tsv)
file(WRITE ${BAD_DIR}/eval_too_long.tsv "w1 w2\tv1 v2\nw1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1\tv1\n")
expect_exit(cli.eval_data_too_long_pair_exits_1 1 "eval_too_long.tsv:2: the pair is longer than --max-len"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${BAD_DIR}/eval_too_long.tsv)
expect_exit(cli.eval_data_beam_0_exits_2 2 "--beam: must be a whole number from 1 to 1000"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${TOY}/toy_valid.tsv --beam 0)
expect_exit(cli.eval_translate_without_data_exits_2 2 "'translate' checkpoint: give --data FILE.tsv"
            ${HL} eval --checkpoint ${EVAL_BEST})
expect_exit(cli.eval_translate_sequences_exits_2 2 "--sequences is not read for .*'translate' checkpoint"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${TOY}/toy_valid.tsv --sequences 5)
expect_exit(cli.eval_length_penalty_greedy_exits_2 2 "--length-penalty is not read .*it is for beam search"
            ${HL} eval --checkpoint ${EVAL_BEST} --data ${TOY}/toy_valid.tsv --length-penalty 1.0)
expect_exit(cli.eval_copy_with_data_exits_2 2 "--data is not read for [^\n]*, a 'copy' checkpoint: copy, induction and recall"
            ${HL} eval --checkpoint ${EVAL_COPY} --data ${TOY}/toy_valid.tsv)
expect_exit(cli.eval_copy_with_beam_exits_2 2 "--beam is not read for [^\n]*, a 'copy' checkpoint"
            ${HL} eval --checkpoint ${EVAL_COPY} --beam 2)
expect_exit(cli.eval_run_dir_and_checkpoint_exits_2 2 "excludes"
            ${HL} eval --checkpoint ${EVAL_COPY} --run-dir ${TOY_RUN})
expect_exit(cli.eval_no_checkpoint_exits_2 2 "give --run-dir DIR .* or --checkpoint FILE" ${HL} eval)
set_tests_properties(cli.eval_data_missing_file_exits_1 cli.eval_data_malformed_line_exits_1
                     cli.eval_data_too_long_pair_exits_1 cli.eval_data_beam_0_exits_2
                     cli.eval_translate_without_data_exits_2 cli.eval_translate_sequences_exits_2
                     cli.eval_length_penalty_greedy_exits_2 PROPERTIES FIXTURES_REQUIRED toy_translate)
set_tests_properties(cli.eval_copy_with_data_exits_2 cli.eval_copy_with_beam_exits_2 PROPERTIES FIXTURES_REQUIRED tiny_run)

# copy and induction: held-out sequences, also as JSON (--checkpoint works as --run-dir does).
expect_exit(cli.eval_copy_json 0 "^\\{\"checkpoint\":[^\n]*\"task\":\"copy\",[^\n]*\"sequences\":8,\"exact_match\":[0-9.e-]+,\"token_accuracy\":"
            ${HL} eval --checkpoint ${EVAL_COPY} --sequences 8 --json)
set_tests_properties(cli.eval_copy_json PROPERTIES FIXTURES_REQUIRED tiny_run)
expect_exit(cli.eval_induction_held_out 0 "\\(induction, step 120\\), 64 held-out sequences: loss [0-9.]+, first half [0-9.]+, repeated half [0-9.]+ \\(accuracy"
            ${HL} eval --run-dir ${LAB}/induction --sequences 64)
set_tests_properties(cli.eval_induction_held_out PROPERTIES FIXTURES_REQUIRED lab_induction)
