// recall_keys.cpp: each head's weight on the keys a recall query names (headlab/lab/recall_keys.hpp).
#include "headlab/lab/recall_keys.hpp"

#include <algorithm>

#include "headlab/core/errors.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/lab/heads.hpp"

namespace headlab {

namespace {
// pos[b][k] = the position (1..n) of key k's pair in sequence b, or 0 when the sequence lacks it.
std::vector<std::vector<std::size_t>> key_positions(const RecallBatch& batch, const RecallLayout& layout) {
  const std::size_t B = batch.sequences.shape()[0], n = batch.sequences.shape()[1] / 2;
  std::vector<std::vector<std::size_t>> pos(B, std::vector<std::size_t>(layout.keys, 0));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 1; i <= n; ++i) {
      const std::ptrdiff_t key = layout.pair_key(batch.sequences(b, i));
      if (key < 0) throw ValueError("recall_key_mass: position " + std::to_string(i) + " of sequence " +
                                    std::to_string(b) + " is not a key-value pair of this task");
      pos[b][std::size_t(key)] = i;
    }
  return pos;
}
}  // namespace

template <typename T>
std::vector<RecallKeyMass> recall_key_mass(const Array<T>& w, const RecallBatch& batch, const RecallLayout& layout,
                                           std::size_t bins) {
  const IndexArray& seq = batch.sequences;
  if (w.dimension() != 4 || seq.dimension() != 2 || w.shape()[0] != seq.shape()[0] || w.shape()[2] != seq.shape()[1] ||
      w.shape()[3] != seq.shape()[1] || seq.shape()[1] % 2 == 0)
    throw ShapeError("recall_key_mass: weights " + shape_str(Shape(w.shape().begin(), w.shape().end())) +
                     " should be (B, h, L, L) over sequences " + shape_str(Shape(seq.shape().begin(), seq.shape().end())) +
                     " of (B, L = 2n+1)");
  if (bins == 0) throw ValueError("recall_key_mass: bins must be >= 1");
  const std::size_t B = seq.shape()[0], H = w.shape()[1], L = seq.shape()[1], n = L / 2, r = layout.relations;
  const std::vector<std::vector<std::size_t>> pos = key_positions(batch, layout);
  std::vector<RecallKeyMass> out(H);
  for (std::size_t h = 0; h < H; ++h) {
    RecallKeyMass& m = out[h];
    m.head = h;
    m.mass.assign(r, 0.0);
    if (r >= 2) m.share_histogram.assign(bins, 0);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t q = n + 1; q < L; ++q) {
        const std::vector<std::size_t> keys = layout.query_keys(seq(b, q));
        if (keys.size() != r) throw ValueError("recall_key_mass: position " + std::to_string(q) + " of sequence " +
                                               std::to_string(b) + " is not a query of this task");
        double sum = 0, largest = 0;
        std::vector<double> p(r);
        for (std::size_t j = 0; j < r; ++j) {
          const std::size_t at = pos[b][keys[j]];
          if (at == 0) throw ValueError("recall_key_mass: the query at position " + std::to_string(q) + " of sequence " +
                                        std::to_string(b) + " names a key the sequence does not hold");
          p[j] = double(w(b, h, q, at));
          m.mass[j] += p[j];
          sum += p[j];
          largest = std::max(largest, p[j]);
        }
        m.named += sum;
        m.focus += largest;
        ++m.queries;
        if (r >= 2 && p[0] + p[1] > 0) {
          const double share = p[0] / (p[0] + p[1]);  // in [0, 1]; 1 lands in the last bin
          ++m.share_histogram[std::min(bins - 1, std::size_t(share * double(bins)))];
        }
      }
    const double count = double(std::max<std::size_t>(m.queries, 1));
    for (double& x : m.mass) x /= count;
    m.named /= count;
    m.focus /= count;
  }
  return out;
}

template std::vector<RecallKeyMass> recall_key_mass(const Array<float>&, const RecallBatch&, const RecallLayout&,
                                                    std::size_t);
template std::vector<RecallKeyMass> recall_key_mass(const Array<double>&, const RecallBatch&, const RecallLayout&,
                                                    std::size_t);

std::vector<RecallKeyMass> recall_key_mass(LoadedModel& m, const RecallBatch& batch, std::size_t bins) {
  if (m.options.task != Task::recall || !m.lm)
    throw ValueError("recall key mass: the checkpoint is a " + task_name(m.options.task) + " model, not a recall model");
  const RecallLayout layout = recall_layout(m.options);
  std::vector<AttentionSite> sites = attention_sites(m);
  {
    NoGradGuard no_grad;
    for (auto& s : sites) s.module->set_taps(true);
    m.lm->eval();
    (void)m.lm->forward(batch.sequences, nullptr);
    for (auto& s : sites) s.module->set_taps(false);
  }
  std::vector<RecallKeyMass> rows;
  for (auto& s : sites) {
    for (RecallKeyMass& row : recall_key_mass(s.module->last_taps().weights.value(), batch, layout, bins)) {
      row.site = s.name;
      row.layer = s.layer;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace headlab
