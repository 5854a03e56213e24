// core/restore/windows_names: the names a Windows file system cannot hold are
// found in a catalog, the first one named, before anything is written.
#include <doctest/doctest.h>

#include "core/restore/windows_names.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Catalog catalog_of(std::initializer_list<const char*> paths) {
  Catalog c;
  for (const char* p : paths) {
    Node n;
    n.type = NodeType::File;
    n.path = c.keep(p);
    c.nodes.push_back(n);
  }
  return c;
}

} // namespace

TEST_CASE("windows names: an ordinary tree passes") {
  CHECK(windows_name_problem(catalog_of({"bin", "bin/python3.exe", "lib/site-packages/a.py", "lib/..x", "cons.d/x", "com10",
                                         "lpt0", "nul_", "CONSOLE", "a b", ".hidden", "über/naïve"}))
            .empty());
}

TEST_CASE("windows names: reserved device names, alone or before a dot, in any case and at any depth") {
  for (const char* p : {"CON", "con", "dir/Nul", "a/b/aux.txt", "COM1", "com9.log", "LPT3", "lpt1.tar.gz", "prn", "NUL .txt"}) {
    CAPTURE(p);
    std::string why = windows_name_problem(catalog_of({p}));
    CHECK(why.find("reserved device name") != std::string::npos);
    CHECK(why.find(std::string("'") + p + "'") == 0); // names the whole path first
  }
  CHECK_FALSE(windows_name_problem(catalog_of({"con.d/x"})).empty()); // CON before any extension is the device
}

TEST_CASE("windows names: trailing dots and spaces, and the characters Win32 refuses") {
  CHECK(windows_name_problem(catalog_of({"dir./file"})).find("ends in a dot") != std::string::npos);
  CHECK(windows_name_problem(catalog_of({"file "})).find("ends in a space") != std::string::npos);
  CHECK(windows_name_problem(catalog_of({"a:b"})).find("alternate data stream") != std::string::npos);
  CHECK(windows_name_problem(catalog_of({"a\\b"})).find("a separator") != std::string::npos);
  for (const char* p : {"a<b", "a>b", "a\"b", "a|b", "a?b", "a*b", "tab\there"}) {
    CAPTURE(p);
    CHECK_FALSE(windows_name_problem(catalog_of({p})).empty());
  }
  CHECK(windows_component_problem("x\x1f").find("control character 31") != std::string::npos);
}

TEST_CASE("windows names: two paths that differ only in case, ASCII and beyond") {
  std::string why = windows_name_problem(catalog_of({"Makefile", "lib", "lib/x", "makefile"}));
  CHECK(why == "'Makefile' and 'makefile' differ only in case: Windows would make them one file");
  CHECK_FALSE(windows_name_problem(catalog_of({"dir/A", "DIR/a"})).empty());
  CHECK_FALSE(windows_name_problem(catalog_of({"\xc3\xa9t\xc3\xa9", "\xc3\x89T\xc3\x89"})).empty());                 // été / ÉTÉ
  CHECK_FALSE(windows_name_problem(catalog_of({"\xd0\xb4\xd0\xb0", "\xd0\x94\xd0\x90"})).empty());                  // да / ДА
  CHECK_FALSE(windows_name_problem(catalog_of({"\xce\xb1\xce\xb2", "\xce\x91\xce\x92"})).empty());                  // αβ / ΑΒ
  CHECK_FALSE(windows_name_problem(catalog_of({"\xc5\x81\xc3\xb3" "d\xc5\xba", "\xc5\x82\xc3\xb3" "d\xc5\xb9"})).empty()); // Łódź / łódŹ
  CHECK(windows_name_problem(catalog_of({"stra\xc3\x9f" "e", "STRASSE"})).empty()); // ß is not SS in a simple fold
  CHECK(windows_name_problem(catalog_of({"a", "b", "ab", "a/b"})).empty());
  CHECK(windows_name_problem(catalog_of({"\xff\xfe", "\xfe\xff"})).empty()); // malformed UTF-8 compares byte for byte
}
