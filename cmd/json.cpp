#include "cmd/json.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hpak::cmd {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (shortest form, no
// surrogates, at most U+10FFFF), or 0.
size_t utf8_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return (unsigned char)s[i + k]; };
  const unsigned char c = b(0);
  size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++)
    if ((b(k) & 0xc0) != 0x80) return 0;
  if (c == 0xe0 && b(1) < 0xa0) return 0; // overlong
  if (c == 0xed && b(1) >= 0xa0) return 0; // UTF-16 surrogate
  if (c == 0xf0 && b(1) < 0x90) return 0; // overlong
  if (c == 0xf4 && b(1) >= 0x90) return 0; // above U+10FFFF
  return n;
}

void append_u00(std::string& out, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  out += "\\u00";
  out += hex[c >> 4];
  out += hex[c & 15];
}

} // namespace

void append_json_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); i++) {
    const unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      size_t n = utf8_len(s, i);
      if (n == 0) {
        append_u00(out, c); // not UTF-8: the byte, read as Latin-1
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c < 0x20) append_u00(out, c);
      else out += char(c);
    }
  }
  out += '"';
}

std::string json_quote(std::string_view s) {
  std::string out;
  append_json_quoted(out, s);
  return out;
}

void JsonWriter::before_value() {
  if (stack_.empty()) return;
  Level& l = stack_.back();
  if (l.object) {
    if (!l.key_given) throw std::logic_error("json: a value in an object without a key");
    l.key_given = false;
    return;
  }
  if (!l.empty) out_ += ',';
  l.empty = false;
}

JsonWriter& JsonWriter::scalar(std::string_view text) {
  before_value();
  out_ += text;
  return *this;
}

JsonWriter& JsonWriter::open(char c, bool object) {
  before_value();
  out_ += c;
  stack_.push_back(Level{object});
  return *this;
}

JsonWriter& JsonWriter::begin_object() { return open('{', true); }
JsonWriter& JsonWriter::begin_array() { return open('[', false); }

JsonWriter& JsonWriter::end() {
  if (stack_.empty()) throw std::logic_error("json: end() with nothing open");
  if (stack_.back().key_given) throw std::logic_error("json: a key without a value");
  out_ += stack_.back().object ? '}' : ']';
  stack_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (stack_.empty() || !stack_.back().object) throw std::logic_error("json: a key outside an object");
  Level& l = stack_.back();
  if (l.key_given) throw std::logic_error("json: two keys in a row");
  if (!l.empty) out_ += ',';
  l.empty = false;
  l.key_given = true;
  append_json_quoted(out_, k);
  out_ += ':';
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_json_quoted(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) { return scalar(b ? "true" : "false"); }
JsonWriter& JsonWriter::value(std::nullptr_t) { return scalar("null"); }
JsonWriter& JsonWriter::value_or_null(std::string_view s) { return s.empty() ? value(nullptr) : value(s); }

JsonWriter& JsonWriter::number(double v, int significant) {
  if (!std::isfinite(v)) return value(nullptr);
  significant = std::clamp(significant, 1, 17);
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) snprintf(buf, sizeof buf, "%.0f", v);
  else snprintf(buf, sizeof buf, "%.*g", significant, v);
  return scalar(buf);
}

JsonWriter& JsonWriter::fixed(double v, int decimals) {
  if (!std::isfinite(v)) return value(nullptr);
  decimals = std::clamp(decimals, 0, 30);
  char buf[400]; // DBL_MAX in %f is 309 digits, then up to 30 decimals
  snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return scalar(buf);
}

JsonWriter& JsonWriter::strings(const std::vector<std::string>& v) {
  begin_array();
  for (auto& s : v) value(s);
  return end();
}

JsonWriter& JsonWriter::newline() {
  if (!stack_.empty()) throw std::logic_error("json: a line break inside a value");
  out_ += '\n';
  return *this;
}

void JsonWriter::print(FILE* f) {
  fwrite(out_.data(), 1, out_.size(), f);
  out_.clear();
}

} // namespace hpak::cmd
