# headlab curves: the tiny copy run's loss.svg drawn again from its metrics.jsonl, on a log loss
# axis, into another file; a directory that holds no run is refused (exit 1) naming its config.ini.
# --select: a choice the task cannot have is a usage error naming the task.
set(CURVES_OUT ${CMAKE_CURRENT_BINARY_DIR}/cli_curves_log.svg)
add_test(NAME cli.curves_redraws_a_run_on_a_log_axis
         COMMAND sh -c "rm -f \"$1\" && \"$0\" curves --run-dir \"$2\" --log-y --out \"$1\" && grep -c -e '>training loss<' -e '>validation loss<' -e '>exact match<' \"$1\""
                 $<TARGET_FILE:headlab_cli> ${CURVES_OUT} ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run)
set_tests_properties(cli.curves_redraws_a_run_on_a_log_axis PROPERTIES FIXTURES_REQUIRED tiny_run
                     PASS_REGULAR_EXPRESSION "wrote [^\n]*cli_curves_log.svg \\(6 metrics rows, task copy, log loss axis\\)\n3\n")
add_test(NAME cli.curves_without_a_run_exits_1
         COMMAND sh -c "\"$0\" curves --run-dir /nonexistent/run 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.curves_without_a_run_exits_1 PROPERTIES
                     PASS_REGULAR_EXPRESSION "/nonexistent/run/config.ini is missing: is --run-dir a directory `headlab train` wrote\\?\nexit status 1\n")
add_test(NAME cli.train_select_bleu_for_copy_exits_2
         COMMAND sh -c "\"$0\" train --select bleu --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.train_select_bleu_for_copy_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "--select: bleu is for task translate\; task copy has valid_loss or accuracy\nexit status 2\n")
