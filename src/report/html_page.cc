#include "report/html_page.h"

#include "base/json_schema.h"
#include "base/units.h"
#include "report/html_assets.h"

namespace exitscope {
namespace {

// JSON inside <script>: "</script" would end the element and "<!--" change how the parser reads on;
// "<" only occurs in JSON strings, where \u003c is the same character.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// Durations the script formats itself (sums under a filter) must read as FormatDuration writes them:
// the page carries samples of the C++ spelling, which the browser test compares with the script's.
nlohmann::json DurationSamples() {
  nlohmann::json s = nlohmann::json::array();
  for (double v : {0.0, 1.0, 999.0, 999.6, 1000.0, 1234.0, 9999.0, 10'000.0, 99'990.0, 99'999.0, 100'000.0, 123'456.0,
                   999'999.0, 1e6, 4'193'000.0, 2.148e9, 12.5e9, 345.6e9}) {
    s.push_back({v, FormatDuration(v)});
  }
  return s;
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HtmlPage::Render() const {
  nlohmann::json data;
  TagSchema(&data, "html." + command_, kHtmlDataSchemaVersion);
  data["tool_version"] = EXITSCOPE_VERSION;
  data["title"] = title_;
  data["filters"] = filters_;
  data["duration_samples"] = DurationSamples();
  data["sections"] = nlohmann::json::array();
  for (const auto& s : sections_) {
    data["sections"].push_back(
        {{"id", s.id}, {"kind", s.kind}, {"title", s.title}, {"note", s.note}, {"data", s.data}});
  }
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"exitscope " EXITSCOPE_VERSION "\">\n";
  // Nothing may load from elsewhere: the page must read the same offline, years later.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  out += "<title>" + HtmlEscape(title_) + "</title>\n<style>\n";
  out += kReportCss;
  out += "</style>\n</head>\n<body>\n<header><h1>" + HtmlEscape(title_) + "</h1>";
  out += "<div id=\"filters\" class=\"filters\"></div></header>\n<nav id=\"toc\"></nav>\n<main>\n";
  for (const auto& s : sections_) {
    out += "<section id=\"" + HtmlEscape(s.id) + "\" data-kind=\"" + HtmlEscape(s.kind) + "\">\n<h2>" +
           HtmlEscape(s.title) + "</h2>\n";
    if (!s.note.empty()) out += "<p class=\"note\">" + HtmlEscape(s.note) + "</p>\n";
    out +=
        "<div class=\"body\"><p class=\"noscript\">This section is drawn by the page's script.</p></div>\n</section>\n";
  }
  out += "</main>\n<footer>exitscope " EXITSCOPE_VERSION
         " — one self-contained file: no network, no external "
         "resources.</footer>\n";
  out += "<script type=\"application/json\" id=\"exitscope-data\">" +
         ScriptSafe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) + "</script>\n";
  out += "<script>\n";
  out += kReportJs;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace exitscope
