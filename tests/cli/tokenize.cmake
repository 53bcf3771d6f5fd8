# Subwords end to end: a 1-step translate run with --tokenizer bpe on the small corpus writes its
# merges and vocabularies; `headlab tokenize` shows a sentence's pieces from the checkpoint and from
# a merges file; and the twin's Python BPE (bench/bpe.py) cuts the whole full-corpus test file into
# exactly the pieces headlab does.
set(BPE_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_bpe_run)
set(DE_EN ${PROJECT_SOURCE_DIR}/datasets/de-en)
add_test(NAME cli.train_translate_bpe
         COMMAND headlab_cli train --task translate --train ${DE_EN}/small/train.tsv --valid ${DE_EN}/small/valid.tsv
                 --tokenizer bpe --vocab-size 1000 --d-model 16 --heads 2 --ff 16 --layers 1 --steps 1
                 --eval-every 1 --eval-sentences 2 --progress none --overwrite --run-dir ${BPE_RUN})
set_tests_properties(cli.train_translate_bpe PROPERTIES
                     PASS_REGULAR_EXPRESSION "vocabularies 1000 source / 1000 target \\(subwords: [0-9]+ / [0-9]+ merges\\)"
                     FIXTURES_SETUP bpe_translate)
add_test(NAME cli.tokenize_checkpoint_pieces
         COMMAND headlab_cli tokenize --checkpoint ${BPE_RUN}/best.safetensors "Er kommt morgen." "Ich bin müde.")
set_tests_properties(cli.tokenize_checkpoint_pieces PROPERTIES
                     PASS_REGULAR_EXPRESSION "^er kommt morgen \\.\n[^\n]*@@[^\n]*\n$" FIXTURES_REQUIRED bpe_translate)
add_test(NAME cli.tokenize_ids_decode_back
         COMMAND headlab_cli tokenize --checkpoint ${BPE_RUN}/best.safetensors --side target --ids "the quickest fox")
set_tests_properties(cli.tokenize_ids_decode_back PROPERTIES PASS_REGULAR_EXPRESSION "^[0-9]+( [0-9]+)+\n$"
                     FAIL_REGULAR_EXPRESSION "(^| )3( |\n)" FIXTURES_REQUIRED bpe_translate)
add_test(NAME cli.tokenize_refuses_both_sources
         COMMAND sh -c "\"$0\" tokenize --checkpoint \"$1/best.safetensors\" --merges \"$1/bpe.source.txt\" x; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${BPE_RUN})
set_tests_properties(cli.tokenize_refuses_both_sources PROPERTIES
                     PASS_REGULAR_EXPRESSION "give --checkpoint \\(a translation model\\) or --merges.*exit status 2"
                     FIXTURES_REQUIRED bpe_translate)
# Neither sentences nor --file: a usage error, not silence (it printed nothing and exited 0).
add_test(NAME cli.tokenize_refuses_no_input
         COMMAND sh -c "\"$0\" tokenize --checkpoint \"$1/best.safetensors\" < /dev/null; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${BPE_RUN})
set_tests_properties(cli.tokenize_refuses_no_input PROPERTIES
                     PASS_REGULAR_EXPRESSION "nothing to tokenize: give the sentences as arguments or --file.*exit status 2"
                     FIXTURES_REQUIRED bpe_translate)
add_test(NAME cli.tokenize_names_a_bad_merges_line
         COMMAND sh -c "printf '#headlab-bpe-merges 1\\na b\\nc\\n' > \"$1/bad_merges.txt\"; \"$0\" tokenize --merges \"$1/bad_merges.txt\" x; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.tokenize_names_a_bad_merges_line PROPERTIES
                     PASS_REGULAR_EXPRESSION "line 3: expected two symbols separated by one space\nexit status 1")
foreach(side source target)
  add_test(NAME bench.bpe_py_matches_headlab_${side}
           COMMAND sh -c "\"$0\" tokenize --merges \"$2/bpe.${side}.txt\" --file \"$3\" > \"$2/pieces.headlab.${side}\" && \"$1\" \"$4\" --merges \"$2/bpe.${side}.txt\" --file \"$3\" > \"$2/pieces.python.${side}\" && cmp \"$2/pieces.headlab.${side}\" \"$2/pieces.python.${side}\" && wc -l < \"$2/pieces.python.${side}\""
                   $<TARGET_FILE:headlab_cli> ${HEADLAB_PYTHON3} ${BPE_RUN} ${DE_EN}/test.tsv ${PROJECT_SOURCE_DIR}/bench/bpe.py)
  set_tests_properties(bench.bpe_py_matches_headlab_${side} PROPERTIES PASS_REGULAR_EXPRESSION "^1299\n"
                       FIXTURES_REQUIRED bpe_translate)
endforeach()
