// lab/explorer_circuits.cpp: the explorer's circuits view, patching and attribution
// (headlab/lab/explorer.hpp, add_circuits).
#include "headlab/lab/explorer.hpp"
#include "headlab/lab/logit_attribution.hpp"
#include "headlab/lab/patching.hpp"

namespace headlab {

std::string site_of_module(const std::string& module) {
  // "{stack.}{l}.{attn|cross_attn}" with stack "blocks" (decoder-only), "encoder" or "decoder".
  const std::size_t first = module.find('.'), last = module.rfind('.');
  const std::string stack = module.substr(0, first), layer = module.substr(first + 1, last - first - 1);
  const std::string kind = module.substr(last + 1) == "cross_attn" ? "multihead_attn" : "self_attn";
  return (stack == "blocks" ? "" : stack + ".") + "layers." + layer + "." + kind;
}

std::string add_circuits(ExplorerData& data, LoadedModel& model, std::size_t rows, std::uint64_t seed) {
  ExplorerCircuits c;
  CircuitProbe probe;
  PatchingResult patched;
  try {
    probe = make_circuit_probe(model, {rows, seed, 0, ""});  // translate: the run's validation file
    patched = activation_patching(model, probe);
  } catch (const ValueError& e) {
    return e.what();
  } catch (const IOError& e) {  // the run's validation file moved, gone or malformed (FormatError)
    return e.what();
  }
  c.rule = probe.rule;
  c.rows = probe.clean_answer.size();  // translate keeps only the pairs it can use
  c.seed = seed;
  c.position = probe.position;
  c.per_row_position = !probe.row_positions.empty();
  c.clean_difference = patched.clean_difference;
  c.corrupted_difference = patched.corrupted_difference;
  for (const std::string& module : patched.modules) c.patched_sites.push_back(site_of_module(module));
  c.shares = patched.heads;
  const bool norm_first = model.lm ? model.lm->config().norm_first : model.model->config().norm_first;
  if (norm_first) {
    const LogitAttribution a = direct_logit_attribution(model, probe);
    c.attributed = true;
    c.max_sum_error = a.max_sum_error;
    for (std::size_t b = 0; b < a.logit.size(); ++b) {
      c.logit += a.logit[b] / double(a.logit.size());
      c.constant += a.constant[b] / double(a.logit.size());
    }
    const std::vector<std::string> modules = attention_modules(model);
    for (const LogitComponent& t : a.components)
      c.terms.push_back({t.name, t.head >= 0 ? site_of_module(modules[std::size_t(t.module)]) : "", t.head, t.mean});
  }
  data.circuits = std::move(c);
  return "";
}

}  // namespace headlab
