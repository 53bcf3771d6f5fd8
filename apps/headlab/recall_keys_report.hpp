// recall_keys_report.hpp: the recall part of `headlab heads` (headlab/lab/recall_keys.hpp): a table
// of each head's weight on the keys a query names, recall_keys.csv and recall_share.csv.
#pragma once

#include <filesystem>
#include <vector>

#include "headlab/lab/recall_keys.hpp"

namespace headlab::cli {

// Prints one line a head (mass on key a, key b, ..., named, focus, the share of queries that put
// <= 0.2 / 0.4-0.6 / >= 0.8 of their two-key weight on key a) and writes
//   recall_keys.csv   site,layer,head,queries,mass_key1..mass_keyr,named,focus
//   recall_share.csv  site,layer,head,bin_low,bin_high,queries   (r >= 2)
// into dir. An IOError names a file that could not be written.
void report_recall_keys(const std::vector<RecallKeyMass>& rows, const std::filesystem::path& dir);

}  // namespace headlab::cli
