# Loading checks at the command line (docs/training.md, "Conventions of every command"): one bad checkpoint gives the same exit
# status 1 from every command that reads it; options needing more memory than there is are refused
# at once with the estimate (2); a checkpoint with NaN weights or a FIFO in its place is refused.
# Uses expect_exit from bad_input.cmake and the tiny copy run of tests/CMakeLists.txt.
set(HL $<TARGET_FILE:headlab_cli>)
set(LOAD_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_loading)
set(TINY ${CMAKE_CURRENT_BINARY_DIR}/cli_train_run/checkpoint.safetensors)
set(EDIT "python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/edit_checkpoint.py")
file(MAKE_DIRECTORY ${LOAD_DIR})

# The damaged checkpoints, made once from the tiny copy run: options that do not validate (3 heads
# do not divide d_model 16), and every weight NaN.
add_test(NAME cli.loading_make_bad_checkpoints
         COMMAND sh -c "mkdir -p ${LOAD_DIR}/corrupt ${LOAD_DIR}/nan && ${EDIT} ${TINY} ${LOAD_DIR}/corrupt/checkpoint.safetensors options 'heads = 2' 'heads = 3' && ${EDIT} ${TINY} ${LOAD_DIR}/nan/checkpoint.safetensors nan")
set_tests_properties(cli.loading_make_bad_checkpoints PROPERTIES FIXTURES_REQUIRED tiny_run FIXTURES_SETUP bad_checkpoints)

# One corrupt checkpoint, six commands, one status (before: eval 1, heads and prune 2).
set(CORRUPT ${LOAD_DIR}/corrupt/checkpoint.safetensors)
expect_exit(cli.corrupt_checkpoint_eval_exits_1 1 "does not divide" ${HL} eval --run-dir ${LOAD_DIR}/corrupt)
expect_exit(cli.corrupt_checkpoint_decode_exits_1 1 "does not divide" ${HL} decode --run-dir ${LOAD_DIR}/corrupt --input "'1 2 3'")
expect_exit(cli.corrupt_checkpoint_heads_exits_1 1 "does not divide" ${HL} heads --checkpoint ${CORRUPT} --out ${LOAD_DIR}/h)
expect_exit(cli.corrupt_checkpoint_prune_exits_1 1 "does not divide" ${HL} prune --checkpoint ${CORRUPT} --out ${LOAD_DIR}/p)
expect_exit(cli.corrupt_checkpoint_translate_exits_1 1 "does not divide" "echo w1 |" ${HL} translate --checkpoint ${CORRUPT})
expect_exit(cli.corrupt_checkpoint_generate_exits_1 1 "does not divide" ${HL} generate --checkpoint ${CORRUPT} --prompt-ids 1)
# NaN weights are named (before: "exact match 0.000", exit 0).
expect_exit(cli.nan_checkpoint_eval_exits_1 1 "tensor 'model\\.[^']+' .* non-finite" ${HL} eval --run-dir ${LOAD_DIR}/nan)
expect_exit(cli.nan_checkpoint_heads_exits_1 1 "non-finite" ${HL} heads --checkpoint ${LOAD_DIR}/nan/checkpoint.safetensors --out ${LOAD_DIR}/hn)
foreach(name corrupt_checkpoint_eval corrupt_checkpoint_decode corrupt_checkpoint_heads corrupt_checkpoint_prune
             corrupt_checkpoint_translate corrupt_checkpoint_generate nan_checkpoint_eval nan_checkpoint_heads)
  set_tests_properties(cli.${name}_exits_1 PROPERTIES FIXTURES_REQUIRED bad_checkpoints)
endforeach()

# A FIFO as the checkpoint: refused at once (before: open() blocked forever).
expect_exit(cli.fifo_checkpoint_exits_1 1 "not a regular file \\(a FIFO\\)"
            "rm -f ${LOAD_DIR}/fifo && mkfifo ${LOAD_DIR}/fifo &&" ${HL} heads --checkpoint ${LOAD_DIR}/fifo)
set_tests_properties(cli.fifo_checkpoint_exits_1 PROPERTIES TIMEOUT 20)

# Options that need tens of GB: refused in well under a second with the estimate and its parts
# (before: 16-33 s of allocation, then a bare std::bad_alloc).
expect_exit(cli.train_layers_100000_refused_exits_2 2 "needs about [0-9.]+ GB \\(activations|evaluation.*--max-memory"
            ${HL} train --layers 100000 --steps 1)
expect_exit(cli.train_wide_model_refused_exits_2 2 "needs about [0-9.]+ GB" ${HL} train --d-model 8192 --ff 32768
            --layers 12 --heads 8 --steps 1 --max-memory 16G)
expect_exit(cli.train_bad_max_memory_exits_2 2 "--max-memory: 'lots' is not a memory size" ${HL} train --max-memory lots --steps 1)
set_tests_properties(cli.train_layers_100000_refused_exits_2 cli.train_wide_model_refused_exits_2 PROPERTIES TIMEOUT 10)
