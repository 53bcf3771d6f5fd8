// induction_task.cpp: the induction task on a decoder-only model (headlab/train/induction_task.hpp).
//
// Sequence (2 T + 1 ids):  <s> r_1 .. r_k r_1 .. r_k x_1 .. x_{2(T-k)},   all uniform in [2, vocab),
//                          k uniform in [ceil(T/2), T] per sequence.
// One step:  logits = model(seq[:, :-1])            (B, 2T, V), causal
//            loss = cross_entropy(logits, seq[:, 1:])   over all 2T targets
//            backward; clip; lr = Noam(step); Adam step.
// Target t (0-based) is the token at position t + 1. Targets 0..k-1 are the first copy (random,
// loss ~ ln(vocab - 2) at best); target k is r_1 again, which nothing before it announces;
// targets k+1..2k-1 (r_2..r_k of the second copy) follow from the first copy: the "repeated half".
#include <iomanip>

#include <xtensor/xview.hpp>

#include "headlab/ops/ops.hpp"
#include "headlab/train/induction_task.hpp"
#include "training_loop.hpp"

namespace headlab {

InductionBatch induction_batch(Generator& gen, std::size_t batch, std::size_t max_block, std::size_t vocab,
                               bool fixed_block) {
  if (vocab < 4 || max_block < 2) {
    throw ValueError("induction_batch: vocab " + std::to_string(vocab) + " (needs >= 4) and block " +
                     std::to_string(max_block) + " (needs >= 2)");
  }
  InductionBatch out;
  out.sequences = IndexArray::from_shape({batch, 2 * max_block + 1});
  auto token = [&] { return 2 + static_cast<std::int64_t>(gen.below(vocab - 2)); };
  const std::size_t shortest = (max_block + 1) / 2;
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t k = fixed_block ? max_block : shortest + gen.below(max_block - shortest + 1);
    out.blocks.push_back(k);
    out.sequences(b, 0) = Vocabulary::bos;
    for (std::size_t t = 1; t <= k; ++t) {
      out.sequences(b, t) = token();
      out.sequences(b, t + k) = out.sequences(b, t);
    }
    for (std::size_t t = 2 * k + 1; t <= 2 * max_block; ++t) out.sequences(b, t) = token();
  }
  return out;
}

InductionBatch held_out_induction_sequences(const TrainOptions& o, std::size_t count) {
  Generator eval_rng(o.seed + 1000003);  // never the training stream's seed
  return induction_batch(eval_rng, count, o.length, o.vocab);
}

InductionScore induction_eval(DecoderOnlyLM<float>& model, const InductionBatch& batch) {
  const IndexArray& sequences = batch.sequences;
  if (sequences.dimension() != 2 || sequences.shape()[1] < 5 || sequences.shape()[1] % 2 == 0 ||
      batch.blocks.size() != sequences.shape()[0]) {
    throw ShapeError("induction_eval: sequences " + std::to_string(sequences.dimension()) +
                     "-d should be (B, 2 T + 1) with T >= 2, with one block length per row");
  }
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const std::size_t B = sequences.shape()[0], N = sequences.shape()[1] - 1, T = N / 2;
  const IndexArray inputs = xt::view(sequences, xt::all(), xt::range(0, std::ptrdiff_t(N)));
  const Tensor<float> logits = model.forward(inputs, nullptr);  // (B, 2T, V)
  model.train(was_training);
  // Per-target negative log-likelihood from a row-wise log-softmax.
  const Array<float> logp = log_softmax(logits, -1).value();
  InductionScore s;
  std::size_t correct = 0, first = 0, repeated = 0;
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t k = batch.blocks[b];
    if (k < 2 || k > T) throw ValueError("induction_eval: block " + std::to_string(k) + " of row " + std::to_string(b) + " is not in [2, T]");
    for (std::size_t t = 0; t < N; ++t) {
      const auto target = static_cast<std::size_t>(sequences(b, t + 1));
      const double nll = -double(logp(b, t, target));
      s.loss += nll;
      if (t < k) {
        s.first_half_loss += nll;
        ++first;
      }
      if (t > k && t < 2 * k) {
        ++repeated;
        s.repeated_loss += nll;
        std::size_t best = 0;  // argmax over the vocabulary
        for (std::size_t v = 1; v < logp.shape()[2]; ++v)
          if (logp(b, t, v) > logp(b, t, best)) best = v;
        correct += best == target;
      }
    }
  }
  s.loss /= double(std::max<std::size_t>(B * N, 1));
  s.first_half_loss /= double(std::max<std::size_t>(first, 1));
  s.repeated_loss /= double(std::max<std::size_t>(repeated, 1));
  s.repeated_accuracy = double(correct) / double(std::max<std::size_t>(repeated, 1));
  return s;
}

namespace {

class InductionTask : public detail::TrainingTask {
 public:
  InductionTask(const TrainOptions& o, Generator& init_rng, std::ostream& log)
      : o_(o), model_(o.model_config(), init_rng), held_out_(held_out_induction_sequences(o, o.eval_sequences)) {
    detail::xavier_matrices(model_, init_rng);
    log << "induction task: vocab " << o.vocab << ", block " << o.length << " (sequences of " << 2 * o.length + 1
        << "), decoder-only d_model " << o.d_model << ", heads " << o.heads << ", " << o.layers << " layers"
        << (o.attention_only ? " (attention only)" : "") << ", " << model_.parameter_count() << " parameters, batch "
        << o.batch << ", seed " << o.seed << "\n";
  }

  Module<float>& model() override { return model_; }

  std::size_t draw_batch(std::size_t, Generator& data_rng) override {
    batch_ = induction_batch(data_rng, o_.batch, o_.length, o_.vocab).sequences;
    return o_.batch;
  }

  detail::StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) override {
    const auto N = static_cast<std::ptrdiff_t>(2 * o_.length), V = static_cast<std::ptrdiff_t>(o_.vocab);
    const IndexArray data = detail::batch_rows(batch_, begin, end);
    const IndexArray inputs = xt::view(data, xt::all(), xt::range(0, N));
    IndexArray targets = xt::view(data, xt::all(), xt::range(1, N + 1));
    targets.reshape({targets.size()});
    const Tensor<float> logits = model_.forward(inputs, dropout_rng);  // (b, 2T, V)
    return {cross_entropy(reshape(logits, {-1, V}), targets, -100, float(o_.label_smoothing)), targets.size()};
  }

  void evaluate(const detail::LoopState& state, TrainResult& result, MetricRow& row, std::ostream& log) override {
    const InductionScore s = induction_eval(model_, held_out_);
    result.valid_loss = s.loss;
    result.first_half_loss = s.first_half_loss;
    result.repeated_loss = s.repeated_loss;
    result.repeated_accuracy = s.repeated_accuracy;
    row.set("valid_loss", s.loss).set("first_half_loss", s.first_half_loss).set("repeated_loss", s.repeated_loss)
        .set("repeated_accuracy", s.repeated_accuracy);
    log << "step " << std::setw(5) << state.train.step << "  held-out loss " << std::fixed << std::setprecision(3)
        << s.loss << "  first half " << s.first_half_loss << "  repeated half " << s.repeated_loss << "  (accuracy "
        << s.repeated_accuracy << ")" << std::defaultfloat << "\n";
  }

  void finish(const detail::LoopState& state, TrainResult& result, std::ostream& log) override {
    if (!state.evaluated_last) {  // stopped by the time budget or a request: score the final weights
      MetricRow unused;
      evaluate(state, result, unused, log);
    }
    if (o_.run_dir.empty()) return;
    result.seconds = state.seconds();
    detail::write_summary(o_, result, model_.parameter_count(), decoder_only_flops_per_token(model_.config(), 2 * o_.length),
                          {{"repeated_loss", result.repeated_loss}, {"first_half_loss", result.first_half_loss}});
  }

 private:
  const TrainOptions& o_;
  DecoderOnlyLM<float> model_;
  const InductionBatch held_out_;
  IndexArray batch_;  // the step's sequences (B, 2T + 1), from draw_batch
};

}  // namespace

TrainResult train_induction(const TrainOptions& o, std::ostream& log) { return detail::train_task<InductionTask>(o, log); }

}  // namespace headlab
