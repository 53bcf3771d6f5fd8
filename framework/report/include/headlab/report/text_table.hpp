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

// Text from a user or a file for one line of Markdown: & < > as entities (no HTML reaches a
// renderer), '|' as "\|" (no table cell is split), \ [ ] ` escaped (no link, image or code span:
// "[x](javascript:...)" stays text), control characters as spaces (a line break would start a
// heading or a block of its own).
std::string markdown_inline(const std::string& text);

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);

  void add_row(std::vector<std::string> cells);  // ValueError when it has not one cell per column

  // The Markdown text: header, rule, rows, every cell padded to its column's width (in characters
  // on screen, not UTF-8 bytes); a '|' inside a cell is written "\|", a control character (a line
  // break) as a space, "](" as "]\(" (no inline link or image).
  std::string markdown() const;

  std::size_t columns() const { return header_.size(); }
  const std::vector<std::string>& header() const { return header_; }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace headlab
