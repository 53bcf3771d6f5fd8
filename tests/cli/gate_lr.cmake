# The gate learning-rate sweep (docs/studies/gate_lr_sweep.sh, docs/studies/gate-lr-sweep.md) in its
# --quick form: 4 tiny lm runs through `headlab ablate`; the sweep's summary must carry the fields
# the study reads (divergence, loss spikes, the first-token sink) and a chart per metric.
# Included from tests/CMakeLists.txt.
set(GATE_LR_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_gate_lr)
set(GATE_LR_FIELDS "")
foreach(field diverged_mean loss_spikes_mean max_loss_jump_mean sink_mass_mean valid_loss_mean)
  string(APPEND GATE_LR_FIELDS " && head -n 1 \"$1/summary.csv\" | grep -q ${field}")
endforeach()
foreach(chart valid_loss loss_spikes max_loss_jump sink_mass diverged)
  string(APPEND GATE_LR_FIELDS " && test -s \"$1/chart_${chart}.svg\"")
endforeach()
add_test(NAME cli.gate_lr_sweep_quick
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" --quick \"$1\" \"$2\" ${GATE_LR_FIELDS} && echo 'the sweep has its fields and charts'"
                 ${PROJECT_SOURCE_DIR}/docs/studies/gate_lr_sweep.sh ${GATE_LR_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(cli.gate_lr_sweep_quick PROPERTIES
                     PASS_REGULAR_EXPRESSION "All 4 runs finished.*the sweep has its fields and charts")
