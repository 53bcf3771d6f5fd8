# headlab train --task recall (multi-query associative recall, headlab/train/recall_task.hpp): a tiny
# run that two heads solve, eval --json, heads and prune on its checkpoint, refusals of sizes that
# make no task, and the head-count study's recipe (docs/studies/head-count-recall.md) in a quick form.
# Included from tests/CMakeLists.txt.
set(RECALL_RUN ${CMAKE_CURRENT_BINARY_DIR}/cli_recall_run)
set(RECALL_TINY --task recall --keys 4 --values 2 --length 2 --d-model 16 --heads 2 --steps 300 --batch 32
                --eval-every 300 --eval-sequences 64)
add_test(NAME cli.recall_train_tiny
         COMMAND $<TARGET_FILE:headlab_cli> train ${RECALL_TINY} --progress none --run-dir ${RECALL_RUN} --overwrite)
set_tests_properties(cli.recall_train_tiny PROPERTIES FIXTURES_SETUP recall_run
                     PASS_REGULAR_EXPRESSION "trained 300 steps in [^\n]*answers right (0\\.9[5-9]|1\\.000)")
add_test(NAME cli.recall_eval_json
         COMMAND $<TARGET_FILE:headlab_cli> eval --run-dir ${RECALL_RUN} --json --sequences 64)
set_tests_properties(cli.recall_eval_json PROPERTIES FIXTURES_REQUIRED recall_run
                     PASS_REGULAR_EXPRESSION "\"task\":\"recall\",\"step\":300,\"sequences\":64,\"loss\":[0-9.e-]+,\"answer_accuracy\":(0\\.9[5-9]|1)")
add_test(NAME cli.recall_heads_and_prune
         COMMAND sh -c "\"$0\" heads --checkpoint \"$1/checkpoint.safetensors\" --overwrite && \"$0\" prune --checkpoint \"$1/checkpoint.safetensors\" --sequences 32 --random-orders 2 --overwrite"
                 $<TARGET_FILE:headlab_cli> ${RECALL_RUN})
set_tests_properties(cli.recall_heads_and_prune PROPERTIES FIXTURES_REQUIRED recall_run
                     PASS_REGULAR_EXPRESSION "recall task, step 300.*layers.0.self_attn +1 .*answer accuracy")
# heads on a recall checkpoint also says where each head looks among a query's keys (recall_keys.csv)
add_test(NAME cli.recall_heads_key_mass
         COMMAND sh -c "\"$0\" heads --checkpoint \"$1/checkpoint.safetensors\" --out \"$1/heads_keys\" --overwrite && head -n 2 \"$1/heads_keys/recall_keys.csv\" && grep -c . \"$1/heads_keys/recall_share.csv\""
                 $<TARGET_FILE:headlab_cli> ${RECALL_RUN})
set_tests_properties(cli.recall_heads_key_mass PROPERTIES FIXTURES_REQUIRED recall_run
                     PASS_REGULAR_EXPRESSION "on 128 held-out queries .*key a +key b +named +focus +share.*layers.0.self_attn +1 .*site,layer,head,queries,mass_key1,mass_key2,named,focus\nlayers.0.self_attn,0,0,128,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+\n21\n")
# prune --single-heads: each head alone zeroed, one row per head in single_heads.csv, the worst drop named
# (with --importance-split: the importance order from a second draw of held-out sequences)
add_test(NAME cli.recall_prune_single_heads
         COMMAND sh -c "\"$0\" prune --checkpoint \"$1/checkpoint.safetensors\" --out \"$1/prune_single\" --sequences 32 --random-orders 1 --single-heads --importance-split --step 0.01 --overwrite && cat \"$1/prune_single/single_heads.csv\""
                 $<TARGET_FILE:headlab_cli> ${RECALL_RUN})
set_tests_properties(cli.recall_prune_single_heads PROPERTIES FIXTURES_REQUIRED recall_run
                     PASS_REGULAR_EXPRESSION "each head alone zeroed: the largest answer accuracy drop is [0-9.-]+ \\(layers.0.self_attn#[01]\; full model [0-9.]+\\)\; wrote single_heads.csv.*site,head,loss,metric,metric_drop,loss_rise\nlayers.0.self_attn,0,[^\n]*\nlayers.0.self_attn,1,[^\n]*\n$")
# --train-sequences: stored in the config, named in the log; the task's other flag refuses other tasks
add_test(NAME cli.recall_train_sequences
         COMMAND sh -c "\"$0\" train --task recall --train-sequences 20 --keys 4 --values 2 --length 2 --d-model 16 --steps 2 --progress none --print-config | grep '^train-sequences=' && \"$0\" train --task recall --train-sequences 20 --keys 4 --values 2 --length 2 --d-model 16 --steps 2 --eval-every 2 && \"$0\" train --task lm --train-sequences 5 --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.recall_train_sequences PROPERTIES
                     PASS_REGULAR_EXPRESSION "train-sequences=20\n.*a training set of 20 sequences.*training set: answers right [0-9.]+.*--train-sequences is for --task recall\; this run's task is lm[^\n]*\nexit status 2\n")
# --unordered-answer: the run log and the config say so; the task's other flag refuses other tasks
add_test(NAME cli.recall_unordered_answer
         COMMAND sh -c "\"$0\" train --task recall --unordered-answer --keys 4 --values 2 --length 2 --d-model 16 --steps 2 --progress none --print-config && \"$0\" train --task copy --unordered-answer --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.recall_unordered_answer PROPERTIES
                     PASS_REGULAR_EXPRESSION "unordered-answer=true.*--unordered-answer is for --task recall\; this run's task is copy[^\n]*\nexit status 2\n")
add_test(NAME cli.recall_too_few_keys_exits_2
         COMMAND sh -c "\"$0\" train --task recall --keys 3 --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.recall_too_few_keys_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "--keys: 3 keys cannot give 8 distinct keys \\(--length\\)\nexit status 2\n")
add_test(NAME cli.recall_flag_on_copy_exits_2
         COMMAND sh -c "\"$0\" train --task copy --relations 3 --steps 1 2>&1; echo \"exit status $?\"" $<TARGET_FILE:headlab_cli>)
set_tests_properties(cli.recall_flag_on_copy_exits_2 PROPERTIES
                     PASS_REGULAR_EXPRESSION "--relations is for --task recall\; this run's task is copy[^\n]*\nexit status 2\n")
# The study's one command, shrunk: both variants (fixed compute, fixed head size) x heads 1, 2, one
# seed, a few steps; the summary has a row per cell with the accuracy the chart draws.
set(RECALL_STUDY ${CMAKE_CURRENT_BINARY_DIR}/cli_recall_study)
add_test(NAME cli.recall_study_quick
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" ablate --out \"$1\" --grid head_dim=compute,4 --grid heads=1,2 --seeds 1 --metric valid_accuracy -j 2 -- --task recall --d-model 8 --values 4 --keys 8 --length 4 --steps 20 --eval-every 20 --eval-sequences 32 && test $(grep -c '^[a-z0-9]*,[12],1,' \"$1/summary.csv\") -eq 4 && head -n 1 \"$1/summary.csv\" && grep -c 'valid_accuracy' \"$1/chart.svg\""
                 $<TARGET_FILE:headlab_cli> ${RECALL_STUDY})
set_tests_properties(cli.recall_study_quick PROPERTIES
                     PASS_REGULAR_EXPRESSION "head_dim,heads,n,[^\n]*valid_accuracy_mean[^\n]*slot_accuracy_mean")
