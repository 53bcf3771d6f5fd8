// explorer_page.cpp: the head explorer's page around its data (headlab/report/explorer_page.hpp).
#include "headlab/report/explorer_page.hpp"

#include <utility>
#include <vector>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

namespace explorer_assets {  // framework/report/explorer/, embedded by cmake/embed_text.cmake
extern const char* const html;
extern const char* const css;
extern const char* const js;
extern const char* const circuits_js;
}  // namespace explorer_assets

namespace {

// `page` with each marker replaced by its value; the markers are looked for in the template alone,
// in the order given, so that a value holding a marker's text is never replaced again.
std::string fill(const std::string& page, const std::vector<std::pair<std::string, std::string>>& parts) {
  std::string out;
  std::size_t from = 0;
  for (const auto& [marker, value] : parts) {
    const std::size_t at = page.find(marker, from);
    if (at == std::string::npos) throw ValueError("explorer_page: the page template lacks " + marker);
    out.append(page, from, at - from).append(value);
    from = at + marker.size();
  }
  return out.append(page, from, std::string::npos);
}

}  // namespace

std::string explorer_page(const std::string& data_json, const std::string& title) {
  std::string data;  // '<' as \u003c: "</script>" inside a token cannot end the element early
  data.reserve(data_json.size());
  for (char c : data_json) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  return fill(explorer_assets::html,
              {{"{{TITLE}}", text_format::xml_escape(title)}, {"/*{{CSS}}*/", explorer_assets::css}, {"{{DATA}}", data},
               {"/*{{JS}}*/", explorer_assets::js}, {"/*{{CIRCUITS_JS}}*/", explorer_assets::circuits_js}});
}

}  // namespace headlab
