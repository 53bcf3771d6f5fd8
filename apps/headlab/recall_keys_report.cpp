// recall_keys_report.cpp: prints and writes recall_key_mass's rows (recall_keys_report.hpp).
#include "recall_keys_report.hpp"

#include <iomanip>
#include <iostream>
#include <sstream>

#include "headlab/core/file_writer.hpp"
#include "number_text.hpp"

namespace headlab::cli {

namespace {
// The share of a head's queries whose p_a / (p_a + p_b) falls in [low, high) (high 1 includes 1).
double share_between(const RecallKeyMass& r, double low, double high) {
  std::size_t in = 0, all = 0;
  const std::size_t bins = r.share_histogram.size();
  for (std::size_t k = 0; k < bins; ++k) {
    const double mid = (double(k) + 0.5) / double(bins);
    all += r.share_histogram[k];
    if (mid >= low && mid < high) in += r.share_histogram[k];
  }
  return all ? double(in) / double(all) : 0.0;
}
}  // namespace

void report_recall_keys(const std::vector<RecallKeyMass>& rows, const std::filesystem::path& dir) {
  if (rows.empty()) return;
  const std::size_t r = rows[0].mass.size();
  std::cout << "recall: each head's weight on the keys its query names, on " << rows[0].queries
            << " held-out queries (key a is the query's first key; share = p_a / (p_a + p_b)):\n";
  std::cout << std::left << std::setw(24) << "site" << std::right << std::setw(5) << "head";
  for (std::size_t j = 0; j < r; ++j) std::cout << std::setw(8) << ("key " + std::string(1, char('a' + std::min<std::size_t>(j, 25))));
  std::cout << std::setw(8) << "named" << std::setw(8) << "focus";
  if (r >= 2) std::cout << "  share <0.2  0.4-0.6  >=0.8";
  std::cout << "\n";
  std::ostringstream keys_csv, share_csv;
  keys_csv << "site,layer,head,queries";
  for (std::size_t j = 0; j < r; ++j) keys_csv << ",mass_key" << j + 1;
  keys_csv << ",named,focus\n";
  share_csv << "site,layer,head,bin_low,bin_high,queries\n";
  for (const RecallKeyMass& row : rows) {
    std::cout << std::left << std::setw(24) << row.site << std::right << std::setw(5) << row.head;
    keys_csv << row.site << "," << row.layer << "," << row.head << "," << row.queries;
    for (double m : row.mass) {
      std::cout << std::setw(8) << fixed(m);
      keys_csv << "," << fixed(m, 6);
    }
    std::cout << std::setw(8) << fixed(row.named) << std::setw(8) << fixed(row.focus);
    keys_csv << "," << fixed(row.named, 6) << "," << fixed(row.focus, 6) << "\n";
    if (!row.share_histogram.empty()) {
      std::cout << std::setw(12) << fixed(share_between(row, 0.0, 0.2), 2) << std::setw(9)
                << fixed(share_between(row, 0.4, 0.6), 2) << std::setw(7) << fixed(share_between(row, 0.8, 1.01), 2);
      const std::size_t bins = row.share_histogram.size();
      for (std::size_t k = 0; k < bins; ++k)
        share_csv << row.site << "," << row.layer << "," << row.head << "," << fixed(double(k) / double(bins), 4) << ","
                  << fixed(double(k + 1) / double(bins), 4) << "," << row.share_histogram[k] << "\n";
    }
    std::cout << "\n";
  }
  write_file_atomic(dir / "recall_keys.csv", keys_csv.str(), "heads");
  if (r >= 2) write_file_atomic(dir / "recall_share.csv", share_csv.str(), "heads");
}

}  // namespace headlab::cli
