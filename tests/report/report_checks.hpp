// report_checks.hpp: helpers the report tests share: NaN and infinity, the lines of a
// text, counting a substring, and a small well-formedness check of an SVG (XML) document.
#pragma once

#include <cstddef>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace headlab::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// The texts of the <text> elements of an SVG document, in order; with a `marker` other than
// "<text", of those whose tag holds it (class="scale-tick").
inline std::vector<std::string> element_texts(const std::string& doc, const std::string& marker = "<text") {
  std::vector<std::string> out;
  for (std::size_t p = doc.find(marker); p != std::string::npos; p = doc.find(marker, p + 1)) {
    const std::size_t a = doc.find('>', p) + 1;
    out.push_back(doc.substr(a, doc.find("</text>", a) - a));
  }
  return out;
}

// A simple well-formedness check: every <tag> is closed by </tag> in order
// (or is self-closing <tag/>), comments are skipped, and every '&' starts one
// of the five XML entities. Returns "" when fine, else what went wrong.
inline std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  for (std::size_t i = 0; (i = doc.find('<', i)) != std::string::npos;) {
    if (doc.compare(i, 4, "<!--") == 0) {
      const std::size_t end = doc.find("-->", i + 4);
      if (end == std::string::npos) return "unterminated comment";
      if (doc.substr(i + 4, end - i - 4).find("--") != std::string::npos) return "'--' inside a comment";
      i = end + 3;
      continue;
    }
    const std::size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    const std::string tag = doc.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (!tag.empty() && tag.back() == '/') {
      // self-closing
    } else if (!tag.empty() && tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "unbalanced </" + tag.substr(1) + ">";
      open.pop_back();
    } else {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  for (std::size_t i = 0; (i = doc.find('&', i)) != std::string::npos; ++i) {
    bool entity = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) entity = entity || doc.compare(i, std::strlen(e), e) == 0;
    if (!entity) return "a bare '&'";
  }
  return "";
}

}  // namespace headlab::testing
