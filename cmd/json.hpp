// The JSON writer of every `--json` output: a streaming writer that appends
// compact JSON (no spaces, members in the order written) to a string. It puts
// the commas and the quotes; callers name keys and values:
//
//   JsonWriter w;
//   w.begin_object().field("pack", path).field("ok", true).key("problems").begin_array();
//   for (auto& p : problems) w.value(p);
//   w.end().end();                       // {"pack":"...","ok":true,"problems":[...]}
//   w.print(stdout);
//
// Strings: '"' and '\' are escaped, \n \r \t by their short forms, every
// other byte below 0x20 as \u00XX; valid UTF-8 is copied as it is; a byte
// that is not part of valid UTF-8 (a stray continuation byte, a truncated or
// overlong sequence, a surrogate, beyond U+10FFFF) is written as \u00XX with
// its value, i.e. read as Latin-1 (file names are bytes: nothing is dropped,
// and the text is always valid JSON and valid UTF-8).
// Integers of any width are written exactly (std::to_chars, no casts);
// doubles by `number` (significant digits) or `fixed` (decimals), a NaN or an
// infinity as null.
//
// Misuse (a value where a key is due, a key outside an object, `end` with
// nothing open) throws std::logic_error: a bug in the command, not bad input.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hpak::cmd {

// `s` as a JSON string literal, quotes included (see above).
std::string json_quote(std::string_view s);
void append_json_quoted(std::string& out, std::string_view s);

class JsonWriter {
public:
  JsonWriter& begin_object();
  JsonWriter& begin_array();
  JsonWriter& end(); // closes the innermost open object or array

  // In an object: the name of the next value.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::nullptr_t);
  JsonWriter& value(double) = delete; // say how: number() or fixed()
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  JsonWriter& value(T v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return scalar(std::string_view(buf, size_t(r.ptr - buf)));
  }
  // `s`, or null when it is empty.
  JsonWriter& value_or_null(std::string_view s);
  // `v` with up to `significant` digits ("%.*g"); a whole number below 1e15
  // without exponent or decimals; NaN and infinities as null.
  JsonWriter& number(double v, int significant = 17);
  // `v` with exactly `decimals` decimals ("%.*f"); NaN and infinities as null.
  JsonWriter& fixed(double v, int decimals);
  // An array of strings.
  JsonWriter& strings(const std::vector<std::string>& v);

  // key(k).value(v): one member.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    return key(k).value(v);
  }

  const std::string& str() const { return out_; }
  // True when every object and array begun has been ended.
  bool closed() const { return stack_.empty(); }
  // Between top-level values: a line break (JSON lines, one value a line).
  JsonWriter& newline();
  // Writes the text so far to `f` and forgets it (what is open stays open):
  // output streamed as it is produced, e.g. one object per line.
  void print(FILE* f);

private:
  struct Level {
    bool object;
    bool empty = true;
    bool key_given = false;
  };
  JsonWriter& scalar(std::string_view text);
  void before_value();
  JsonWriter& open(char c, bool object);

  std::string out_;
  std::vector<Level> stack_;
};

} // namespace hpak::cmd
