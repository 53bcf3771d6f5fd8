// commands.hpp: the subcommands of the headlab CLI, kept free of CLI11 so that only the
// translation units that add flags pay for that header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "window_override.hpp"

namespace headlab {
struct TrainOptions;
}

namespace headlab::cli {

// Trains as the options say; prints progress and the final held-out exact match.
// `config_file`: the --config file given, if any. Without --run-dir, a config file that sits in a
// run directory (RUN/config.ini) is refused (exit 2): the run would be neither continued nor kept.
int run_train(const TrainOptions& options, const std::string& config_file = "");

// `headlab eval`: a checkpoint scored with the trainer's own measures (headlab/train/evaluation.hpp),
// one function per task: copy and induction on `sequences` held-out sequences of the run; translate
// on the pairs of `data` (token NLL, corpus BLEU, sentences, tokens, unknown-token rates).
struct EvalOptions {
  std::string run_dir;      // RUN_DIR: its checkpoint.safetensors ...
  std::string checkpoint;   // ... or this file (exactly one of the two)
  std::size_t sequences = 1000;
  std::string data;         // translate: a TSV file, source<TAB>target per line (required)
  std::size_t beam = 1;     // translate: 1 = greedy, else beam search of this width
  double length_penalty = 0.6;  // translate --beam >= 2: GNMT alpha (default: the checkpoint's)
  bool json = false;        // one JSON object on stdout instead of the human lines
  // Which flags were given: a flag the checkpoint's task does not read is refused (exit 2).
  bool sequences_given = false, data_given = false, beam_given = false, length_penalty_given = false;
  WindowOverride window;    // --window / --sinks: decoder-only checkpoints scored with another attention window
};
int run_eval(const EvalOptions& options);
// `headlab decode`: greedy decoding (KV cache) of one sequence of token ids, e.g. "1 4 2 9".
int run_decode(const std::string& run_dir, const std::string& input);

struct MlpDemoOptions {
  std::uint64_t seed = 1;
  int steps = 500;
  int hidden = 32;
  int points = 256;   // training points (two interleaved spirals)
  double lr = 1.0;
  int log_every = 25;
  std::string dot_path;  // if set, the graph of one training step is written here (Graphviz DOT)
};

// Trains a 2-layer tanh MLP with full-batch gradient descent on the two-spirals
// problem and prints the loss as it falls. Returns the process exit code.
int run_mlp_demo(const MlpDemoOptions& options);

// The flags of `headlab stats`, mirroring headlab::AttentionConfig. Counts are
// signed here so that a negative value reaches run_stats (CLI11 would wrap it
// into a huge unsigned number) and is refused there with its flag named.
struct StatsOptions {
  std::int64_t d_model = 512;
  std::int64_t heads = 8;
  std::int64_t kv_heads = 0;     // 0 = heads (MHA); 1 = multi-query; else grouped-query
  std::int64_t head_dim = 0;     // 0 = d_model / heads
  std::string gate = "none";     // none | headwise | elementwise
  bool no_bias = false;
  std::int64_t window = 0;       // sliding window of W keys (0 = none)
  std::int64_t sinks = 0;        // always-visible first tokens under the window
  bool rope = false;
  std::int64_t latent_dim = 0;   // MLA latent size d_c (0 = off)
  std::int64_t rope_dim = 0;     // MLA decoupled rotary key size d_R
  std::int64_t seq_len = 128;    // T tokens of self-attention
  std::int64_t layers = 1;       // the totals are per layer x layers
};

// Prints the parameters, forward FLOPs and KV-cache size of one attention
// layer (headlab::attention_cost) and of `layers` of them. Throws
// headlab::ValueError for an invalid configuration (main turns it into exit 2).
int run_stats(const StatsOptions& options);

// `headlab bleu`: corpus BLEU-4 and chrF of a hypothesis file against a reference file, one sentence per line.
struct BleuOptions {
  std::string ref_path, hyp_path;
  bool tokenize = false;  // false: split lines on whitespace; true: headlab::tokenize each line
};
// Prints BLEU x100, the 1-4 gram precisions, BP and the lengths, then chrF x100 on a second line; exit
// status 1 (with a message) when a file cannot be read, the two files differ in line count or a line
// is not UTF-8.
int run_bleu(const BleuOptions& options);

// `headlab tokenize`: sentences as a translation model's tokens (subword pieces, or ids), one line each.
struct TokenizeOptions {
  std::string checkpoint;   // a translation model: its vocabulary (and merges) of --side
  std::string merges;       // or a merges file (RUN/bpe.source.txt)
  std::string side = "source";
  std::string file;         // sentences, one per line (else `sentences`)
  std::vector<std::string> sentences;
  bool ids = false;         // print ids instead of tokens (--checkpoint)
};
// Exit status 1 with a message for a file that cannot be read, a bad checkpoint or merges file, or
// a sentence that is not UTF-8.
int run_tokenize(const TokenizeOptions& options);

// `headlab curves`: a run's loss.svg (loss and the task's metric) drawn again from its metrics.jsonl.
struct CurvesCommandOptions {
  std::string run_dir;
  bool log_y = false;  // log10 axis for the loss panels
  std::string out;     // default RUN_DIR/loss.svg
};
int run_curves(const CurvesCommandOptions& options);

// `headlab translate`: sentences on stdin, one per line -> tokenized translations on stdout.
struct TranslateOptions {
  std::string checkpoint;
  std::size_t beam = 4;           // 1 = greedy
  double length_penalty = 0.6;
  std::size_t extra_tokens = 10;
  // A word the model's source vocabulary lacks: false = named on stderr and read as <unk>;
  // true = refused (exit 1) before anything is translated.
  bool strict = false;
};
// Empty lines give empty lines.
int run_translate(const TranslateOptions& options);

// `headlab generate`: tokens from a decoder-only checkpoint (headlab/train/generation.hpp), streamed
// to stdout as they are drawn: the prompt, then each new token, then a newline.
struct GenerateOptions {
  std::string checkpoint;
  std::string prompt_ids;          // "1 5 7": token ids (any decoder-only checkpoint)
  std::string prompt;              // text: needs a checkpoint with a text vocabulary
  bool text_prompt = false;        // --prompt was given (its text may be empty)
  std::size_t max_new_tokens = 100;
  double temperature = 1.0;        // 0 = greedy
  std::size_t top_k = 0;           // 0 = off
  double top_p = 1.0;              // 1 = off
  std::uint64_t seed = 1;
};
// Exit 2 for a checkpoint that is not decoder-only, a prompt it cannot take or a text prompt for a
// checkpoint without a text vocabulary; 1 for a file that cannot be used.
int run_generate(const GenerateOptions& options);

}  // namespace headlab::cli
