# headlab ablate on a cluster (tests/cli/ablate_cluster.sh, a few seconds each): a SLURM array script
# run task by task with bash, runs collected from separate directories into the same summary as one
# sweep, and collections that are refused; then the flag combinations --emit-* refuses.
# Included from tests/CMakeLists.txt after ablate.cmake (ablate_expect, ABLATE_TRAIN).
set(ABLATE_CLUSTER_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_ablate_cluster)
foreach(case slurm collect refuse restart)
  add_test(NAME cli.ablate_cluster_${case}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/ablate_cluster.sh $<TARGET_FILE:headlab_cli>
                   ${ABLATE_CLUSTER_DIR}/${case} ${case})
  set_tests_properties(cli.ablate_cluster_${case} PROPERTIES PASS_REGULAR_EXPRESSION "ablate_cluster ${case}: ok"
                       FAIL_REGULAR_EXPRESSION "FAIL:")
endforeach()

set(EMIT_OUT --out ${ABLATE_CLUSTER_DIR}/emit --grid heads=1,2)
ablate_expect(cli.ablate_jobs_with_emit_jobs_exits_2 2 "-j with --emit-jobs: the jobs file runs nothing itself"
              ${HL} ablate ${EMIT_OUT} -j 2 --emit-jobs ${ABLATE_CLUSTER_DIR}/jobs.txt)
ablate_expect(cli.ablate_emit_same_file_exits_2 2 "--emit-jobs and --emit-slurm name the same file"
              ${HL} ablate ${EMIT_OUT} --emit-jobs ${ABLATE_CLUSTER_DIR}/x --emit-slurm ${ABLATE_CLUSTER_DIR}/x)
ablate_expect(cli.ablate_collect_with_emit_exits_2 2 "--collect reads the sweep from .* and runs nothing"
              ${HL} ablate --out ${ABLATE_CLUSTER_DIR}/emit --collect --emit-slurm ${ABLATE_CLUSTER_DIR}/x)
ablate_expect(cli.ablate_collect_with_jobs_exits_2 2 "--collect reads the sweep from .* and runs nothing"
              ${HL} ablate --out ${ABLATE_CLUSTER_DIR}/emit --collect -j 2)
