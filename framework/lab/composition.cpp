// composition.cpp: Q-, K- and V-composition scores between heads of different layers
// (headlab/lab/composition.hpp has the formulas).
#include "headlab/lab/composition.hpp"

#include <cmath>
#include <map>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/random.hpp"

namespace headlab {

namespace {

double frobenius(const Array<double>& a) { return std::sqrt(double(xt::sum(a * a)())); }

// The model's parameters by name, as float64 copies.
std::map<std::string, Array<double>> parameters_of(DecoderOnlyLM<float>& lm) {
  std::map<std::string, Array<double>> out;
  for (const auto& [name, t] : lm.named_parameters()) out[name] = xt::cast<double>(t.value());
  return out;
}

// P diag(gamma) (D, D): LayerNorm's linear part at a fixed scale, P = I - 11^T / D.
Array<double> layer_norm_map(const Array<double>& gamma) {
  const std::size_t D = gamma.size();
  Array<double> p = xt::eye<double>(D) - 1.0 / double(D);
  return p * xt::view(gamma, xt::newaxis(), xt::all());  // column j scaled by gamma_j
}

// One layer's heads as (D, D) matrices: W_OV^h = W_V^h W_O^h and W_QK^h = W_Q^h W_K^hT.
struct LayerCircuits {
  std::vector<Array<double>> ov, qk;
};

LayerCircuits layer_circuits(std::map<std::string, Array<double>>& p, std::size_t layer, const AttentionConfig& c,
                             const TransformerConfig& model) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  const std::size_t D = c.d_model, h = c.num_heads, hkv = c.kv_heads(), d = c.dim_head(), group = h / hkv;
  const Array<double>& w_in = p.at(prefix + "self_attn.in_proj_weight");  // ((h + 2 hkv) d, D)
  const Array<double>& w_out = p.at(prefix + "self_attn.out_proj.weight");  // (D, h d)
  // What layer l reads: pre-LN, norm1(x) = P diag(gamma) x at a fixed scale.
  Array<double> read = xt::eye<double>(D);
  if (model.norm_first) read = layer_norm_map(p.at(prefix + "norm1.weight"));
  // What reaches the next layer of a head's write: post-LN, norm1 (and norm2 with an MLP) after it.
  Array<double> write = xt::eye<double>(D);
  if (!model.norm_first) {
    write = layer_norm_map(p.at(prefix + "norm1.weight"));
    if (!model.attention_only) write = xt::linalg::dot(write, layer_norm_map(p.at(prefix + "norm2.weight")));
  }
  LayerCircuits out;
  for (std::size_t head = 0; head < h; ++head) {
    const std::size_t g = head / group;  // its key/value head (GQA, MQA)
    const Array<double> w_q = xt::linalg::dot(read, xt::transpose(xt::view(w_in, xt::range(head * d, (head + 1) * d), xt::all())));
    const Array<double> w_k = xt::linalg::dot(
        read, xt::transpose(xt::view(w_in, xt::range(h * d + g * d, h * d + (g + 1) * d), xt::all())));
    const Array<double> w_v = xt::linalg::dot(
        read, xt::transpose(xt::view(w_in, xt::range((h + hkv) * d + g * d, (h + hkv) * d + (g + 1) * d), xt::all())));
    const Array<double> w_o = xt::transpose(xt::view(w_out, xt::all(), xt::range(head * d, (head + 1) * d)));  // (d, D)
    out.ov.push_back(xt::linalg::dot(xt::linalg::dot(w_v, w_o), write));  // (D, D)
    out.qk.push_back(xt::linalg::dot(w_q, xt::transpose(w_k)));           // (D, D)
  }
  return out;
}

}  // namespace

double composition_score(const Array<double>& a, const Array<double>& b) {
  if (a.dimension() != 2 || b.dimension() != 2 || a.shape()[1] != b.shape()[0])
    throw ShapeError("composition_score: expected A (n, m) and B (m, p)");
  const double denominator = frobenius(a) * frobenius(b);
  return denominator == 0 ? 0.0 : frobenius(xt::linalg::dot(a, b)) / denominator;
}

std::vector<CompositionScore> composition_scores(LoadedModel& m) {
  if (!m.lm) throw ValueError("composition scores are for decoder-only checkpoints (induction, lm), this one is '" +
                              task_name(m.options.task) + "'");
  const TransformerConfig& model = m.lm->config();
  const AttentionConfig& c = m.lm->layer(0).self_attn.config();
  if (c.is_latent()) throw ValueError("composition scores: latent attention (MLA) has no per-head W_K to score");
  std::map<std::string, Array<double>> p = parameters_of(*m.lm);
  std::vector<LayerCircuits> layers;
  for (std::size_t l = 0; l < m.lm->layers(); ++l) layers.push_back(layer_circuits(p, l, c, model));
  std::vector<CompositionScore> out;
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::size_t a = 0; a < layers[l].ov.size(); ++a)
      for (std::size_t r = l + 1; r < layers.size(); ++r)
        for (std::size_t b = 0; b < layers[r].qk.size(); ++b) {
          const Array<double>& ov = layers[l].ov[a];
          CompositionScore s{l, a, r, b};
          s.q = composition_score(ov, layers[r].qk[b]);
          s.k = composition_score(ov, xt::transpose(layers[r].qk[b]));
          s.v = composition_score(ov, layers[r].ov[b]);
          out.push_back(s);
        }
  return out;
}

CompositionBaseline random_composition_baseline(std::size_t D, std::size_t d, std::size_t draws, std::uint64_t seed) {
  Generator gen(seed);
  auto gaussian = [&](std::size_t rows, std::size_t cols) {
    Array<double> a = xt::zeros<double>({rows, cols});
    for (auto& x : a) x = gen.normal();
    return a;
  };
  CompositionBaseline mean;
  for (std::size_t i = 0; i < draws; ++i) {
    const Array<double> ov_a = xt::linalg::dot(gaussian(D, d), gaussian(d, D));
    const Array<double> qk_b = xt::linalg::dot(gaussian(D, d), xt::transpose(gaussian(D, d)));
    const Array<double> ov_b = xt::linalg::dot(gaussian(D, d), gaussian(d, D));
    mean.q += composition_score(ov_a, qk_b) / double(draws);
    mean.k += composition_score(ov_a, xt::transpose(qk_b)) / double(draws);
    mean.v += composition_score(ov_a, ov_b) / double(draws);
  }
  return mean;
}

}  // namespace headlab
