# `headlab generate` end to end on a tiny induction checkpoint trained here, and its bad input.
# Uses expect_exit from bad_input.cmake and the tiny copy run of tests/CMakeLists.txt.
set(HL $<TARGET_FILE:headlab_cli>)
set(GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_generate)
set(GEN_CKPT ${GEN_DIR}/induction/checkpoint.safetensors)

# vocab 16, length 4: the model has max_len 2 * 4 + 1 = 9 positions.
add_test(NAME cli.train_induction_for_generate
         COMMAND headlab_cli train --task induction --vocab 16 --length 4 --d-model 16 --heads 2 --steps 20
                 --eval-every 20 --eval-sequences 8 --progress none --overwrite --run-dir ${GEN_DIR}/induction)
set_tests_properties(cli.train_induction_for_generate PROPERTIES PASS_REGULAR_EXPRESSION "trained 20 steps"
                     FIXTURES_SETUP generate_induction)

# The output is the prompt, then the 12 new ids, on one line (3 + 12 tokens pass the 9 positions).
string(REPEAT " 1?[0-9]" 12 twelve_ids)  # (CMake regexes have no {12} and at most 10 groups)
add_test(NAME cli.generate_greedy_format
         COMMAND headlab_cli generate --checkpoint ${GEN_CKPT} --prompt-ids "1 5 7" --max-new-tokens 12 --temperature 0)
set_tests_properties(cli.generate_greedy_format PROPERTIES PASS_REGULAR_EXPRESSION "^1 5 7${twelve_ids}\n$")
# --seed: the same seed prints the same tokens, another seed others; top-k 1 at temperature 1 is greedy.
add_test(NAME cli.generate_seed_determinism
         COMMAND sh -c "a=$(\"$0\" generate --checkpoint \"$1\" --prompt-ids '1 3' --max-new-tokens 40 --seed 4) &&
                        b=$(\"$0\" generate --checkpoint \"$1\" --prompt-ids '1 3' --max-new-tokens 40 --seed 4) &&
                        c=$(\"$0\" generate --checkpoint \"$1\" --prompt-ids '1 3' --max-new-tokens 40 --seed 5) &&
                        g=$(\"$0\" generate --checkpoint \"$1\" --prompt-ids '1 3' --max-new-tokens 40 --temperature 0) &&
                        k=$(\"$0\" generate --checkpoint \"$1\" --prompt-ids '1 3' --max-new-tokens 40 --top-k 1 --seed 9) &&
                        test \"$a\" = \"$b\" && echo SAME-SEED-SAME && test \"$a\" != \"$c\" && echo OTHER-SEED-OTHER &&
                        test \"$g\" = \"$k\" && echo TOP-K-1-GREEDY"
                 ${HL} ${GEN_CKPT})
set_tests_properties(cli.generate_seed_determinism PROPERTIES
                     PASS_REGULAR_EXPRESSION "SAME-SEED-SAME\nOTHER-SEED-OTHER\nTOP-K-1-GREEDY\n")
# Streaming: each token reaches a reader as it is drawn, not at exit (tests/cli/generate_streams.py).
add_test(NAME cli.generate_streams_tokens
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/generate_streams.py ${HL} ${GEN_CKPT})
set_tests_properties(cli.generate_seed_determinism cli.generate_greedy_format cli.generate_streams_tokens
                     PROPERTIES FIXTURES_REQUIRED generate_induction ENVIRONMENT "HEADLAB_THREADS=1")

# Refused before any work (2: a usage error; 1: a file that cannot be used).
set(GEN ${HL} generate --checkpoint ${GEN_CKPT})
expect_exit(cli.generate_text_prompt_without_vocabulary 2
            "checkpoint '.*induction/checkpoint.safetensors' \\(task induction\\) holds no text vocabulary\; give --prompt-ids"
            ${GEN} --prompt "'hello'")
expect_exit(cli.generate_encoder_decoder_refused 2 "'copy' checkpoint .*generate is for decoder-only checkpoints\; use decode or translate"
            ${HL} generate --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run/checkpoint.safetensors --prompt-ids 1)
expect_exit(cli.generate_id_outside_vocabulary 2 "--prompt-ids: '16' is not a token id in \\[0, 16\\)" ${GEN} --prompt-ids "'1 16'")
expect_exit(cli.generate_id_not_a_number 2 "--prompt-ids: '-3' is not a token id" ${GEN} --prompt-ids "'1 -3'")
expect_exit(cli.generate_empty_prompt 2 "--prompt-ids: give at least one token id" ${GEN} --prompt-ids "''")
expect_exit(cli.generate_no_prompt 2 "give --prompt-ids" ${GEN})
expect_exit(cli.generate_both_prompts 2 "excludes" ${GEN} --prompt-ids 1 --prompt x)
expect_exit(cli.generate_negative_temperature 2 "--temperature: must be a number from 0" ${GEN} --prompt-ids 1 --temperature -1)
expect_exit(cli.generate_nan_temperature 2 "--temperature" ${GEN} --prompt-ids 1 --temperature nan)
expect_exit(cli.generate_top_p_0 2 "--top-p: must be a number in \\(0, 1\\], got '0'" ${GEN} --prompt-ids 1 --top-p 0)
expect_exit(cli.generate_top_p_above_1 2 "--top-p: must be a number in \\(0, 1\\]" ${GEN} --prompt-ids 1 --top-p 1.5)
expect_exit(cli.generate_top_k_negative 2 "--top-k" ${GEN} --prompt-ids 1 --top-k -1)
expect_exit(cli.generate_zero_new_tokens 2 "--max-new-tokens: must be a whole number from 1 to 100000" ${GEN} --prompt-ids 1 --max-new-tokens 0)
expect_exit(cli.generate_too_many_new_tokens 2 "--max-new-tokens" ${GEN} --prompt-ids 1 --max-new-tokens 100001)
expect_exit(cli.generate_missing_checkpoint 1 "no-such.safetensors" ${HL} generate --checkpoint ${GEN_DIR}/no-such.safetensors --prompt-ids 1)
set_tests_properties(cli.generate_text_prompt_without_vocabulary cli.generate_id_outside_vocabulary
                     cli.generate_id_not_a_number cli.generate_empty_prompt
                     PROPERTIES FIXTURES_REQUIRED generate_induction)
set_tests_properties(cli.generate_encoder_decoder_refused PROPERTIES FIXTURES_REQUIRED tiny_run)
