# `headlab explore` end to end on checkpoints of the four tasks (the runs of head_lab.cmake,
# translate.cmake and lm.cmake), and its bad input. What the page does in a browser is
# tests/browser (ctest -L browser); here: the file is one self-contained page with its data.
set(HL $<TARGET_FILE:headlab_cli>)
set(EXPLORE ${CMAKE_CURRENT_BINARY_DIR}/cli_explore)
file(MAKE_DIRECTORY ${EXPLORE})

# The page holds its data and its script, and asks for nothing outside itself (no src=, href= or
# url( but the empty data: icon and the in-page links #panel-...; the SVG namespace is a name, not a fetch).
foreach(case IN ITEMS "induction|${LAB}/induction/checkpoint.safetensors|lab_induction|"
                      "copy|${LAB}/copy/checkpoint.safetensors|lab_copy|--input;1 4 2 9"
                      "translate|${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors|toy_translate|--input;w1 w2 w3"
                      "lm|${LM_RUN}/checkpoint.safetensors|lm_run|--input;And God said")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 task)
  list(GET parts 1 checkpoint)
  list(GET parts 2 fixture)
  list(SUBLIST parts 3 -1 input)
  list(JOIN input " " input_text)
  set(page ${EXPLORE}/${task}.html)
  if(input)
    list(GET input 1 input_value)
    set(input_flag "--input '${input_value}'")
  else()
    set(input_flag "")
  endif()
  add_test(NAME cli.explore_${task}
           COMMAND sh -c "\"$0\" explore --checkpoint ${checkpoint} ${input_flag} --out ${page} --overwrite &&
                          grep -c '<script type=\"application/json\" id=\"headlab-data\">{\"' ${page} &&
                          ! grep -Eo '(src=|href=\"[^#d]|url\\(|https?://)[^ ]{0,40}' ${page} | grep -v '^http://www.w3.org/2000/svg' &&
                          echo SELF-CONTAINED" ${HL})
  set_tests_properties(cli.explore_${task} PROPERTIES FIXTURES_REQUIRED ${fixture}
                       PASS_REGULAR_EXPRESSION "wrote [^\n]*explore/${task}.html: [0-9]+ attention modules, [0-9]+ heads[^\n]*\n(no circuits view: [^\n]*\n)?1\nSELF-CONTAINED")
endforeach()
# The lm page shows characters (the input text's letters as tokens), not ids.
add_test(NAME cli.explore_lm_shows_characters
         COMMAND sh -c "\"$0\" explore --checkpoint ${LM_RUN}/checkpoint.safetensors --input 'God' --out ${EXPLORE}/lm_chars.html --overwrite --dump-json ${EXPLORE}/lm_chars.json > /dev/null && grep -o '\"queries\":\\[[^]]*\\]' ${EXPLORE}/lm_chars.json" ${HL})
set_tests_properties(cli.explore_lm_shows_characters PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "^\"queries\":\\[\"G\",\"o\",\"d\"\\]\n$")

# Bad input: a short error naming the option, exit 2 (a missing checkpoint: 1), nothing written.
expect_exit(cli.explore_missing_checkpoint_exits_1 1 "no-such.safetensors" ${HL} explore
            --checkpoint ${EXPLORE}/no-such.safetensors --out ${EXPLORE}/missing.html)
file(WRITE ${EXPLORE}/existing.html "an earlier page\n")
expect_exit(cli.explore_existing_out_exits_2 2 "--out: [^\n]*existing.html exists\; give --overwrite to replace it"
            ${HL} explore --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${EXPLORE}/existing.html)
expect_exit(cli.explore_bad_input_token_exits_2 2 "--input: '99' is not a token id"
            ${HL} explore --checkpoint ${LAB}/copy/checkpoint.safetensors --input 99 --out ${EXPLORE}/bad.html --overwrite)
expect_exit(cli.explore_lm_unknown_character_exits_2 2 "--input: 'Zebra ✓' holds characters the model's vocabulary lacks"
            ${HL} explore --checkpoint ${LM_RUN}/checkpoint.safetensors --input "'Zebra ✓'" --out ${EXPLORE}/bad.html --overwrite)
set_tests_properties(cli.explore_existing_out_exits_2 cli.explore_bad_input_token_exits_2 PROPERTIES FIXTURES_REQUIRED lab_copy)
set_tests_properties(cli.explore_lm_unknown_character_exits_2 PROPERTIES FIXTURES_REQUIRED lm_run)

# heads on an lm checkpoint: the probe is made of its characters and fits its window (before: a
# probe of 33 ids for a model of 16 positions).
add_test(NAME cli.heads_lm
         COMMAND headlab_cli heads --checkpoint ${LM_RUN}/checkpoint.safetensors --out ${EXPLORE}/lm_heads --overwrite)
set_tests_properties(cli.heads_lm PROPERTIES FIXTURES_REQUIRED lm_run
                     PASS_REGULAR_EXPRESSION "lm task[^\n]*repeated random blocks of 7 tokens.*layers.0.self_attn +1 ")

# heads --input on an lm checkpoint reads a text in the model's characters (before: token ids only).
add_test(NAME cli.heads_lm_input_text
         COMMAND sh -c "\"$0\" heads --checkpoint ${LM_RUN}/checkpoint.safetensors --input 'God said' --out ${EXPLORE}/lm_heads_text --overwrite > /dev/null && grep -c '>G<' ${EXPLORE}/lm_heads_text/attention_maps.svg" ${HL})
set_tests_properties(cli.heads_lm_input_text PROPERTIES FIXTURES_REQUIRED lm_run PASS_REGULAR_EXPRESSION "^[1-9]")
expect_exit(cli.heads_lm_input_unknown_exits_2 2 "--input: 'Zebra ✓' holds tokens the model's vocabulary lacks"
            ${HL} heads --checkpoint ${LM_RUN}/checkpoint.safetensors --input "'Zebra ✓'" --out ${EXPLORE}/lm_heads_bad)
set_tests_properties(cli.heads_lm_input_unknown_exits_2 PROPERTIES FIXTURES_REQUIRED lm_run)
