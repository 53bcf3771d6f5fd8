# headlab study end to end (tests/cli/study.sh): a tiny pinned recipe run, rerun and reported; an
# unpinned recipe refused; the same study through GNU parallel / bash and a SLURM array script in a
# hostile path, equal to the local run; the --quick form of every committed recipe; and the C++
# statistics of each committed study against its SciPy report. Included from tests/CMakeLists.txt.
set(STUDY_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_study)
# Under the sanitizers (about 10x slower) the quick case runs one recipe's quick form, not all of
# them (641 s there; the release suite runs every one).
if(HEADLAB_SANITIZE)
  set(STUDY_QUICK_RECIPES induction-heads)
else()
  set(STUDY_QUICK_RECIPES all)
endif()
foreach(case pipeline unpinned cluster quick scipy)
  add_test(NAME cli.study_${case}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/study.sh $<TARGET_FILE:headlab_cli> ${PROJECT_SOURCE_DIR}
                   ${STUDY_DIR}/${case} ${case} ${STUDY_QUICK_RECIPES})
  set_tests_properties(cli.study_${case} PROPERTIES PASS_REGULAR_EXPRESSION "study ${case}: ok"
                       FAIL_REGULAR_EXPRESSION "FAIL:")
endforeach()
# The release suite's longest case (~110 s of its ~260 s of test time on 2 vCPUs):
# COST makes ctest start it first rather than two thirds of the way through, where it would finish
# alone. (A COST given here replaces the times ctest would otherwise learn from the last run.)
if(NOT HEADLAB_SANITIZE)
  set_tests_properties(cli.study_quick PROPERTIES COST 110)
endif()

# A real one-node SLURM (tests/cluster/slurm_local.sh, about 30 s): skipped (77) where SLURM, munge or
# GNU parallel is not installed or the suite does not run as root.
add_test(NAME cluster.slurm_local
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/cluster/slurm_local.sh $<TARGET_FILE:headlab_cli>
                 ${CMAKE_CURRENT_BINARY_DIR}/cluster_slurm)
set_tests_properties(cluster.slurm_local PROPERTIES SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "slurm_local: ok"
                     FAIL_REGULAR_EXPRESSION "FAIL:" RUN_SERIAL TRUE)
