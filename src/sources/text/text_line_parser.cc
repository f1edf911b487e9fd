#include "sources/text/text_line_parser.h"

#include <charconv>

namespace exitscope {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Plain loops: find_first_not_of(" \t") calls memchr over the set once per character, and trace-cmd
// report pads its comm column with a dozen spaces (a quarter of the text reader's time went there).
std::string_view TrimLeft(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}
std::string_view TrimRight(std::string_view s) {
  size_t n = s.size();
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) --n;
  return s.substr(0, n);
}

template <typename T>
bool ParseDec(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Finds " [ddd]" — the CPU column — and returns its '[' position.
size_t FindCpuColumn(std::string_view line, int32_t* cpu) {
  size_t from = 0;
  for (;;) {
    size_t b = line.find('[', from);
    if (b == std::string_view::npos) return b;
    size_t e = b + 1;
    while (e < line.size() && IsDigit(line[e])) ++e;
    if (e > b + 1 && e < line.size() && line[e] == ']' && b > 0 && line[b - 1] == ' ' &&
        ParseDec(line.substr(b + 1, e - b - 1), cpu)) {
      return b;
    }
    from = b + 1;
  }
}

// "14.789538" → ns; any number of fraction digits. "123456789012" (no point) is a raw count, kept
// as it is: the kernel's trace output and trace-cmd print clocks not in ns so (kernel/trace/
// trace_output.c prints "%12llu" unless the clock is in ns).
bool ParseTimestamp(std::string_view s, uint64_t* ts_ns, uint32_t* frac_digits, bool* raw) {
  size_t dot = s.find('.');
  uint64_t sec = 0, frac = 0;
  *raw = dot == std::string_view::npos;
  if (*raw) {
    if (!ParseDec(s, ts_ns)) return false;
    *frac_digits = 0;
    return true;
  }
  std::string_view f = s.substr(dot + 1);
  if (f.empty() || f.size() > 9 || !ParseDec(s.substr(0, dot), &sec) || !ParseDec(f, &frac)) return false;
  static constexpr uint64_t kScale[] = {1000000000, 100000000, 10000000, 1000000, 100000, 10000, 1000, 100, 10, 1};
  *ts_ns = sec * 1000000000ULL + frac * kScale[f.size()];
  *frac_digits = static_cast<uint32_t>(f.size());
  return true;
}

// A latency-flags column such as "d..1." or "dNh2." (kernel trace, irq-info on).
bool LooksFlags(std::string_view tok) {
  if (tok.size() < 4 || tok.size() > 6) return false;
  for (char c : tok) {
    if (!(c == '.' || IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  }
  return tok.find('.') != std::string_view::npos || tok.size() == 5;
}

// Left of the CPU: "comm-pid", "comm-pid (tgid)" or "comm tid" / "comm pid/tid" (perf script).
bool ParseCommTid(std::string_view left, TextLine* out, bool* perf_style) {
  left = TrimRight(TrimLeft(left));
  if (!left.empty() && left.back() == ')') {
    size_t open = left.rfind('(');
    if (open == std::string_view::npos) return false;
    left = TrimRight(left.substr(0, open));
  }
  size_t sep = left.find_last_of(" -/");
  if (sep == std::string_view::npos || sep + 1 >= left.size()) return false;
  if (!ParseDec(left.substr(sep + 1), &out->tid)) return false;
  *perf_style = left[sep] != '-';
  out->comm = left.substr(0, sep);
  if (left[sep] == '/') {  // perf script -F pid,tid: "comm pid/tid"
    size_t sp = out->comm.find_last_of(' ');
    out->comm = sp == std::string_view::npos ? std::string_view() : out->comm.substr(0, sp);
  }
  out->comm = TrimRight(out->comm);
  return true;
}

}  // namespace

std::string_view TextDialectName(TextDialect d) {
  switch (d) {
    case TextDialect::kKernelTrace: return "kernel trace";
    case TextDialect::kTraceCmd: return "trace-cmd report";
    case TextDialect::kPerfScript: return "perf script";
    default: return "unknown";
  }
}

namespace {

// trace-cmd report -l (latency format) prints the CPU without brackets, its flags glued to it:
// "kvmprobe-499     1d..1.    14.747994: kvm_entry: …". Out: the CPU, where the "comm-pid" column
// ends and where the CPU column ends; false when the line is not so.
bool FindLatencyColumn(std::string_view line, int32_t* cpu, size_t* comm_end, size_t* column_end) {
  // The token before the first "<seconds>: " (the first token ending in ':' whose number parses).
  size_t from = 0;
  for (;;) {
    size_t colon = line.find(": ", from);
    if (colon == std::string_view::npos) return false;
    size_t ts_start = line.find_last_of(' ', colon);
    if (ts_start == std::string_view::npos) return false;
    uint64_t ts;
    uint32_t digits;
    bool raw;
    if (!ParseTimestamp(line.substr(ts_start + 1, colon - ts_start - 1), &ts, &digits, &raw)) {
      from = colon + 2;
      continue;
    }
    std::string_view before = TrimRight(line.substr(0, ts_start));
    size_t tok = before.find_last_of(' ');
    if (tok == std::string_view::npos) return false;
    std::string_view column = before.substr(tok + 1);
    size_t d = 0;
    while (d < column.size() && IsDigit(column[d])) ++d;
    if (d == 0 || !LooksFlags(column.substr(d)) || !ParseDec(column.substr(0, d), cpu)) return false;
    *comm_end = tok;
    *column_end = before.size();
    return true;
  }
}

}  // namespace

bool ParseTextLine(std::string_view line, TextLine* out) {
  int32_t cpu = -1;
  size_t b = FindCpuColumn(line, &cpu);
  size_t column_end = 0;
  if (b == std::string_view::npos) {
    size_t comm_end;
    if (!FindLatencyColumn(line, &cpu, &comm_end, &column_end)) return false;
    b = comm_end;
  }
  out->cpu = cpu;
  bool perf_style = false;
  if (!ParseCommTid(line.substr(0, b), out, &perf_style)) return false;
  const size_t e = column_end ? column_end : line.find(']', b) + 1;
  std::string_view rest = TrimLeft(line.substr(e));
  // Optional flags column (not after the latency format's CPU, which carries them), then "ts:".
  size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return false;
  std::string_view tok = rest.substr(0, sp);
  bool has_flags = false;
  if (!column_end && tok.back() != ':' && LooksFlags(tok)) {
    has_flags = true;
    rest = TrimLeft(rest.substr(sp));
    sp = rest.find(' ');
    if (sp == std::string_view::npos) return false;
    tok = rest.substr(0, sp);
  }
  if (tok.size() < 2 || tok.back() != ':' ||
      !ParseTimestamp(tok.substr(0, tok.size() - 1), &out->ts_ns, &out->ts_frac_digits, &out->ts_raw)) {
    return false;
  }
  rest = TrimLeft(rest.substr(sp));
  // trace-cmd report --ts-diff: "(+1234)", the time since the line before, then the event.
  if (rest.starts_with("(+") || rest.starts_with("(-")) {
    size_t close = rest.find(") ");
    if (close == std::string_view::npos) return false;
    rest = TrimLeft(rest.substr(close + 1));
  }
  // "event: body" or "sys:event: body" (perf script).
  size_t colon_sp = rest.find(": ");
  std::string_view name;
  if (colon_sp == std::string_view::npos) {
    if (rest.empty() || rest.back() != ':') return false;
    name = rest.substr(0, rest.size() - 1);
    out->body = {};
  } else {
    name = rest.substr(0, colon_sp);
    out->body = TrimRight(TrimLeft(rest.substr(colon_sp + 2)));
  }
  if (name.empty() || name.find(' ') != std::string_view::npos) return false;
  size_t c = name.find(':');
  out->system = c == std::string_view::npos ? std::string_view() : name.substr(0, c);
  out->event = c == std::string_view::npos ? name : name.substr(c + 1);
  out->dialect = perf_style ? TextDialect::kPerfScript : has_flags ? TextDialect::kKernelTrace : TextDialect::kTraceCmd;
  return true;
}

bool ParseLostLine(std::string_view line, int32_t* cpu, uint64_t* count) {
  line = TrimLeft(line);
  if (!line.starts_with("CPU:")) return false;
  size_t lost = line.find("[LOST ");
  if (lost == std::string_view::npos) return false;
  size_t sp = line.find(' ');
  if (!ParseDec(line.substr(4, sp - 4), cpu)) return false;
  std::string_view n = line.substr(lost + 6);
  n = n.substr(0, n.find(' '));
  if (!ParseDec(n, count)) *count = 0;  // "[LOST EVENTS]": an unknown number
  return true;
}

}  // namespace exitscope
