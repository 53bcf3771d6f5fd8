# `headlab heads` and `headlab prune` end to end on checkpoints of the three tasks (induction,
# copy, translate), and their bad input. Uses expect_exit from bad_input.cmake and the toy
# translation run of translate.cmake.
set(HL $<TARGET_FILE:headlab_cli>)
set(LAB ${CMAKE_CURRENT_BINARY_DIR}/cli_head_lab)

add_test(NAME cli.train_induction_small
         COMMAND headlab_cli train --task induction --vocab 16 --length 6 --d-model 32 --heads 2 --steps 120
                 --eval-every 60 --eval-sequences 64 --progress none --overwrite --run-dir ${LAB}/induction)
set_tests_properties(cli.train_induction_small PROPERTIES
                     PASS_REGULAR_EXPRESSION "trained 120 steps.*repeated half [0-9.]+ \\(accuracy"
                     FIXTURES_SETUP lab_induction)
add_test(NAME cli.train_copy_for_head_lab
         COMMAND headlab_cli train --steps 20 --d-model 16 --heads 2 --ff 32 --layers 1 --eval-every 20
                 --eval-sequences 32 --progress none --overwrite --run-dir ${LAB}/copy)
set_tests_properties(cli.train_copy_for_head_lab PROPERTIES FIXTURES_SETUP lab_copy)

# heads: the table names every site, and the CSV, the attention maps and the heatmaps are written.
add_test(NAME cli.heads_induction
         COMMAND sh -c "\"$0\" heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/induction_heads --overwrite &&
                        test -s ${LAB}/induction_heads/heads.csv && test -s ${LAB}/induction_heads/attention_maps.svg &&
                        test -s ${LAB}/induction_heads/heatmap_induction.svg && echo FILES-OK" ${HL})
set_tests_properties(cli.heads_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "layers.1.self_attn +1 .*FILES-OK" FIXTURES_REQUIRED lab_induction)
# The pictures read as a reader needs them (tests/cli/check_pictures.sh): axis titles, <s> as text,
# role scores on the panels, entropy on 0..ln 13 (the probe: <s> and a block of 6 twice), the
# scores on 0..1, no path in the titles.
add_test(NAME cli.heads_pictures
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_pictures.sh heads ${LAB}/induction_heads 13)
set_tests_properties(cli.heads_pictures PROPERTIES PASS_REGULAR_EXPRESSION "PICTURES-OK" DEPENDS cli.heads_induction
                     FIXTURES_REQUIRED lab_induction)
add_test(NAME cli.heads_copy_with_input
         COMMAND sh -c "\"$0\" heads --checkpoint ${LAB}/copy/checkpoint.safetensors --input '1 4 2 9' --overwrite &&
                        test -s ${LAB}/copy/heads/attention_maps.svg &&
                        grep -c 'decoder.layers.0.multihead_attn' ${LAB}/copy/heads/heads.csv" ${HL})
set_tests_properties(cli.heads_copy_with_input PROPERTIES
                     PASS_REGULAR_EXPRESSION "encoder.layers.0.self_attn.*\n2\n$" FIXTURES_REQUIRED lab_copy)
add_test(NAME cli.heads_translate_sentence
         COMMAND headlab_cli heads --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
                 --input "w1 w2 w3" --out ${LAB}/translate_heads --overwrite)
set_tests_properties(cli.heads_translate_sentence PROPERTIES
                     PASS_REGULAR_EXPRESSION "decoder.layers.0.multihead_attn" FIXTURES_REQUIRED toy_translate)

# heads: the sink over a chosen query range beside uniform attention's (first-half of a block of 6:
# queries 1..6), the largest logit and residual activation per module, in the CSV too; and under a
# window set at evaluation (--window 3 --sinks 1), which the output names.
add_test(NAME cli.heads_sink_queries_and_window
         COMMAND sh -c "\"$0\" heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/induction_sinks --overwrite --sink-queries first-half --window 3 --sinks 1 &&
                        head -1 ${LAB}/induction_sinks/heads.csv && grep -c ',1:7,' ${LAB}/induction_sinks/heads.csv" ${HL})
set_tests_properties(cli.heads_sink_queries_and_window PROPERTIES
                     PASS_REGULAR_EXPRESSION "a window of 3 \\+ 1 sinks \\(set at evaluation\; trained with the whole causal prefix\\).*sink mass on queries 1:7 per module.*layers.1.self_attn +max [0-9.]+ \\(head [01], [0-9.]+x uniform\\), mean [0-9.]+\; uniform [0-9.]+\; max logit [0-9.-]+ \\(head [01]\\)\; max \\|residual\\| [0-9.]+\n.*,sink_queries,max_logit,max_residual,[^\n]*\n4\n$"
                     FIXTURES_REQUIRED lab_induction)
# A window that hides key 0 from every query of the range: sink mass 0, no ratio to a zero baseline.
add_test(NAME cli.heads_window_hides_key_zero
         COMMAND headlab_cli heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/induction_hidden
                 --overwrite --window 3 --sink-queries 5:13)
set_tests_properties(cli.heads_window_hides_key_zero PROPERTIES
                     PASS_REGULAR_EXPRESSION "layers.1.self_attn +max 0.000 \\(head 0, key 0 hidden from these queries\\), mean 0.000\; uniform 0.000"
                     FAIL_REGULAR_EXPRESSION "inf|nan"
                     FIXTURES_REQUIRED lab_induction)
# eval: a window set at evaluation changes the score and is in the JSON; the trained attention is
# reported too (window 0).
add_test(NAME cli.eval_window_override
         COMMAND sh -c "\"$0\" eval --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 64 --json &&
                        \"$0\" eval --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 64 --window 3 --json &&
                        \"$0\" eval --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 64 --window 3 --sinks 1" ${HL})
set_tests_properties(cli.eval_window_override PROPERTIES
                     PASS_REGULAR_EXPRESSION "\"step\":120,.*,\"window\":0,\"sinks\":0}\n.*\"step\":120,.*,\"window\":3,\"sinks\":0}\nattention: a window of 3 \\+ 1 sinks"
                     FIXTURES_REQUIRED lab_induction)
expect_exit(cli.eval_sinks_without_window_exits_2 2 "--sinks 2 needs --window W > 0"
            ${HL} eval --checkpoint ${LAB}/induction/checkpoint.safetensors --sinks 2)
expect_exit(cli.heads_sink_queries_past_the_probe_exits_2 2 "--sink-queries: 40:50 holds no query of the probe's 13 positions"
            ${HL} heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/never_made --sink-queries 40:50)
expect_exit(cli.heads_sink_queries_unknown_exits_2 2 "--sink-queries: 'middle' is not all, first-half, second-half or A:B"
            ${HL} heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/never_made --sink-queries middle)
set_tests_properties(cli.eval_sinks_without_window_exits_2 cli.heads_sink_queries_past_the_probe_exits_2
                     cli.heads_sink_queries_unknown_exits_2 PROPERTIES FIXTURES_REQUIRED lab_induction)
expect_exit(cli.eval_window_on_encoder_decoder_exits_2 2 "a 'copy' checkpoint is an encoder-decoder"
            ${HL} eval --checkpoint ${LAB}/copy/checkpoint.safetensors --window 4)
expect_exit(cli.explore_window_on_encoder_decoder_exits_2 2 "a 'copy' checkpoint is an encoder-decoder"
            ${HL} explore --checkpoint ${LAB}/copy/checkpoint.safetensors --window 4 --out ${LAB}/never.html)
set_tests_properties(cli.eval_window_on_encoder_decoder_exits_2 cli.explore_window_on_encoder_decoder_exits_2
                     PROPERTIES FIXTURES_REQUIRED lab_copy)
expect_exit(cli.heads_sinks_without_window_exits_2 2 "--sinks 2 needs --window W > 0"
            ${HL} heads --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/never_made --sinks 2)
set_tests_properties(cli.heads_sinks_without_window_exits_2 PROPERTIES FIXTURES_REQUIRED lab_induction)

# prune: both curves from no head to every head, and the files.
add_test(NAME cli.prune_induction
         COMMAND sh -c "\"$0\" prune --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 64 --out ${LAB}/prune --overwrite &&
                        test -s ${LAB}/prune/prune.svg && test -s ${LAB}/prune/importance.svg && grep -c '^random-1,' ${LAB}/prune/prune.csv &&
                        sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_pictures.sh prune ${LAB}/prune 5" ${HL})
# 4 heads at 10% a step: 0, 1, 2, 3, 4 pruned -> 5 rows of each of the 5 random orders (the default).
set_tests_properties(cli.prune_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "repeated-half accuracy.*(By importance, [1-9] of 4 heads|By importance, all 4|Pruning even).*\n5\nPICTURES-OK\n$"
                     FIXTURES_REQUIRED lab_induction)
# --random-orders 2: two orders, a band; the same seed gives the same file.
add_test(NAME cli.prune_random_orders
         COMMAND sh -c "\"$0\" prune --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 32 --random-orders 2 --seed 7 --out ${LAB}/prune_orders_a --overwrite > /dev/null &&
                        \"$0\" prune --checkpoint ${LAB}/induction/checkpoint.safetensors --sequences 32 --random-orders 2 --seed 7 --out ${LAB}/prune_orders_b --overwrite > /dev/null &&
                        cmp ${LAB}/prune_orders_a/prune.csv ${LAB}/prune_orders_b/prune.csv && sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_pictures.sh prune ${LAB}/prune_orders_a 2" ${HL})
set_tests_properties(cli.prune_random_orders PROPERTIES PASS_REGULAR_EXPRESSION "PICTURES-OK" FIXTURES_REQUIRED lab_induction)
expect_exit(cli.prune_zero_random_orders_exits_2 2 "--random-orders" ${HL} prune --checkpoint ${LAB}/copy/checkpoint.safetensors --random-orders 0)
add_test(NAME cli.prune_translate
         COMMAND headlab_cli prune --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors
                 --step 0.5 --out ${LAB}/translate_prune --overwrite)
set_tests_properties(cli.prune_translate PROPERTIES PASS_REGULAR_EXPRESSION "pruning 12 heads of .*metric: BLEU"
                     FIXTURES_REQUIRED toy_translate)
expect_exit(cli.prune_importance_split_translate_exits_2 2 "--importance-split draws a second set of held-out sequences.* is a translate model"
            ${HL} prune --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors --importance-split
            --out ${LAB}/translate_prune_split)
set_tests_properties(cli.prune_importance_split_translate_exits_2 PROPERTIES FIXTURES_REQUIRED toy_translate)

# Bad input.
expect_exit(cli.heads_missing_checkpoint_exits_1 1 "no-such.safetensors" ${HL} heads --checkpoint ${LAB}/no-such.safetensors)
expect_exit(cli.heads_block_too_long_exits_2 2 "block 50 gives sequences of 101 ids"
            ${HL} heads --checkpoint ${LAB}/copy/checkpoint.safetensors --block 50)
expect_exit(cli.heads_bad_input_token_exits_2 2 "'99' is not a token id"
            ${HL} heads --checkpoint ${LAB}/copy/checkpoint.safetensors --input 99)
expect_exit(cli.prune_zero_step_exits_2 2 "--step" ${HL} prune --checkpoint ${LAB}/copy/checkpoint.safetensors --step 0)
set_tests_properties(cli.heads_block_too_long_exits_2 cli.heads_bad_input_token_exits_2 cli.prune_zero_step_exits_2
                     cli.prune_zero_random_orders_exits_2 PROPERTIES FIXTURES_REQUIRED lab_copy)

# prune on a copy-task checkpoint, and a sweep over the induction task (the third task ablate runs).
add_test(NAME cli.prune_copy
         COMMAND headlab_cli prune --checkpoint ${LAB}/copy/checkpoint.safetensors --sequences 64 --step 0.5
                 --out ${LAB}/copy_prune --overwrite)
set_tests_properties(cli.prune_copy PROPERTIES PASS_REGULAR_EXPRESSION "pruning 6 heads of .*metric: exact match"
                     FIXTURES_REQUIRED lab_copy)
add_test(NAME cli.ablate_induction
         COMMAND sh -c "rm -rf ${LAB}/sweep && \"$0\" ablate --out ${LAB}/sweep --grid layers=1,2 --seeds 1,2 -j 2 -- --task induction --vocab 16 --length 6 --d-model 16 --heads 2 --steps 20 --eval-sequences 16 &&
                        cat ${LAB}/sweep/summary.csv" ${HL})
set_tests_properties(cli.ablate_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "layers,n,valid_loss_mean,valid_loss_std,valid_accuracy_mean.*\n1,2,[0-9.]+,[0-9.]+,.*\n2,2,")

# composition: Q-, K- and V-composition of every layer-0 head with every layer-1 head, the CSV and
# the three heatmaps; refused for an encoder-decoder (exit 2) and over an earlier output without
# --overwrite (exit 2), before anything is written.
add_test(NAME cli.composition_induction
         COMMAND sh -c "rm -rf ${LAB}/induction_composition &&
                        \"$0\" composition --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/induction_composition &&
                        head -1 ${LAB}/induction_composition/composition.csv &&
                        grep -c '^0,[01],1,[01],' ${LAB}/induction_composition/composition.csv &&
                        test -s ${LAB}/induction_composition/composition_k.svg && echo FILES-OK" ${HL})
set_tests_properties(cli.composition_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "random baseline Q 0\\.[0-9]+, K 0\\.[0-9]+, V 0\\.[0-9]+\n.*  1\\.1 +Q 0\\.[01] .*writer_layer,writer_head,reader_layer,reader_head,q,k,v,baseline_q,baseline_k,baseline_v\n4\nFILES-OK"
                     FIXTURES_REQUIRED lab_induction)
expect_exit(cli.composition_existing_out_exits_2 2 "--overwrite"
            ${HL} composition --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/induction_composition)
set_tests_properties(cli.composition_existing_out_exits_2 PROPERTIES DEPENDS cli.composition_induction
                     FIXTURES_REQUIRED lab_induction)
expect_exit(cli.composition_encoder_decoder_exits_2 2 "decoder-only checkpoints"
            ${HL} composition --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${LAB}/copy_composition)
set_tests_properties(cli.composition_encoder_decoder_exits_2 PROPERTIES FIXTURES_REQUIRED lab_copy)

# patch and attribute (docs/circuits.md): the tables, CSVs and heatmaps of a small induction model
# and a copy model; refused (exit 2, nothing written) for a task without a corruption rule, a post-LN
# model (attribute), an earlier output without --overwrite, a slot on a task that has none.
add_test(NAME cli.patch_induction
         COMMAND sh -c "rm -rf ${LAB}/induction_patch &&
                        \"$0\" patch --checkpoint ${LAB}/induction/checkpoint.safetensors --rows 16 --out ${LAB}/induction_patch &&
                        head -1 ${LAB}/induction_patch/patch_heads.csv && grep -c '^blocks\\.[01]\\.attn,[01],' ${LAB}/induction_patch/patch_heads.csv &&
                        grep -c '^blocks\\.1\\.hook_resid_post,' ${LAB}/induction_patch/patch_residual.csv &&
                        test -s ${LAB}/induction_patch/patch_heads.svg && test -s ${LAB}/induction_patch/patch_residual.svg && echo FILES-OK" ${HL})
set_tests_properties(cli.patch_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "logit difference \\(clean answer - corrupted answer\\): clean -?[0-9.]+, corrupted -?[0-9.]+\n.*  layer 1 self +h0 -?[0-9.]+  h1 .*module,head,recovered\n4\n12\nFILES-OK"
                     FIXTURES_REQUIRED lab_induction)
add_test(NAME cli.attribute_induction
         COMMAND sh -c "rm -rf ${LAB}/induction_attribute &&
                        \"$0\" attribute --checkpoint ${LAB}/induction/checkpoint.safetensors --rows 16 --out ${LAB}/induction_attribute &&
                        cat ${LAB}/induction_attribute/logit_lens.csv && grep -c '^blocks\\.[01]\\.attn\\.head[01],' ${LAB}/induction_attribute/attribution.csv &&
                        test -s ${LAB}/induction_attribute/attribution.svg && echo FILES-OK" ${HL})
set_tests_properties(cli.attribute_induction PROPERTIES
                     PASS_REGULAR_EXPRESSION "the answer's logit -?[0-9.]+ = the terms below \\+ constant -?[0-9.]+ \\(largest gap over the rows [0-9.]+e[-+][0-9]+.*point,mean_rank,top1,top_tokens\nhook_embed,.*\nblocks\\.0\\.hook_resid_post,.*\nblocks\\.1\\.hook_resid_post,.*\n4\nFILES-OK"
                     FIXTURES_REQUIRED lab_induction)
add_test(NAME cli.patch_copy
         COMMAND sh -c "\"$0\" patch --checkpoint ${LAB}/copy/checkpoint.safetensors --rows 8 --out ${LAB}/copy_patch --overwrite &&
                        grep -c '^decoder\\.0\\.cross_attn,' ${LAB}/copy_patch/patch_heads.csv" ${HL})
set_tests_properties(cli.patch_copy PROPERTIES PASS_REGULAR_EXPRESSION "dec 0 cross .*\n2\n$" FIXTURES_REQUIRED lab_copy)
expect_exit(cli.attribute_post_ln_exits_2 2 "post-LN"
            ${HL} attribute --checkpoint ${LAB}/copy/checkpoint.safetensors --out ${LAB}/copy_attribute)
set_tests_properties(cli.attribute_post_ln_exits_2 PROPERTIES FIXTURES_REQUIRED lab_copy)
expect_exit(cli.patch_existing_out_exits_2 2 "--overwrite"
            ${HL} patch --checkpoint ${LAB}/induction/checkpoint.safetensors --rows 4 --out ${LAB}/induction_patch)
set_tests_properties(cli.patch_existing_out_exits_2 PROPERTIES DEPENDS cli.patch_induction FIXTURES_REQUIRED lab_induction)
expect_exit(cli.patch_slot_on_induction_exits_2 2 "--slot is for recall"
            ${HL} patch --checkpoint ${LAB}/induction/checkpoint.safetensors --slot 1 --out ${LAB}/induction_patch_slot)
set_tests_properties(cli.patch_slot_on_induction_exits_2 PROPERTIES FIXTURES_REQUIRED lab_induction)
expect_exit(cli.patch_rows_0_exits_2 2 "--rows"
            ${HL} patch --checkpoint ${LAB}/induction/checkpoint.safetensors --rows 0 --out ${LAB}/induction_patch_0)
# translate: the run's validation file has no gold links (exit 2, naming it); with --data of the same
# pairs and links i-i, each row has a source word replaced, read at its own decoder position.
expect_exit(cli.patch_translate_without_links_exits_2 2 "toy_valid.tsv has two aligned source words"
            ${HL} patch --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors --out ${LAB}/translate_patch)
set_tests_properties(cli.patch_translate_without_links_exits_2 PROPERTIES FIXTURES_REQUIRED toy_translate)
add_test(NAME cli.patch_translate
         COMMAND sh -c "sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/identity_alignment.sh ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/translate/toy_valid.tsv ${LAB}/toy_aligned.tsv &&
                        \"$0\" patch --checkpoint ${CMAKE_CURRENT_BINARY_DIR}/cli_translate_run/best.safetensors --data ${LAB}/toy_aligned.tsv --out ${LAB}/translate_patch --overwrite &&
                        grep -c '^decoder\\.0\\.cross_attn,' ${LAB}/translate_patch/patch_heads.csv" ${HL})
set_tests_properties(cli.patch_translate PROPERTIES FIXTURES_REQUIRED toy_translate
                     PASS_REGULAR_EXPRESSION "a source word replaced by another.*[0-9]+ pairs of toy_aligned.tsv.*each row's answer read where the decoder predicts it.*dec 0 cross .*\n4\n$")

# cache: every hook point's activation on one input as safetensors, read back by a reader of its own
# (tests/cli/safetensors_summary.py): the names in forward order with their shapes, the tokens in the
# metadata; --points keeps the names holding its text; refused without a match or over a file.
add_test(NAME cli.cache_induction
         COMMAND sh -c "\"$0\" cache --checkpoint ${LAB}/induction/checkpoint.safetensors --input '3 4 5 3 4 5' --out ${LAB}/cache.safetensors --overwrite &&
                        ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/cli/safetensors_summary.py ${LAB}/cache.safetensors" ${HL})
set_tests_properties(cli.cache_induction PROPERTIES FIXTURES_REQUIRED lab_induction
                     PASS_REGULAR_EXPRESSION "blocks.1.attn.hook_pattern +\\[1, 2, 6, 6\\].*wrote 20 activations of 6 tokens.*\nhook_embed F32 1x6x32\n.*blocks.1.attn.hook_result F32 1x6x2x32\n.*ln_final.hook_normalized F32 1x6x32\nmetadata checkpoint: induction\nmetadata tokens: 3 4 5 3 4 5\n$")
add_test(NAME cli.cache_copy_points
         COMMAND sh -c "\"$0\" cache --checkpoint ${LAB}/copy/checkpoint.safetensors --points cross_attn.hook_z --out ${LAB}/cache_copy.safetensors --overwrite" ${HL})
set_tests_properties(cli.cache_copy_points PROPERTIES FIXTURES_REQUIRED lab_copy
                     PASS_REGULAR_EXPRESSION "^  decoder.0.cross_attn.hook_z +\\[1, 2, [0-9]+, 8\\]\nwrote 1 activations")
expect_exit(cli.cache_no_point_exits_2 2 "no hook point's name holds 'hook_nothing'"
            ${HL} cache --checkpoint ${LAB}/induction/checkpoint.safetensors --points hook_nothing --out ${LAB}/cache_none.safetensors)
set_tests_properties(cli.cache_no_point_exits_2 PROPERTIES FIXTURES_REQUIRED lab_induction)
expect_exit(cli.cache_existing_out_exits_2 2 "--overwrite"
            ${HL} cache --checkpoint ${LAB}/induction/checkpoint.safetensors --out ${LAB}/cache.safetensors)
set_tests_properties(cli.cache_existing_out_exits_2 PROPERTIES DEPENDS cli.cache_induction FIXTURES_REQUIRED lab_induction)
