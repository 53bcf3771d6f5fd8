// head_roles.cpp: what each head does on the repeated-tokens probe (headlab/lab/heads.hpp): entropy,
// sink mass over a range of queries beside uniform attention's, previous-token and induction scores,
// the mean gate, the largest attention logit and the largest residual activation.
#include "headlab/lab/heads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "headlab/data/char_vocabulary.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

namespace {

template <typename T>
void check_weights(const Array<T>& w, const char* what) {
  if (w.dimension() != 4) {
    throw ShapeError(std::string(what) + ": weights " + shape_str(Shape(w.shape().begin(), w.shape().end())) +
                     " should be (B, h, L, S)");
  }
}

// Mean over the batch and the queries i in [first, last) that have key key_of(i) in range of
// A[b, h, i, key_of(i)], per head.
template <typename T, typename KeyOf>
std::vector<double> stripe_mean(const Array<T>& w, std::size_t first, std::size_t last, KeyOf key_of) {
  const std::size_t B = w.shape()[0], H = w.shape()[1], L = w.shape()[2], S = w.shape()[3];
  std::vector<double> out(H, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = first; i < std::min(last, L); ++i) {
        const std::ptrdiff_t j = key_of(i);
        if (j < 0 || std::size_t(j) >= S) continue;
        sum += double(w(b, h, i, std::size_t(j)));
        ++n;
      }
    out[h] = n ? sum / double(n) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

}  // namespace

template <typename T>
std::vector<double> attention_entropy(const Array<T>& w) {
  check_weights(w, "attention_entropy");
  const std::size_t B = w.shape()[0], H = w.shape()[1], L = w.shape()[2], S = w.shape()[3];
  std::vector<double> out(H, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    double sum = 0;
    std::size_t rows = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < L; ++i) {
        double row_sum = 0, entropy = 0;  // -sum_j a ln a, with 0 ln 0 = 0
        for (std::size_t j = 0; j < S; ++j) {
          const double a = double(w(b, h, i, j));
          row_sum += a;
          if (a > 0) entropy -= a * std::log(a);
        }
        if (row_sum == 0) continue;  // a fully masked row
        sum += entropy;
        ++rows;
      }
    out[h] = rows ? sum / double(rows) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

QueryRange parse_query_range(const std::string& text, std::size_t block) {
  if (text == "all") return QueryRange{};
  if (block == 0 && (text == "first-half" || text == "second-half"))
    throw ValueError("--sink-queries " + text + ": the halves are those of the repeated-tokens probe; on a text "
                     "probe give all or A:B");
  if (text == "first-half") return QueryRange{1, block + 1};
  if (text == "second-half") return QueryRange{block + 1, 2 * block + 1};
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw ValueError("--sink-queries: " + quote_clipped(text, 40) +
                     " is not all, first-half, second-half or A:B (query positions A to B - 1)");
  const auto position = [&text](const std::string& part, std::uint64_t lo, const char* which) {
    try {
      return std::size_t(parse_whole_number(part, lo, 1000000000));
    } catch (const ValueError& e) {
      throw ValueError("--sink-queries " + quote_clipped(text, 40) + ": its " + which + " " + e.what());
    }
  };
  QueryRange r;
  r.first = position(text.substr(0, colon), 1, "A");
  if (colon + 1 < text.size()) r.last = position(text.substr(colon + 1), r.first + 1, "B (> A)");
  return r;
}

std::string query_range_text(const QueryRange& r, std::size_t L) {
  return std::to_string(r.first) + ":" + std::to_string(std::min(r.last, L));
}

template <typename T>
std::vector<double> sink_mass(const Array<T>& w, const QueryRange& queries) {
  check_weights(w, "sink_mass");
  return stripe_mean(w, queries.first, queries.last, [](std::size_t) { return std::ptrdiff_t(0); });
}

template <typename T>
std::vector<double> gate_mean_over(const Array<T>& gate, const QueryRange& queries) {
  if (gate.dimension() != 4) throw ShapeError("gate_mean_over: expected a gate of shape (B, h, L, 1 or d)");
  const std::size_t L = gate.shape()[2], first = std::max<std::size_t>(queries.first, 1),
                    last = std::min(queries.last, L);
  std::vector<double> mean(gate.shape()[1], std::numeric_limits<double>::quiet_NaN());
  if (first >= last) return mean;
  for (std::size_t h = 0; h < mean.size(); ++h)
    mean[h] = double(xt::mean(xt::view(gate, xt::all(), h, xt::range(first, last), xt::all()))());
  return mean;
}

namespace {
// Uniform attention over the keys each query may see (causal or not, window, sinks):
// (B, 1, L, S), row i = 1 / (keys visible to i) on each visible key, 0 elsewhere.
Array<double> uniform_pattern(std::size_t B, std::size_t L, std::size_t S, bool causal, std::size_t window,
                              std::size_t sinks) {
  std::vector<std::int64_t> query_positions(L), key_positions(S);
  std::iota(query_positions.begin(), query_positions.end(), 0);
  std::iota(key_positions.begin(), key_positions.end(), 0);
  const MaskArray hidden = position_mask(query_positions, key_positions, causal || window > 0, window, sinks);  // (L, S)
  Array<double> u = xt::zeros<double>({B, std::size_t(1), L, S});
  for (std::size_t i = 0; i < L; ++i) {
    std::size_t visible = 0;
    for (std::size_t j = 0; j < S; ++j) visible += hidden(i, j) ? 0 : 1;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t j = 0; j < S; ++j) u(b, 0, i, j) = hidden(i, j) || !visible ? 0.0 : 1.0 / double(visible);
  }
  return u;
}
}  // namespace

double uniform_sink_mass(std::size_t L, std::size_t S, bool causal, std::size_t window, std::size_t sinks,
                         const QueryRange& queries) {
  if (L == 0 || S == 0) return std::numeric_limits<double>::quiet_NaN();  // no query, or no key
  return sink_mass(uniform_pattern(1, L, S, causal, window, sinks), queries)[0];
}

template <typename T>
std::vector<double> previous_token_score(const Array<T>& w) {
  check_weights(w, "previous_token_score");
  return stripe_mean(w, 1, w.shape()[2], [](std::size_t i) { return std::ptrdiff_t(i) - 1; });
}

template <typename T>
std::vector<double> induction_score(const Array<T>& w, std::size_t block) {
  check_weights(w, "induction_score");
  if (block < 2 || w.shape()[2] < 2 * block + 1) {
    throw ShapeError("induction_score: block " + std::to_string(block) + " needs >= 2 and 2 block + 1 <= L = " +
                     std::to_string(w.shape()[2]) + " queries");
  }
  // Query i = T + k holds r_k again; its earlier copy is at k, the token after it at k + 1 = i - (T - 1).
  return stripe_mean(w, block + 1, 2 * block + 1,
                     [block](std::size_t i) { return std::ptrdiff_t(i) - std::ptrdiff_t(block) + 1; });
}

template <typename T>
std::vector<double> delimiter_score(const Array<T>& w, const IndexArray& ids, const std::vector<std::int64_t>& delimiters) {
  check_weights(w, "delimiter_score");
  const std::size_t B = w.shape()[0], H = w.shape()[1], L = w.shape()[2];
  if (ids.dimension() != 2 || ids.shape()[0] != B || ids.shape()[1] < L)
    throw ShapeError("delimiter_score: ids should be (B, L) = (" + std::to_string(B) + ", " + std::to_string(L) + ")");
  std::vector<double> out(H, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> sum(H, 0.0);
  std::size_t n = 0;
  for (std::size_t b = 0; b < B; ++b) {
    std::ptrdiff_t latest = -1;  // the latest delimiter before query i
    for (std::size_t i = 0; i < L; ++i) {
      if (latest >= 0) {
        for (std::size_t h = 0; h < H; ++h) sum[h] += double(w(b, h, i, std::size_t(latest)));
        ++n;
      }
      if (std::find(delimiters.begin(), delimiters.end(), ids(b, i)) != delimiters.end()) latest = std::ptrdiff_t(i);
    }
  }
  if (n)
    for (std::size_t h = 0; h < H; ++h) out[h] = sum[h] / double(n);
  return out;
}

#define HEADLAB_SCORES(T)                                                             \
  template std::vector<double> attention_entropy<T>(const Array<T>&);                 \
  template std::vector<double> sink_mass<T>(const Array<T>&, const QueryRange&);      \
  template std::vector<double> gate_mean_over<T>(const Array<T>&, const QueryRange&); \
  template std::vector<double> previous_token_score<T>(const Array<T>&);              \
  template std::vector<double> induction_score<T>(const Array<T>&, std::size_t);        \
  template std::vector<double> delimiter_score<T>(const Array<T>&, const IndexArray&,  \
                                                  const std::vector<std::int64_t>&);
HEADLAB_SCORES(float)
HEADLAB_SCORES(double)
#undef HEADLAB_SCORES

// ---- Sites ---------------------------------------------------------------------------
std::vector<AttentionSite> attention_sites(Transformer<float>& model) {
  std::vector<AttentionSite> sites;
  for (std::size_t i = 0; i < model.encoder_layers(); ++i)
    sites.push_back({"encoder.layers." + std::to_string(i) + ".self_attn", "encoder self", i,
                     &model.encoder_layer(i).self_attn});
  for (std::size_t i = 0; i < model.decoder_layers(); ++i) {
    sites.push_back({"decoder.layers." + std::to_string(i) + ".self_attn", "decoder self", i,
                     &model.decoder_layer(i).self_attn});
    sites.push_back({"decoder.layers." + std::to_string(i) + ".multihead_attn", "cross", i,
                     &model.decoder_layer(i).multihead_attn});
  }
  return sites;
}

std::vector<AttentionSite> attention_sites(DecoderOnlyLM<float>& model) {
  std::vector<AttentionSite> sites;
  for (std::size_t i = 0; i < model.layers(); ++i)
    sites.push_back({"layers." + std::to_string(i) + ".self_attn", "self", i, &model.layer(i).self_attn});
  return sites;
}

std::vector<AttentionSite> attention_sites(LoadedModel& m) {
  if (m.lm) return attention_sites(*m.lm);
  if (m.model) return attention_sites(*m.model);
  throw ValueError("attention_sites: the loaded model holds no network");
}

// ---- Probe and roles --------------------------------------------------------------------
Probe repeated_tokens_probe(const LoadedModel& m, std::size_t count, std::size_t block, std::uint64_t seed) {
  std::size_t first = 2, end = m.options.vocab;  // symbols [first, end)
  std::size_t max_len = m.options.task == Task::induction || m.options.task == Task::recall ? 2 * m.options.length + 1
                        : m.options.task == Task::copy    ? m.options.length
                                                      : m.options.max_len;
  if (m.options.task == Task::translate) {
    first = 4;
    end = std::min(m.src_vocab.size(), m.tgt_vocab.size());
  }
  if (m.options.task == Task::recall) end = 2 + m.options.keys * m.options.values;  // the key-value pair tokens
  if (m.options.task == Task::lm) {  // characters or words, past the four specials; the window the model reads
    first = LmVocabulary::num_specials;
    end = m.lm->config().tgt_vocab;
    max_len = m.lm->config().max_len;
  }
  if (block == 0) block = m.options.task == Task::induction ? m.options.length : std::min<std::size_t>(16, (max_len - 1) / 2);
  if (block < 2 || 2 * block + 1 > max_len) {
    throw ValueError("the probe's --block " + std::to_string(block) + " gives sequences of " +
                     std::to_string(2 * block + 1) + " ids; the model takes at most " + std::to_string(max_len) +
                     " and the block needs >= 2");
  }
  if (end < first + 2) throw ValueError("repeated_tokens_probe: the vocabulary has fewer than 2 ordinary symbols");
  if (count == 0) throw ValueError("repeated_tokens_probe: count must be > 0");
  Generator gen(seed);
  Probe p;
  p.block = block;
  p.sequences = IndexArray::from_shape({count, 2 * block + 1});
  for (std::size_t b = 0; b < count; ++b) {
    p.sequences(b, 0) = Vocabulary::bos;
    for (std::size_t t = 1; t <= block; ++t) {
      p.sequences(b, t) = std::int64_t(first + gen.below(end - first));
      p.sequences(b, t + block) = p.sequences(b, t);
    }
  }
  return p;
}

Probe text_probe(const LoadedModel& m, const std::vector<std::int64_t>& ids, std::size_t count, std::uint64_t seed) {
  if (!m.lm || m.options.task != Task::lm)
    throw ValueError("--text: a text probe is for language-model checkpoints (task lm), this one is '" +
                     task_name(m.options.task) + "'");
  const std::size_t L = m.lm->config().max_len;
  if (ids.size() < L)
    throw ValueError("--text: " + std::to_string(ids.size()) + " tokens, fewer than one window of the model's " +
                     std::to_string(L));
  if (count == 0) throw ValueError("text_probe: count must be > 0");
  Generator gen(seed);
  Probe p;
  p.sequences = IndexArray::from_shape({count, L});
  for (std::size_t b = 0; b < count; ++b) {
    const std::size_t start = std::size_t(gen.below(ids.size() - L + 1));
    for (std::size_t t = 0; t < L; ++t) p.sequences(b, t) = ids[start + t];
    if (m.options.bos_windows) p.sequences(b, 0) = LmVocabulary::bos;  // as the model read its windows
  }
  for (const char* text : {" ", "\n"}) {
    const std::vector<std::int64_t> one = m.lm_vocab.encode(text);
    if (one.size() == 1 && one[0] != LmVocabulary::unk) p.delimiters.push_back(one[0]);
  }
  return p;
}

namespace {
// Taps on the layers (their outputs: the residual stream after each layer) or off.
void set_layer_taps(LoadedModel& m, bool on) {
  if (m.lm) {
    for (std::size_t l = 0; l < m.lm->layers(); ++l) m.lm->layer(l).set_taps(on);
    return;
  }
  for (std::size_t l = 0; l < m.model->encoder_layers(); ++l) m.model->encoder_layer(l).set_taps(on);
  for (std::size_t l = 0; l < m.model->decoder_layers(); ++l) m.model->decoder_layer(l).set_taps(on);
}

// The output of the layer a site belongs to (B, L, D), from the last forward with layer taps.
const Tensor<float>& layer_output(LoadedModel& m, const AttentionSite& s) {
  if (m.lm) return m.lm->layer(s.layer).last_output();
  return s.kind == "encoder self" ? m.model->encoder_layer(s.layer).last_output()
                                  : m.model->decoder_layer(s.layer).last_output();
}

// One forward pass that keeps every attention module's taps (and the layers' outputs, when asked).
void forward_with_taps(LoadedModel& m, std::vector<AttentionSite>& sites, const IndexArray& source,
                       const IndexArray& target, bool layer_outputs) {
  NoGradGuard no_grad;
  for (auto& s : sites) s.module->set_taps(true);
  set_layer_taps(m, layer_outputs);
  if (m.lm) {
    m.lm->eval();
    (void)m.lm->forward(target, nullptr);
  } else {
    m.model->eval();
    (void)m.model->forward(source, target, Masks{}, nullptr);
  }
  for (auto& s : sites) s.module->set_taps(false);
  set_layer_taps(m, false);
}
}  // namespace

std::vector<HeadRoles> head_roles(LoadedModel& m, const Probe& probe, const QueryRange& sink_queries) {
  const std::size_t L = probe.sequences.shape()[1];
  if (std::max<std::size_t>(sink_queries.first, 1) >= std::min(sink_queries.last, L))
    throw ValueError("--sink-queries: " + std::to_string(sink_queries.first) + ":" +
                     (sink_queries.last == QueryRange{}.last ? "" : std::to_string(sink_queries.last)) +
                     " holds no query of the probe's " +
                     std::to_string(L) + " positions (0 to " + std::to_string(L - 1) + "; position 0 is never counted)");
  if (sink_queries.last != QueryRange{}.last && sink_queries.last > L)  // it was cut to L without a word
    throw ValueError("--sink-queries " + std::to_string(sink_queries.first) + ":" + std::to_string(sink_queries.last) +
                     ": the probe has " + std::to_string(L) + " positions (0 to " + std::to_string(L - 1) +
                     "); give B <= " + std::to_string(L) + ", or " + std::to_string(sink_queries.first) +
                     ": for the rest of the probe");
  std::vector<AttentionSite> sites = attention_sites(m);
  forward_with_taps(m, sites, probe.sequences, probe.sequences, true);
  std::vector<HeadRoles> rows;
  for (auto& s : sites) {
    const AttentionOutput<float>& taps = s.module->last_taps();
    const Array<float>& w = taps.weights.value();  // (B, h, L, S)
    const std::vector<double> entropy = attention_entropy(w), sink = sink_mass(w, sink_queries),
                              prev = previous_token_score(w);
    const std::vector<double> nan(s.heads(), std::numeric_limits<double>::quiet_NaN());
    const std::vector<double> induction = probe.block ? induction_score(w, probe.block) : nan;
    const std::vector<double> delimiter =
        probe.delimiters.empty() ? nan : delimiter_score(w, probe.sequences, probe.delimiters);
    const AttentionConfig& c = s.module->config();
    const bool causal = s.kind == "decoder self" || s.kind == "self";
    const double delimiter_uniform =
        probe.delimiters.empty()
            ? nan[0]
            : delimiter_score(uniform_pattern(w.shape()[0], w.shape()[2], w.shape()[3], causal, c.window, c.sinks),
                              probe.sequences, probe.delimiters)[0];
    const Array<double> uniform_w = uniform_pattern(1, w.shape()[2], w.shape()[3], causal, c.window, c.sinks);
    const double previous_uniform = previous_token_score(uniform_w)[0];
    const double induction_uniform = probe.block ? induction_score(uniform_w, probe.block)[0] : nan[0];
    const double max_abs = double(xt::amax(xt::abs(taps.output.value()))());
    const double max_residual = double(xt::amax(xt::abs(layer_output(m, s).value()))());
    const Array<float>& max_logit = taps.max_logit.value();  // (h)
    const std::vector<double> gate_queries =
        taps.gate.defined() ? gate_mean_over(taps.gate.value(), sink_queries) : nan;
    const double uniform = sink_mass(uniform_w, sink_queries)[0];  // uniform_sink_mass, on the pattern built above
    for (std::size_t h = 0; h < s.heads(); ++h) {
      HeadRoles r;
      r.site = s.name;
      r.kind = s.kind;
      r.layer = s.layer;
      r.head = h;
      r.entropy = entropy[h];
      r.sink_mass = sink[h];
      r.sink_uniform = uniform;
      r.sink_queries = query_range_text(sink_queries, L);
      r.previous_token = prev[h];
      r.induction = induction[h];
      r.previous_token_uniform = previous_uniform;
      r.induction_uniform = induction_uniform;
      r.delimiter = delimiter[h];
      r.delimiter_uniform = delimiter_uniform;
      r.gate_mean = r.gate_queries = std::numeric_limits<double>::quiet_NaN();
      if (taps.gate.defined()) {
        r.gate_mean = double(xt::mean(xt::view(taps.gate.value(), xt::all(), h))());
        r.gate_queries = gate_queries[h];
      }
      r.max_abs_output = max_abs;
      r.max_logit = double(max_logit(h));
      r.max_residual = max_residual;
      rows.push_back(r);
    }
  }
  return rows;
}

std::vector<Array<float>> attention_maps(LoadedModel& m, const IndexArray& source, const IndexArray& target) {
  std::vector<AttentionSite> sites = attention_sites(m);
  forward_with_taps(m, sites, source, target, false);  // the maps only: no layer outputs
  std::vector<Array<float>> maps;
  for (auto& s : sites) maps.push_back(xt::view(s.module->last_taps().weights.value(), 0));  // (h, L, S)
  return maps;
}

}  // namespace headlab
