# --threads at the command line: the same seed and thread count give the same losses, a bad count
# is a usage error naming the flag (or HEADLAB_THREADS), and the flag works before or after the
# command. Uses expect_exit and BAD_DIR of bad_input.cmake.
set(THREADS_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli_threads)
set(THREADS_TINY --task lm --text ${PROJECT_SOURCE_DIR}/datasets/kjv/kjv.txt --d-model 32 --heads 4 --ff 64 --layers 1 --length 16 --batch 8 --steps 3 --eval-every 3
                 --eval-sequences 8 --progress none --overwrite)
string(REPLACE ";" " " THREADS_TINY_ARGS "${THREADS_TINY}")
# The losses of metrics.jsonl ("loss": ...), without the timings that differ run to run.
set(LOSSES "grep -o '\"loss\":[^,]*'")
add_test(NAME cli.threads_same_count_same_losses
         COMMAND sh -c "rm -rf ${THREADS_WORK} && mkdir -p ${THREADS_WORK} &&
                        \"$0\" train ${THREADS_TINY_ARGS} --threads 2 --run-dir ${THREADS_WORK}/a > /dev/null &&
                        \"$0\" --threads 2 train ${THREADS_TINY_ARGS} --run-dir ${THREADS_WORK}/b > /dev/null &&
                        ${LOSSES} ${THREADS_WORK}/a/metrics.jsonl > ${THREADS_WORK}/a.losses &&
                        ${LOSSES} ${THREADS_WORK}/b/metrics.jsonl > ${THREADS_WORK}/b.losses &&
                        test -s ${THREADS_WORK}/a.losses && cmp ${THREADS_WORK}/a.losses ${THREADS_WORK}/b.losses &&
                        grep -q '\"threads\": 2' ${THREADS_WORK}/a/summary.json && echo THREADS-SAME-OK"
                 ${HL})
set_tests_properties(cli.threads_same_count_same_losses PROPERTIES PASS_REGULAR_EXPRESSION "THREADS-SAME-OK")
expect_exit(cli.threads_zero_exits_2 2 "--threads: must be a whole number from 1 to 1024, got '0'" ${HL} train --threads 0 --steps 1)
expect_exit(cli.threads_not_a_number_exits_2 2 "--threads: must be a whole number" ${HL} --threads two stats)
add_test(NAME cli.threads_bad_environment_exits_2
         COMMAND sh -c "HEADLAB_THREADS=lots \"$0\" stats > ${BAD_DIR}/threads_env.out 2>&1; s=$?; cat ${BAD_DIR}/threads_env.out; echo \"exit status $s\""
                 ${HL})
set_tests_properties(cli.threads_bad_environment_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "HEADLAB_THREADS \\(the default of --threads\\): must be a whole number.*exit status 2\n")
