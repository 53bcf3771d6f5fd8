// lab/logit_attribution.cpp: direct logit attribution and the logit lens
// (headlab/lab/logit_attribution.hpp).
#include "headlab/lab/logit_attribution.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "headlab/ops/ops.hpp"

namespace headlab {

namespace {

// One cached forward of `inputs` (every point kept).
HookPoints<float> cached_forward(DecoderOnlyLM<float>& model, const IndexArray& inputs, Array<float>* logits) {
  HookPoints<float> hooks;
  hooks.set_caching(true);
  struct Attached {
    DecoderOnlyLM<float>& model;
    ~Attached() { model.set_hooks(nullptr); }
  } attached{model};
  model.set_hooks(&hooks);
  const bool was_training = model.is_training();
  model.eval();
  Array<float> out = model.forward(inputs, nullptr).value();
  model.train(was_training);
  if (logits) *logits = std::move(out);
  return hooks;
}

void check_rows(const IndexArray& inputs, std::size_t position, const std::vector<std::int64_t>& answers,
                std::size_t vocab, const char* what) {
  if (inputs.dimension() != 2 || answers.size() != inputs.shape()[0] || position >= inputs.shape()[1]) {
    throw ShapeError(std::string(what) + ": inputs should be (B, T) with B = " + std::to_string(answers.size()) +
                     " answers and T > position " + std::to_string(position));
  }
  for (std::int64_t a : answers)
    if (a < 0 || std::size_t(a) >= vocab) throw ValueError(std::string(what) + ": answer " + std::to_string(a) + " is not a token");
}

}  // namespace

LogitAttribution direct_logit_attribution(DecoderOnlyLM<float>& model, const IndexArray& inputs, std::size_t position,
                                          const std::vector<std::int64_t>& answers) {
  const TransformerConfig& c = model.config();
  if (!c.norm_first) {
    throw ValueError("direct logit attribution: a post-LN model has a norm inside every layer, so its stream is no "
                     "sum of components (train with --pre-ln)");
  }
  check_rows(inputs, position, answers, c.tgt_vocab, "direct logit attribution");
  NoGradGuard no_grad;
  Array<float> logits;
  const HookPoints<float> hooks = cached_forward(model, inputs, &logits);
  const std::size_t B = answers.size(), D = c.d_model, L = model.layers(), p = position;
  const Array<float> gamma = model.final_norm().parameter("weight").value(), beta = model.final_norm().parameter("bias").value();
  const Array<float> w_u = model.unembed().parameter("weight").value(), b_u = model.unembed().parameter("bias").value();
  const Array<float> x = hooks.cached("blocks." + std::to_string(L - 1) + ".hook_resid_post").value();

  LogitAttribution out;
  std::vector<std::vector<double>> u(B, std::vector<double>(D));  // u_b = W_U[a_b] * gamma / sigma_b
  std::vector<double> u_sum(B);
  for (std::size_t b = 0; b < B; ++b) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < D; ++j) mean += x(b, p, j);
    mean /= double(D);
    for (std::size_t j = 0; j < D; ++j) var += (x(b, p, j) - mean) * (x(b, p, j) - mean);
    const double sigma = std::sqrt(var / double(D) + c.layer_norm_eps);
    const auto a = std::size_t(answers[b]);
    double constant = b_u(a);
    for (std::size_t j = 0; j < D; ++j) {
      u[b][j] = double(w_u(a, j)) * gamma(j) / sigma;
      u_sum[b] += u[b][j];
      constant += double(w_u(a, j)) * beta(j);
    }
    out.constant.push_back(constant);
    out.logit.push_back(logits(b, p, a));
  }
  // A component's term per row: u . (c - mean(c)) = u . c - mean(c) sum(u), c = vector(b) (D).
  auto add = [&](const std::string& name, int layer, int head, const std::function<double(std::size_t, std::size_t)>& vec) {
    LogitComponent comp{name, layer, head, {}, 0};
    for (std::size_t b = 0; b < B; ++b) {
      double dot = 0, mean = 0;
      for (std::size_t j = 0; j < D; ++j) {
        const double v = vec(b, j);
        dot += u[b][j] * v;
        mean += v;
      }
      comp.per_row.push_back(dot - mean / double(D) * u_sum[b]);
    }
    comp.mean = std::accumulate(comp.per_row.begin(), comp.per_row.end(), 0.0) / double(B);
    out.components.push_back(std::move(comp));
  };
  const Array<float> embed = hooks.cached("hook_embed").value();
  add("embed", -1, -1, [&](std::size_t b, std::size_t j) { return double(embed(b, p, j)); });
  for (std::size_t l = 0; l < L; ++l) {
    const std::string block = "blocks." + std::to_string(l) + ".";
    const Array<float> result = hooks.cached(block + "attn.hook_result").value();  // (B, T, h, D)
    for (std::size_t i = 0; i < result.shape()[2]; ++i)
      add(block + "attn.head" + std::to_string(i), int(l), int(i),
          [&](std::size_t b, std::size_t j) { return double(result(b, p, i, j)); });
    if (c.attention.bias) {
      const Array<float> bias = model.layer(l).self_attn.parameter("out_proj.bias").value();
      add(block + "attn.bias", int(l), -1, [&](std::size_t, std::size_t j) { return double(bias(j)); });
    }
    if (!c.attention_only) {
      const Array<float> mlp = hooks.cached(block + "hook_mlp_out").value();
      add(block + "mlp", int(l), -1, [&](std::size_t b, std::size_t j) { return double(mlp(b, p, j)); });
    }
  }
  for (std::size_t b = 0; b < B; ++b) {
    double sum = out.constant[b];
    for (const LogitComponent& comp : out.components) sum += comp.per_row[b];
    out.max_sum_error = std::max(out.max_sum_error, std::abs(sum - out.logit[b]));
  }
  return out;
}

std::vector<LensLayer> logit_lens(DecoderOnlyLM<float>& model, const IndexArray& inputs, std::size_t position,
                                  const std::vector<std::int64_t>& answers) {
  check_rows(inputs, position, answers, model.config().tgt_vocab, "logit lens");
  NoGradGuard no_grad;
  const HookPoints<float> hooks = cached_forward(model, inputs, nullptr);
  std::vector<std::string> points = {"hook_embed"};
  for (std::size_t l = 0; l < model.layers(); ++l) points.push_back("blocks." + std::to_string(l) + ".hook_resid_post");
  const std::size_t B = answers.size();
  std::vector<LensLayer> out;
  for (const std::string& point : points) {
    const Tensor<float> stream = narrow(hooks.cached(point), 1, position, 1);  // (B, 1, D)
    const Array<float> logits = model.unembed().forward(model.final_norm().forward(stream)).value();  // (B, 1, V)
    const std::size_t V = logits.shape()[2];
    LensLayer layer;
    layer.point = point;
    for (std::size_t b = 0; b < B; ++b) {
      const float answer_logit = logits(b, 0, std::size_t(answers[b]));
      std::size_t above = 0;
      for (std::size_t v = 0; v < V; ++v) above += logits(b, 0, v) > answer_logit;
      layer.mean_rank += double(above + 1) / double(B);
      layer.top1 += (above == 0) / double(B);
    }
    std::vector<std::int64_t> order(V);
    std::iota(order.begin(), order.end(), std::int64_t(0));
    const std::size_t k = std::min<std::size_t>(5, V);
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                      [&](std::int64_t a, std::int64_t b) { return logits(0, 0, std::size_t(a)) > logits(0, 0, std::size_t(b)); });
    layer.top_tokens.assign(order.begin(), order.begin() + std::ptrdiff_t(k));
    out.push_back(std::move(layer));
  }
  return out;
}

}  // namespace headlab
