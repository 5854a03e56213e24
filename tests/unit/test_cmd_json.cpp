// cmd/json: the writer of every --json output — escaping (quotes,
// backslashes, control bytes, UTF-8 kept, bytes that are not UTF-8),
// integers of every width, booleans, null, doubles, nesting, commas, and
// misuse refused.
#include <doctest/doctest.h>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "cmd/json.hpp"

using hpak::cmd::json_quote;
using hpak::cmd::JsonWriter;

TEST_CASE("json_quote: a path with a quote, a newline and a 0x01 byte") {
  CHECK(json_quote(std::string("a\"b\nc\x01" "d", 7)) == "\"a\\\"b\\nc\\u0001d\"");
  CHECK(json_quote("back\\slash\ttab\rcr") == "\"back\\\\slash\\ttab\\rcr\"");
  CHECK(json_quote(std::string("\0\x1f\x7f", 3)) == "\"\\u0000\\u001f\x7f\"");
  CHECK(json_quote("") == "\"\"");
  CHECK(json_quote("/") == "\"/\"");
}

TEST_CASE("json_quote: valid UTF-8 is kept, other bytes become \\u00XX") {
  CHECK(json_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  CHECK(json_quote("\xff") == "\"\\u00ff\"");                 // never valid
  CHECK(json_quote("a\x80z") == "\"a\\u0080z\"");             // stray continuation byte
  CHECK(json_quote("\xc3") == "\"\\u00c3\"");                 // truncated at the end
  CHECK(json_quote("\xc3(") == "\"\\u00c3(\"");               // bad continuation
  CHECK(json_quote("\xc0\xaf") == "\"\\u00c0\\u00af\"");      // overlong '/'
  CHECK(json_quote("\xe0\x80\xaf") == "\"\\u00e0\\u0080\\u00af\"");   // overlong
  CHECK(json_quote("\xed\xa0\x80") == "\"\\u00ed\\u00a0\\u0080\"");   // surrogate U+D800
  CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\u00f4\\u0090\\u0080\\u0080\""); // above U+10FFFF
  CHECK(json_quote("\xf4\x8f\xbf\xbf") == "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF itself
}

TEST_CASE("JsonWriter: objects, arrays, nesting and commas") {
  JsonWriter w;
  w.begin_object().field("pack", "a\"b").field("ok", true).field("bad", false).key("none").value(nullptr);
  w.key("problems").begin_array().end();
  w.key("list").strings({"x", "y"});
  w.key("nested").begin_array().begin_object().field("n", 1).end().begin_object().end().begin_array().end().end();
  w.field("empty", "");
  w.key("maybe").value_or_null("");
  w.key("maybe2").value_or_null("v");
  w.end();
  CHECK(w.closed());
  CHECK(w.str() == "{\"pack\":\"a\\\"b\",\"ok\":true,\"bad\":false,\"none\":null,\"problems\":[],\"list\":[\"x\",\"y\"],"
                   "\"nested\":[{\"n\":1},{},[]],\"empty\":\"\",\"maybe\":null,\"maybe2\":\"v\"}");
}

TEST_CASE("JsonWriter: integers of every width without casts") {
  JsonWriter w;
  w.begin_array();
  w.value(uint64_t(18446744073709551615ull)).value(std::numeric_limits<int64_t>::min()).value(int64_t(-1));
  w.value(size_t(0)).value(uint32_t(4294967295u)).value(int(-7)).value(uint8_t(255)).value(short(-3));
  w.end();
  CHECK(w.str() == "[18446744073709551615,-9223372036854775808,-1,0,4294967295,-7,255,-3]");
}

TEST_CASE("JsonWriter: doubles, fixed and significant digits, NaN as null") {
  JsonWriter w;
  w.begin_array();
  w.fixed(1.23456, 3).fixed(0, 3).fixed(2.5, 0);
  w.number(42).number(1e20).number(0.1234567891, 6).number(-3.5);
  w.number(std::numeric_limits<double>::quiet_NaN()).fixed(std::numeric_limits<double>::infinity(), 3);
  w.end();
  CHECK(w.str() == "[1.235,0.000,2,42,1e+20,0.123457,-3.5,null,null]");
}

TEST_CASE("JsonWriter: JSON lines, and streaming with print") {
  JsonWriter w;
  w.begin_object().field("a", 1).end().newline();
  w.begin_object().field("b", 2).end().newline();
  CHECK(w.str() == "{\"a\":1}\n{\"b\":2}\n");

  FILE* f = tmpfile();
  REQUIRE(f);
  JsonWriter s;
  s.begin_array();
  s.value("x");
  s.print(f);
  CHECK(s.str().empty());
  s.value("y").end();
  s.print(f);
  rewind(f);
  char buf[64] = {};
  CHECK(fread(buf, 1, sizeof buf - 1, f) == 9);
  fclose(f);
  CHECK(std::string(buf) == "[\"x\",\"y\"]");
}

TEST_CASE("JsonWriter: misuse is refused") {
  {
    JsonWriter w;
    w.begin_object();
    CHECK_THROWS_AS(w.value(1), std::logic_error); // no key
  }
  {
    JsonWriter w;
    w.begin_array();
    CHECK_THROWS_AS(w.key("k"), std::logic_error); // key in an array
    CHECK_THROWS_AS(w.newline(), std::logic_error);
  }
  {
    JsonWriter w;
    CHECK_THROWS_AS(w.end(), std::logic_error);
    CHECK_THROWS_AS(w.key("k"), std::logic_error);
  }
  {
    JsonWriter w;
    w.begin_object().key("k");
    CHECK_THROWS_AS(w.key("j"), std::logic_error);
    CHECK_THROWS_AS(w.end(), std::logic_error);
    CHECK_FALSE(w.closed());
  }
}
