# headlab study end to end (tests/cli/study.sh): a tiny pinned recipe run, rerun and reported; an
# unpinned recipe refused; the same study through GNU parallel / bash and a SLURM array script in a
# hostile path, equal to the local run; the --quick form of every committed recipe; and the C++
# statistics of each committed study against its SciPy report. Included from tests/CMakeLists.txt.
set(STUDY_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_study)
foreach(case pipeline unpinned cluster quick scipy)
  add_test(NAME cli.study_${case}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/study.sh $<TARGET_FILE:headlab_cli> ${PROJECT_SOURCE_DIR}
                   ${STUDY_DIR}/${case} ${case})
  set_tests_properties(cli.study_${case} PROPERTIES PASS_REGULAR_EXPRESSION "study ${case}: ok"
                       FAIL_REGULAR_EXPRESSION "FAIL:")
endforeach()
