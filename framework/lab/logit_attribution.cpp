// lab/logit_attribution.cpp: direct logit attribution and the logit lens
// (headlab/lab/logit_attribution.hpp).
#include "headlab/lab/logit_attribution.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <xtensor/xview.hpp>

#include "headlab/ops/ops.hpp"

namespace headlab {

namespace {

// What the attribution reads of a model: its final norm, its unembedding, the stream's hook prefix
// ("blocks." or "decoder."), the embedding's point and the decoder-side attention modules.
struct Readout {
  const LayerNorm<float>* norm;
  const Linear<float>* unembed;
  const TransformerConfig* config;
  std::string embed_point, layer_prefix;
  std::size_t layers;
};

Readout readout_of(const LoadedModel& m) {
  if (m.lm) return {&m.lm->final_norm(), &m.lm->unembed(), &m.lm->config(), "hook_embed", "blocks.", m.lm->layers()};
  return {&m.model->final_norm(), &m.model->unembed(), &m.model->config(), "decoder.hook_embed", "decoder.",
          m.model->decoder_layers()};
}

// The output bias b_O (D) of an attention module named like attention_modules()'s entries.
Array<float> output_bias(const LoadedModel& m, const std::string& module) {
  const std::size_t l = std::stoul(module.substr(module.find('.') + 1));
  if (m.lm) return m.lm->layer(l).self_attn.parameter("out_proj.bias").value();
  const bool cross = module.find("cross_attn") != std::string::npos;
  const auto& layer = m.model->decoder_layer(l);
  return (cross ? layer.multihead_attn : layer.self_attn).parameter("out_proj.bias").value();
}

}  // namespace

LogitAttribution direct_logit_attribution(LoadedModel& model, const CircuitProbe& probe) {
  const Readout r = readout_of(model);
  const TransformerConfig& c = *r.config;
  if (!c.norm_first) {
    throw ValueError("direct logit attribution: a post-LN model has a norm inside every layer, so its stream is no "
                     "sum of components (train with --pre-ln)");
  }
  HookPoints<float> hooks;
  hooks.set_caching(true);
  const Array<float> logits = probe_logits(model, probe, true, &hooks);
  const std::vector<std::int64_t>& answers = probe.clean_answer;
  const std::size_t B = answers.size(), D = c.d_model;
  const Array<float> gamma = r.norm->parameter("weight").value(), beta = r.norm->parameter("bias").value();
  const Array<float> w_u = r.unembed->parameter("weight").value(), b_u = r.unembed->parameter("bias").value();
  const Array<float> x = hooks.cached(final_stream_point(model)).value();

  LogitAttribution out;
  std::vector<std::vector<double>> u(B, std::vector<double>(D));  // u_b = W_U[a_b] * gamma / sigma_b
  std::vector<double> u_sum(B);
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t p = probe.position_of(b);
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
  auto add = [&](LogitComponent comp, const std::function<double(std::size_t, std::size_t)>& vec) {
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
  const Array<float> embed = hooks.cached(r.embed_point).value();
  add({"embed", -1, -1, -1, {}, 0}, [&](std::size_t b, std::size_t j) { return double(embed(b, probe.position_of(b), j)); });
  const std::vector<std::string> modules = attention_modules(model);
  for (std::size_t l = 0; l < r.layers; ++l) {
    const std::string layer = r.layer_prefix + std::to_string(l);
    for (std::size_t mi = 0; mi < modules.size(); ++mi) {
      const std::string& module = modules[mi];
      if (module.rfind(layer + ".", 0) != 0) continue;  // another layer's, or the encoder's
      const Array<float> result = hooks.cached(module + ".hook_result").value();  // (B, T, h, D)
      for (std::size_t i = 0; i < result.shape()[2]; ++i)
        add({module + ".head" + std::to_string(i), int(l), int(mi), int(i), {}, 0},
            [&](std::size_t b, std::size_t j) { return double(result(b, probe.position_of(b), i, j)); });
      if (c.attention.bias) {
        const Array<float> bias = output_bias(model, module);
        add({module + ".bias", int(l), int(mi), -1, {}, 0}, [&](std::size_t, std::size_t j) { return double(bias(j)); });
      }
    }
    if (!(model.lm && c.attention_only)) {  // decoder layers of an encoder-decoder always have their MLP
      const Array<float> mlp = hooks.cached(layer + ".hook_mlp_out").value();
      add({layer + ".mlp", int(l), -1, -1, {}, 0},
          [&](std::size_t b, std::size_t j) { return double(mlp(b, probe.position_of(b), j)); });
    }
  }
  for (std::size_t b = 0; b < B; ++b) {
    double sum = out.constant[b];
    for (const LogitComponent& comp : out.components) sum += comp.per_row[b];
    out.max_sum_error = std::max(out.max_sum_error, std::abs(sum - out.logit[b]));
  }
  return out;
}

std::vector<LensLayer> logit_lens(LoadedModel& model, const CircuitProbe& probe) {
  const Readout r = readout_of(model);
  HookPoints<float> hooks;
  hooks.set_caching(true);
  probe_logits(model, probe, true, &hooks);
  NoGradGuard no_grad;
  std::vector<std::string> points = {r.embed_point};
  for (std::size_t l = 0; l < r.layers; ++l) points.push_back(r.layer_prefix + std::to_string(l) + ".hook_resid_post");
  const std::vector<std::int64_t>& answers = probe.clean_answer;
  const std::size_t B = answers.size();
  std::vector<LensLayer> out;
  for (const std::string& point : points) {
    const Array<float>& all = hooks.cached(point).value();  // (B, T, D): each row's read position
    Array<float> at = xt::zeros<float>({B, std::size_t(1), all.shape()[2]});
    for (std::size_t b = 0; b < B; ++b) xt::view(at, b, 0) = xt::view(all, b, probe.position_of(b));
    const Tensor<float> stream(at);  // (B, 1, D)
    const Array<float> logits = r.unembed->forward(r.norm->forward(stream)).value();  // (B, 1, V)
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
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), [&](std::int64_t a, std::int64_t b) {
      const float la = logits(0, 0, std::size_t(a)), lb = logits(0, 0, std::size_t(b));
      return la > lb || (la == lb && a < b);
    });
    layer.top_tokens.assign(order.begin(), order.begin() + std::ptrdiff_t(k));
    out.push_back(std::move(layer));
  }
  return out;
}

}  // namespace headlab
