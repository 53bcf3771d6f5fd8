# `headlab train` into a run directory that holds a finished run (registered in tests/cli/run_dir.cmake):
# refused with exit 2 and every file byte for byte as it was; so is a refused --resume (other options)
# and `--config RUN/config.ini` without --run-dir; --overwrite replaces the run and keeps other files;
# --resume cuts metrics.jsonl back to the checkpoint's step.
#   cmake -DHL=path/to/headlab -DWORK=scratch/dir -P tests/cli/run_dir_refuse.cmake
set(RUN ${WORK}/run)
set(TINY --d-model 16 --heads 2 --ff 32 --layers 1 --batch 4 --eval-every 2 --eval-sequences 8 --progress none)
file(REMOVE_RECURSE ${WORK})

# run_hl(STATUS OUT_VAR ARGS...): runs headlab, fails unless it exits with STATUS ("nonzero": any but 0).
function(run_hl expected out_var)
  execute_process(COMMAND ${HL} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if((expected STREQUAL "nonzero" AND status EQUAL 0) OR (NOT expected STREQUAL "nonzero" AND NOT status EQUAL expected))
    message(FATAL_ERROR "headlab ${ARGN}: exit ${status}, expected ${expected}\n${out}${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

# The names and SHA-256 of every file in RUN, as one text.
function(fingerprint var)
  file(GLOB files LIST_DIRECTORIES false RELATIVE ${RUN} ${RUN}/* ${RUN}/.*)
  list(SORT files)
  set(text "")
  foreach(f IN LISTS files)
    file(SHA256 ${RUN}/${f} hash)
    string(APPEND text "${f} ${hash}\n")
  endforeach()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

function(expect_unchanged what)
  fingerprint(now)
  if(NOT now STREQUAL before)
    message(FATAL_ERROR "${what} changed the run directory:\nbefore:\n${before}after:\n${now}")
  endif()
  message(STATUS "unchanged after: ${what}")
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected '${regex}' in:\n${text}")
  endif()
endfunction()

run_hl(0 out train ${TINY} --steps 4 --run-dir ${RUN})
file(WRITE ${RUN}/notes.txt "the user's own file\n")
fingerprint(before)
expect_match("${before}" "checkpoint.safetensors.*config.ini.*metrics.jsonl.*summary.json" "the finished run")

run_hl(2 out train ${TINY} --steps 2 --run-dir ${RUN})
expect_match("${out}" "already holds a run \\(checkpoint.safetensors, metrics.jsonl, summary.json\\); give --resume to continue it or --overwrite to replace it"
             "train without flags")
expect_unchanged("train without --resume or --overwrite")

run_hl(nonzero out train ${TINY} --vocab 9 --steps 6 --resume --run-dir ${RUN})
expect_match("${out}" "different options" "a resume with other options")
expect_unchanged("a refused --resume")

run_hl(2 out train --config ${RUN}/config.ini --steps 6)
expect_match("${out}" "belongs to the run in .* no --run-dir is given" "--config RUN/config.ini without --run-dir")
expect_unchanged("--config RUN/config.ini without --run-dir")

run_hl(2 out train ${TINY} --steps 2 --resume --overwrite --run-dir ${RUN})
expect_unchanged("--resume with --overwrite")

run_hl(0 out train ${TINY} --steps 2 --overwrite --run-dir ${RUN})
file(STRINGS ${RUN}/metrics.jsonl lines)
list(LENGTH lines n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "after --overwrite metrics.jsonl has ${n} lines, not the new run's 2")
endif()
file(READ ${RUN}/notes.txt notes)
if(NOT notes STREQUAL "the user's own file\n")
  message(FATAL_ERROR "--overwrite touched a file train does not write")
endif()

# --resume after a kill: the lines metrics.jsonl got after the checkpoint's step (and a torn last
# line) are cut away before the run continues, so every step is logged exactly once.
run_hl(0 out train ${TINY} --steps 4 --overwrite --run-dir ${RUN})
file(APPEND ${RUN}/metrics.jsonl "{\"step\":5,\"loss\":1}\n{\"step\":6,\"loss\":1}\n{\"step\":7,\"lo")
run_hl(0 out train ${TINY} --steps 6 --resume --run-dir ${RUN})
expect_match("${out}" "resumed from .* at step 4 \\(3 metrics.jsonl lines after it dropped\\)" "--resume")
file(STRINGS ${RUN}/metrics.jsonl lines)
set(steps "")
foreach(line IN LISTS lines)
  string(REGEX MATCH "\"step\":([0-9]+)" m "${line}")
  list(APPEND steps "${CMAKE_MATCH_1}")
endforeach()
if(NOT steps STREQUAL "1;2;3;4;5;6")
  message(FATAL_ERROR "after --resume metrics.jsonl logs the steps ${steps}, not 1;2;3;4;5;6:\n${lines}")
endif()
message(STATUS "metrics.jsonl cut back to the checkpoint on --resume")

message(STATUS "run-dir rules hold")
