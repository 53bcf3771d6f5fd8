# The run directory rules at the command line (headlab/train/run_dir.hpp): a finished run is not
# replaced, two trains on one directory are refused, a killed holder never blocks, and heads /
# prune on a full disk fail without "wrote". Uses LAB and the lab_copy fixture of head_lab.cmake.
set(HL $<TARGET_FILE:headlab_cli>)
set(RUNDIR_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli_run_dir)
set(RUNDIR_TINY --d-model 16 --heads 2 --ff 32 --layers 1 --batch 4 --eval-sequences 8 --progress none)
string(REPLACE ";" " " RUNDIR_TINY_ARGS "${RUNDIR_TINY}")

add_test(NAME cli.run_dir_finished_run_refused
         COMMAND ${CMAKE_COMMAND} -DHL=${HL} -DWORK=${RUNDIR_WORK}/refuse -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/run_dir_refuse.cmake)
set_tests_properties(cli.run_dir_finished_run_refused PROPERTIES ENVIRONMENT "HEADLAB_THREADS=1")

# One long train holds the directory (it has written its pid into .lock); a second is refused
# naming that pid; after kill -9 of the first the directory is free again.
set(W ${RUNDIR_WORK}/concurrent)
add_test(NAME cli.run_dir_second_train_refused
         COMMAND sh -c "rm -rf ${W} && mkdir -p ${W} &&
                        \"$0\" train ${RUNDIR_TINY_ARGS} --steps 1000000 --eval-every 1000000 --run-dir ${W}/run > ${W}/first.out 2>&1 & pid=$!;
                        i=0; while [ ! -s ${W}/run/.lock ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done;
                        \"$0\" train ${RUNDIR_TINY_ARGS} --steps 2 --run-dir ${W}/run > ${W}/second.out 2>&1; s=$?;
                        kill -9 $pid; wait $pid; cat ${W}/second.out; echo \"second exit $s, first pid $pid\";
                        \"$0\" train ${RUNDIR_TINY_ARGS} --steps 2 --overwrite --run-dir ${W}/run > ${W}/third.out 2>&1; t=$?;
                        test $s -eq 2 && grep -q \"in use by process $pid \" ${W}/second.out && test $t -eq 0 && echo CONCURRENT-OK"
                 ${HL})
set_tests_properties(cli.run_dir_second_train_refused PROPERTIES PASS_REGULAR_EXPRESSION "CONCURRENT-OK"
                     ENVIRONMENT "HEADLAB_THREADS=1")

# A full disk: files may not grow past N blocks of 512 bytes (ulimit -f; SIGXFSZ ignored, so
# write() fails with EFBIG): 16 for heads (its attention maps are larger), 4 for prune (its SVGs are).
foreach(command_blocks heads:16 prune:4)
  string(REPLACE ":" ";" command_blocks ${command_blocks})
  list(GET command_blocks 0 command)
  list(GET command_blocks 1 blocks)
  set(out ${RUNDIR_WORK}/full_${command})
  add_test(NAME cli.${command}_full_disk_fails
           COMMAND sh -c "rm -rf ${out} ${out}.log; sh -c 'trap \"\" XFSZ; ulimit -f ${blocks}; exec \"$0\" ${command} --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${out}' \"$0\" > ${out}.log 2>&1; s=$?;
                          cat ${out}.log; echo \"exit status $s\"; test $s -ne 0 && ! grep -q wrote ${out}.log && grep -q 'File too large' ${out}.log && echo FULL-DISK-OK"
                   ${HL})
  set_tests_properties(cli.${command}_full_disk_fails PROPERTIES PASS_REGULAR_EXPRESSION "FULL-DISK-OK" FIXTURES_REQUIRED lab_copy)
endforeach()

# heads into a directory that holds heads output: refused (exit 2) unless --overwrite.
add_test(NAME cli.heads_existing_output_refused
         COMMAND sh -c "rm -rf ${RUNDIR_WORK}/heads_twice && \"$0\" heads --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${RUNDIR_WORK}/heads_twice > /dev/null &&
                        \"$0\" heads --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${RUNDIR_WORK}/heads_twice; s=$?; echo \"exit status $s\";
                        test $s -eq 2 && \"$0\" heads --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${RUNDIR_WORK}/heads_twice --overwrite > /dev/null && echo REFUSED-THEN-OVERWRITTEN"
                 ${HL})
set_tests_properties(cli.heads_existing_output_refused PROPERTIES
                     PASS_REGULAR_EXPRESSION "already holds a run \\(heads.csv.*give --overwrite.*REFUSED-THEN-OVERWRITTEN"
                     FIXTURES_REQUIRED lab_copy)

# The kill -9 soak, short (tests/robustness/soak_kill9.sh runs 20 kills and more by default).
add_test(NAME soak.kill9_short COMMAND ${PROJECT_SOURCE_DIR}/tests/robustness/soak_kill9.sh ${PROJECT_BINARY_DIR} 5)
set_tests_properties(soak.kill9_short PROPERTIES LABELS soak ENVIRONMENT "SOAK_STEPS=150" TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "soak: PASSED")
