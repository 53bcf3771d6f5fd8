// attention_module.cpp: MultiHeadAttention and its variants.
//
// One forward, with the shape of every intermediate (self-attention, T = L = S
// without a cache; d = head size, g = h / h_kv):
//   x                         (B, L, D)
//   proj = x W_in^T + b_in    (B, L, (h + 2 h_kv) d)    one fused projection
//   q, k, v = split(proj)     (B, L, h d), (B, L, h_kv d), (B, L, h_kv d)
//   q -> (B, L, h, d) -> (B, h, L, d);  k, v -> (B, h_kv, S, d)     head split
//   [rope on q, k at their absolute positions]
//   [cache: k, v = cached ++ new along S]
//   Y = sdpa(q, k, v)         (B, h, L, d)
//   [gate G1: Y *= sigmoid(x W_g^T + b_g) as (B, h, L, 1) or (B, h, L, d)]
//   [head mask: Y_h *= xi_h]
//   Y -> (B, L, h, d) -> (B, L, h d)                                  head merge
//   out = Y W_O^T + b_O       (B, L, D)
// MLA replaces the K/V projections: c = src W_DKV^T (B, S, d_c) is what the
// cache keeps; k = c W_UK^T, v = c W_UV^T (B, S, h d); with rope, a decoupled
// rotary key k_R = rope(src W_KR^T) (B, S, d_R) is shared by all heads and
// concatenated to each head's key, and q gets a rotary part q_R (B, h, L, d_R).
#include <cmath>
#include <sstream>

#include "headlab/attention/attention.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

GateKind parse_gate(const std::string& name) {
  if (name == "none") return GateKind::none;
  if (name == "headwise") return GateKind::headwise;
  if (name == "elementwise") return GateKind::elementwise;
  throw ValueError("gate: '" + name + "' is not one of none, headwise, elementwise");
}

std::string gate_name(GateKind g) {
  switch (g) {
    case GateKind::headwise: return "headwise";
    case GateKind::elementwise: return "elementwise";
    default: return "none";
  }
}

void AttentionConfig::validate() const {
  auto bad = [](const std::string& why) { throw ValueError("attention config: " + why); };
  if (d_model == 0) bad("d_model must be > 0");
  if (num_heads == 0) bad("num_heads must be > 0");
  if (head_dim == 0 && d_model % num_heads != 0) {
    bad("num_heads " + std::to_string(num_heads) + " does not divide d_model " + std::to_string(d_model) +
        " (set head_dim to decouple them)");
  }
  if (kv_heads() == 0 || num_heads % kv_heads() != 0) {
    bad("num_kv_heads " + std::to_string(kv_heads()) + " does not divide num_heads " + std::to_string(num_heads));
  }
  if (!(dropout >= 0.0 && dropout < 1.0)) bad("dropout must be in [0, 1), got " + std::to_string(dropout));
  if (sinks > 0 && window == 0) bad("sinks need a sliding window (window > 0)");
  if (rope && !is_latent() && dim_head() % 2 != 0) bad("rope needs an even head_dim, got " + std::to_string(dim_head()));
  if (is_latent()) {
    if (kv_heads() != num_heads) bad("latent K/V (MLA) up-projects every head: leave num_kv_heads at num_heads");
    if (rope && (rope_dim == 0 || rope_dim % 2 != 0)) bad("MLA with rope needs an even rope_dim > 0 (decoupled rotary key)");
    if (!rope && rope_dim > 0) bad("rope_dim is set but rope is off");
  } else if (rope_dim > 0) {
    bad("rope_dim is only for latent K/V (MLA); plain rope rotates the whole head");
  }
  if (!(rope_base > 0)) bad("rope_base must be > 0");
}

std::string AttentionConfig::describe() const {
  std::ostringstream os;
  os << "d_model " << d_model << ", heads " << num_heads << ", kv heads " << kv_heads() << ", head_dim "
     << dim_head() << ", gate " << gate_name(gate) << (bias ? "" : ", no bias");
  if (window) os << ", window " << window << " + " << sinks << " sinks";
  if (rope) os << ", rope";
  if (is_latent()) os << ", latent " << latent_dim << (rope_dim ? ", rope_dim " + std::to_string(rope_dim) : "");
  return os.str();
}

namespace {

template <typename T>
Tensor<T> uniform_param(const Shape& shape, double bound, Generator& gen) {
  return uniform<T>(shape, static_cast<T>(-bound), static_cast<T>(bound), gen);
}

template <typename T>
Tensor<T> maybe(const Module<T>& m, const std::string& name, bool present) {
  return present ? m.parameter(name) : Tensor<T>();
}

}  // namespace

// (B, T, n d) -> (B, n, T, d): channels [i d, (i + 1) d) of each token become head i.
template <typename T>
Tensor<T> split_heads(const Tensor<T>& x, std::size_t heads) {
  const Shape s = x.shape();
  if (s.size() != 3 || heads == 0 || s[2] % heads != 0) {
    throw ShapeError("split_heads: input " + shape_str(s) + " should be (B, T, n d) with n = " +
                     std::to_string(heads) + " heads");
  }
  // BEGIN TASK 1.1: head split
  HEADLAB_TASK("1.1");
  const auto d = static_cast<std::ptrdiff_t>(s[2] / heads);
  return permute(reshape(x, {static_cast<std::ptrdiff_t>(s[0]), static_cast<std::ptrdiff_t>(s[1]),
                             static_cast<std::ptrdiff_t>(heads), d}),
                 {0, 2, 1, 3});
  // END TASK 1.1
}

// (B, n, T, d) -> (B, T, n d): the inverse of split_heads.
template <typename T>
Tensor<T> merge_heads(const Tensor<T>& x) {
  const Shape s = x.shape();
  if (s.size() != 4) throw ShapeError("merge_heads: input " + shape_str(s) + " should be (B, n, T, d)");
  // BEGIN TASK 1.2: head merge
  HEADLAB_TASK("1.2");
  return reshape(permute(x, {0, 2, 1, 3}), {static_cast<std::ptrdiff_t>(s[0]), static_cast<std::ptrdiff_t>(s[2]),
                                            static_cast<std::ptrdiff_t>(s[1] * s[3])});
  // END TASK 1.2
}

template Tensor<float> split_heads<float>(const Tensor<float>&, std::size_t);
template Tensor<double> split_heads<double>(const Tensor<double>&, std::size_t);
template Tensor<float> merge_heads<float>(const Tensor<float>&);
template Tensor<double> merge_heads<double>(const Tensor<double>&);

template <typename T>
MultiHeadAttention<T>::MultiHeadAttention(const AttentionConfig& config, Generator& gen) : config_(config) {
  config_.validate();
  const std::size_t D = config_.d_model, h = config_.num_heads, hkv = config_.kv_heads(), d = config_.dim_head();
  if (!config_.is_latent()) {
    // PyTorch: xavier_uniform over the whole fused matrix, biases zero.
    const std::size_t rows = (h + 2 * hkv) * d;
    this->register_parameter("in_proj_weight", uniform_param<T>({rows, D}, std::sqrt(6.0 / double(rows + D)), gen));
    if (config_.bias) this->register_parameter("in_proj_bias", zeros<T>({rows}));
  } else {
    // nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    auto linear_param = [&](const std::string& name, std::size_t out, std::size_t in) {
      const double bound = 1.0 / std::sqrt(double(in));
      this->register_parameter(name + ".weight", uniform_param<T>({out, in}, bound, gen));
      if (config_.bias) this->register_parameter(name + ".bias", uniform_param<T>({out}, bound, gen));
    };
    linear_param("q_proj", h * d, D);
    linear_param("kv_down_proj", config_.latent_dim, D);
    linear_param("k_up_proj", h * d, config_.latent_dim);
    linear_param("v_up_proj", h * d, config_.latent_dim);
    if (config_.rope) {
      linear_param("q_rope_proj", h * config_.rope_dim, D);
      linear_param("k_rope_proj", config_.rope_dim, D);
    }
  }
  if (config_.gate != GateKind::none) {
    const std::size_t gates = config_.gate == GateKind::headwise ? h : h * d;
    const double bound = 1.0 / std::sqrt(double(D));
    this->register_parameter("gate_proj.weight", uniform_param<T>({gates, D}, bound, gen));
    if (config_.gate_bias) this->register_parameter("gate_proj.bias", uniform_param<T>({gates}, bound, gen));
  }
  // PyTorch: out_proj is a Linear (kaiming_uniform(a=sqrt 5) = U(-1/sqrt(fan_in), ..)) with its bias zeroed.
  this->register_parameter("out_proj.weight", uniform_param<T>({D, h * d}, 1.0 / std::sqrt(double(h * d)), gen));
  if (config_.bias) this->register_parameter("out_proj.bias", zeros<T>({D}));
}

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::forward(const Tensor<T>& x, const AttentionCall<T>& call, KVCache<T>* cache) {
  return attend(x, nullptr, call, cache);
}

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::forward(const Tensor<T>& x, const Tensor<T>& memory,
                                                  const AttentionCall<T>& call) {
  return attend(x, &memory, call, nullptr);
}

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::attend(const Tensor<T>& x, const Tensor<T>* memory,
                                                 const AttentionCall<T>& call, KVCache<T>* cache) {
  const AttentionConfig& c = config_;
  const std::size_t D = c.d_model, h = c.num_heads, hkv = c.kv_heads(), d = c.dim_head();
  const Shape xs = x.shape();
  if (xs.size() != 3 || xs[2] != D) {
    throw ShapeError("MultiHeadAttention: query input " + shape_str(xs) + " should be (B, L, " + std::to_string(D) +
                     ")");
  }
  if (memory && (memory->dim() != 3 || memory->size(2) != D || memory->size(0) != xs[0])) {
    throw ShapeError("MultiHeadAttention: memory " + shape_str(memory->shape()) + " should be (" +
                     std::to_string(xs[0]) + ", S, " + std::to_string(D) + ") for query input " + shape_str(xs));
  }
  if (memory && c.rope) throw ValueError("MultiHeadAttention: rope is for self-attention only");
  const std::size_t L = xs[1];
  const Tensor<T>& src = memory ? *memory : x;  // where keys and values come from

  // Absolute positions of the new tokens: after whatever the cache has seen.
  const std::size_t offset = cache ? cache->length() : 0;
  std::vector<std::int64_t> qpos(L);
  for (std::size_t i = 0; i < L; ++i) qpos[i] = static_cast<std::int64_t>(offset + i);

  Tensor<T> q, k, v;                 // (B, h, L, d), (B, h_kv, S, d), (B, h_kv, S, d)
  std::vector<std::int64_t> kpos;    // positions of k's S entries
  if (!c.is_latent()) {
    const Tensor<T> w_in = this->parameter("in_proj_weight");
    const Tensor<T> b_in = maybe(*this, "in_proj_bias", c.bias);
    if (!memory) {
      const Tensor<T> proj = linear(x, w_in, b_in);  // (B, L, (h + 2 h_kv) d)
      auto parts = split(proj, {h * d, hkv * d, hkv * d}, -1);
      q = split_heads(parts[0], h);
      k = split_heads(parts[1], hkv);
      v = split_heads(parts[2], hkv);
    } else {
      // Cross-attention: rows [0, h d) of W_in project the queries, the rest keys and values.
      const Tensor<T> w_q = narrow(w_in, 0, 0, h * d), w_kv = narrow(w_in, 0, h * d, 2 * hkv * d);
      const Tensor<T> b_q = c.bias ? narrow(b_in, 0, 0, h * d) : Tensor<T>();
      const Tensor<T> b_kv = c.bias ? narrow(b_in, 0, h * d, 2 * hkv * d) : Tensor<T>();
      q = split_heads(linear(x, w_q, b_q), h);
      auto kv = split(linear(*memory, w_kv, b_kv), {hkv * d, hkv * d}, -1);
      k = split_heads(kv[0], hkv);
      v = split_heads(kv[1], hkv);
    }
    if (c.rope) {
      q = rope(q, qpos, c.rope_base);
      k = rope(k, qpos, c.rope_base);
    }
    kpos = memory ? std::vector<std::int64_t>() : qpos;
    if (cache) {
      // K and V of the kv heads only; cached entries are constants (no graph). The keys are then
      // the cached ones followed by the new ones (along S), at the positions the cache has seen
      // followed by qpos; the new k, v go into the cache (append handles window eviction).
      // BEGIN TASK 4.4: KV cache step
      HEADLAB_TASK("4.4");
      std::vector<std::int64_t> all = cache->positions();
      all.insert(all.end(), qpos.begin(), qpos.end());
      const Array<T> k_new = k.value(), v_new = v.value();
      if (cache->stored_tokens() > 0) {
        k = concat<T>({Tensor<T>(cache->first()), k}, 2);
        v = concat<T>({Tensor<T>(cache->second()), v}, 2);
      }
      kpos = all;
      cache->append(k_new, v_new, 2, c.window, c.sinks);
      // END TASK 4.4
    }
  } else {
    // MLA: queries as usual; keys and values through the shared latent c.
    q = split_heads(linear(x, this->parameter("q_proj.weight"), maybe(*this, "q_proj.bias", c.bias)), h);
    Tensor<T> latent = linear(src, this->parameter("kv_down_proj.weight"), maybe(*this, "kv_down_proj.bias", c.bias));
    Tensor<T> k_rot;  // (B, S, d_R), already rotated
    if (c.rope) {
      const Tensor<T> k_r = linear(src, this->parameter("k_rope_proj.weight"), maybe(*this, "k_rope_proj.bias", c.bias));
      const auto s0 = static_cast<std::ptrdiff_t>(k_r.size(0)), s1 = static_cast<std::ptrdiff_t>(k_r.size(1)),
                 s2 = static_cast<std::ptrdiff_t>(c.rope_dim);
      k_rot = reshape(rope(reshape(k_r, {s0, 1, s1, s2}), qpos, c.rope_base), {s0, s1, s2});
    }
    kpos = memory ? std::vector<std::int64_t>() : qpos;
    if (cache) {
      std::vector<std::int64_t> all = cache->positions();
      all.insert(all.end(), qpos.begin(), qpos.end());
      const Array<T> latent_new = latent.value();
      const Array<T> rot_new = c.rope ? k_rot.value() : Array<T>(xt::zeros<T>({xs[0], L, std::size_t(0)}));
      if (cache->stored_tokens() > 0) {
        latent = concat<T>({Tensor<T>(cache->first()), latent}, 1);
        if (c.rope) k_rot = concat<T>({Tensor<T>(cache->second()), k_rot}, 1);
      }
      kpos = all;
      cache->append(latent_new, rot_new, 1, c.window, c.sinks);
    }
    k = split_heads(linear(latent, this->parameter("k_up_proj.weight"), maybe(*this, "k_up_proj.bias", c.bias)), h);
    v = split_heads(linear(latent, this->parameter("v_up_proj.weight"), maybe(*this, "v_up_proj.bias", c.bias)), h);
    if (c.rope) {
      // q = [q_nope, q_R] per head (B, h, L, d + d_R); k = [k_nope, k_R shared by all heads].
      Tensor<T> q_r = split_heads(
          linear(x, this->parameter("q_rope_proj.weight"), maybe(*this, "q_rope_proj.bias", c.bias)), h);
      q = concat<T>({q, rope(q_r, qpos, c.rope_base)}, -1);
      const Shape ks = k_rot.shape();
      const Tensor<T> k_r_head = reshape(k_rot, {static_cast<std::ptrdiff_t>(ks[0]), 1,
                                                 static_cast<std::ptrdiff_t>(ks[1]), static_cast<std::ptrdiff_t>(ks[2])});
      k = concat<T>({k, concat<T>(std::vector<Tensor<T>>(h, k_r_head), 1)}, -1);
    }
  }

  SdpaOptions<T> opt;
  opt.causal = call.causal;
  if (!memory) {
    opt.window = c.window;
    opt.sinks = c.sinks;
    if (c.window > 0 || call.causal) {
      opt.query_positions = qpos;
      opt.key_positions = kpos;
    }
  }
  opt.key_padding_mask = call.key_padding_mask;
  opt.attn_mask = call.attn_mask;
  opt.attn_bias = call.attn_bias;
  opt.dropout = c.dropout;
  opt.training = this->is_training();
  opt.generator = call.generator;
  opt.need_weights = call.need_weights || taps_on_;
  const bool tiled = c.flash && !opt.need_weights && !opt.attn_mask && !opt.attn_bias && !(opt.training && opt.dropout > 0);
  SdpaResult<T> attn = tiled ? flash_attention(q, k, v, opt) : scaled_dot_product_attention(q, k, v, opt);
  Tensor<T> y = attn.output;  // (B, h, L, d)

  AttentionOutput<T> result;
  if (c.gate != GateKind::none) {
    // G1: gate scores from the query-side input x, one per head (headwise) or per channel (elementwise):
    // y = y * sigmoid(x W_g^T + b_g) with the gates split into heads; keep the gate in result.gate.
    // BEGIN TASK 6.1: headwise gate
    HEADLAB_TASK("6.1");
    const Tensor<T> scores = linear(x, this->parameter("gate_proj.weight"), maybe(*this, "gate_proj.bias", c.gate_bias));
    const Tensor<T> gate = split_heads(sigmoid(scores), h);  // (B, h, L, 1) or (B, h, L, d)
    y = y * gate;
    result.gate = gate;
    // END TASK 6.1
  }
  const Tensor<T>& xi = call.head_mask.defined() ? call.head_mask : head_mask_;
  if (xi.defined()) {
    if (xi.shape() != Shape{h}) {
      throw ShapeError("MultiHeadAttention: head_mask " + shape_str(xi.shape()) + " should be (" +
                       std::to_string(h) + ")");
    }
    y = y * reshape(xi, {1, static_cast<std::ptrdiff_t>(h), 1, 1});  // Y_h *= xi_h
  }
  result.output = linear(merge_heads(y), this->parameter("out_proj.weight"), maybe(*this, "out_proj.bias", c.bias));
  result.weights = attn.weights;
  if (taps_on_) {
    taps_.weights = attn.weights.defined() ? attn.weights.detach() : Tensor<T>();
    taps_.gate = result.gate.defined() ? result.gate.detach() : Tensor<T>();
    taps_.output = result.output.detach();
  }
  return result;
}

template <typename T>
void MultiHeadAttention<T>::set_head_mask(const Tensor<T>& xi) {
  if (xi.defined() && xi.shape() != Shape{config_.num_heads}) {
    throw ShapeError("MultiHeadAttention::set_head_mask: mask " + shape_str(xi.shape()) + " should be (" +
                     std::to_string(config_.num_heads) + ")");
  }
  head_mask_ = xi;
}

template class MultiHeadAttention<float>;
template class MultiHeadAttention<double>;

}  // namespace headlab
