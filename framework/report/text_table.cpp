// text_table.cpp: Markdown tables whose columns line up (see headlab/report/text_table.hpp).
#include "headlab/report/text_table.hpp"

#include <algorithm>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != header_.size())
    throw ValueError("TextTable: a row of " + std::to_string(cells.size()) + " cells for " +
                     std::to_string(header_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

namespace {
// '|' as "\|"; a control character (a line break would end the row) as a space; "](" as "]\("
// (no cell is an inline link or image; the "[lo, hi]" of an interval stays as it is).
std::string escaped(const std::string& cell) {
  std::string out;
  for (char ch : cell) {
    if (ch == '|') out += "\\|";
    else if (ch == '(' && !out.empty() && out.back() == ']') out += "\\(";
    else out += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
  }
  return out;
}
}  // namespace

std::string markdown_inline(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '|') out += "\\|";
    else if (c == '\\' || c == '[' || c == ']' || c == '`') out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out;
}

std::string TextTable::markdown() const {
  std::vector<std::size_t> width(header_.size(), 3);  // a rule is at least "---"
  auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_length(escaped(row[c])));
  };
  widen(header_);
  for (const auto& row : rows_) widen(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string cell = escaped(row[c]);
      out += " " + cell + std::string(width[c] - display_length(cell), ' ') + " |";
    }
    return out + "\n";
  };
  std::string out = line(header_) + "|";
  for (std::size_t w : width) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace headlab
