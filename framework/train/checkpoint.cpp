// checkpoint.cpp: saving a training run and reading it back (headlab/train/checkpoint.hpp).
#include "headlab/train/checkpoint.hpp"

#include <iomanip>
#include <sstream>

#include "headlab/core/user_input.hpp"

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
  if (in.fail()) throw ValueError("checkpoint: corrupt random state '" + what + "'");
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

}  // namespace

void save_checkpoint(const std::string& path, const TrainOptions& o, const Module<float>& model,
                     const Adam<float>* adam, const Generator& data_rng, const Generator& dropout_rng,
                     const TrainState& st, const std::map<std::string, std::string>& extra_metadata) {
  TensorFile file;
  file.metadata = extra_metadata;
  file.metadata["format"] = kCheckpointFormat;
  file.metadata["options"] = o.to_text();
  file.metadata["step"] = std::to_string(st.step);
  file.metadata["data_rng"] = rng_text(data_rng);
  file.metadata["dropout_rng"] = rng_text(dropout_rng);
  file.metadata["losses"] = losses_text(st.losses);
  for (const auto& [name, value] : model.state_dict()) file.add("model." + name, value);
  if (adam)
    for (const auto& [name, value] : adam->state()) file.add("optim." + name, value);
  save_safetensors(path, file);  // atomic: temporary file, then rename
}

namespace {
// Throws unless the file's metadata says it is a training checkpoint.
void check_checkpoint_format(const TensorFile& file) {
  auto it = file.metadata.find("format");
  if (it == file.metadata.end() || it->second != kCheckpointFormat)
    throw ValueError("checkpoint " + file.source + ": not a headlab training checkpoint (no format '" +
                     std::string(kCheckpointFormat) + "' in its metadata)");
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
  if (it == file.metadata.end()) throw ValueError("checkpoint " + file.source + ": metadata has no '" + key + "'");
  return it->second;
}

// Restores model, optimiser, generators and counters; validates before touching anything.
TrainState load_checkpoint(const std::string& path, const TrainOptions& o, Module<float>& model,
                           Adam<float>& adam, Generator& data_rng, Generator& dropout_rng) {
  const TensorFile file = load_checkpoint_file(path);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  const TrainOptions saved = TrainOptions::from_text(meta("options"));
  TrainOptions a = saved, b = o;  // everything but the run length must match
  a.steps = b.steps = 0;
  a.time_budget = b.time_budget = 0;
  a.stop_at_perfect = b.stop_at_perfect = false;
  std::string differences;
  for (const OptionInfo& info : train_option_table()) {
    if (!info.stored || info.get(a) == info.get(b)) continue;
    differences += std::string(differences.empty() ? "" : ", ") + info.field + " " + info.get(a) + " there, " +
                   info.get(b) + " here";
  }
  if (!differences.empty())
    throw ValueError("checkpoint " + path + ": it was trained with different options (" + differences + ")");
  Module<float>::StateDict model_state;
  OptimizerState<float> optim_state;
  for (const auto& e : file.entries()) {
    if (e.name.rfind("model.", 0) == 0) model_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
    else if (e.name.rfind("optim.", 0) == 0) optim_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
    else throw ValueError("checkpoint " + path + ": unexpected tensor '" + e.name + "'");
  }
  TrainState st;
  st.step = step_from_text(meta("step"));
  st.losses = losses_from_text(meta("losses"));
  if (st.losses.size() != st.step) throw ValueError("checkpoint " + path + ": loss history does not match the step");
  Generator data_copy, dropout_copy;
  rng_from_text(data_copy, meta("data_rng"), "data_rng");
  rng_from_text(dropout_copy, meta("dropout_rng"), "dropout_rng");
  model.load_state_dict(model_state);  // strict; throws before changing anything
  adam.load_state(optim_state);
  data_rng = data_copy;
  dropout_rng = dropout_copy;
  return st;
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
    throw ValueError(os.str());
  }
}
}  // namespace

LoadedModel load_trained_model(const TensorFile& file) {
  check_checkpoint_format(file);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  LoadedModel out;
  out.options = TrainOptions::from_text(meta("options"));
  out.options.validate();
  out.step = step_from_text(meta("step"));
  Generator gen(0);
  TransformerConfig config = out.options.model_config();
  if (out.options.task == Task::translate) {
    out.src_vocab = Vocabulary::from_text(meta("src_vocab"));
    out.tgt_vocab = Vocabulary::from_text(meta("tgt_vocab"));
    config = out.options.model_config(out.src_vocab.size(), out.tgt_vocab.size());
  }
  const bool decoder_only = out.options.task == Task::induction;
  if (decoder_only) config.src_vocab = 1;  // no encoder
  config.validate();
  check_model_fits_checkpoint(config, file, decoder_only);
  Module<float>* module = nullptr;
  if (decoder_only) {
    out.lm = std::make_unique<DecoderOnlyLM<float>>(config, gen);
    module = out.lm.get();
  } else {
    out.model = std::make_unique<Transformer<float>>(config, gen);
    module = out.model.get();
  }
  Module<float>::StateDict state;
  for (const auto& e : file.entries())
    if (e.name.rfind("model.", 0) == 0) state.emplace_back(e.name.substr(6), file.get<float>(e.name));
  module->load_state_dict(state);
  module->eval();
  return out;
}


}  // namespace headlab
