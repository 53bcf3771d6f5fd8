// config.cpp: AttentionConfig's checks and description, and the gate kinds by name
// (headlab/attention/attention.hpp).
#include "headlab/attention/attention.hpp"

#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"

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

}  // namespace headlab
