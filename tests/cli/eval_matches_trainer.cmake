# `headlab eval --data` scores a translation checkpoint as the trainer's own evaluation does (issue 18,
# item 4): the same weights on the same file give the same numbers, to the last digit (and an induction
# run's held-out sequences give its own, at the end).
#   cmake -DHL=<headlab> -DTOY=<fixtures/translate> -DWORK=<dir> -P this
# A tiny run validates (and tests) on toy_valid.tsv every 20 steps up to 160; its best BLEU is at step
# 120, so the two checkpoints hold different weights. Then
#   checkpoint.safetensors (step 160) --data toy_valid.tsv  = the metrics.jsonl row of step 160
#   best.safetensors                  --data toy_valid.tsv  = summary.json's valid_loss, valid_bleu, best_step
#   best.safetensors, greedy / --beam 3                     = summary.json's test_bleu_greedy / test_bleu_beam
# --max-tokens 64 cuts the 20 pairs into several batches, as the trainer's validation loss does.
file(REMOVE_RECURSE ${WORK})
function(run_headlab out_var)
  execute_process(COMMAND ${HL} ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "headlab ${ARGN} exited with ${status}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
set(valid ${TOY}/toy_valid.tsv)
run_headlab(train_out train --task translate --train ${TOY}/toy_train.tsv --valid ${valid} --test ${valid} --beam 3
            --length-penalty 0.8 --d-model 32 --heads 4 --ff 64 --layers 1 --max-tokens 64 --steps 160 --eval-every 20
            --seed 3 --select bleu --progress none --run-dir ${WORK}/run
            --tokenizer word --pre-ln=false --dropout 0.1 --lr-factor 1)  # the toy run of the word-level defaults

# The step-160 row of metrics.jsonl (the last one that holds a validation loss).
file(STRINGS ${WORK}/run/metrics.jsonl rows)
foreach(row IN LISTS rows)
  string(JSON loss ERROR_VARIABLE no_loss GET "${row}" valid_loss)
  if(NOT no_loss)
    string(JSON row_step GET "${row}" step)
    set(row_loss ${loss})
    string(JSON row_bleu GET "${row}" valid_bleu)
  endif()
endforeach()
file(READ ${WORK}/run/summary.json summary)
foreach(key valid_loss valid_bleu best_step test_bleu_greedy test_bleu_beam)
  string(JSON summary_${key} GET "${summary}" ${key})
endforeach()
message(STATUS "trainer: step ${row_step} loss ${row_loss} BLEU ${row_bleu}; best step ${summary_best_step} "
               "loss ${summary_valid_loss} BLEU ${summary_valid_bleu}; test greedy ${summary_test_bleu_greedy}, "
               "beam ${summary_test_bleu_beam}")
if(NOT row_step EQUAL 160)
  message(FATAL_ERROR "the last evaluation of metrics.jsonl is at step '${row_step}', not 160")
endif()
if(summary_best_step EQUAL 160)
  message(FATAL_ERROR "the best weights are the last ones: the two checkpoints would not be told apart; pick a "
                      "--seed whose best BLEU comes before the last evaluation")
endif()
if(summary_test_bleu_beam EQUAL 0 OR summary_test_bleu_greedy EQUAL 0 OR row_bleu EQUAL 0)
  message(FATAL_ERROR "the toy run's BLEU is 0: equal BLEU would prove nothing; train it longer")
endif()

# eval ARGS... -> the JSON object's KEY values in <prefix>_<key>.
function(eval_json prefix)
  run_headlab(out eval ${ARGN} --json)
  foreach(key step loss bleu sentences)
    string(JSON value GET "${out}" ${key})
    set(${prefix}_${key} ${value} PARENT_SCOPE)
  endforeach()
  message(STATUS "eval ${ARGN}: ${out}")
endfunction()
function(expect_equal what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: eval gives '${got}', the trainer wrote '${want}'")
  endif()
endfunction()

eval_json(last --checkpoint ${WORK}/run/checkpoint.safetensors --data ${valid})
expect_equal("checkpoint.safetensors step" ${last_step} ${row_step})
expect_equal("checkpoint.safetensors sentences" ${last_sentences} 20)
expect_equal("checkpoint.safetensors loss (the step-160 row)" ${last_loss} ${row_loss})
expect_equal("checkpoint.safetensors greedy BLEU (the step-160 row)" ${last_bleu} ${row_bleu})

eval_json(best --checkpoint ${WORK}/run/best.safetensors --data ${valid})
expect_equal("best.safetensors step" ${best_step} ${summary_best_step})
expect_equal("best.safetensors loss (summary valid_loss)" ${best_loss} ${summary_valid_loss})
expect_equal("best.safetensors greedy BLEU (summary valid_bleu)" ${best_bleu} ${summary_valid_bleu})
expect_equal("best.safetensors greedy BLEU (summary test_bleu_greedy)" ${best_bleu} ${summary_test_bleu_greedy})

# --beam 3 with the run's own length penalty (0.8, not eval's usual 0.6) is the trainer's test beam.
eval_json(beam --checkpoint ${WORK}/run/best.safetensors --data ${valid} --beam 3)
expect_equal("best.safetensors beam-3 BLEU (summary test_bleu_beam)" ${beam_bleu} ${summary_test_bleu_beam})
# --run-dir RUN is RUN/checkpoint.safetensors.
eval_json(dir --run-dir ${WORK}/run --data ${valid})
expect_equal("--run-dir loss" ${dir_loss} ${row_loss})

# Induction: eval on the run's --eval-sequences held-out sequences gives its last metrics.jsonl row.
run_headlab(induction_out train --task induction --vocab 12 --length 6 --d-model 16 --heads 2 --steps 30
            --eval-every 30 --eval-sequences 16 --seed 3 --progress none --run-dir ${WORK}/induction)
file(STRINGS ${WORK}/induction/metrics.jsonl induction_rows)
list(GET induction_rows -1 induction_row)
run_headlab(out eval --run-dir ${WORK}/induction --sequences 16 --json)
message(STATUS "induction: trainer ${induction_row}; eval ${out}")
foreach(keys valid_loss:loss first_half_loss:first_half_loss repeated_loss:repeated_loss
             repeated_accuracy:repeated_accuracy)
  string(REPLACE ":" ";" keys ${keys})
  list(GET keys 0 trainer_key)
  list(GET keys 1 eval_key)
  string(JSON want GET "${induction_row}" ${trainer_key})
  string(JSON got GET "${out}" ${eval_key})
  expect_equal("induction ${eval_key}" ${got} ${want})
endforeach()
message(STATUS "EVAL-MATCHES-TRAINER")
