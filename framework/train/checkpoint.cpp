// checkpoint.cpp: saving a training run and reading it back (headlab/train/checkpoint.hpp).
#include "headlab/train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <random>
#include <sstream>

#include "headlab/core/machine.hpp"
#include "headlab/core/sha256.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/train/memory_estimate.hpp"

namespace headlab {

namespace {

std::string rng_text(const Generator& g) {
  std::ostringstream os;
  os << g.engine();
  return os.str();
}
void rng_from_text(Generator& g, const std::string& text, const std::string& what) {
  std::istringstream in(text);
  in >> g.engine();
  if (in.fail() || !(in >> std::ws).eof()) throw ValueError("checkpoint: corrupt random state '" + what + "'");
  // The text is the engine's 312 state words, then its position. All-zero words are a state
  // std::mt19937_64 never reaches (it would draw zeros forever): a checkpoint edited or zeroed.
  std::istringstream words(text);
  bool all_zero = true;
  for (std::size_t i = 0; i < std::mt19937_64::state_size; ++i) {
    std::uint64_t word = 0;
    words >> word;
    all_zero = all_zero && word == 0;
  }
  if (all_zero)
    throw ValueError("checkpoint: random state '" + what +
                     "' is all zeros, which no generator reaches (it would draw only zeros): the checkpoint is corrupt");
}

std::string losses_text(const std::vector<double>& losses) {
  std::ostringstream os;
  os << std::setprecision(17);
  for (std::size_t i = 0; i < losses.size(); ++i) os << (i ? "," : "") << losses[i];
  return os.str();
}
// A checkpoint's loss history: numbers separated by commas (ValueError naming the bad one).
std::vector<double> losses_from_text(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      out.push_back(parse_real_number(item));
    } catch (const ValueError&) {
      throw ValueError("checkpoint: metadata 'losses': item " + std::to_string(out.size() + 1) + " " +
                       quote_clipped(item) + " is not a finite number");
    }
  }
  return out;
}

// A checkpoint's step: a whole number within the range of --steps (ValueError naming the key).
std::size_t step_from_text(const std::string& text) {
  try {
    return static_cast<std::size_t>(parse_whole_number(text, 0, kMaxOptionCount));
  } catch (const ValueError& e) {
    throw ValueError(std::string("checkpoint: metadata 'step': ") + e.what());
  }
}

// The arithmetic a checkpoint recorded ("" when saved before the record, late on 2026-12-07): printable, at most 2000 bytes.
std::string saved_arithmetic(const TensorFile& file, const std::string& path) {
  const auto it = file.metadata.find("arithmetic");
  if (it == file.metadata.end()) return "";
  const std::string& text = it->second;
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (text.empty() || text.size() > 2000 || !printable)
    throw FormatError("checkpoint " + path + ": metadata 'arithmetic': not the record of a machine (" +
                      std::to_string(text.size()) + " bytes" + (printable ? "" : ", not printable ASCII") + ")");
  return text;
}

}  // namespace

std::string run_arithmetic(const TrainState& st) {
  return st.arithmetic.empty() ? arithmetic_fingerprint() : st.arithmetic;
}

void save_checkpoint(const std::string& path, const TrainOptions& o, const Module<float>& model,
                     const TrainingOptimizer* optimizer, const Generator& data_rng, const Generator& dropout_rng,
                     const TrainState& st, const std::map<std::string, std::string>& extra_metadata) {
  TensorFile file;
  file.metadata = extra_metadata;
  file.metadata["format"] = kCheckpointFormat;
  file.metadata["options"] = o.to_text();
  file.metadata["step"] = std::to_string(st.step);
  file.metadata["data_rng"] = rng_text(data_rng);
  file.metadata["dropout_rng"] = rng_text(dropout_rng);
  file.metadata["losses"] = losses_text(st.losses);
  file.metadata["arithmetic"] = run_arithmetic(st);
  // The file's bytes are the only copy of the state made (the parameters are read in place, the
  // optimiser's exported buffers are freed as they are copied): a save needs 3 floats per
  // parameter beside the model, not 9 (headlab/train/memory_estimate.hpp counts them).
  for (const auto& [name, tensor] : model.named_parameters()) file.add("model." + name, tensor.value());
  if (optimizer) {
    OptimizerState<float> state = optimizer->state();
    for (auto& [name, value] : state) {
      file.add("optim." + name, value);
      value = Array<float>();
    }
  }
  save_safetensors(path, file);  // atomic: the header, then every tensor's bytes, then rename
}

namespace {
// Throws unless the file's metadata says it is a training checkpoint.
void check_checkpoint_format(const TensorFile& file) {
  auto it = file.metadata.find("format");
  if (it == file.metadata.end() || it->second != kCheckpointFormat)
    throw FormatError("checkpoint " + file.source + ": not a headlab training checkpoint (no format '" +
                     std::string(kCheckpointFormat) + "' in its metadata)");
}

// Runs `parse` on what a checkpoint's contents say; a ValueError, ShapeError or IndexError from it
// (an option, count, vocabulary or shape that does not parse or fit) becomes a FormatError naming
// the file: the file is bad, not the command line (exit status 1 from every command).
template <typename F>
auto as_format_error(const std::string& source, F parse) {
  auto rethrow = [&](const std::exception& e) -> FormatError {
    std::string what = e.what();
    if (what.rfind("checkpoint ", 0) == 0) return FormatError(what);  // names the file already
    if (what.rfind("checkpoint: ", 0) == 0) what = what.substr(12);
    return FormatError("checkpoint " + source + ": " + what);
  };
  try {
    return parse();
  } catch (const ValueError& e) {
    throw rethrow(e);
  } catch (const ShapeError& e) {
    throw rethrow(e);
  } catch (const IndexError& e) {
    throw rethrow(e);
  }
}

// The non-finite values of one float tensor's bytes: how many, and the flat index of the first.
template <typename Real>
std::size_t count_non_finite(const TensorEntry& e, std::size_t& first) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < e.numel(); ++i) {
    Real v;
    std::memcpy(&v, e.bytes.data() + i * sizeof(Real), sizeof(Real));
    if (!std::isfinite(v) && count++ == 0) first = i;
  }
  return count;
}

// Refuses a checkpoint whose "model." or "optim." tensors hold a NaN or an infinity, naming the
// first such tensor: such weights would evaluate to garbage (an exact match of 0) without a word.
void check_finite_tensors(const TensorFile& file) {
  for (const TensorEntry& e : file.entries()) {
    std::size_t first = 0, count = 0;
    if (e.dtype == DType::F32) count = count_non_finite<float>(e, first);
    else if (e.dtype == DType::F64) count = count_non_finite<double>(e, first);
    if (count == 0) continue;
    throw FormatError("checkpoint " + file.source + ": tensor '" + e.name + "' " + shape_str(e.shape) + " holds " +
                      std::to_string(count) + " non-finite value" + (count == 1 ? "" : "s") +
                      " (NaN or infinity; the first at flat index " + std::to_string(first) +
                      "): the weights are unusable");
  }
}

}  // namespace

// A training checkpoint's file, its format checked.
TensorFile load_checkpoint_file(const std::string& path) {
  TensorFile file = load_safetensors(path);
  check_checkpoint_format(file);
  return file;
}

const std::string& checkpoint_meta(const TensorFile& file, const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end()) throw FormatError("checkpoint " + file.source + ": metadata has no '" + key + "'");
  return it->second;
}

Module<float>::StateDict saved_model_state(const TensorFile& file) {
  Module<float>::StateDict state;
  as_format_error(file.source, [&] {
    for (const auto& e : file.entries())
      if (e.name.rfind("model.", 0) == 0) state.emplace_back(e.name.substr(6), file.get<float>(e.name));
  });
  return state;
}

namespace {
// parse(metadata[key]); a refusal names the file and the key, not the parser:
//   "checkpoint F: metadata 'tgt_vocab': vocabulary line 7: duplicate token 'haus' (first on line 5)"
template <typename Parse>
auto parse_metadata(const TensorFile& file, const std::string& key, Parse parse) {
  const std::string& text = checkpoint_meta(file, key);
  auto refusal = [&](const std::exception& e) {
    std::string what = e.what();
    const std::size_t parser = what.find("::from_text: ");
    if (parser != std::string::npos && what.find(' ') > parser) what.erase(0, parser + 13);  // "Vocabulary::from_text: "
    return FormatError("checkpoint " + file.source + ": metadata '" + key + "': " + what);
  };
  try {
    return parse(text);
  } catch (const FormatError& e) {
    throw refusal(e);
  } catch (const ValueError& e) {
    throw refusal(e);
  }
}
}  // namespace

Vocabulary saved_vocabulary(const TensorFile& file, const std::string& key) {
  const Vocabulary vocab = parse_metadata(file, key, [](const std::string& text) { return Vocabulary::from_text(text); });
  if (vocab.size() <= Vocabulary::num_specials)
    throw FormatError("checkpoint " + file.source + ": metadata '" + key + "' holds no token beyond the " +
                      std::to_string(Vocabulary::num_specials) + " specials (an empty vocabulary)");
  // "src_vocab" -> "src_merges": present when the model was trained on subwords.
  const std::string merges_key = key.substr(0, key.rfind("_vocab")) + "_merges";
  if (file.metadata.count(merges_key) == 0) return vocab;
  const BytePairEncoding bpe =
      parse_metadata(file, merges_key, [](const std::string& text) { return BytePairEncoding::from_text(text); });
  return Vocabulary::with_subwords(vocab, bpe);
}

// Restores model, optimiser, generators and counters; validates before touching anything.
TrainState load_checkpoint(const std::string& path, const TrainOptions& o, Module<float>& model,
                           TrainingOptimizer& optimizer, Generator& data_rng, Generator& dropout_rng) {
  const TensorFile file = load_checkpoint_file(path);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  const TrainOptions saved = as_format_error(path, [&] { return TrainOptions::from_text(meta("options")); });
  // Everything but the run's length and its saving must match (neither changes a number;
  // but --schedule cosine and linear end at --steps, so there the length must match too).
  TrainOptions a = saved, b = o;
  const bool schedule_ends_at_steps = o.schedule == "cosine" || o.schedule == "linear";
  if (!schedule_ends_at_steps) a.steps = b.steps = 0;
  a.time_budget = b.time_budget = 0;
  a.stop_at_perfect = b.stop_at_perfect = false;
  a.save_every = b.save_every = 0;
  a.keep_checkpoints = b.keep_checkpoints = false;
  const std::string options_text = "\n" + meta("options");
  for (const OptionInfo& info : train_option_table())  // saved before the option: any value goes on
    if (unknown_when_missing(info) && options_text.find("\n" + std::string(info.field) + " = ") == std::string::npos)
      info.set(a, info.get(b));
  std::string differences;
  for (const OptionInfo& info : train_option_table()) {
    if (!info.stored || info.get(a) == info.get(b)) continue;
    differences += std::string(differences.empty() ? "" : ", ") + info.field + " " + info.get(a) + " there, " +
                   info.get(b) + " here";
  }
  if (!differences.empty())
    throw ValueError("checkpoint " + path + ": it was trained with different options (" + differences + ")");
  check_finite_tensors(file);
  Module<float>::StateDict model_state;
  OptimizerState<float> optim_state;
  TrainState st;
  Generator data_copy, dropout_copy;
  as_format_error(path, [&] {
    for (const auto& e : file.entries()) {
      if (e.name.rfind("model.", 0) == 0) model_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
      else if (e.name.rfind("optim.", 0) == 0) optim_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
      else throw FormatError("checkpoint " + path + ": unexpected tensor '" + e.name + "'");
    }
    st.step = step_from_text(meta("step"));
    st.losses = losses_from_text(meta("losses"));
    st.arithmetic = continued_arithmetic(saved_arithmetic(file, path));
    if (st.losses.size() != st.step) throw FormatError("checkpoint " + path + ": loss history does not match the step");
    rng_from_text(data_copy, meta("data_rng"), "data_rng");
    rng_from_text(dropout_copy, meta("dropout_rng"), "dropout_rng");
    model.load_state_dict(model_state);  // strict; throws before changing anything
    optimizer.load_state(optim_state);
  });
  data_rng = data_copy;
  dropout_rng = dropout_copy;
  return st;
}



std::string lm_vocabulary_key(LmTokenizer tokenizer) {
  return tokenizer == LmTokenizer::words ? "lm_words" : "lm_chars";
}

LmVocabulary saved_lm_vocabulary(const TensorFile& file) {
  LmTokenizer tokenizer = LmTokenizer::characters;
  if (file.metadata.count("tokenizer")) {
    try {
      tokenizer = parse_lm_tokenizer(file.metadata.at("tokenizer"));
    } catch (const ValueError& e) {
      throw FormatError("checkpoint " + file.source + ": metadata 'tokenizer': " + e.what());
    }
  }
  return parse_metadata(file, lm_vocabulary_key(tokenizer),
                        [&](const std::string& text) { return LmVocabulary::from_text(tokenizer, text); });
}

LoadedModel load_trained_model(const std::string& path) { return load_trained_model(load_checkpoint_file(path)); }

namespace {
// A checkpoint's options decide how big a model load_trained_model builds before the weights are
// compared with it, so corrupt options (d_model 10^12, a billion layers) must be refused first.
// Every parameter is stored in the file, so the model the options describe cannot have more values
// than the file's "model." tensors hold. The bound below counts only what every variant has (the
// embeddings and generator, the query and output projections of each attention, the two
// feed-forward matrices of each layer), in floating point so that it cannot overflow.
void check_model_fits_checkpoint(const TransformerConfig& c, const TensorFile& file, bool decoder_only) {
  double stored = 0;
  for (const auto& e : file.entries())
    if (e.name.rfind("model.", 0) == 0) stored += static_cast<double>(e.numel());
  const double d = static_cast<double>(c.d_model);
  AttentionConfig a = c.attention;
  a.d_model = c.d_model;  // as the layers see it (dim_head() = d_model / heads when head_dim is 0)
  const double heads_width = static_cast<double>(a.num_heads) * static_cast<double>(a.dim_head());
  const double attention = 2 * d * heads_width;                      // W_q and W_o (K and V come on top)
  const double feed_forward = 2 * d * static_cast<double>(c.ff_dim);  // linear1 and linear2
  const double src_vocab = static_cast<double>(c.src_vocab), tgt_vocab = static_cast<double>(c.tgt_vocab);
  const double at_least =
      decoder_only
          ? static_cast<double>(c.decoder_layers) * (attention + (c.attention_only ? 0 : feed_forward)) + 2 * tgt_vocab * d
          : static_cast<double>(c.encoder_layers) * (attention + feed_forward) +
                static_cast<double>(c.decoder_layers) * (2 * attention + feed_forward) +
                (c.tie_embeddings ? src_vocab * d : (src_vocab + 2 * tgt_vocab) * d);
  if (at_least > stored) {
    std::ostringstream os;
    os << "checkpoint " << file.source << ": its options describe a model of at least " << at_least
       << " parameters but the file stores " << stored << " model values (corrupt options?)";
    throw FormatError(os.str());
  }
}

// The memory a loaded model will use (parameters, evaluation buffers, the file's own bytes),
// checked against the available memory before any tensor of the model is allocated: a checkpoint
// saying `length 5000` is refused at once, not after half a minute of allocation.
void check_model_memory(const LoadedModel& m, const TensorFile& file, double limit) {
  double file_bytes = 0;
  for (const auto& e : file.entries()) file_bytes += static_cast<double>(e.bytes.size());
  const MemoryEstimate estimate = estimate_inference_memory(m.options, m.src_vocab.size(), m.tgt_vocab.size(), file_bytes);
  check_memory(estimate, limit > 0 ? limit : available_memory(), "checkpoint " + file.source + ": its model",
               "its options (layers " + std::to_string(m.options.layers) + ", d_model " + std::to_string(m.options.d_model) +
                   ", length " + std::to_string(m.options.length) + ") are too large for this machine");
}

// A SHA-256 in the metadata under `key`: 64 lowercase hex digits, "" when the key is absent.
std::string saved_sha256(const TensorFile& file, const std::string& key) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end()) return "";
  const std::string& hex = it->second;
  const bool well_formed = hex.size() == 64 && hex.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!well_formed) throw FormatError("checkpoint " + file.source + ": metadata '" + key + "' is not a SHA-256 (64 hex digits)");
  return hex;
}
}  // namespace

LoadedModel load_trained_model(const TensorFile& file, double memory_limit) {
  check_checkpoint_format(file);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  LoadedModel out;
  const bool decoder_only = as_format_error(file.source, [&] {
    out.options = TrainOptions::from_text(meta("options"));
    out.options.validate();
    out.step = step_from_text(meta("step"));
    if (out.options.task == Task::translate) {
      out.src_vocab = saved_vocabulary(file, "src_vocab");
      out.tgt_vocab = saved_vocabulary(file, "tgt_vocab");
      out.valid_sha256 = saved_sha256(file, "valid_sha256");
      const bool subwords = out.options.tokenizer == "bpe";
      if (out.src_vocab.has_subwords() != subwords || out.tgt_vocab.has_subwords() != subwords)
        throw FormatError("checkpoint " + file.source + ": the options say tokenizer " + out.options.tokenizer + " but the metadata " +
                          (subwords ? "lacks" : "holds") + " src_merges/tgt_merges");
    }
    if (out.options.task == Task::lm) out.lm_vocab = saved_lm_vocabulary(file);
    return decoder_only_task(out.options.task);
  });
  TransformerConfig config = out.options.task == Task::translate
                                 ? out.options.model_config(out.src_vocab.size(), out.tgt_vocab.size())
                             : out.options.task == Task::lm ? out.options.model_config(out.lm_vocab.size(), out.lm_vocab.size())
                                                            : out.options.model_config();
  as_format_error(file.source, [&] { config.validate(); });
  check_model_fits_checkpoint(config, file, decoder_only);
  check_model_memory(out, file, memory_limit);  // before any tensor of the model is allocated
  check_finite_tensors(file);
  Generator gen(0);
  Module<float>* module = nullptr;
  if (decoder_only) {
    out.lm = std::make_unique<DecoderOnlyLM<float>>(config, gen);
    module = out.lm.get();
  } else {
    out.model = std::make_unique<Transformer<float>>(config, gen);
    module = out.model.get();
  }
  const Module<float>::StateDict state = saved_model_state(file);
  as_format_error(file.source, [&] { module->load_state_dict(state); });
  module->eval();
  return out;
}

std::string run_evaluation_file(const LoadedModel& model, const std::string& data) {
  if (!data.empty()) return data;
  const std::string& file = model.options.valid_file;
  const std::string where = "the run's --valid file " + quote_clipped(file) +
                            " (kept in the checkpoint as given at training; a relative path is read from the current directory)";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw FormatError(where + " is not there: give the pairs with --data");
  if (!model.valid_sha256.empty() && sha256_file_hex(file) != model.valid_sha256)
    throw FormatError(where + " is not the file the model was trained with (its SHA-256 differs): give the pairs with --data");
  return file;
}

}  // namespace headlab
