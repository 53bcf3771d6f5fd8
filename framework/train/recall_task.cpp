// recall_task.cpp: multi-query associative recall (headlab/train/recall_task.hpp).
//
// Sequence (2n+1 ids):  <s> (k_1 v_1) .. (k_n v_n) q_1 .. q_n,  keys distinct, values uniform;
//                       q_i names r distinct keys of the sequence; target at q_i: their values.
// One step:  logits = model(seq)                       (B, 2n+1, vocab), causal
//            loss = cross_entropy(logits, targets)     over the B n query positions
//            backward; clip; lr = Noam(step); Adam step.
#include "headlab/train/recall_task.hpp"

#include <algorithm>
#include <iomanip>
#include <numeric>

#include "headlab/data/text.hpp"
#include "headlab/ops/ops.hpp"
#include "training_loop.hpp"

namespace headlab {

namespace {
std::size_t power(std::size_t base, std::size_t exponent) {
  std::size_t p = 1;
  for (std::size_t i = 0; i < exponent; ++i) p *= base;
  return p;
}

// The `count` base-`base` digits of index, the first most significant.
std::vector<std::size_t> digits_of(std::size_t index, std::size_t base, std::size_t count) {
  std::vector<std::size_t> out(count);
  for (std::size_t i = count; i-- > 0;) {
    out[i] = index % base;
    index /= base;
  }
  return out;
}
}  // namespace

std::size_t RecallLayout::query_count() const { return power(keys, relations); }
std::size_t RecallLayout::answer_count() const { return power(values, relations); }
std::size_t RecallLayout::vocab() const { return 2 + keys * values + query_count() + answer_count(); }

std::int64_t RecallLayout::pair_token(std::size_t key, std::size_t value) const {
  return std::int64_t(2 + key * values + value);
}

std::int64_t RecallLayout::query_token(const std::vector<std::size_t>& named) const {
  std::size_t index = 0;
  for (std::size_t key : named) index = index * keys + key;
  return std::int64_t(2 + keys * values + index);
}

std::int64_t RecallLayout::answer_token(const std::vector<std::size_t>& answer) const {
  std::size_t index = 0;
  for (std::size_t value : answer) index = index * values + value;
  return std::int64_t(2 + keys * values + query_count() + index);
}

std::vector<std::size_t> RecallLayout::answer_values(std::int64_t id) const {
  const std::int64_t first = std::int64_t(2 + keys * values + query_count());
  if (id < first || id >= std::int64_t(vocab())) return {};
  return digits_of(std::size_t(id - first), values, relations);
}

std::vector<std::size_t> RecallLayout::query_keys(std::int64_t id) const {
  const std::int64_t first = std::int64_t(2 + keys * values);
  if (id < first || id >= first + std::int64_t(query_count())) return {};
  return digits_of(std::size_t(id - first), keys, relations);
}

std::ptrdiff_t RecallLayout::pair_key(std::int64_t id) const {
  if (id < 2 || id >= std::int64_t(2 + keys * values)) return -1;
  return std::ptrdiff_t(std::size_t(id - 2) / values);
}

std::int64_t RecallLayout::answer_for(std::vector<std::size_t> named_values) const {
  if (unordered_answer) std::sort(named_values.begin(), named_values.end());
  return answer_token(named_values);
}

std::string RecallLayout::token_text(std::int64_t id) const {
  if (id == 0) return "<pad>";
  if (id == 1) return "<s>";
  if (id < 0 || id >= std::int64_t(vocab())) return "#" + std::to_string(id);
  std::size_t index = std::size_t(id - 2);
  if (index < keys * values) return "k" + std::to_string(index / values) + "=v" + std::to_string(index % values);
  index -= keys * values;
  const bool query = index < query_count();
  if (!query) index -= query_count();
  const std::size_t base = query ? keys : values;
  std::string text;
  for (std::size_t i = 0; i < relations; ++i) {
    text = (query ? "k" : "v") + std::to_string(index % base) + (i ? "," : "") + text;
    index /= base;
  }
  return (query ? "?" : "=") + text;
}

void validate_recall_sizes(std::size_t keys, std::size_t values, std::size_t relations, std::size_t pairs) {
  auto bad = [](const char* field, const std::string& why) { throw OptionError(field, why); };
  if (relations < 1) bad("relations", "must be >= 1 (the keys a query names)");
  if (pairs < relations)
    bad("length", std::to_string(pairs) + " pairs cannot hold a query of --relations " + std::to_string(relations) +
                      " distinct keys");
  if (keys < pairs)
    bad("keys", std::to_string(keys) + " keys cannot give " + std::to_string(pairs) + " distinct keys (--length)");
  if (values < 2) bad("values", "must be >= 2, got " + std::to_string(values));
  // 2 + K V + K^r + V^r without overflow: every factor is checked against the bound first.
  double total = 2 + double(keys) * double(values);
  double q = 1, a = 1;
  for (std::size_t i = 0; i < relations && total <= double(kMaxRecallVocab); ++i) {
    q *= double(keys);
    a *= double(values);
    if (total + q + a > double(kMaxRecallVocab)) total = double(kMaxRecallVocab) + 1;
  }
  total += q + a;
  if (total > double(kMaxRecallVocab))
    bad("relations", "keys^relations + values^relations tokens (--keys " + std::to_string(keys) + ", --values " +
                         std::to_string(values) + ", --relations " + std::to_string(relations) + ") exceed " +
                         std::to_string(kMaxRecallVocab));
}

RecallLayout recall_layout(const TrainOptions& o) {
  return RecallLayout{o.keys, o.values, o.relations, o.unordered_answer};
}

RecallBatch recall_batch(Generator& gen, const RecallLayout& layout, std::size_t batch, std::size_t pairs) {
  validate_recall_sizes(layout.keys, layout.values, layout.relations, pairs);
  const std::size_t L = 2 * pairs + 1;
  RecallBatch out;
  out.sequences = IndexArray::from_shape({batch, L});
  out.targets = IndexArray::from_shape({batch, L});
  out.targets.fill(-100);
  std::vector<std::size_t> all_keys(layout.keys), value_of(layout.keys), positions(pairs), named(layout.relations),
      answer(layout.relations);
  for (std::size_t b = 0; b < batch; ++b) {
    // n distinct keys: the first n of a Fisher-Yates shuffle of 0..K-1.
    std::iota(all_keys.begin(), all_keys.end(), std::size_t(0));
    for (std::size_t i = 0; i < pairs; ++i) std::swap(all_keys[i], all_keys[i + gen.below(layout.keys - i)]);
    out.sequences(b, 0) = Vocabulary::bos;
    for (std::size_t i = 0; i < pairs; ++i) {
      value_of[all_keys[i]] = gen.below(layout.values);
      out.sequences(b, 1 + i) = layout.pair_token(all_keys[i], value_of[all_keys[i]]);
    }
    for (std::size_t i = 0; i < pairs; ++i) {
      // r distinct pair positions, in the order drawn
      std::iota(positions.begin(), positions.end(), std::size_t(0));
      for (std::size_t j = 0; j < layout.relations; ++j) {
        std::swap(positions[j], positions[j + gen.below(pairs - j)]);
        named[j] = all_keys[positions[j]];
        answer[j] = value_of[named[j]];
      }
      out.sequences(b, 1 + pairs + i) = layout.query_token(named);
      out.targets(b, 1 + pairs + i) = layout.answer_for(answer);
    }
  }
  return out;
}

RecallBatch held_out_recall_sequences(const TrainOptions& o, std::size_t count) {
  Generator eval_rng(o.seed + 1000003);  // never the training stream's seed
  return recall_batch(eval_rng, recall_layout(o), count, o.length);
}

RecallBatch recall_training_set(const TrainOptions& o) {
  if (o.train_sequences == 0) {  // (0, 2n+1): no set
    const std::size_t L = 2 * o.length + 1;
    return {IndexArray::from_shape({0, L}), IndexArray::from_shape({0, L})};
  }
  Generator set_rng(o.seed + 2000003);
  return recall_batch(set_rng, recall_layout(o), o.train_sequences, o.length);
}

RecallBatch recall_rows(const RecallBatch& batch, const std::vector<std::size_t>& rows) {
  const std::size_t L = batch.sequences.shape()[1];
  RecallBatch out{IndexArray::from_shape({rows.size(), L}), IndexArray::from_shape({rows.size(), L})};
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t t = 0; t < L; ++t) {
      out.sequences(i, t) = batch.sequences(rows[i], t);
      out.targets(i, t) = batch.targets(rows[i], t);
    }
  return out;
}

RecallScore recall_eval(DecoderOnlyLM<float>& model, const RecallLayout& layout, const RecallBatch& batch) {
  const IndexArray& sequences = batch.sequences;
  if (sequences.dimension() != 2 || batch.targets.shape() != sequences.shape() || sequences.shape()[1] % 2 == 0)
    throw ShapeError("recall_eval: sequences and targets should both be (B, 2n+1)");
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const Tensor<float> logits = model.forward(sequences, nullptr);  // (B, 2n+1, V)
  model.train(was_training);
  const Array<float> logp = log_softmax(logits, -1).value();
  const std::size_t B = sequences.shape()[0], L = sequences.shape()[1], V = logp.shape()[2];
  RecallScore s;
  std::size_t answers = 0, right = 0, slots_right = 0;
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < L; ++t) {
      const std::int64_t target = batch.targets(b, t);
      if (target < 0) continue;
      ++answers;
      s.loss -= double(logp(b, t, std::size_t(target)));
      std::size_t best = 0;  // argmax over the vocabulary
      for (std::size_t v = 1; v < V; ++v)
        if (logp(b, t, v) > logp(b, t, best)) best = v;
      right += std::int64_t(best) == target;
      const std::vector<std::size_t> want = layout.answer_values(target), got = layout.answer_values(std::int64_t(best));
      for (std::size_t j = 0; j < got.size(); ++j) slots_right += got[j] == want[j];
    }
  }
  const double n = double(std::max<std::size_t>(answers, 1));
  s.loss /= n;
  s.answer_accuracy = double(right) / n;
  s.slot_accuracy = double(slots_right) / (n * double(std::max<std::size_t>(layout.relations, 1)));
  return s;
}

namespace {

class RecallTask : public detail::TrainingTask {
 public:
  RecallTask(const TrainOptions& o, Generator& init_rng, std::ostream& log)
      : o_(o), layout_(recall_layout(o)), model_(o.model_config(), init_rng),
        held_out_(held_out_recall_sequences(o, o.eval_sequences)), training_set_(recall_training_set(o)) {
    if (o.train_sequences > 0) {  // the training set's own score: its first min(N, eval_sequences) rows
      std::vector<std::size_t> first(std::min(o.train_sequences, o.eval_sequences));
      for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
      training_probe_ = recall_rows(training_set_, first);
    }
    detail::xavier_matrices(model_, init_rng);
    log << "recall task: " << o.length << " pairs of " << o.keys << " keys x " << o.values << " values, queries of "
        << o.relations << " keys" << (o.unordered_answer ? ", answered sorted" : "") << " (vocab " << layout_.vocab() << ", sequences of " << 2 * o.length + 1
        << "), decoder-only d_model " << o.d_model << ", heads " << o.heads << ", " << o.layers << " layers"
        << (o.attention_only ? " (attention only)" : "") << ", " << model_.parameter_count() << " parameters, batch "
        << o.batch << ", seed " << o.seed;
    if (o.train_sequences > 0) log << ", a training set of " << o.train_sequences << " sequences";
    log << "\n";
  }

  Module<float>& model() override { return model_; }

  std::size_t draw_batch(std::size_t, Generator& data_rng) override {
    if (o_.train_sequences == 0) {
      batch_ = recall_batch(data_rng, layout_, o_.batch, o_.length);
    } else {  // rows of the finite training set, with replacement
      std::vector<std::size_t> rows(o_.batch);
      for (std::size_t& r : rows) r = std::size_t(data_rng.below(o_.train_sequences));
      batch_ = recall_rows(training_set_, rows);
    }
    return o_.batch;
  }

  detail::StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) override {
    const IndexArray sequences = detail::batch_rows(batch_.sequences, begin, end);  // (b, 2n+1)
    IndexArray targets = detail::batch_rows(batch_.targets, begin, end);
    targets.reshape({targets.size()});
    const Tensor<float> logits = model_.forward(sequences, dropout_rng);  // (b, 2n+1, V)
    const auto V = static_cast<std::ptrdiff_t>(layout_.vocab());
    return {cross_entropy(reshape(logits, {-1, V}), targets, -100, float(o_.label_smoothing)), (end - begin) * o_.length};
  }

  void evaluate(const detail::LoopState& state, TrainResult& result, MetricRow& row, std::ostream& log) override {
    const RecallScore s = recall_eval(model_, layout_, held_out_);
    result.valid_loss = s.loss;
    result.answer_accuracy = s.answer_accuracy;
    result.slot_accuracy = s.slot_accuracy;
    row.set("valid_loss", s.loss).set("answer_accuracy", s.answer_accuracy).set("slot_accuracy", s.slot_accuracy);
    log << "step " << std::setw(5) << state.train.step << "  held-out loss " << std::fixed << std::setprecision(3)
        << s.loss << "  answers right " << s.answer_accuracy << "  values right " << s.slot_accuracy;
    if (o_.train_sequences > 0) {
      training_score_ = recall_eval(model_, layout_, training_probe_);
      row.set("train_accuracy", training_score_.answer_accuracy).set("train_answer_loss", training_score_.loss);
      log << "  training set: answers right " << training_score_.answer_accuracy;
    }
    log << std::defaultfloat << "\n";
  }

  void finish(const detail::LoopState& state, TrainResult& result, std::ostream& log) override {
    if (!state.evaluated_last) {  // stopped by the time budget or a request: score the final weights
      MetricRow unused;
      evaluate(state, result, unused, log);
    }
    if (o_.run_dir.empty()) return;
    result.seconds = state.seconds();
    std::map<std::string, double> extra = {{"slot_accuracy", result.slot_accuracy}};
    if (o_.train_sequences > 0) {  // the train-test gap: the training set's accuracy beside valid_accuracy
      extra["train_accuracy"] = training_score_.answer_accuracy;
      extra["train_answer_loss"] = training_score_.loss;
    }
    detail::write_summary(o_, result, model_.parameter_count(),
                          decoder_only_flops_per_token(model_.config(), 2 * o_.length + 1), extra);
  }

 private:
  const TrainOptions& o_;
  const RecallLayout layout_;
  DecoderOnlyLM<float> model_;
  const RecallBatch held_out_;
  const RecallBatch training_set_;  // --train-sequences (empty: a fresh batch every step)
  RecallBatch batch_;               // the step's sequences and targets, from draw_batch
  RecallBatch training_probe_;      // its first rows, scored at each evaluation
  RecallScore training_score_;      // the latest such score
};

}  // namespace

TrainResult train_recall(const TrainOptions& o, std::ostream& log) { return detail::train_task<RecallTask>(o, log); }

}  // namespace headlab
