// formats/catalog_name: the one definition of a catalog name, and its
// messages (the name quoted, escaped, a long one shortened).
#include <doctest/doctest.h>

#include "formats/catalog_name.hpp"

using namespace hpak::formats;

TEST_CASE("catalog names: valid ones, and why the others are not") {
  CHECK(is_catalog_name("env-1.2_x+y@z"));
  CHECK(is_catalog_name(std::string(128, 'a')));
  CHECK(catalog_name_problem("") == "catalog name is empty");
  CHECK(catalog_name_problem(".hidden") == "catalog name '.hidden' may not start with '.' or '-'");
  CHECK(catalog_name_problem("-x") == "catalog name '-x' may not start with '.' or '-'");
  CHECK(catalog_name_problem("a/b") == "catalog name 'a/b' has a character outside [A-Za-z0-9._+@-]");
  CHECK(catalog_name_problem("a\nb") == "catalog name 'a\\nb' has a character outside [A-Za-z0-9._+@-]");
  CHECK(catalog_name_problem(std::string(129, 'a')) ==
        "catalog name '" + std::string(40, 'a') + "...' (129 bytes) is longer than 128 characters");
  CHECK(catalog_name_problem(std::string(5000, 'x')).size() < 120);
  CHECK_FALSE(is_catalog_name(std::string("caf\xc3\xa9"))); // not ASCII
}

TEST_CASE("catalog names: what Windows cannot open") {
  for (const char* dev : {"CON", "con", "Prn", "aux", "NUL", "nul.txt", "COM1", "com9.log", "LPT1", "lpt9"}) {
    INFO(dev);
    CHECK(is_windows_device_name(dev));
    CHECK(catalog_name_windows_problem(dev).find("is a Windows device name") != std::string::npos);
  }
  for (const char* ok : {"console", "com", "COM0", "COM10", "lpt", "nul_", "env-a", "py3.11", "aux+x", "con-1"}) {
    INFO(ok);
    CHECK_FALSE(is_windows_device_name(ok));
    CHECK(catalog_name_windows_problem(ok).empty());
  }
  CHECK(catalog_name_windows_problem("env.").find("ends in a dot") != std::string::npos);
  CHECK(is_catalog_name("env.")); // a valid name elsewhere
}
