// headlab/report/text_table.hpp: a table of text cells as Markdown whose columns line up, so that
// the same text reads well in a terminal and renders as a table.
//
//   TextTable t({"heads", "accuracy"});
//   t.add_row({"8", "0.99 ± 0.01"});
//   t.markdown() ->  | heads | accuracy    |
//                    |-------|-------------|
//                    | 8     | 0.99 ± 0.01 |
//
// Errors (see errors.hpp): ValueError for a row with a different number of cells than the header.
#pragma once

#include <string>
#include <vector>

namespace headlab {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);

  void add_row(std::vector<std::string> cells);  // ValueError when it has not one cell per column

  // The Markdown text: header, rule, rows, every cell padded to its column's width (in characters
  // on screen, not UTF-8 bytes); a '|' inside a cell is written "\|".
  std::string markdown() const;

  std::size_t columns() const { return header_.size(); }
  const std::vector<std::string>& header() const { return header_; }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace headlab
