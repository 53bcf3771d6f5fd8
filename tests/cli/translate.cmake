# The translation commands end to end on a toy corpus (source word wK -> target word vK):
# train writes best.safetensors and summary.json; translate reads stdin; bleu scores the test output.
set(TOY ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate)
set(TOY_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run)
add_test(NAME cli.train_translate_toy
         COMMAND headlab_cli train --task translate --train ${TOY}/toy_train.tsv --valid ${TOY}/toy_valid.tsv
                 --test ${TOY}/toy_valid.tsv --d-model 32 --heads 4 --ff 64 --layers 1 --max-tokens 256 --steps 30
                 --eval-every 15 --progress none --overwrite --run-dir ${TOY_RUN})
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
