// lm_task.cpp: a language model on a text file (headlab/train/lm_task.hpp).
#include "headlab/train/lm_task.hpp"

#include <cmath>
#include <iomanip>
#include <limits>

#include <xtensor/xview.hpp>

#include "headlab/data/batching.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/checkpoint.hpp"
#include "training_loop.hpp"

namespace headlab {

namespace {

// A byte-order mark dropped; a NUL byte refused, naming the line (as eval --data reads it).
std::string read_text(const std::string& path) { return read_text_file(path, "train --task lm", kNoSizeLimit); }

// The ids of a text, or a FormatError naming the file.
std::vector<std::int64_t> encode_file(const LmVocabulary& vocab, const std::string& text, const std::string& path) {
  try {
    return vocab.encode(text);
  } catch (const ValueError& e) {
    throw FormatError("train --task lm: " + path + ": " + e.what());
  }
}

// ids[start .. start + count) as a (rows, count) array, one row per start.
IndexArray windows(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& starts, std::size_t count) {
  IndexArray out = IndexArray::from_shape({starts.size(), count});
  for (std::size_t r = 0; r < starts.size(); ++r)
    for (std::size_t t = 0; t < count; ++t) out(r, t) = ids[starts[r] + t];
  return out;
}

}  // namespace

LmData load_lm_data(const TrainOptions& o, const LmVocabulary* saved) {
  LmData d;
  const std::string text = read_text(o.text_file);
  std::string train_text = text, valid_text;
  if (o.valid_file.empty()) {
    // Split at a character boundary: the last valid_fraction of the characters (not bytes).
    std::vector<char32_t> points;
    try {
      points = utf8_code_points(text);
    } catch (const ValueError& e) {
      throw FormatError("train --task lm: " + o.text_file + ": " + e.what());
    }
    const auto held = static_cast<std::size_t>(std::floor(double(points.size()) * o.valid_fraction));
    std::size_t cut = 0;
    for (std::size_t i = 0; i + held < points.size(); ++i) cut += utf8_encode(points[i]).size();
    train_text = text.substr(0, cut);
    valid_text = text.substr(cut);
  } else {
    valid_text = read_text(o.valid_file);
  }
  try {
    d.vocab = saved ? *saved : LmVocabulary::build(parse_lm_tokenizer(o.tokenizer), train_text, o.min_freq);
  } catch (const ValueError& e) {
    throw FormatError("train --task lm: " + o.text_file + ": " + e.what());
  }
  d.train = encode_file(d.vocab, train_text, o.text_file);
  const std::string& valid_name = o.valid_file.empty() ? o.text_file : o.valid_file;
  d.valid = encode_file(d.vocab, valid_text, valid_name);
  if (saved) {
    const std::size_t unknown = d.vocab.count_unknown(train_text);
    const std::size_t expected = saved->tokenizer() == LmTokenizer::words
                                     ? LmVocabulary::build(LmTokenizer::words, train_text, o.min_freq).count_unknown(train_text)
                                     : 0;  // rare words are <unk> in the run's own vocabulary too
    if (unknown != expected)
      throw ValueError("train --task lm: " + o.text_file + " holds " + std::to_string(unknown - std::min(unknown, expected)) +
                       " tokens the checkpoint's vocabulary lacks: it is not the text the run was trained on");
  }
  d.valid_unknown = d.vocab.count_unknown(valid_text);
  d.valid_chars_per_token = d.vocab.characters_per_token(valid_text);
  const std::size_t window = o.length + 1;
  if (d.train.size() < window + 1)
    throw FormatError("train --task lm: " + o.text_file + ": its training part has " + std::to_string(d.train.size()) +
                      " tokens, fewer than one window of --length + 1 = " + std::to_string(window) + " and one more");
  if (d.valid.size() < window)
    throw FormatError("train --task lm: " + valid_name + ": the validation text has " + std::to_string(d.valid.size()) +
                      " tokens, fewer than one window of --length + 1 = " + std::to_string(window));
  return d;
}

namespace {
// --bos-windows: each window's first input replaced by <s> (inputs (B, T)).
void start_with_bos(IndexArray& inputs) { xt::view(inputs, xt::all(), 0) = LmVocabulary::bos; }

// The starts of the validation windows: every `context` ids, each window context + 1 ids long, at
// most max_windows of them. ValueError (naming `what`) when there is none or a size is 0.
std::vector<std::size_t> window_starts(const std::vector<std::int64_t>& ids, std::size_t context,
                                       std::size_t max_windows, std::size_t batch, const char* what) {
  if (context < 1 || batch < 1) throw ValueError(std::string(what) + ": context and batch must be >= 1");
  std::vector<std::size_t> starts;
  for (std::size_t s = 0; s + context + 1 <= ids.size() && starts.size() < max_windows; s += context) starts.push_back(s);
  if (starts.empty())
    throw ValueError(std::string(what) + ": " + std::to_string(ids.size()) + " ids hold no window of " +
                     std::to_string(context + 1));
  return starts;
}
}  // namespace

LmScore lm_score(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& ids, std::size_t context,
                 std::size_t max_windows, std::size_t batch, double chars_per_token, bool bos_first) {
  const std::vector<std::size_t> starts = window_starts(ids, context, max_windows, batch, "lm_score");
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const auto T = static_cast<std::ptrdiff_t>(context);
  double total = 0;
  std::size_t count = 0;
  for (const RowRange r : row_ranges(starts.size(), batch)) {
    const std::vector<std::size_t> chunk(starts.begin() + std::ptrdiff_t(r.first), starts.begin() + std::ptrdiff_t(r.last));
    const IndexArray w = windows(ids, chunk, context + 1);  // (b, T + 1)
    IndexArray inputs = xt::view(w, xt::all(), xt::range(0, T));
    if (bos_first) start_with_bos(inputs);
    IndexArray targets = xt::view(w, xt::all(), xt::range(1, T + 1));
    targets.reshape({targets.size()});
    const Tensor<float> logits = model.forward(inputs, nullptr);  // (b, T, V)
    const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
    total += cross_entropy(reshape(logits, {-1, V}), targets, -100).item() * double(targets.size());
    count += targets.size();
  }
  model.train(was_training);
  LmScore s;
  s.tokens = count;
  s.loss = total / double(count);
  s.bits_per_char = s.loss / std::log(2.0) / chars_per_token;
  return s;
}

double lm_sink_mass(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& ids, std::size_t context,
                    std::size_t max_windows, std::size_t batch, bool bos_first) {
  const std::vector<std::size_t> starts = window_starts(ids, context, max_windows, batch, "lm_sink_mass");
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  for (std::size_t l = 0; l < model.layers(); ++l) model.layer(l).self_attn.set_taps(true);
  double sum = 0;  // of A[b, h, i, 0] over windows b, heads h, queries i >= 1, every layer
  std::size_t count = 0;
  for (const RowRange r : row_ranges(starts.size(), batch)) {
    const std::vector<std::size_t> chunk(starts.begin() + std::ptrdiff_t(r.first), starts.begin() + std::ptrdiff_t(r.last));
    IndexArray w = windows(ids, chunk, context);  // (b, T): the windows' inputs
    if (bos_first) start_with_bos(w);
    (void)model.forward(w, nullptr);
    for (std::size_t l = 0; l < model.layers(); ++l) {
      const Array<float>& a = model.layer(l).self_attn.last_taps().weights.value();  // (b, h, T, T)
      const std::size_t B = a.shape()[0], H = a.shape()[1], L = a.shape()[2];
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t i = 1; i < L; ++i) sum += double(a(b, h, i, 0));  // query i's weight on key 0
      count += B * H * (L - 1);
    }
  }
  for (std::size_t l = 0; l < model.layers(); ++l) model.layer(l).self_attn.set_taps(false);
  model.train(was_training);
  return count ? sum / double(count) : std::numeric_limits<double>::quiet_NaN();
}

namespace {

class LmTask : public detail::TrainingTask {
 public:
  LmTask(const TrainOptions& o, Generator& init_rng, std::ostream& log)
      : o_(o), data_(load_data(o)), model_(o.model_config(data_.vocab.size(), data_.vocab.size()), init_rng) {
    detail::xavier_matrices(model_, init_rng);
    log << "lm task: " << o.text_file << ", " << o.tokenizer << " tokens: " << data_.train.size() << " training and "
        << data_.valid.size() << " validation tokens (" << (o.valid_file.empty() ? "the end of the text" : o.valid_file)
        << "), " << data_.vocab.describe();
    if (data_.valid_unknown) log << " (" << data_.valid_unknown << " validation tokens unknown, read as <unk>)";
    log << "; context " << o.length << ", decoder-only d_model " << o.d_model << ", heads " << o.heads << ", "
        << o.layers << " layers, " << model_.parameter_count() << " parameters, batch " << o.batch << ", seed " << o.seed
        << "\n";
  }

  Module<float>& model() override { return model_; }

  std::size_t draw_batch(std::size_t, Generator& data_rng) override {
    const std::size_t T = o_.length, last_start = data_.train.size() - (T + 1);
    std::vector<std::size_t> starts(o_.batch);
    for (std::size_t& s : starts) s = data_rng.below(last_start + 1);
    batch_ = windows(data_.train, starts, T + 1);  // (B, T + 1)
    return o_.batch;
  }

  detail::StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) override {
    const std::size_t T = o_.length;
    const IndexArray w = detail::batch_rows(batch_, begin, end);  // (b, T + 1)
    IndexArray inputs = xt::view(w, xt::all(), xt::range(0, std::ptrdiff_t(T)));
    if (o_.bos_windows) start_with_bos(inputs);
    IndexArray targets = xt::view(w, xt::all(), xt::range(1, std::ptrdiff_t(T) + 1));
    targets.reshape({targets.size()});
    const Tensor<float> logits = model_.forward(inputs, dropout_rng);  // (b, T, V)
    const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
    return {cross_entropy(reshape(logits, {-1, V}), targets, -100, float(o_.label_smoothing)), targets.size()};
  }

  void evaluate(const detail::LoopState& state, TrainResult& result, MetricRow& row, std::ostream& log) override {
    const LmScore s = lm_score(model_, data_.valid, o_.length, o_.eval_sequences, o_.batch, data_.valid_chars_per_token,
                               o_.bos_windows);
    result.valid_loss = s.loss;
    result.valid_bits_per_char = s.bits_per_char;
    row.set("valid_loss", s.loss).set("valid_bits_per_char", s.bits_per_char);
    log << "step " << std::setw(5) << state.train.step << "  loss " << std::fixed << std::setprecision(4)
        << (state.train.losses.empty() ? std::nan("") : state.train.losses.back()) << "  validation " << std::setprecision(4) << s.loss
        << (o_.tokenizer == "char" ? " nats/char, " : " nats/word, ")
        << std::setprecision(3) << s.bits_per_char << " bits/char  (" << std::setprecision(1) << state.train_seconds
        << " s training)" << std::defaultfloat << "\n";
  }

  std::map<std::string, std::string> checkpoint_extras() const override {
    return {{"tokenizer", o_.tokenizer}, {lm_vocabulary_key(data_.vocab.tokenizer()), data_.vocab.to_text()}};
  }

  void finish(const detail::LoopState& state, TrainResult& result, std::ostream& log) override {
    if (!state.evaluated_last) {  // stopped by the time budget or a request: score the final weights
      MetricRow unused;
      evaluate(state, result, unused, log);
    }
    if (o_.run_dir.empty()) return;
    result.seconds = state.seconds();
    // The first-token sink of the final weights, on the validation windows (lm_task.hpp).
    const double sink = lm_sink_mass(model_, data_.valid, o_.length, o_.eval_sequences, o_.batch, o_.bos_windows);
    detail::write_summary(o_, result, model_.parameter_count(), flops_per_token(),
                          {{"valid_bits_per_char", result.valid_bits_per_char}, {"sink_mass", sink}});
  }

  double flops_per_token() const override { return decoder_only_flops_per_token(model_.config(), o_.length); }

 private:
  // A resumed run keeps the vocabulary of its checkpoint (the ids the model learnt).
  static LmData load_data(const TrainOptions& o) {
    if (!o.resume) return load_lm_data(o);
    const TensorFile file = load_checkpoint_file(detail::run_file(o, "checkpoint.safetensors"));
    const LmVocabulary saved = saved_lm_vocabulary(file);
    return load_lm_data(o, &saved);
  }
  const TrainOptions& o_;
  LmData data_;
  IndexArray batch_;  // the step's windows (B, T + 1), from draw_batch
  DecoderOnlyLM<float> model_;
};

}  // namespace

TrainResult train_lm(const TrainOptions& o, std::ostream& log) { return detail::train_task<LmTask>(o, log); }

}  // namespace headlab
