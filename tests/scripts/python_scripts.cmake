# The Python helpers that need no build: the showcase writer, bench/bpe.py and the showcase
# check of the corpus builder. Included from tests/CMakeLists.txt.
#
# Which python: the scripts' own #! line is /usr/bin/python3 (Debian's, with nltk and torch for the
# twins), so that one first; the python3 on PATH where it is missing (these three need only the
# standard library). find_program looks in HINTS before PATH.
find_program(HEADLAB_PYTHON3 NAMES python3 HINTS /usr/bin REQUIRED)

# docs/tools/update_readme_showcase.py on tests/fixtures/showcase/: the expected README, a second run
# that changes nothing, and each bad input refused with one line (tests/scripts/update_readme_showcase_test.py).
add_test(NAME scripts.update_readme_showcase
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/update_readme_showcase_test.py
                 ${PROJECT_SOURCE_DIR}/docs/tools/update_readme_showcase.py ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/showcase
                 ${CMAKE_CURRENT_BINARY_DIR}/update_readme_showcase)
set_tests_properties(scripts.update_readme_showcase PROPERTIES PASS_REGULAR_EXPRESSION "\nall passed\n")

# bench/bpe.py, the twin's BPE: hand-checked encodings and a round trip on datasets/de-en/test.tsv.
# (The cross-check against `headlab tokenize --merges` comes with that command.)
add_test(NAME bench.bpe_py_self_test COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/bench/bpe.py --self-test)
set_tests_properties(bench.bpe_py_self_test PROPERTIES PASS_REGULAR_EXPRESSION "^bpe self-test: all checks pass")

# datasets/de-en/showcase.txt: no German side of it is a German side of any split (MANIFEST.md).
add_test(NAME data.showcase_not_in_corpus
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/datasets/de-en/build_de_en.py --check-showcase
                 --out ${PROJECT_SOURCE_DIR}/datasets/de-en)
set_tests_properties(data.showcase_not_in_corpus PROPERTIES
                     PASS_REGULAR_EXPRESSION "^showcase.txt: 20 pairs, no German side is one of")

# docs/tools/update_readme_studies.py on write-ups made by the test: the study index in study
# order, idempotent, and each bad input refused with one line (tests/scripts/update_readme_studies_test.py).
add_test(NAME scripts.update_readme_studies
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/update_readme_studies_test.py
                 ${PROJECT_SOURCE_DIR}/docs/tools/update_readme_studies.py ${CMAKE_CURRENT_BINARY_DIR}/update_readme_studies)
set_tests_properties(scripts.update_readme_studies PROPERTIES PASS_REGULAR_EXPRESSION "\nall passed\n")
# The study index (docs/studies/README.md) lists every write-up of docs/studies/ as the write-ups say.
add_test(NAME docs.readme_studies_up_to_date
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/update_readme_studies.py --check)
set_tests_properties(docs.readme_studies_up_to_date PROPERTIES PASS_REGULAR_EXPRESSION "up to date")

# The README's claims table, from the claim lines of the write-ups (docs/tools/update_readme_claims.py),
# and the script itself on write-ups made by its test.
add_test(NAME docs.readme_claims_up_to_date
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/update_readme_claims.py --check)
set_tests_properties(docs.readme_claims_up_to_date PROPERTIES PASS_REGULAR_EXPRESSION "up to date")
add_test(NAME scripts.update_readme_claims
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/update_readme_claims_test.py
                 ${PROJECT_SOURCE_DIR}/docs/tools/update_readme_claims.py ${CMAKE_CURRENT_BINARY_DIR}/update_readme_claims)
set_tests_properties(scripts.update_readme_claims PROPERTIES PASS_REGULAR_EXPRESSION "^all passed")

# README.md and docs/: every relative link resolves, every `headlab COMMAND` of the README is a command
# of `headlab --help`, every tutorial it names is built (tests/docs/check_docs.py).
add_test(NAME docs.links_and_commands
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_docs.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:headlab_cli> ${PROJECT_BINARY_DIR}/tutorials)
set_tests_properties(docs.links_and_commands PROPERTIES PASS_REGULAR_EXPRESSION "^docs: [0-9]+ links")
# docs/engine.md has a row for every op of ops.hpp, with its current file and line
# (docs/tools/op_table.py --check).
add_test(NAME docs.op_table_complete COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/op_table.py --check)
set_tests_properties(docs.op_table_complete PROPERTIES PASS_REGULAR_EXPRESSION "the op table is up to date")

# datasets/grammar-de-en: deterministic, the committed files equal a fresh build, no German sentence
# in two splits, every alignment link in range and every word linked (tests/data/grammar_corpus_test.py).
add_test(NAME data.grammar_corpus COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/data/grammar_corpus_test.py
                                          ${PROJECT_SOURCE_DIR})
set_tests_properties(data.grammar_corpus PROPERTIES PASS_REGULAR_EXPRESSION "all checks pass")

# Each study's page, summary.csv, comparisons.csv and charts are what its raw runs.csv gives
# (docs/studies/<study>/report.py --check, Debian's python3-scipy: setup.sh --with-scipy; skipped
# without it, a failure in CI where HEADLAB_REQUIRE_SCIPY=1). Test docs.study_<study>_tables.
foreach(study head-count-grammar head-count-recall induction-heads induction-phase-change induction-sink
              text-head-roles lm-sink free-lunch gate-sink-lr-sink gate-sink-lr-rate gate-sink-lr-lm-sink gate-sink-lr-lm-loss circuits-trained
              gate-lr-sweep pruning pruning-full-corpus recall-averaging)
  string(REPLACE "-" "_" name ${study})
  add_test(NAME docs.study_${name}_tables COMMAND ${PROJECT_SOURCE_DIR}/docs/studies/${study}/report.py --check)
  set_tests_properties(docs.study_${name}_tables PROPERTIES PASS_REGULAR_EXPRESSION "agree with runs.csv"
                       SKIP_RETURN_CODE 77)
endforeach()

# The translation studies' baseline (an English-side count bigram): each baseline.csv, and a recipe's
# chart line, are what a fresh count over the trainer's own target ids gives
# (docs/studies/translation_baseline.py). The whole corpus learns its BPE first (15 s): not under the
# sanitizers.
set(baseline_studies head-count)
if(NOT HEADLAB_SANITIZE)
  list(APPEND baseline_studies head-count-full-corpus)
endif()
foreach(study IN LISTS baseline_studies)
  string(REPLACE "-" "_" name ${study})
  add_test(NAME docs.study_${name}_baseline
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/studies/translation_baseline.py
                   docs/studies/${study}/recipe.ini --check --headlab $<TARGET_FILE:headlab_cli>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.study_${name}_baseline PROPERTIES PASS_REGULAR_EXPRESSION "agrees with baseline.csv")
endforeach()

# Every study recipe (docs/studies/*/recipe.ini) pins every option `headlab train` has, with the
# value it is read as: a default changed later cannot change a study (tests/docs/check_recipes.py);
# and the check sees a recipe with one line taken out.
file(GLOB HEADLAB_STUDY_RECIPES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/studies/*/recipe.ini)
add_test(NAME docs.study_recipes_pin_every_option
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_recipes.py $<TARGET_FILE:headlab_cli>
                 ${HEADLAB_STUDY_RECIPES}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.study_recipes_pin_every_option PROPERTIES PASS_REGULAR_EXPRESSION "^recipes: [1-9][0-9]* recipes pin all")
add_test(NAME docs.study_recipes_check_sees_an_unpinned_option
         COMMAND sh -c "grep -v '^warmup=' \"$1\" > \"$2\" && \"$3\" \"$4\" \"$0\" \"$2\"; echo \"exit status $?\""
                 $<TARGET_FILE:headlab_cli> ${PROJECT_SOURCE_DIR}/docs/studies/head-count-grammar/recipe.ini
                 ${CMAKE_CURRENT_BINARY_DIR}/recipe_without_warmup.ini ${HEADLAB_PYTHON3}
                 ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_recipes.py
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.study_recipes_check_sees_an_unpinned_option PROPERTIES
                     PASS_REGULAR_EXPRESSION "option warmup is not pinned \\(resolved today to [0-9]+\\)\nexit status 1\n")
# The measuring tools the studies' scripts call (heads, patch, prune, eval, ...) run with every option
# that can change a number pinned in docs/studies/study_runs.py (PINNED_TOOL_OPTIONS): a tool's option
# that is neither pinned nor listed as not pinned (a new one), a pinned option the tool lost, or a
# study script that calls headlab without tool_command is named (tests/docs/check_tool_pins.py);
# and the check sees the table with one option taken out.
add_test(NAME docs.study_tool_options_pinned
         COMMAND ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_tool_pins.py $<TARGET_FILE:headlab_cli>
                 ${PROJECT_SOURCE_DIR}/docs/studies
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.study_tool_options_pinned PROPERTIES PASS_REGULAR_EXPRESSION "tool pins: [1-9][0-9]* tools")
add_test(NAME docs.study_tool_pins_check_sees_an_unpinned_option
         COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" --unpin heads --sink-queries; echo \"exit status $?\""
                 ${HEADLAB_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_tool_pins.py $<TARGET_FILE:headlab_cli>
                 ${PROJECT_SOURCE_DIR}/docs/studies
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.study_tool_pins_check_sees_an_unpinned_option PROPERTIES
                     PASS_REGULAR_EXPRESSION "headlab heads: option --sink-queries is not pinned \\(its default today: all\\)[^\n]*\nexit status 1\n")
# docs/tools/replicate_verdicts.py on study 1's quick form: the runs trained again, both sides'
# comparisons through the C++ statistics, the committed verdict (confirmed) beside the replicated one
# (20 steps and 2 seeds cannot confirm it: the difference is marked), verdicts.csv written; --set
# changes a pinned option in the rerun's copy of the recipe, and refuses a key the recipe lacks; runs
# that would land in the study's own folder (its committed CSVs) are refused before any training.
add_test(NAME docs.replicate_verdicts_quick
         COMMAND sh -c "rm -rf \"$3\" && \"$0\" \"$1\" \"$2\" --quick --jobs 1 --set heads-in-place=true --runs \"$3/runs\" --out \"$3/out\" --headlab \"$4\"; echo \"exit status $?\"; head -n 2 \"$3/out/verdicts.csv\"; wc -l < \"$3/out/induction-heads/runs.csv\"; grep -c '^heads-in-place=true$' \"$3/runs/induction-heads.recipe.ini\"; \"$0\" \"$1\" \"$2\" --quick --set no-such-option=1 --runs \"$3/runs\"; \"$0\" \"$1\" \"$2\" --quick --runs \"$(dirname \"$(dirname \"$2\")\")\""
                 ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/replicate_verdicts.py
                 ${PROJECT_SOURCE_DIR}/docs/studies/induction-heads/recipe.ini ${CMAKE_CURRENT_BINARY_DIR}/replicate_quick
                 $<TARGET_FILE:headlab_cli>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.replicate_verdicts_quick PROPERTIES
                     PASS_REGULAR_EXPRESSION "induction-heads: 2-layer vs 1-layer on repeated_accuracy: committed [+]0[.]7[0-9]+ \\[[^\n]*\\], confirmed\; replicated [^\n]+ <- VERDICT DIFFERS\n.*exit status 1\nstudy,comparison,metric,committed_difference,[^\n]*\ninduction-heads,2-layer vs 1-layer,repeated_accuracy,[+]0[.]7[^\n]*,no\n7\n1\n.*no-such-option: not a pinned \\[train\\] option of this recipe.*--runs would put the replication into the study's own folder")
# --measure: study 21's gap part in its quick form, measured by the measure.py it shares with part A
# (headlab prune on every run), judged from the runs.csv it writes; a study whose measure.py takes
# another command line is refused before any run trains.
add_test(NAME docs.replicate_verdicts_measure_quick
         COMMAND sh -c "rm -rf \"$3\" && \"$0\" \"$1\" \"$2/ensemble-robustness-gap/recipe.ini\" --measure --quick --jobs 2 --runs \"$3/runs\" --out \"$3/out\" --headlab \"$4\" > /dev/null; echo \"exit status $?\"; cut -d, -f1-3 \"$3/out/verdicts.csv\"; head -n 1 \"$3/out/ensemble-robustness-gap/runs.csv\"; cat \"$3/runs/ensemble-robustness-gap/commit.txt\"; \"$0\" \"$1\" \"$2/induction-heads/recipe.ini\" --measure --quick --runs \"$3/runs\" --headlab \"$4\""
                 ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/replicate_verdicts.py
                 ${PROJECT_SOURCE_DIR}/docs/studies ${CMAKE_CURRENT_BINARY_DIR}/replicate_measure_quick
                 $<TARGET_FILE:headlab_cli>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.replicate_verdicts_measure_quick PROPERTIES
                     PASS_REGULAR_EXPRESSION "exit status 1\nstudy,comparison,metric\nensemble-robustness-gap,gap-h16 vs gap-h4,gap\nensemble-robustness-gap,gap-h4 vs gap-h1,gap\nensemble-robustness-gap,gap-h16 vs gap-h4,worst_drop\ncell,[^\n]*,gap,worst_drop,median_drop,worst_head\n([0-9a-f]+(.changes)?|unrecorded)\n.*induction-heads: --measure: [^\n]*measure.py does not take the common command line")
# --measure on a study whose criteria live in its report.py (study 13's quick form): measure.py
# measures the new runs, `report.py --judge` judges them and the committed CSVs alike, one row per
# criterion and one for the page's verdict; every CSV measure.py wrote is kept beside them. A study
# whose measure.py reads another study's runs (17 reads 5's) is refused, before any training, unless
# that study comes first.
add_test(NAME docs.replicate_verdicts_criteria_quick
         COMMAND sh -c "rm -rf \"$3\" && \"$0\" \"$1\" \"$2/induction-sink/recipe.ini\" --measure --quick --jobs 2 --runs \"$3/runs\" --out \"$3/out\" --headlab \"$4\" > /dev/null; echo \"exit status $?\"; grep -c ',report.py criterion,' \"$3/out/verdicts.csv\"; grep 'page.s verdict' \"$3/out/verdicts.csv\" | cut -d, -f1-7; ls \"$3/out/induction-sink\"; \"$0\" \"$1\" \"$2/circuits-trained/recipe.ini\" --measure --quick --runs \"$3/runs2\" --headlab \"$4\"; ls \"$3/runs2\""
                 ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/tools/replicate_verdicts.py
                 ${PROJECT_SOURCE_DIR}/docs/studies ${CMAKE_CURRENT_BINARY_DIR}/replicate_criteria_quick
                 $<TARGET_FILE:headlab_cli>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.replicate_verdicts_criteria_quick PROPERTIES
                     PASS_REGULAR_EXPRESSION "exit status [01]\n5\ninduction-sink,the page's verdict,report.py verdict,,,,unresolved\nheads.csv\nruns.csv\n.*circuits-trained: --measure: its measure.py reads head-count-recall's runs too\; list docs/studies/head-count-recall/recipe.ini before it\n.*No such file or directory")
# The free-lunch study's measuring pipeline in its quick form (one T, two h, two steps); the bench
# is built only with HEADLAB_BUILD_BENCH.
if(HEADLAB_BUILD_BENCH)
  add_test(NAME docs.study_free_lunch_quick
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/docs/studies/free-lunch/measure.py --quick
                   --bench $<TARGET_FILE:bench_attention_step> --headlab $<TARGET_FILE:headlab_cli>
                   --out ${CMAKE_CURRENT_BINARY_DIR}/free_lunch_quick
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.study_free_lunch_quick PROPERTIES PASS_REGULAR_EXPRESSION "stats.csv: 2 runs")
  # bench/ab_pairs.py: two pairs of a 2-step copy bench (the same binary on both sides), and a bad count refused.
  add_test(NAME bench.ab_pairs
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/bench/ab_pairs.py $<TARGET_FILE:bench_train_step>
                   $<TARGET_FILE:bench_train_step> 2 copy 2 1 threads=1)
  set_tests_properties(bench.ab_pairs PROPERTIES PASS_REGULAR_EXPRESSION
                       "pair 2: old [0-9.]+ ms, new [0-9.]+ ms, new / old [0-9.]+\nmedian new / old [0-9.]+\; new faster in [0-2] of 2\n")
  add_test(NAME bench.ab_pairs_bad_count
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/bench/ab_pairs.py old new 0)
  add_test(NAME bench.ab_pairs_failing_program  # its exit status and stderr named, no traceback
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/bench/ab_pairs.py $<TARGET_FILE:bench_train_step>
                   $<TARGET_FILE:bench_train_step> 1 poetry)
  set_tests_properties(bench.ab_pairs_failing_program PROPERTIES PASS_REGULAR_EXPRESSION
                       "^ab_pairs: [^\n]*bench_train_step exited 2: bench_train_step: unknown configuration 'poetry'")
  set_tests_properties(bench.ab_pairs_bad_count PROPERTIES PASS_REGULAR_EXPRESSION "^usage: ab_pairs.py OLD NEW PAIRS")
endif()
add_test(NAME docs.study_head_count_full_corpus_recheck
         COMMAND ${PROJECT_SOURCE_DIR}/docs/studies/head-count-full-corpus/first-run/recheck.py --check)
set_tests_properties(docs.study_head_count_full_corpus_recheck PROPERTIES
                     PASS_REGULAR_EXPRESSION "agree with runs.csv" SKIP_RETURN_CODE 77)
# Studies 2, 3, 6, 8, 12, 18, 19 and 22 show `headlab study report`'s report.md: the page's block must equal it.
foreach(study kv-sharing-recall gate-lr-sweep gated-attention head-count recall-averaging head-count-full-corpus
              low-rank-wall pruning-recall)
  string(REPLACE "-" "_" name ${study})
  add_test(NAME docs.study_${name}_block
           COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_report_block.py
                   ${PROJECT_SOURCE_DIR}/docs/studies/${study}.md ${PROJECT_SOURCE_DIR}/docs/studies/${study}/report.md)
  set_tests_properties(docs.study_${name}_block PROPERTIES PASS_REGULAR_EXPRESSION "agrees with")
endforeach()
# Every committed report.md, summary.csv and comparisons.csv is what `study report --from-csv` makes
# of the committed runs.csv today; and the check sees one changed number in a copy of a study.
add_test(NAME docs.study_reports_regenerate
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_reports_regenerate.py
                 $<TARGET_FILE:headlab_cli> ${PROJECT_SOURCE_DIR}/docs/studies)
set_tests_properties(docs.study_reports_regenerate PROPERTIES PASS_REGULAR_EXPRESSION "^reports: [1-9][0-9]* regenerate")
add_test(NAME docs.study_reports_regenerate_sees_a_change
         COMMAND sh -c "rm -rf \"$3\" && mkdir -p \"$3\" && cp -r \"$2/kv-sharing-recall\" \"$3/\" && sed -i '2s/,a2a3477,1,/,a2a3477,0.5,/' \"$3/kv-sharing-recall/runs.csv\" && \"$0\" \"$1\" \"$4\" \"$3\"; echo \"exit status $?\""
                 ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_reports_regenerate.py
                 ${PROJECT_SOURCE_DIR}/docs/studies ${CMAKE_CURRENT_BINARY_DIR}/regenerate_changed $<TARGET_FILE:headlab_cli>)
set_tests_properties(docs.study_reports_regenerate_sees_a_change PROPERTIES
                     PASS_REGULAR_EXPRESSION "kv-sharing-recall/report.md: differs from what[^\n]*\n(kv-sharing-recall/[a-z]+.csv: differs[^\n]*\n)+exit status 1\n")
# The studies index shows the replicated verdicts (docs/tools/replicate_verdicts.py's verdicts.md).
add_test(NAME docs.studies_replication_block
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_report_block.py
                 ${PROJECT_SOURCE_DIR}/docs/studies/README.md
                 ${PROJECT_SOURCE_DIR}/docs/studies/replications/in-place-2026-12-07/verdicts.md)
set_tests_properties(docs.studies_replication_block PROPERTIES PASS_REGULAR_EXPRESSION "agrees with")
# Study 21's page shows its part A (ensemble-robustness-drop/report.md).
add_test(NAME docs.study_ensemble_robustness_block
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_report_block.py
                 ${PROJECT_SOURCE_DIR}/docs/studies/ensemble-robustness.md ${PROJECT_SOURCE_DIR}/docs/studies/ensemble-robustness-drop/report.md)
set_tests_properties(docs.study_ensemble_robustness_block PROPERTIES PASS_REGULAR_EXPRESSION "agrees with")
# Study 20's page shows its phase 2 (recall-lr-tuned/report.md).
add_test(NAME docs.study_recall_lr_tuning_block
         COMMAND ${HEADLAB_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/docs/check_report_block.py
                 ${PROJECT_SOURCE_DIR}/docs/studies/recall-lr-tuning.md ${PROJECT_SOURCE_DIR}/docs/studies/recall-lr-tuned/report.md)
set_tests_properties(docs.study_recall_lr_tuning_block PROPERTIES PASS_REGULAR_EXPRESSION "agrees with")
# scripts/build_jobs.sh (the compile and test jobs of quickstart.sh and .ci/run): HEADLAB_JOBS, and a
# memory cgroup's room capping the count (tests/scripts/build_jobs_test.sh).
add_test(NAME scripts.build_jobs
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/build_jobs_test.sh ${PROJECT_SOURCE_DIR}/scripts/build_jobs.sh)
set_tests_properties(scripts.build_jobs PROPERTIES PASS_REGULAR_EXPRESSION "^build_jobs: [0-9]+ checks passed\n$")
