// main.cpp: the headlab command line: the commands and their flags (CLI11; the larger commands add
// theirs in add_<name>_command: train_flags.hpp, head_lab_flags.cpp, ablate_command.cpp, ...), then the run.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <vector>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "ablate_command.hpp"
#include "course_command.hpp"
#include "align_command.hpp"
#include "study_command.hpp"
#include "circuits_command.hpp"
#include "composition_command.hpp"
#include "explore_command.hpp"
#include "cli_errors.hpp"
#include "cli_values.hpp"
#include "head_lab_commands.hpp"
#include "head_lab_flags.hpp"
#include "commands.hpp"
#include "stdout_check.hpp"
#include "train_flags.hpp"
#include "headlab/headlab.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/trainer.hpp"

namespace {

// The first word that is not one of headlab's own options, when it names no command: 2 after
// "headlab: unknown command 'X'" and the commands on stderr (CLI11 alone would print the main help
// and exit 0 for `headlab X --help`, so a typo looked like success in a script); else -1.
int refuse_unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--threads") {  // its value is the next word
      ++i;
      continue;
    }
    if (word.rfind('-', 0) == 0) continue;  // --threads=2, --flush-denormals, --help
    std::string names;
    for (const CLI::App* command : app.get_subcommands({})) {
      if (command->get_name() == word) return -1;
      names += "  " + command->get_name() + "\n";
    }
    std::cerr << "headlab: unknown command " << headlab::quote_clipped(word) << "\ncommands:\n" << names
              << "Run headlab --help for what each does.\n";
    return 2;
  }
  return -1;
}

// "headlab study report" for the words of argv that name a command and its subcommand ("headlab"
// when none does): the prefix of a parse error.
std::string command_words(const CLI::App& app, int argc, char** argv) {
  std::string words = "headlab";
  const CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    for (const CLI::App* command : at->get_subcommands({}))
      if (command->get_name() == argv[i]) {
        words += " " + command->get_name();
        at = command;
        break;
      }
  }
  return words;
}

// The first path option given as "" among the commands given (cli_errors.hpp's empty_path_refusal):
// 2 after "headlab heads: --out: an empty path; ..." on stderr, else -1.
int refuse_empty_paths(const CLI::App& command, const std::string& words, const std::vector<std::string>& given) {
  if (const std::string why = headlab::cli::empty_path_refusal(command, given); !why.empty()) {
    std::cerr << words << ": " << why << "\n";
    return 2;
  }
  for (const CLI::App* sub : command.get_subcommands())  // the commands given
    if (const int status = refuse_empty_paths(*sub, words + " " + sub->get_name(), given); status >= 0) return status;
  return -1;
}

int run_command_line(int argc, char** argv) {
  headlab::tune_allocator();

  CLI::App app{"headlab: an autodiff framework for studying multi-head attention"};
  app.require_subcommand(1);
  bool flush_denormals = false;
  app.add_flag("--flush-denormals", flush_denormals,
               "treat subnormal floats as zero (torch.set_flush_denormal): faster when a saturated softmax "
               "produces them; give it before the command, e.g. headlab --flush-denormals train ...");

  int thread_count = 0;  // 0: not given
  app.add_option("--threads", thread_count,
                 "threads for every kernel and BLAS (default: $HEADLAB_THREADS if set, else every core: " +
                     std::to_string(headlab::available_cores()) + " here); the same seed and count give the same numbers")
      ->check(headlab::cli::whole_number(1, 1024));
  // --threads and --flush-denormals may also follow the command: headlab train --threads 2 ...
  app.fallthrough();

  headlab::cli::MlpDemoOptions mlp;
  auto* demo = app.add_subcommand("mlp-demo", "train a tiny MLP on two spirals with the autograd engine");
  demo->add_option("--seed", mlp.seed, "random seed")->check(headlab::cli::whole_number())->capture_default_str();
  demo->add_option("--steps", mlp.steps, "gradient steps (2 or more: the demo passes when the loss falls)")->check(headlab::cli::whole_number(2, 1000000))->capture_default_str();
  demo->add_option("--hidden", mlp.hidden, "hidden units")->check(headlab::cli::whole_number(1, 4096))->capture_default_str();
  demo->add_option("--points", mlp.points, "training points")->check(headlab::cli::whole_number(4, 1000000))->capture_default_str();
  demo->add_option("--lr", mlp.lr, "learning rate")->check(headlab::cli::real_number(1e-12, 1e6))->capture_default_str();
  demo->add_option("--log-every", mlp.log_every, "print every N steps")->check(headlab::cli::whole_number(1, 1000000))
      ->capture_default_str();
  demo->add_option("--dot", mlp.dot_path, "write the graph of one step as Graphviz DOT to this file (it replaces only an earlier such graph)")->type_name("FILE");

  headlab::cli::StatsOptions st;
  auto* stats = app.add_subcommand("stats", "parameters, forward FLOPs and KV-cache size of an attention layer");
  stats->add_option("--d-model", st.d_model, "model width D")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--heads", st.heads, "query heads h")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--kv-heads", st.kv_heads, "key/value heads (0 = heads; 1 = multi-query; else grouped-query)")
      ->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--head-dim", st.head_dim, "head size d (0 = d_model / heads)")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--gate", st.gate, "sigmoid output gate after SDPA (G1)")
      ->check(CLI::IsMember({"none", "headwise", "elementwise"}))
      ->capture_default_str();
  stats->add_flag("--no-bias", st.no_bias, "projections without biases");
  stats->add_option("--window", st.window, "sliding window of W keys (0 = none)")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--sinks", st.sinks, "always-visible first tokens under the window")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_flag("--rope", st.rope, "rotary positions on q and k");
  stats->add_option("--latent-dim", st.latent_dim, "MLA latent size d_c (0 = off)")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--rope-dim", st.rope_dim, "MLA decoupled rotary key size d_R (needs --rope)")
      ->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--seq-len", st.seq_len, "tokens T of self-attention")->check(headlab::cli::signed_whole_number())->capture_default_str();
  stats->add_option("--layers", st.layers, "layers (multiplies the totals)")->check(headlab::cli::signed_whole_number())->capture_default_str();

  // headlab train: its flags (and --config) are built in train_flags.hpp, shared with fuzz/fuzz_cli_config.cpp.
  headlab::TrainOptions tr;
  const headlab::cli::TrainCommand train_command = headlab::cli::add_train_command(app, tr);
  CLI::App* train = train_command.app;

  std::string decode_dir, decode_input;
  headlab::cli::EvalOptions eval_options;
  auto* eval = app.add_subcommand("eval", "score a checkpoint: copy/induction on held-out sequences, translate on a "
                                          "TSV file (token NLL, BLEU)");
  auto* eval_run_dir = eval->add_option("--run-dir", eval_options.run_dir, "the run directory (its checkpoint.safetensors)")->type_name("DIR");
  eval->add_option("--checkpoint", eval_options.checkpoint, "a checkpoint file (RUN_DIR/best.safetensors or "
                                                            "checkpoint.safetensors)")->type_name("FILE")
      ->excludes(eval_run_dir);
  auto* eval_sequences = eval->add_option("--sequences", eval_options.sequences, "copy/induction: held-out sequences")
      ->check(headlab::cli::whole_number(1, 1000000000))->capture_default_str();
  auto* eval_data = eval->add_option("--data", eval_options.data, "translate: the pairs scored, source<TAB>target per line")->type_name("FILE");
  auto* eval_beam = eval->add_option("--beam", eval_options.beam, "translate: beam size for BLEU (1 = greedy)")
      ->check(headlab::cli::whole_number(1, 1000))->capture_default_str();
  auto* eval_length_penalty =
      eval->add_option("--length-penalty", eval_options.length_penalty,
                       "translate, --beam 2 or more: GNMT length penalty alpha (default: the checkpoint's)")
          ->check(headlab::cli::real_number(0, 1000));
  eval->add_flag("--json", eval_options.json, "one JSON object on stdout instead of the human lines");
  headlab::cli::add_window_flags(eval, eval_options.window);
  auto* decode = app.add_subcommand("decode", "greedy decoding (with a KV cache) of one sequence");
  decode->add_option("--run-dir", decode_dir, "the run directory (holds checkpoint.safetensors)")->type_name("DIR")->required();
  decode->add_option("--input", decode_input, "token ids separated by spaces, e.g. \"1 4 2 9\"")->required();

  headlab::cli::TokenizeOptions tokenize_options;
  auto* tokenize = app.add_subcommand("tokenize", "a sentence's tokens as a translation model reads them (subword pieces or ids)");
  tokenize->add_option("--checkpoint", tokenize_options.checkpoint, "a translation model's checkpoint")->type_name("FILE");
  auto* merges = tokenize->add_option("--merges", tokenize_options.merges,
                                      "or a merges file (RUN_DIR/bpe.source.txt, bpe.target.txt)")->type_name("FILE");
  tokenize->add_option("--side", tokenize_options.side, "with --checkpoint: the source or target vocabulary")
      ->check(CLI::IsMember({"source", "target"}))
      ->excludes(merges);  // a merges file is one side's already
  tokenize->add_option("--file", tokenize_options.file, "sentences, one per line")->type_name("FILE");
  tokenize->add_flag("--ids", tokenize_options.ids, "print the ids of the checkpoint's vocabulary instead of tokens");
  tokenize->add_option("sentences", tokenize_options.sentences, "sentences to tokenize (or --file)");
  headlab::cli::BleuOptions bleu_options;
  auto* bleu = app.add_subcommand("bleu", "corpus BLEU-4 and chrF of a hypothesis file against a reference file");
  bleu->add_option("--ref", bleu_options.ref_path, "reference sentences, one per line")->type_name("FILE")->required();
  bleu->add_option("--hyp", bleu_options.hyp_path, "hypothesis sentences, one per line, same order")->type_name("FILE")->required();
  bleu->add_flag("--tokenize", bleu_options.tokenize,
                 "tokenize lines with headlab's tokenizer (default: already tokenized, split on whitespace)");

  headlab::cli::TranslateOptions translate_options;
  auto* translate = app.add_subcommand("translate", "translate sentences from stdin (one per line) with a trained model");
  translate->add_option("--checkpoint", translate_options.checkpoint,
                        "a translation checkpoint (RUN_DIR/best.safetensors or checkpoint.safetensors)")->type_name("FILE")
      ->required();
  translate->add_option("--beam", translate_options.beam, "beam size (1 = greedy)")
      ->check(headlab::cli::whole_number(1, 1000))->capture_default_str();
  translate->add_option("--length-penalty", translate_options.length_penalty, "GNMT length penalty alpha")
      ->check(headlab::cli::real_number(0, 1000))->capture_default_str();
  translate->add_flag("--strict", translate_options.strict,
                      "refuse a sentence with a word the model's source vocabulary lacks (default: name such "
                      "words on stderr and read them as <unk>)");
  translate->add_option("--extra-tokens", translate_options.extra_tokens,
                        "at most len(source) + this many output tokens")
      ->check(headlab::cli::whole_number(1, 1000))->capture_default_str();

  headlab::cli::CurvesCommandOptions curves_options;
  auto* curves = app.add_subcommand("curves", "draw a run's loss.svg again from its metrics.jsonl (training and "
                                              "validation loss, the task's metric), optionally on a log axis");
  curves->add_option("--run-dir", curves_options.run_dir, "the run directory (holds config.ini and metrics.jsonl)")->type_name("DIR")
      ->required();
  curves->add_flag("--log-y", curves_options.log_y, "log10 axis for the loss panels (losses <= 0 are left out)");
  curves->add_option("--out", curves_options.out, "the SVG file to write (default: RUN_DIR/loss.svg); it replaces only an earlier chart")->type_name("FILE");

  headlab::cli::GenerateOptions generate_options;
  auto* generate = app.add_subcommand("generate", "sample tokens from a decoder-only checkpoint (KV cache), streamed to "
                                                  "stdout as they come");
  generate->add_option("--checkpoint", generate_options.checkpoint,
                       "a decoder-only checkpoint (task induction): RUN_DIR/checkpoint.safetensors")->type_name("FILE")
      ->required();
  auto* prompt_ids = generate->add_option("--prompt-ids", generate_options.prompt_ids,
                                          "the prompt as token ids separated by spaces, e.g. \"1 5 7\"");
  auto* prompt_text = generate->add_option("--prompt", generate_options.prompt,
                                           "the prompt as text (a checkpoint with a text vocabulary)");
  prompt_ids->excludes(prompt_text);
  generate->add_option("--max-new-tokens", generate_options.max_new_tokens, "tokens to generate")
      ->check(headlab::cli::whole_number(1, 100000))->capture_default_str();
  generate->add_option("--temperature", generate_options.temperature,
                       "softmax temperature T: p ~ exp(logit / T); 0 = greedy (the argmax)")
      ->check(headlab::cli::real_number(0, 1e6))->capture_default_str();
  generate->add_option("--top-k", generate_options.top_k,
                       "sample among the k most probable tokens only (0 = off: every token)")
      ->check(headlab::cli::whole_number(0, 1000000000))->capture_default_str();
  generate->add_option("--top-p", generate_options.top_p,
                       "nucleus: sample among the fewest most probable tokens whose probabilities sum to p, "
                       "in (0, 1] (1 = off)")
      ->check(headlab::cli::positive_fraction())->capture_default_str();
  generate->add_option("--seed", generate_options.seed, "seed of the sampling")
      ->check(headlab::cli::whole_number())->capture_default_str();

  headlab::cli::AblateOptions ablate_options;
  CLI::App* ablate = headlab::cli::add_ablate_command(app, ablate_options);
  headlab::cli::CourseOptions course_options;
  CLI::App* course = headlab::cli::add_course_command(app, course_options);

  headlab::cli::AlignOptions align_options;
  CLI::App* align = headlab::cli::add_align_command(app, align_options);

  headlab::cli::StudyOptions study_options;
  CLI::App* study = headlab::cli::add_study_command(app, study_options);

  headlab::cli::ExploreOptions explore_options;
  CLI::App* explore = headlab::cli::add_explore_command(app, explore_options);

  headlab::cli::CompositionOptions composition_options;
  CLI::App* composition = headlab::cli::add_composition_command(app, composition_options);
  headlab::cli::CacheOptions cache_options;
  CLI::App* cache = headlab::cli::add_cache_command(app, cache_options);
  headlab::cli::CircuitOptions patch_options, attribute_options;
  CLI::App* patch = headlab::cli::add_patch_command(app, patch_options);
  CLI::App* attribute = headlab::cli::add_attribute_command(app, attribute_options);

  headlab::cli::HeadsOptions heads_options;
  CLI::App* heads = headlab::cli::add_heads_command(app, heads_options);
  headlab::cli::PruneOptions prune_options;
  CLI::App* prune = headlab::cli::add_prune_command(app, prune_options);

  if (const int status = refuse_unknown_command(app, argc, argv); status >= 0) return status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // (app.exit(e) would print CLI11's message whole, with a hostile value in it.)
    std::cerr << command_words(app, argc, argv) << ": " << headlab::cli::cli_error_text(e, app.remaining())
              << "\nRun with --help for more information.\n";
    return 2;  // a usage error: bad flag or value
  }
  if (const int status = refuse_empty_paths(app, "headlab", std::vector<std::string>(argv + 1, argv + argc)); status >= 0)
    return status;
  try {
    headlab::set_threads(headlab::cli::thread_count_to_use(thread_count));
  } catch (const headlab::ValueError& e) {
    std::cerr << "headlab: " << e.what() << "\n";
    return 2;
  }
  if (flush_denormals && !headlab::set_flush_denormal(true)) {
    std::cerr << "headlab: --flush-denormals is not supported on this CPU\n";
    return 2;
  }
  try {
    if (*demo || *curves) {
      try {
        return *demo ? headlab::cli::run_mlp_demo(mlp) : headlab::cli::run_curves(curves_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab " << (*demo ? "mlp-demo" : "curves") << ": " << e.what() << "\n";
        return 2;  // a usage error: an output that is an input, not a regular file, or another program's file
      }
    }
    if (*eval) {
      eval_options.sequences_given = eval_sequences->count() > 0;
      eval_options.data_given = eval_data->count() > 0;
      eval_options.beam_given = eval_beam->count() > 0;
      eval_options.length_penalty_given = eval_length_penalty->count() > 0;
      return headlab::cli::run_eval(eval_options);
    }
    if (*decode) return headlab::cli::run_decode(decode_dir, decode_input);
    if (*bleu) return headlab::cli::run_bleu(bleu_options);
    if (*tokenize) return headlab::cli::run_tokenize(tokenize_options);
    if (*translate) return headlab::cli::run_translate(translate_options);
    if (*ablate) {
      ablate_options.job_threads = thread_count;  // 0: not given ($HEADLAB_THREADS travels as the environment)
      return headlab::cli::run_ablate(ablate_options);
    }
    if (*course) return headlab::cli::run_course(*course, course_options);
    if (*study) return headlab::cli::run_study(*study, study_options);
    if (*align) {
      try {
        return headlab::cli::run_align(align_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab align: " << e.what() << "\n";
        return 2;  // a usage error: not a translation checkpoint, a pair without gold links or too long
      }
    }
    if (*cache) {
      try {
        return headlab::cli::run_cache(cache_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab cache: " << e.what() << "\n";
        return 2;  // a usage error: an --input the model cannot take, an existing --out, no point matching --points
      }
    }
    if (*patch || *attribute) {
      try {
        return *patch ? headlab::cli::run_patch(patch_options) : headlab::cli::run_attribute(attribute_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab " << (*patch ? "patch" : "attribute") << ": " << e.what() << "\n";
        return 2;  // a usage error: a task without a corruption rule, a model the method is not for, an output that exists
      }
    }
    if (*composition) {
      try {
        return headlab::cli::run_composition(composition_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab composition: " << e.what() << "\n";
        return 2;  // a usage error: a model the scores are not for, an output that exists
      }
    }
    if (*explore) {
      try {
        return headlab::cli::run_explore(explore_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab explore: " << e.what() << "\n";
        return 2;  // a usage error: an input the model cannot take, an output that exists
      }
    }
    if (*generate) {
      if (!*prompt_ids && !*prompt_text) {
        std::cerr << "headlab generate: give --prompt-ids \"1 5 7\" (or --prompt TEXT for a checkpoint with a "
                     "text vocabulary)\n";
        return 2;
      }
      generate_options.text_prompt = static_cast<bool>(*prompt_text);
      return headlab::cli::run_generate(generate_options);
    }
    if (*heads || *prune) {
      try {
        return *heads ? headlab::cli::run_heads(heads_options) : headlab::cli::run_prune(prune_options);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab " << (*heads ? "heads" : "prune") << ": " << e.what() << "\n";
        return 2;  // a usage error: an input or block the model cannot take
      }
    }
    if (*train) {
      try {
        train_command.resolve();
        tr.validate();
        headlab::check_training_memory(tr);  // from the options alone, before anything is allocated
      } catch (const headlab::OutOfMemory& e) {
        std::cerr << "headlab train: " << e.what() << "\n";
        return 2;  // options asking for more memory than there is: a bad value given by the user
      } catch (const headlab::OptionError& e) {
        const headlab::OptionInfo* info = headlab::find_option_by_field(e.field());
        std::cerr << "headlab train: --" << (info ? info->flag : e.field().c_str()) << ": " << e.why() << "\n";
        return 2;  // a usage error, like a bad flag
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab train: " << e.what() << "\n";
        return 2;
      }
      if (*train_command.print_config) {
        std::cout << tr.to_config_ini();
        return 0;
      }
      return headlab::cli::run_train(tr, *train_command.config_path);
    }
    if (*stats) {
      try {
        return headlab::cli::run_stats(st);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab stats: invalid configuration: " << e.what() << "\n";
        return 2;  // a usage error, like a bad flag
      }
    }
  } catch (const std::bad_alloc& e) {  // headlab's own buffers throw OutOfMemory; this is anything else
    std::cerr << "headlab: error: out of memory (" << e.what() << ")\n";
    return 1;
  } catch (const std::exception& e) {  // a bad file (IOError, FormatError), a failed run, OutOfMemory
    std::cerr << "headlab: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int status = run_command_line(argc, argv);
  // Output lost on the way (a full disk, a closed pipe or stdout) is an error, never a quiet exit 0.
  return headlab::cli::stdout_checked(status);
}
