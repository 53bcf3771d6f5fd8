// train_flags.hpp: the `headlab train` subcommand and every one of its flags.
//
// Header-only on purpose: CLI11 is heavy, and only a few translation units include this
// file: cli/main.cpp (the real command line), fuzz/fuzz_cli_config.cpp (which feeds random
// config files to exactly these flags, see fuzz/) and tests/test_fuzz_regressions.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "headlab/data/text.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::cli {

// A check for the path flags (--train, --valid, --test, --run-dir): RUN_DIR/config.ini must
// reproduce the run, and CLI11 2.1 cannot write every string so that it reads back the same:
//   - a value that reads as a number (" 2") is written without quotes and comes back trimmed;
//   - reading cuts a line at its first '#' (a comment), even inside quotes ("data#1.tsv" -> "data).
// Such a path is refused up front, as a usage error naming it.
inline CLI::Validator config_ini_safe_path() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (!path.empty() && (is_space_char(path.front()) || is_space_char(path.back())))
          return "'" + path + "' starts or ends with whitespace (config.ini could not reproduce it)";
        if (path.find('#') != std::string::npos)
          return "'" + path + "' contains '#', which config.ini would read as the start of a comment";
        return "";
      },
      "PATH");
}

struct TrainCommand {
  CLI::App* app = nullptr;  // the `train` subcommand
  // Call after parsing: options the user did not give take the defaults of the chosen task
  // (TrainOptions::defaults_for(tr.task)), e.g. d_model 128 for --task translate.
  std::function<void()> apply_task_defaults;
};

// Adds `train` to `app`, with its flags writing into `tr` (which must outlive the parse), and
// `--config FILE` on `app` itself: CLI11 reads config files on the main app only, so
// `--config` belongs to it, and `fallthrough` lets `headlab train --config FILE` pass it up.
// Options live under a [train] section of the file.
inline TrainCommand add_train_command(CLI::App& app, TrainOptions& tr) {
  auto* train = app.add_subcommand("train", "train an encoder-decoder transformer (tasks: copy, translate)");
  app.set_config("--config", "", "read options from this INI/TOML file ([train] section, flag names as keys)");
  train->fallthrough();
  // One entry per flag with a task default: "if the flag was not given, copy the default". The
  // flag's default string follows, so that config_to_str (RUN_DIR/config.ini) writes the value
  // the run used (d-model=128 for translate), not the copy task's default it was created with.
  auto task_defaults = std::make_shared<std::vector<std::function<void(const TrainOptions&)>>>();
  auto defaulted = [&tr, task_defaults](CLI::Option* opt, auto TrainOptions::*field) {
    task_defaults->push_back([opt, field, &tr](const TrainOptions& d) {
      if (opt->count() != 0) return;
      tr.*field = d.*field;
      opt->capture_default_str();
    });
    return opt;
  };
  auto count = [&](const std::string& flag, std::size_t TrainOptions::*field, const std::string& help) {
    defaulted(train->add_option(flag, tr.*field, help)->check(CLI::NonNegativeNumber)->capture_default_str(), field);
  };
  auto real = [&](const std::string& flag, double TrainOptions::*field, const std::string& help) {
    defaulted(train->add_option(flag, tr.*field, help)->check(CLI::NonNegativeNumber)->capture_default_str(), field);
  };
  train->add_option("--task", tr.task, "task (translate: defaults become d_model 128, 8 heads, ff 512, dropout 0.1, "
                                       "label smoothing 0.1, warmup 400, 3000 steps; induction: a 2-layer "
                                       "attention-only pre-LN decoder, d_model 64, 4 heads, vocab 64, block 16, "
                                       "1500 steps)")
      ->check(CLI::IsMember({"copy", "translate", "induction"}))->capture_default_str();
  count("--vocab", &TrainOptions::vocab, "copy/induction: vocabulary size (0 <pad>, 1 <s>)");
  count("--length", &TrainOptions::length, "copy: tokens per sequence, start symbol included; induction: block T");
  train->add_option("--train", tr.train_file, "translate: training corpus, source<TAB>target per line")
      ->check(config_ini_safe_path());
  train->add_option("--valid", tr.valid_file, "translate: validation corpus (loss and BLEU as it trains)")
      ->check(config_ini_safe_path());
  train->add_option("--test", tr.test_file, "translate: test corpus (BLEU of the best weights at the end)")
      ->check(config_ini_safe_path());
  count("--min-freq", &TrainOptions::min_freq, "translate: rarer training tokens become <unk>");
  count("--max-tokens", &TrainOptions::max_tokens, "translate: batch budget, sentences x longest side");
  count("--max-len", &TrainOptions::max_len, "translate: longest sequence in ids (longer training pairs skipped)");
  real("--time-budget", &TrainOptions::time_budget, "stop after this many seconds of training (0 = no limit)");
  count("--beam", &TrainOptions::beam, "translate: beam size for the final test BLEU");
  real("--length-penalty", &TrainOptions::length_penalty, "translate: GNMT length penalty alpha");
  count("--eval-sentences", &TrainOptions::eval_sentences, "translate: validation sentences decoded for BLEU (0 = all)");
  count("--d-model", &TrainOptions::d_model, "model width");
  count("--heads", &TrainOptions::heads, "attention heads");
  count("--kv-heads", &TrainOptions::kv_heads, "key/value heads (0 = heads)");
  count("--head-dim", &TrainOptions::head_dim, "head size (0 = d_model / heads)");
  train->add_option("--gate", tr.gate, "attention output gate")
      ->check(CLI::IsMember({"none", "headwise", "elementwise"}))->capture_default_str();
  count("--ff", &TrainOptions::ff_dim, "feed-forward width");
  count("--layers", &TrainOptions::layers, "encoder and decoder layers (each); induction: decoder layers");
  real("--dropout", &TrainOptions::dropout, "dropout probability");
  defaulted(train->add_flag("--pre-ln", tr.norm_first, "pre-LN layers instead of post-LN (--pre-ln=false: post-LN)"),
            &TrainOptions::norm_first);
  defaulted(train->add_flag("--attention-only", tr.attention_only, "induction: layers without feed-forward blocks"),
            &TrainOptions::attention_only);
  defaulted(train->add_flag("--rope", tr.rope, "rotary positions on q and k instead of sinusoidal embeddings"),
            &TrainOptions::rope);
  defaulted(train->add_flag("--tiled-attention", tr.tiled_attention,
                            "the tiled (FlashAttention-2 style) kernel for attention wherever it applies (no attention "
                            "dropout, no weights asked for): the same results to float rounding, less memory, faster"),
            &TrainOptions::tiled_attention);
  train->add_flag("--tie-embeddings", tr.tie_embeddings, "one matrix for both embeddings and the generator");
  count("--steps", &TrainOptions::steps, "training steps (at most)");
  count("--batch", &TrainOptions::batch, "copy: sequences per step");
  real("--lr-factor", &TrainOptions::lr_factor, "Noam schedule factor");
  count("--warmup", &TrainOptions::warmup, "Noam warm-up steps");
  real("--label-smoothing", &TrainOptions::label_smoothing, "label smoothing");
  real("--clip-norm", &TrainOptions::clip_norm, "gradient clipping by global norm (0 = off)");
  train->add_option("--seed", tr.seed, "seed of initialisation, data and dropout")->capture_default_str();
  count("--eval-every", &TrainOptions::eval_every, "steps between evaluations");
  count("--eval-sequences", &TrainOptions::eval_sequences, "copy: held-out sequences for exact match");
  defaulted(train->add_option("--stop-at-perfect", tr.stop_at_perfect, "copy: stop once held-out exact match is 100%")
                ->capture_default_str(),
            &TrainOptions::stop_at_perfect);
  train->add_option("--run-dir", tr.run_dir, "write config, checkpoint and metrics here")
      ->check(config_ini_safe_path());
  count("--save-every", &TrainOptions::save_every, "steps between checkpoints (0 = at the end)");
  train->add_flag("--resume", tr.resume, "continue from RUN_DIR/checkpoint.safetensors");
  train->add_flag("--detect-anomaly", tr.detect_anomaly,
                  "check every op for NaN/inf and name the first that makes one (slow; for debugging)");
  train->add_option("--progress", tr.progress, "progress output")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))->capture_default_str();

  TrainCommand command;
  command.app = train;
  command.apply_task_defaults = [task_defaults, &tr] {
    const TrainOptions task_default = TrainOptions::defaults_for(tr.task);
    for (auto& apply : *task_defaults) apply(task_default);
  };
  return command;
}

}  // namespace headlab::cli
