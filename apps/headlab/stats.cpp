// stats.cpp: `headlab stats`, the size and cost of an attention configuration.
//
// Everything comes from headlab::attention_cost (attention/cost.cpp), for
// one sequence of T tokens of self-attention:
//   parameters          scalars in one MultiHeadAttention layer
//   forward FLOPs       multiply and add count 2; masks save nothing here
//   KV-cache elements   scalars cached per token per layer: 2 h_kv d, or d_c + d_R (MLA)
//   KV-cache bytes      elements x tokens held x 4 (float32); with a window the
//                       cache holds at most sinks + W tokens, however large T is
// For standard multi-head attention (h_kv = h, h d = D, no gate, no latent) the
// table also prints the textbook formulas, 4 D^2 + 4 D and 8 T D^2 + 4 T^2 D,
// and fails (exit 1) if attention_cost disagrees with them.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/errors.hpp"

namespace headlab::cli {

namespace {

// A count flag as a size: refuses negative and absurd values, naming the flag.
std::size_t count(const char* flag, std::int64_t value, std::int64_t min_value = 0) {
  constexpr std::int64_t limit = std::int64_t(1) << 31;
  if (value < min_value) {
    throw ValueError(std::string(flag) + " " + std::to_string(value) + ": must be >= " + std::to_string(min_value) +
                     (min_value == 0 ? " (it is a count)" : ""));
  }
  if (value >= limit) {
    throw ValueError(std::string(flag) + " " + std::to_string(value) + ": too large (the limit is 2^31 - 1)");
  }
  return static_cast<std::size_t>(value);
}

// A count held in a double (FLOPs): every digit up to 2^53, where a double holds each integer
// exactly; beyond that the 15 significant digits a double keeps, with an exponent ("1.2e+22"),
// not digits it does not hold.
std::string integer(double x) {
  std::ostringstream os;
  if (std::fabs(x) <= 9007199254740992.0) os << std::fixed << std::setprecision(0) << x;
  else os << std::setprecision(15) << x;
  return os.str();
}

// 1234567 -> "1.23 M"; with bytes, 1024-based units.
std::string readable(double x, bool bytes = false) {
  const double base = bytes ? 1024.0 : 1000.0;
  const char* units_n[] = {"", " K", " M", " G", " T", " P"};
  const char* units_b[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB"};
  int u = 0;
  while (std::fabs(x) >= base && u < 5) {
    x /= base;
    ++u;
  }
  std::ostringstream os;
  os << std::fixed << std::setprecision(u == 0 ? 0 : (x < 10 ? 2 : (x < 100 ? 1 : 0))) << x
     << (bytes ? units_b[u] : units_n[u]);
  return os.str();
}

struct Row {
  std::string what, per_layer, total, readable;
};

void print_table(const std::vector<Row>& rows, const std::string& total_header) {
  std::vector<Row> all{{"quantity", "per layer", total_header, "total, readable"}};
  all.insert(all.end(), rows.begin(), rows.end());
  std::size_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
  for (const Row& r : all) {
    w0 = std::max(w0, r.what.size());
    w1 = std::max(w1, r.per_layer.size());
    w2 = std::max(w2, r.total.size());
    w3 = std::max(w3, r.readable.size());
  }
  auto line = [&](const Row& r) {
    std::ostringstream os;
    os << "  " << std::left << std::setw(int(w0)) << r.what << "  " << std::right << std::setw(int(w1))
       << r.per_layer << "  " << std::setw(int(w2)) << r.total << "  " << std::setw(int(w3)) << r.readable;
    std::string text = os.str();
    text.erase(text.find_last_not_of(' ') + 1);  // no trailing blanks where a column is empty
    std::cout << text << "\n";
  };
  line(all[0]);
  std::cout << "  " << std::string(w0, '-') << "  " << std::string(w1, '-') << "  " << std::string(w2, '-') << "  "
            << std::string(w3, '-') << "\n";
  for (std::size_t i = 1; i < all.size(); ++i) line(all[i]);
}

}  // namespace

int run_stats(const StatsOptions& opt) {
  AttentionConfig c;
  c.d_model = count("--d-model", opt.d_model, 1);
  c.num_heads = count("--heads", opt.heads, 1);
  c.num_kv_heads = count("--kv-heads", opt.kv_heads);
  c.head_dim = count("--head-dim", opt.head_dim);
  c.gate = parse_gate(opt.gate);
  c.bias = !opt.no_bias;
  c.window = count("--window", opt.window);
  c.sinks = count("--sinks", opt.sinks);
  c.rope = opt.rope;
  c.latent_dim = count("--latent-dim", opt.latent_dim);
  c.rope_dim = count("--rope-dim", opt.rope_dim);
  const std::size_t T = count("--seq-len", opt.seq_len, 1);
  const std::size_t layers = count("--layers", opt.layers, 1);
  c.validate();  // ValueError naming the field and why (0 heads, h_kv not dividing h, ...)

  const AttentionCost cost = attention_cost(c, T);
  std::size_t all_parameters = 0, all_kv_elements = 0;  // x layers, refused past a 64-bit count
  if (__builtin_mul_overflow(cost.parameters, layers, &all_parameters) ||
      __builtin_mul_overflow(cost.kv_elements_per_token, layers, &all_kv_elements))
    throw ValueError("--layers " + std::to_string(layers) + ": " + std::to_string(cost.parameters) +
                     " parameters a layer times " + std::to_string(layers) + " layers is more than a 64-bit count holds");
  const double L = double(layers), D = double(c.d_model), t = double(T);
  const bool standard = !c.is_latent() && c.gate == GateKind::none && c.kv_heads() == c.num_heads &&
                        c.num_heads * c.dim_head() == c.d_model;
  // Tokens the cache holds after T tokens: all of them, or sinks + the newest W under a window.
  const std::size_t held = c.window > 0 ? std::min(T, c.sinks + c.window) : T;
  const double kv_bytes = double(cost.kv_elements_per_token) * double(held) * sizeof(float);

  const double formula_params = 4 * D * D + (c.bias ? 4 * D : 0);
  const double formula_flops = 8 * t * D * D + 4 * t * t * D;
  const std::string params_formula = c.bias ? "4 D^2 + 4 D" : "4 D^2 (no biases)";

  std::cout << "headlab stats: " << c.describe() << "\n"
            << "  T = " << T << " tokens of self-attention, batch 1, " << layers << (layers == 1 ? " layer" : " layers")
            << ", float32\n\n";
  std::vector<Row> rows;
  rows.push_back({"parameters", std::to_string(cost.parameters), std::to_string(all_parameters),
                  readable(double(cost.parameters) * L)});
  rows.push_back({standard ? "  formula " + params_formula : "  standard MHA at this D: " + params_formula,
                  integer(formula_params), "", ""});
  rows.push_back({"forward FLOPs (T = " + std::to_string(T) + ")", integer(cost.forward_flops),
                  integer(cost.forward_flops * L), readable(cost.forward_flops * L) + "FLOP"});
  rows.push_back({standard ? "  formula 8 T D^2 + 4 T^2 D" : "  standard MHA at this D: 8 T D^2 + 4 T^2 D",
                  integer(formula_flops), "", ""});
  rows.push_back({"KV-cache elements per token", std::to_string(cost.kv_elements_per_token),
                  std::to_string(all_kv_elements), ""});
  rows.push_back({"KV-cache tokens held (T = " + std::to_string(T) + ")", std::to_string(held), "", ""});
  rows.push_back({"KV-cache bytes (float32)", integer(kv_bytes), integer(kv_bytes * L), readable(kv_bytes * L, true)});
  print_table(rows, "x " + std::to_string(layers) + (layers == 1 ? " layer" : " layers"));
  if (c.window > 0) {
    std::cout << "\n  the window keeps " << c.sinks << " sink(s) + the newest " << c.window
              << " tokens; FLOPs count all T x T pairs (masks save nothing here)\n";
  }

  if (standard && (double(cost.parameters) != formula_params || cost.forward_flops != formula_flops)) {
    std::cerr << "headlab stats: attention_cost disagrees with the standard formulas (a bug)\n";
    return 1;
  }
  return 0;
}

}  // namespace headlab::cli
