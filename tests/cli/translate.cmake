# The translation commands end to end on a toy corpus (source word wK -> target word vK):
# train writes best.safetensors and summary.json; translate reads stdin; bleu scores the test output.
set(TOY ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate)
set(TOY_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run)
add_test(NAME cli.train_translate_toy
         COMMAND headlab_cli train --task translate --train ${TOY}/toy_train.tsv --valid ${TOY}/toy_valid.tsv
                 --test ${TOY}/toy_valid.tsv --d-model 32 --heads 4 --ff 64 --layers 1 --max-tokens 256 --steps 30
                 --eval-every 15 --progress none --overwrite --run-dir ${TOY_RUN}
                 --tokenizer word --pre-ln=false --dropout 0.1 --lr-factor 1)  # words: the unknown-word cases below
set_tests_properties(cli.train_translate_toy PROPERTIES PASS_REGULAR_EXPRESSION "trained 30 steps.*test BLEU greedy"
                     FIXTURES_SETUP toy_translate)
add_test(NAME cli.translate_stdin
         COMMAND sh -c "printf 'w1 w2 w3\\nw4 w5 w6 w7\\n' | \"$0\" translate --checkpoint ${TOY_RUN}/best.safetensors --beam 3 | wc -l"
                 $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.translate_stdin PROPERTIES PASS_REGULAR_EXPRESSION "^2" FIXTURES_REQUIRED toy_translate)
add_test(NAME cli.bleu_of_translate_run
         COMMAND headlab_cli bleu --ref ${TOY_RUN}/test.ref.txt --hyp ${TOY_RUN}/test.greedy.txt)
set_tests_properties(cli.bleu_of_translate_run PROPERTIES PASS_REGULAR_EXPRESSION "BLEU = [0-9]+\\.[0-9]+"
                     FIXTURES_REQUIRED toy_translate)

# Inputs said out loud (issue 18, item 7). An empty line translates to an empty line (before: the
# model's output for a lone </s>, "at the police" on the real corpus); a word the model never saw
# is named on stderr and read as <unk>; --strict refuses it before translating anything. (The toy
# model happens to say nothing for an empty line either way: the doctest "translate_sentences: a
# sentence without a token ..." is the check that fails on the old behaviour.)
add_test(NAME cli.translate_empty_line_gives_empty_line
         COMMAND sh -c "printf 'w1 w2\\n\\n   \\nw3\\n' | \"$0\" translate --checkpoint ${TOY_RUN}/best.safetensors | sed -n '2,3p' | tr -d '\\n' | wc -c"
                 $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.translate_empty_line_gives_empty_line PROPERTIES PASS_REGULAR_EXPRESSION "^0\n"
                     FIXTURES_REQUIRED toy_translate)
add_test(NAME cli.translate_names_unknown_words
         COMMAND sh -c "printf 'w1 zebra w2 qq\\n' | \"$0\" translate --checkpoint ${TOY_RUN}/best.safetensors 2>&1 >/dev/null; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.translate_names_unknown_words PROPERTIES
                     PASS_REGULAR_EXPRESSION "stdin line 1: unknown, read as <unk>: 'zebra', 'qq'\nexit status 0\n"
                     FIXTURES_REQUIRED toy_translate)
add_test(NAME cli.translate_strict_refuses_unknown_words
         COMMAND sh -c "printf 'w1 w2\\nw3 zebra\\n' | \"$0\" translate --strict --checkpoint ${TOY_RUN}/best.safetensors; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.translate_strict_refuses_unknown_words PROPERTIES
                     PASS_REGULAR_EXPRESSION "stdin line 2: not in the model's source vocabulary: 'zebra' \\(--strict.*exit status 1\n"
                     FAIL_REGULAR_EXPRESSION "^v" FIXTURES_REQUIRED toy_translate)
