# `headlab align` end to end on the toy translation run (translate.cmake: source word wK -> target
# word vK, so the gold links are i-i and the final "." has none), and its bad input. Uses expect_exit
# from bad_input.cmake and the copy checkpoint of head_lab.cmake.
set(ALIGN ${CMAKE_CURRENT_BINARY_DIR}/cli_align)
file(MAKE_DIRECTORY ${ALIGN})
# The toy's validation pairs with their gold links as a third column.
add_test(NAME cli.align_toy
         COMMAND sh -c "awk -F '\\t' '{ n = split($1, w, \" \"); l = \"\"; for (i = 0; i < n; i++) l = l (i ? \" \" : \"\") i \"-\" i; print $0 \"\\t\" l }' \"$1\" > ${ALIGN}/aligned.tsv &&
                        \"$0\" align --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors --data ${ALIGN}/aligned.tsv --out ${ALIGN}/out --overwrite &&
                        grep -c '^decoder.layers.0.multihead_attn,0,0,' ${ALIGN}/out/alignment.csv && tail -n +2 ${ALIGN}/out/alignment.csv | wc -l"
                 $<TARGET_FILE:headlab_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate/toy_valid.tsv)
# 4 heads and the layer mean: 5 rows; AER of every row in [0, 1]; the gold count is the toy's words.
set_tests_properties(cli.align_toy PROPERTIES
                     PASS_REGULAR_EXPRESSION "\\| decoder layer 0 \\| mean \\|.*Best head: decoder layer 0 head [0-3], AER [01]\\.[0-9]+.*\n1\n5\n$"
                     FIXTURES_REQUIRED toy_translate FIXTURES_SETUP toy_align)
expect_exit(cli.align_without_gold_links_exits_1 1 "toy_valid.tsv:1: no gold alignment"
            ${HL} align --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
            --data ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate/toy_valid.tsv --out ${ALIGN}/none)
expect_exit(cli.align_copy_checkpoint_exits_2 2 "'copy' model\; alignments need a translation"
            ${HL} align --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_head_lab/copy/checkpoint.safetensors
            --data ${ALIGN}/aligned.tsv --out ${ALIGN}/copy)
expect_exit(cli.align_bad_query_step_exits_2 2 "--query-step"
            ${HL} align --checkpoint x.safetensors --data x.tsv --query-step next)
expect_exit(cli.align_existing_output_refused 2 "already holds a run.*--overwrite"
            ${HL} align --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
            --data ${ALIGN}/aligned.tsv --out ${ALIGN}/out)
set_tests_properties(cli.align_without_gold_links_exits_1 PROPERTIES FIXTURES_REQUIRED toy_translate)
expect_exit(cli.explore_align_pair_past_count_exits_2 2 "--align-pair 3 is past the first 2 pairs"
            ${HL} explore --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
            --align-data ${ALIGN}/aligned.tsv --align-pair 3 --align-count 2 --out ${ALIGN}/past.html)
set_tests_properties(cli.explore_align_pair_past_count_exits_2 PROPERTIES FIXTURES_REQUIRED toy_align)
# A refused align leaves no output directory behind (the checks run before it is made).
add_test(NAME cli.align_refusal_makes_no_directory
         COMMAND sh -c "\"$0\" align --checkpoint $1 --data $2 --out $3 2>/dev/null; test ! -e $3 && echo NO-DIRECTORY"
                 $<TARGET_FILE:headlab_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
                 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate/toy_valid.tsv ${ALIGN}/refused)
set_tests_properties(cli.align_refusal_makes_no_directory PROPERTIES PASS_REGULAR_EXPRESSION "NO-DIRECTORY"
                     FIXTURES_REQUIRED toy_translate)
set_tests_properties(cli.align_copy_checkpoint_exits_2 PROPERTIES FIXTURES_REQUIRED "lab_copy;toy_align")
set_tests_properties(cli.align_existing_output_refused PROPERTIES FIXTURES_REQUIRED toy_align)
