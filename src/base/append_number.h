// Integers appended to a string as text, for outputs of a line per record (`dump`: millions of
// lines). In: a number. Out: its digits at the end of *out, exactly as fmt's "{}", "{:0N}" and
// "{:#x}" print them, without parsing a format string per call: `dump` spent most of its time in
// fmt's format-string parser and its back_insert_iterator buffer.
#pragma once

#include <cstdint>
#include <string>

namespace exitscope {

// v's decimal digits written backwards to end at `end`; returns where they start (20 at most).
inline char* DecimalDigits(uint64_t v, char* end) {
  do {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

// Zero-padded to at least `width` digits, as "{:0N}" prints a non-negative number.
inline void AppendPadded(std::string* out, uint64_t v, int width) {
  char digits[20];
  char* p = DecimalDigits(v, digits + sizeof digits);
  for (auto n = digits + sizeof digits - p; n < width; ++n) out->push_back('0');
  out->append(p, digits + sizeof digits);
}

// "0" … "18446744073709551615". Not AppendPadded(out, v, 1): its padding loop cost dump ~5 %.
inline void AppendDecimal(std::string* out, uint64_t v) {
  char digits[20];
  out->append(DecimalDigits(v, digits + sizeof digits), digits + sizeof digits);
}

// "-42" … as "{}" prints an int64_t (INT64_MIN included).
inline void AppendSigned(std::string* out, int64_t v) {
  if (v < 0) out->push_back('-');
  AppendDecimal(out, v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
}

// "0x0", "0xffff…": "{:#x}".
inline void AppendHex(std::string* out, uint64_t v) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  char digits[16];
  char* p = digits + sizeof digits;
  do {
    *--p = kHexDigits[v & 0xf];
    v >>= 4;
  } while (v);
  out->append("0x", 2);
  out->append(p, digits + sizeof digits);
}

}  // namespace exitscope
