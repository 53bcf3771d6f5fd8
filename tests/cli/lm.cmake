# headlab train --task lm on the shipped text: a tiny run, then eval --data on a text file and
# generate --prompt TEXT from its checkpoint (characters in, characters out). Refusals: no --text,
# an unknown character in the prompt.
set(LM_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_run)
set(LM_TEXT ${PROJECT_SOURCE_DIR}/datasets/kjv/kjv.txt)
add_test(NAME cli.lm_train_tiny
         COMMAND $<TARGET_FILE:headlab_cli> train --task lm --text ${LM_TEXT} --d-model 32 --heads 2 --ff 64 --layers 1
                 --length 16 --batch 8 --steps 20 --warmup 5 --eval-every 20 --eval-sequences 8 --progress none
                 --run-dir ${LM_RUN} --overwrite)
set_tests_properties(cli.lm_train_tiny PROPERTIES FIXTURES_SETUP lm_run
                     PASS_REGULAR_EXPRESSION "trained 20 steps in [^\n]*bits/char")
# eval --data on a text: the first verses of Genesis (every character known to the model)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt
     "In the beginning God created the heaven and the earth.\nAnd the earth was without form, and void.\n")
add_test(NAME cli.lm_eval_data
         COMMAND $<TARGET_FILE:headlab_cli> eval --run-dir ${LM_RUN} --data ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt --json)
set_tests_properties(cli.lm_eval_data PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "\"task\":\"lm\".*\"tokenizer\":\"char\",\"tokens\":97,\"unknown_tokens\":0,\"scored_tokens\":96,.*\"bits_per_char\":[0-9]")
# The same text after a UTF-8 byte-order mark: the same 97 tokens (before: the mark was read as a character).
add_test(NAME cli.lm_eval_data_byte_order_mark
         COMMAND sh -c "{ printf '\\357\\273\\277'; cat \"$1\"; } > \"$1.bom\" && \"$0\" eval --run-dir \"$2\" --data \"$1.bom\" --json"
                 $<TARGET_FILE:headlab_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt ${LM_RUN})
set_tests_properties(cli.lm_eval_data_byte_order_mark PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "\"tokens\":97,\"unknown_tokens\":0,")
add_test(NAME cli.lm_generate_prompt
         COMMAND $<TARGET_FILE:headlab_cli> generate --checkpoint ${LM_RUN}/checkpoint.safetensors --prompt "And God said"
                 --max-new-tokens 12 --temperature 0)
set_tests_properties(cli.lm_generate_prompt PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "^And God said[^\n]+\n$")
add_test(NAME cli.lm_generate_unknown_character_exits_2
         COMMAND sh -c "\"$0\" generate --checkpoint \"$1\" --prompt 'Zebra ✓' 2>&1; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${LM_RUN}/checkpoint.safetensors)
set_tests_properties(cli.lm_generate_unknown_character_exits_2 PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "not in the model's vocabulary[^\n]*\nexit status 2\n")
# prune has no metric for the lm task: a clear refusal before any output (it once read a missing --valid).
add_test(NAME cli.lm_prune_refused_exits_2
         COMMAND sh -c "\"$0\" prune --checkpoint \"$1\" --out \"$2\" 2>&1; echo \"exit status $?\"; test ! -e \"$2\" && echo no-output"
                 $<TARGET_FILE:headlab_cli> ${LM_RUN}/checkpoint.safetensors ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_prune)
set_tests_properties(cli.lm_prune_refused_exits_2 PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "headlab prune: pruning measures a copy, translate, induction or recall model\; the lm task has no pruning metric[^\n]*\nexit status 2\nno-output\n")
add_test(NAME cli.lm_without_text_exits_2
         COMMAND sh -c "\"$0\" train --task lm --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.lm_without_text_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "--text: task lm needs a text to learn: --text FILE \\(UTF-8\\)\nexit status 2\n")
# heads --text: the probe is windows of a text in the model's own characters, with the delimiter
# score (space, newline) per head; refused on a checkpoint that is not an lm, with --block, with a
# half of the repeated-tokens probe, and for a text shorter than one window.
add_test(NAME cli.lm_heads_text_probe
         COMMAND sh -c "\"$0\" heads --checkpoint \"$1/checkpoint.safetensors\" --text \"$2\" --probe-sequences 8 --out \"$1/heads_text\" --overwrite &&
                        head -1 \"$1/heads_text/heads.csv\" && tail -1 \"$1/heads_text/heads.csv\""
                 $<TARGET_FILE:headlab_cli> ${LM_RUN} ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt)
set_tests_properties(cli.lm_heads_text_probe PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "on 8 windows of 16 tokens of [^\n]*cli_lm_eval.txt\n.*  delim   role\n.*,max_residual,delimiter,delimiter_uniform,gate_queries,previous_token_uniform,induction_uniform\nlayers.0.self_attn,self,0,1,[^\n]*,,[^\n]*,0\\.[0-9]+,0\\.[0-9]+,,0\\.[0-9]+,\n$")
expect_exit(cli.lm_heads_text_probe_with_block_exits_2 2 "--block excludes --text|--text excludes --block"
            $<TARGET_FILE:headlab_cli> heads --checkpoint ${LM_RUN}/checkpoint.safetensors --text ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt --block 4)
expect_exit(cli.lm_heads_text_probe_halves_exit_2 2 "the halves are those of the repeated-tokens probe"
            $<TARGET_FILE:headlab_cli> heads --checkpoint ${LM_RUN}/checkpoint.safetensors --text ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt --sink-queries first-half)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_short.txt "And God said\n")
expect_exit(cli.lm_heads_text_probe_short_text_exits_2 2 "--text: 13 tokens, fewer than one window of the model's 16"
            $<TARGET_FILE:headlab_cli> heads --checkpoint ${LM_RUN}/checkpoint.safetensors --text ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_short.txt)
set_tests_properties(cli.lm_heads_text_probe_with_block_exits_2 cli.lm_heads_text_probe_halves_exit_2
                     cli.lm_heads_text_probe_short_text_exits_2 PROPERTIES FIXTURES_REQUIRED lm_run)
expect_exit(cli.heads_text_probe_on_induction_exits_2 2 "a text probe is for language-model checkpoints"
            $<TARGET_FILE:headlab_cli> heads --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_head_lab/induction/checkpoint.safetensors --text ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_eval.txt)
set_tests_properties(cli.heads_text_probe_on_induction_exits_2 PROPERTIES FIXTURES_REQUIRED lab_induction)
# A --text that is not UTF-8 or not a regular file: exit 1 naming the file, nothing written.
add_test(NAME cli.lm_heads_text_probe_bad_utf8_exits_1
         COMMAND sh -c "printf 'abc\\377\\376 and a text long enough for a window of sixteen\\n' > \"$2\" &&
                        \"$0\" heads --checkpoint \"$1/checkpoint.safetensors\" --text \"$2\" --out \"$1/heads_never\"; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${LM_RUN} ${CMAKE_CURRENT_BINARY_DIR}/cli_lm_bad_utf8.txt)
set_tests_properties(cli.lm_heads_text_probe_bad_utf8_exits_1 PROPERTIES
                     PASS_REGULAR_EXPRESSION "heads --text: [^\n]*cli_lm_bad_utf8.txt: not valid UTF-8 at byte 3\nexit status 1\n")
expect_exit(cli.lm_heads_text_probe_directory_exits_1 1 "heads --text: [^\n]*: not a regular file"
            $<TARGET_FILE:headlab_cli> heads --checkpoint ${LM_RUN}/checkpoint.safetensors --text ${CMAKE_CURRENT_BINARY_DIR}
            --out ${LM_RUN}/heads_never)
set_tests_properties(cli.lm_heads_text_probe_bad_utf8_exits_1 cli.lm_heads_text_probe_directory_exits_1
                     PROPERTIES FIXTURES_REQUIRED lm_run)
