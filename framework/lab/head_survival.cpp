// head_survival.cpp: which heads a pruning order keeps (headlab/lab/head_survival.hpp).
#include "headlab/lab/head_survival.hpp"

#include <map>

#include "headlab/core/errors.hpp"

namespace headlab {

std::size_t steps_within(const std::vector<PruneStep>& steps, double tolerance) {
  if (steps.empty()) throw ValueError("steps_within: a pruning order has at least its step 0 (the full model)");
  const double floor = steps.front().metric - tolerance;
  std::size_t n = 1;
  while (n < steps.size() && steps[n].metric >= floor) ++n;
  return n;
}

std::size_t heads_prunable(const std::vector<PruneStep>& steps, double tolerance) {
  return steps[steps_within(steps, tolerance) - 1].pruned;
}

std::vector<HeadFate> head_fates(const std::vector<AttentionSite>& sites, const std::vector<PruneStep>& order,
                                 double tolerance, const HeadImportance& importance, const std::vector<HeadRoles>& roles) {
  std::size_t total = 0;
  for (const auto& s : sites) total += s.heads();
  if (roles.size() != total)
    throw ValueError("head_fates: " + std::to_string(roles.size()) + " role rows for " + std::to_string(total) + " heads");
  if (importance.normalised.size() != sites.size())
    throw ValueError("head_fates: importance of " + std::to_string(importance.normalised.size()) + " sites for " +
                     std::to_string(sites.size()));
  // "site#head" -> (rank, heads pruned after its step)
  std::map<std::string, std::pair<std::size_t, std::size_t>> removal;
  std::size_t rank = 0;
  for (const PruneStep& step : order)
    for (const std::string& name : step.removed)
      if (!removal.emplace(name, std::pair{++rank, step.pruned}).second)
        throw ValueError("head_fates: the order removes " + name + " twice");
  const std::size_t kept_pruned = heads_prunable(order, tolerance);

  std::vector<HeadFate> fates;
  std::size_t row = 0;
  for (std::size_t s = 0; s < sites.size(); ++s) {
    if (importance.normalised[s].size() != sites[s].heads())
      throw ValueError("head_fates: importance of " + std::to_string(importance.normalised[s].size()) + " heads for " +
                       sites[s].name + "'s " + std::to_string(sites[s].heads()));
    for (std::size_t h = 0; h < sites[s].heads(); ++h, ++row) {
      const std::string name = sites[s].name + "#" + std::to_string(h);
      const auto it = removal.find(name);
      if (it == removal.end()) throw ValueError("head_fates: the order never removes " + name);
      if (roles[row].site != sites[s].name || roles[row].head != h)
        throw ValueError("head_fates: role row " + std::to_string(row) + " is " + roles[row].site + "#" +
                         std::to_string(roles[row].head) + ", expected " + name);
      HeadFate f;
      f.site = sites[s].name;
      f.head = h;
      f.removal_rank = it->second.first;
      f.removed_at = it->second.second;
      f.survives = f.removed_at > kept_pruned;
      f.importance = importance.normalised[s][h];
      f.roles = roles[row];
      fates.push_back(std::move(f));
    }
  }
  if (removal.size() != total)
    throw ValueError("head_fates: the order removes " + std::to_string(removal.size()) + " heads, the model has " +
                     std::to_string(total));
  return fates;
}

}  // namespace headlab
