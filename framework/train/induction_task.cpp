// induction_trainer.cpp: the induction task on a decoder-only model (headlab/train/trainer.hpp).
//
// Sequence (2 T + 1 ids):  <s> r_1 .. r_k r_1 .. r_k x_1 .. x_{2(T-k)},   all uniform in [2, vocab),
//                          k uniform in [ceil(T/2), T] per sequence.
// One step:  logits = model(seq[:, :-1])            (B, 2T, V), causal
//            loss = cross_entropy(logits, seq[:, 1:])   over all 2T targets
//            backward; clip; lr = Noam(step); Adam step.
// Target t (0-based) is the token at position t + 1. Targets 0..k-1 are the first copy (random,
// loss ~ ln(vocab - 2) at best); target k is r_1 again, which nothing before it announces;
// targets k+1..2k-1 (r_2..r_k of the second copy) follow from the first copy: the "repeated half".
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>

#include <xtensor/xview.hpp>

#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"
#include "headlab/report/report.hpp"
#include "headlab/train/trainer.hpp"
#include "train_common.hpp"

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

TrainResult train_induction(const TrainOptions& o, std::ostream& log) {
  using namespace detail;
  o.validate();
  const AnomalyScope anomaly(o.detect_anomaly);
  const auto t0 = std::chrono::steady_clock::now();
  Generator init_rng(o.seed), data_rng(o.seed + 1), dropout_rng(o.seed + 2);
  TransformerConfig config = o.model_config();
  config.src_vocab = 1;  // no encoder
  DecoderOnlyLM<float> model(config, init_rng);
  xavier_matrices(model, init_rng);
  model.train();
  Adam<float> adam(model.parameters(), paper_adam_options());
  const NoamSchedule schedule(o.d_model, o.warmup, o.lr_factor);
  const InductionBatch held_out = held_out_induction_sequences(o, o.eval_sequences);

  namespace fs = std::filesystem;
  const std::string ckpt = o.run_dir.empty() ? "" : (fs::path(o.run_dir) / "checkpoint.safetensors").string();
  TrainState st = start_run(o, ckpt, model, adam, data_rng, dropout_rng, log);
  log << "induction task: vocab " << o.vocab << ", block " << o.length << " (sequences of " << 2 * o.length + 1
      << "), decoder-only d_model " << o.d_model << ", heads " << o.heads << ", " << o.layers << " layers"
      << (o.attention_only ? " (attention only)" : "") << ", " << model.parameter_count() << " parameters, batch "
      << o.batch << ", seed " << o.seed << "\n";

  TrainResult result;
  const auto N = static_cast<std::ptrdiff_t>(2 * o.length), V = static_cast<std::ptrdiff_t>(o.vocab);
  std::unique_ptr<ProgressReporter> progress = make_progress(o, st.step);
  std::unique_ptr<MetricsWriter> metrics;
  if (!o.run_dir.empty()) metrics = std::make_unique<MetricsWriter>(o.run_dir);
  auto evaluate = [&](MetricRow& row) {
    const InductionScore s = induction_eval(model, held_out);
    result.valid_loss = s.loss;
    result.first_half_loss = s.first_half_loss;
    result.repeated_loss = s.repeated_loss;
    result.repeated_accuracy = s.repeated_accuracy;
    row.set("valid_loss", s.loss).set("first_half_loss", s.first_half_loss).set("repeated_loss", s.repeated_loss)
        .set("repeated_accuracy", s.repeated_accuracy);
    if (o.progress != "none")
      log << "step " << std::setw(5) << st.step << "  held-out loss " << std::fixed << std::setprecision(3) << s.loss
          << "  first half " << s.first_half_loss << "  repeated half " << s.repeated_loss << "  (accuracy "
          << s.repeated_accuracy << ")" << std::defaultfloat << "\n";
  };
  auto within_budget = [&] {
    return o.time_budget <= 0 ||
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < o.time_budget;
  };
  auto step_start = std::chrono::steady_clock::now();
  bool evaluated_last = false;
  while (st.step < o.steps && within_budget()) {
    const IndexArray data = induction_batch(data_rng, o.batch, o.length, o.vocab).sequences;
    const IndexArray inputs = xt::view(data, xt::all(), xt::range(0, N));
    IndexArray targets = xt::view(data, xt::all(), xt::range(1, N + 1));
    targets.reshape({targets.size()});
    adam.zero_grad();
    const Tensor<float> logits = model.forward(inputs, &dropout_rng);  // (B, 2T, V)
    const Tensor<float> loss = cross_entropy(reshape(logits, {-1, V}), targets, -100, float(o.label_smoothing));
    const double loss_value = optimise_step(loss, adam, model.parameters(), schedule, o, st.step + 1);
    ++st.step;
    st.losses.push_back(loss_value);
    const auto now = std::chrono::steady_clock::now();
    const double tokens_per_s = double(o.batch * 2 * o.length) / std::chrono::duration<double>(now - step_start).count();
    step_start = now;
    if (progress) progress->update(static_cast<std::int64_t>(st.step), loss_value, adam.lr(), tokens_per_s);
    MetricRow row;
    row.set("step", st.step).set("loss", loss_value).set("lr", adam.lr()).set("tokens_per_s", tokens_per_s);
    evaluated_last = st.step % o.eval_every == 0 || st.step == o.steps;
    if (evaluated_last) evaluate(row);
    if (metrics) metrics->write(row);
    if (!ckpt.empty() && o.save_every && st.step % o.save_every == 0)
      save_checkpoint(ckpt, o, model, &adam, data_rng, dropout_rng, st);
    if (stop_requested()) {  // saved just below
      clear_stop_request();
      result.interrupted = true;
      log << "interrupted at step " << st.step << "\n";
      break;
    }
  }
  if (progress) progress->finish();
  if (!evaluated_last) {  // stopped by the time budget or a request: score the final weights
    MetricRow row;
    evaluate(row);
  }
  result.steps_done = st.step;
  result.losses = st.losses;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.train_seconds = result.seconds;
  if (!ckpt.empty()) {
    save_checkpoint(ckpt, o, model, &adam, data_rng, dropout_rng, st);
    std::vector<double> steps(st.losses.size());
    for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = double(i + 1);
    std::ofstream(fs::path(o.run_dir) / "loss.svg") << svg_loss_curve(steps, st.losses, "induction task: training loss");
    write_summary(o, result, model.parameter_count(), decoder_only_flops_per_token(config, 2 * o.length),
                  {{"repeated_loss", result.repeated_loss}, {"first_half_loss", result.first_half_loss}});
  }
  return result;
}

}  // namespace headlab
