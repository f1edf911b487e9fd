// The one HTML writer (issue 14): a self-contained page — our own script and style inline
// (src/report/html/report.js, report.css, embedded at build time), no network, no fonts — made of
// sections the caller composes. Each section is {id, kind, title, data}; the page carries every
// section's data as one JSON document (window.exitscopeData) and the script draws each section with
// the renderer registered for its kind. `report --html` and `advise --html` compose it from
// html_sections.h; `diff --html` can add its own.
//
// A new section: (1) build an HtmlSection in C++ (a function beside those in html_sections.h) with a
// new `kind` and its data as JSON — durations pre-formatted with FormatDuration where shown as is;
// (2) register `ES.render.<kind> = (el, section, view) => {...}` in report.js, which draws into `el`,
// reads the filter `view` ({vm, vcpu, reason}, '' = all) and returns the number of marks it drew (the
// browser test checks every section drew some); (3) page.Add(section) in the command.
// Assumption: data stays small (binned; a 10 M-event trace gives a page of ~1 MB).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace exitscope {

inline constexpr int kHtmlDataSchemaVersion = 1;  // of window.exitscopeData

struct HtmlSection {
  std::string id;     // unique in the page, [a-z0-9-]
  std::string kind;   // which renderer of report.js draws it
  std::string title;  // the section's heading
  nlohmann::json data;
  std::string note;  // one line under the heading ("" for none)
};

class HtmlPage {
 public:
  // `title`: the page's title; `command`: "report", "advise", "diff" (the data's schema name).
  HtmlPage(std::string title, std::string command) : title_(std::move(title)), command_(std::move(command)) {}
  void Add(HtmlSection section) { sections_.push_back(std::move(section)); }
  // Filter choices the page offers (VM, vCPU, reason); each a label the sections' data uses.
  void SetFilters(nlohmann::json filters) { filters_ = std::move(filters); }
  std::string Render() const;

 private:
  std::string title_, command_;
  nlohmann::json filters_ = nlohmann::json::object();
  std::vector<HtmlSection> sections_;
};

// Escapes &, <, >, " for text and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace exitscope
