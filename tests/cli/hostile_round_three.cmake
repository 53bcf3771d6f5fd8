# Hostile inputs, round three (tests/CMakeLists.txt includes this after bad_input.cmake, whose
# expect_exit it uses). Outputs:
# results lost on the way to stdout are an error, never a quiet exit 0 (before: exit 0 with nothing
# on stderr); an output that is not a regular file, or that is an input, is refused before any work
# (before: as root, explore --out /dev/null --overwrite replaced the device with a regular file, and
# explore --out equal to its checkpoint replaced the checkpoint with the page).
set(OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_outputs)
file(MAKE_DIRECTORY ${OUT_DIR})
set(TINY_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run)

# expect_lost_stdout(NAME REDIRECT COMMAND...): COMMAND's stdout goes to REDIRECT (/dev/full, a
# closed descriptor); it must exit 1 naming stdout on stderr.
function(expect_lost_stdout name redirect)
  list(JOIN ARGN " " command)
  add_test(NAME ${name} COMMAND sh -c "${command} ${redirect} 2> ${OUT_DIR}/${name}.err; s=$?; cat ${OUT_DIR}/${name}.err; echo \"exit status $s\"")
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "headlab: error: writing to stdout failed: [^\n]+\nexit status 1\n")
endfunction()
expect_lost_stdout(cli.stats_to_full_disk_exits_1 "> /dev/full" ${HL} stats --d-model 64 --heads 4)
expect_lost_stdout(cli.stats_to_closed_stdout_exits_1 ">&-" ${HL} stats --d-model 64 --heads 4)
expect_lost_stdout(cli.bleu_to_full_disk_exits_1 "> /dev/full" ${HL} bleu --ref ${HEADLAB_BLEU_DIR}/ref.txt --hyp ${HEADLAB_BLEU_DIR}/hyp.txt)
expect_lost_stdout(cli.eval_to_full_disk_exits_1 "> /dev/full" ${HL} eval --run-dir ${TINY_RUN} --sequences 4)
expect_lost_stdout(cli.help_to_full_disk_exits_1 "> /dev/full" ${HL} --help)

# (Each also checks that what was at --out is still there, unchanged.)
add_test(NAME cli.explore_out_fifo_refused_exits_2
         COMMAND sh -c "rm -f \"$1/fifo\" && mkfifo \"$1/fifo\" && \"$0\" explore --checkpoint \"$2/checkpoint.safetensors\" --out \"$1/fifo\" --overwrite; s=$?; test -p \"$1/fifo\" && echo \"still a FIFO, exit status $s\""
                 ${HL} ${OUT_DIR} ${TINY_RUN})
set_tests_properties(cli.explore_out_fifo_refused_exits_2 PROPERTIES TIMEOUT 30
                     PASS_REGULAR_EXPRESSION "--out: '[^']*fifo' exists and is a FIFO.*still a FIFO, exit status 2\n")
add_test(NAME cli.explore_out_is_its_checkpoint_exits_2
         COMMAND sh -c "cp \"$2/checkpoint.safetensors\" \"$1/c.safetensors\" && \"$0\" explore --checkpoint \"$1/c.safetensors\" --out \"$1/./c.safetensors\" --overwrite; s=$?; cmp \"$2/checkpoint.safetensors\" \"$1/c.safetensors\" && echo \"checkpoint unchanged, exit status $s\""
                 ${HL} ${OUT_DIR} ${TINY_RUN})
set_tests_properties(cli.explore_out_is_its_checkpoint_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "--out: .* is also an input.*checkpoint unchanged, exit status 2\n")
expect_exit(cli.curves_out_is_metrics_exits_2 2 "--out: .* is also an input"
            ${HL} curves --run-dir ${TINY_RUN} --out ${TINY_RUN}/metrics.jsonl)
expect_exit(cli.curves_out_directory_exits_2 2 "--out: .* exists and is a directory"
            ${HL} curves --run-dir ${TINY_RUN} --out ${OUT_DIR})

# A resume checkpoint whose random state is all zeros (a state no generator reaches) is refused.
expect_exit(cli.resume_zero_rng_refused_exits_1 1 "random state 'data_rng' is all zeros"
            "rm -rf ${OUT_DIR}/zero_rng && cp -r ${TINY_RUN} ${OUT_DIR}/zero_rng &&"
            "python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/edit_checkpoint.py ${TINY_RUN}/checkpoint.safetensors"
            "${OUT_DIR}/zero_rng/checkpoint.safetensors zero_rng &&"
            ${HL} train --config ${OUT_DIR}/zero_rng/config.ini --run-dir ${OUT_DIR}/zero_rng --resume --steps 8 --progress none)

set_tests_properties(cli.eval_to_full_disk_exits_1 cli.explore_out_fifo_refused_exits_2
                     cli.explore_out_is_its_checkpoint_exits_2 cli.curves_out_is_metrics_exits_2
                     cli.curves_out_directory_exits_2 cli.resume_zero_rng_refused_exits_1
                     PROPERTIES FIXTURES_REQUIRED tiny_run)

# Readers. A byte-order mark is not text (before: bleu scored it as part of the first word, unigram
# precision 66.7); FIFOs and devices are refused at once (before: --ref FIFO blocked forever,
# --ref /dev/zero read until killed); a metrics line nested 100 000 deep is an error naming the
# line (before: SIGSEGV in curves and explore); a subnormal loss on a log axis ends (before: the
# tick loop never ended).
add_test(NAME cli.bleu_ignores_byte_order_mark
         COMMAND sh -c "printf '\\357\\273\\277the cat sat on the mat\\n' > \"$1/bom.txt\" && printf 'the cat sat on the mat\\n' > \"$1/plain.txt\" && \"$0\" bleu --ref \"$1/plain.txt\" --hyp \"$1/bom.txt\""
                 ${HL} ${OUT_DIR})
set_tests_properties(cli.bleu_ignores_byte_order_mark PROPERTIES PASS_REGULAR_EXPRESSION "^BLEU = 100.00 ")
expect_exit(cli.bleu_fifo_refused_exits_1 1 "--ref: '[^']*ref_fifo': not a regular file \\(a FIFO\\)"
            "rm -f ${OUT_DIR}/ref_fifo && mkfifo ${OUT_DIR}/ref_fifo &&" ${HL} bleu --ref ${OUT_DIR}/ref_fifo
            --hyp ${HEADLAB_BLEU_DIR}/hyp.txt)
expect_exit(cli.bleu_device_refused_exits_1 1 "--ref: '/dev/zero': not a regular file"
            ${HL} bleu --ref /dev/zero --hyp ${HEADLAB_BLEU_DIR}/hyp.txt)
set_tests_properties(cli.bleu_fifo_refused_exits_1 cli.bleu_device_refused_exits_1 PROPERTIES TIMEOUT 20)
add_test(NAME cli.curves_deeply_nested_metrics_exits_1
         COMMAND sh -c "rm -rf \"$1/nested\" && cp -r \"$2\" \"$1/nested\" && python3 -c 'import sys; open(sys.argv[1], \"a\").write(\"{\\\"step\\\": 9, \\\"x\\\": \" + \"[\" * 100000 + \"]\" * 100000 + \"}\\\\n\")' \"$1/nested/metrics.jsonl\" && \"$0\" curves --run-dir \"$1/nested\"; echo \"exit status $?\""
                 ${HL} ${OUT_DIR} ${TINY_RUN})
set_tests_properties(cli.curves_deeply_nested_metrics_exits_1 PROPERTIES FIXTURES_REQUIRED tiny_run
                     PASS_REGULAR_EXPRESSION "metrics.jsonl': line 7: JSON nested deeper than 32 levels\nexit status 1\n")
# A merges file and a --file saved with a byte-order mark (before: "expected the header", and the
# mark read as part of the first word).
add_test(NAME cli.tokenize_ignores_byte_order_marks
         COMMAND sh -c "printf '\\357\\273\\277#headlab-bpe-merges 1\\na b\\n' > \"$1/bom_merges.txt\" && printf '\\357\\273\\277ab abc\\n' > \"$1/bom_text.txt\" && \"$0\" tokenize --merges \"$1/bom_merges.txt\" --file \"$1/bom_text.txt\""
                 ${HL} ${OUT_DIR})
set_tests_properties(cli.tokenize_ignores_byte_order_marks PROPERTIES PASS_REGULAR_EXPRESSION "^a@@ b ab@@ c\n$")
# A merges file: a repeated 4000-byte merge gives a short message naming the file and line (before: the
# whole merge, twice, and no file name); CRLF line ends are read (before: "expected the header").
add_test(NAME cli.tokenize_long_repeated_merge_clipped
         COMMAND sh -c "python3 -c 'import sys; w = \"x\" * 4000; open(sys.argv[1], \"w\").write(\"#headlab-bpe-merges 1\\n\" + w + \" y\\n\" + w + \" y\\n\")' \"$1/long_merges.txt\" && \"$0\" tokenize --merges \"$1/long_merges.txt\" ab 2> \"$1/long_merges.err\"; echo \"exit status $? bytes $(wc -c < \"$1/long_merges.err\")\"; head -c 400 \"$1/long_merges.err\""
                 ${HL} ${OUT_DIR})
set_tests_properties(cli.tokenize_long_repeated_merge_clipped PROPERTIES
                     PASS_REGULAR_EXPRESSION "exit status 1 bytes [1-4][0-9][0-9]\nheadlab tokenize: --merges '[^']*long_merges.txt': line 3: the merge 'xxx")
add_test(NAME cli.tokenize_crlf_merges
         COMMAND sh -c "printf '#headlab-bpe-merges 1\\r\\na b\\r\\n' > \"$1/crlf_merges.txt\" && \"$0\" tokenize --merges \"$1/crlf_merges.txt\" abc"
                 ${HL} ${OUT_DIR})
set_tests_properties(cli.tokenize_crlf_merges PROPERTIES PASS_REGULAR_EXPRESSION "^ab@@ c\n$")
# A run directory whose name is not UTF-8 (before: json.exception.type_error.316, no page).
add_test(NAME cli.explore_run_dir_not_utf8
         COMMAND sh -c "d=\"$1/run_$(printf '\\377')_dir\"; rm -rf \"$d\" && cp -r \"$2\" \"$d\" && \"$0\" explore --checkpoint \"$d/checkpoint.safetensors\" --out \"$1/not_utf8.html\" --overwrite"
                 ${HL} ${OUT_DIR} ${TINY_RUN})
set_tests_properties(cli.explore_run_dir_not_utf8 PROPERTIES FIXTURES_REQUIRED tiny_run PASS_REGULAR_EXPRESSION "^wrote ")
