// headlab/report/explorer_page.hpp: the head explorer's page, one self-contained HTML file.
//
// The page is framework/report/explorer/explorer.{html,css,js}, embedded into the library at build
// time (cmake/embed_text.cmake): no network, no external scripts, fonts or style sheets. The data
// (headlab/lab/explorer.hpp's explorer_json) sits in <script type="application/json"
// id="headlab-data">; the script reads it and draws everything from it.
#pragma once

#include <string>

namespace headlab {

// The page with `data_json` (one JSON object) embedded and `title` as its <title> (escaped).
// Every '<' of the JSON is written as \u003c, so that no text in it can close the script element.
std::string explorer_page(const std::string& data_json, const std::string& title);

}  // namespace headlab
