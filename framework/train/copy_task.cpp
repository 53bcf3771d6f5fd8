// copy_task.cpp: the copy task (headlab/train/copy_task.hpp) as a task of the shared loop.
#include "headlab/train/copy_task.hpp"

#include <iomanip>

#include <xtensor/xview.hpp>

#include "headlab/ops/ops.hpp"
#include "training_loop.hpp"

namespace headlab {

IndexArray copy_task_batch(Generator& gen, std::size_t batch, std::size_t length, std::size_t vocab) {
  IndexArray data = IndexArray::from_shape({batch, length});
  for (std::size_t b = 0; b < batch; ++b) {
    data(b, 0) = 1;  // start symbol
    for (std::size_t t = 1; t < length; ++t) data(b, t) = 1 + static_cast<std::int64_t>(gen.below(vocab - 1));
  }
  return data;
}

double copy_exact_match(Transformer<float>& model, const IndexArray& data) {
  const bool was_training = model.is_training();
  model.eval();
  const std::size_t B = data.shape()[0], L = data.shape()[1];
  const IndexArray decoded = greedy_decode(model, data, L, 1);
  model.train(was_training);
  std::size_t exact = 0;
  for (std::size_t b = 0; b < B; ++b) {
    bool same = true;
    for (std::size_t t = 0; t < L && same; ++t) same = decoded(b, t) == data(b, t);
    exact += same;
  }
  return B ? static_cast<double>(exact) / static_cast<double>(B) : 0.0;
}

IndexArray held_out_sequences(const TrainOptions& o, std::size_t count) {
  Generator eval_rng(o.seed + 1000003);  // never the training stream's seed
  return copy_task_batch(eval_rng, count, o.length, o.vocab);
}

namespace {

// The decoder reads tgt[:, :-1] and predicts tgt[:, 1:], flattened: (B, L-1) ids and (B (L-1)) targets.
struct TeacherForcing {
  IndexArray input, targets;
};
TeacherForcing teacher_forcing(const IndexArray& data) {
  const auto L = static_cast<std::ptrdiff_t>(data.shape()[1]);
  TeacherForcing tf;
  tf.input = xt::view(data, xt::all(), xt::range(0, L - 1));
  tf.targets = xt::view(data, xt::all(), xt::range(1, L));
  tf.targets.reshape({tf.targets.size()});
  return tf;
}

class CopyTask : public detail::TrainingTask {
 public:
  CopyTask(const TrainOptions& o, Generator& init_rng, std::ostream& log)
      : o_(o), model_(o.model_config(), init_rng), held_out_(held_out_sequences(o, o.eval_sequences)) {
    detail::xavier_matrices(model_, init_rng);
    log << "copy task: vocab " << o.vocab << ", length " << o.length << ", model d_model " << o.d_model << ", heads "
        << o.heads << ", ff " << o.ff_dim << ", " << o.layers << "+" << o.layers << " layers, "
        << model_.parameter_count() << " parameters, batch " << o.batch << ", seed " << o.seed << "\n";
  }

  Module<float>& model() override { return model_; }

  std::size_t draw_batch(std::size_t, Generator& data_rng) override {
    batch_ = copy_task_batch(data_rng, o_.batch, o_.length, o_.vocab);
    return o_.batch;
  }

  detail::StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) override {
    const IndexArray data = detail::batch_rows(batch_, begin, end);  // (b, L)
    const TeacherForcing tf = teacher_forcing(data);
    const Tensor<float> logits = model_.forward(data, tf.input, Masks{}, dropout_rng);  // (b, L-1, V)
    const auto V = static_cast<std::ptrdiff_t>(o_.vocab);
    return {cross_entropy(reshape(logits, {-1, V}), tf.targets, 0, static_cast<float>(o_.label_smoothing)),
            tf.targets.size()};
  }

  // Held-out exact match (greedy decoding) and held-out loss (teacher forcing, no smoothing).
  void evaluate(const detail::LoopState& state, TrainResult& result, MetricRow& row, std::ostream& log) override {
    result.exact_match = copy_exact_match(model_, held_out_);
    result.valid_loss = held_out_loss();
    row.set("valid_loss", result.valid_loss).set("valid_exact_match", result.exact_match);
    log << "step " << std::setw(5) << state.train.step << "  loss " << std::fixed << std::setprecision(4)
        << state.train.losses.back() << "  lr " << std::scientific << std::setprecision(2) << state.lr
        << std::defaultfloat << "  held-out loss " << std::fixed << std::setprecision(4) << result.valid_loss
        << "  exact match " << std::setprecision(3) << result.exact_match
        << "  (" << std::setprecision(1) << state.train_seconds << " s training)" << std::defaultfloat << "\n";
  }

  bool should_stop(const detail::LoopState& state, const TrainResult& result) const override {
    return o_.stop_at_perfect && result.exact_match >= 1.0 && state.train.step % o_.eval_every == 0;
  }

  void finish(const detail::LoopState& state, TrainResult& result, std::ostream&) override {
    // Stopped by the time budget or a request between evaluations: score the final weights.
    if (!state.evaluated_last && state.train.step > 0) {
      result.exact_match = copy_exact_match(model_, held_out_);
      result.valid_loss = held_out_loss();
    }
    if (o_.run_dir.empty()) return;
    result.seconds = state.seconds();
    detail::write_summary(o_, result, model_.parameter_count(),
                          transformer_flops_per_token(model_.config(), o_.length, o_.length - 1),
                          {{"valid_exact_match", result.exact_match}});
  }

 private:
  // Mean token cross-entropy of the held-out sequences, teacher forcing, no smoothing, eval mode.
  double held_out_loss() {
    const TeacherForcing tf = teacher_forcing(held_out_);
    NoGradGuard no_grad;
    const bool was_training = model_.is_training();
    model_.eval();
    const auto V = static_cast<std::ptrdiff_t>(o_.vocab);
    const double loss =
        cross_entropy(reshape(model_.forward(held_out_, tf.input, Masks{}, nullptr), {-1, V}), tf.targets, 0).item();
    model_.train(was_training);
    return loss;
  }

  const TrainOptions& o_;
  Transformer<float> model_;
  const IndexArray held_out_;
  IndexArray batch_;  // the step's sequences (B, L), from draw_batch
};

}  // namespace

TrainResult train_copy(const TrainOptions& o, std::ostream& log) { return detail::train_task<CopyTask>(o, log); }

}  // namespace headlab
