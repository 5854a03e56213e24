// base/error: quoted()/escape_controls() keep a message one short line
// whatever a name holds; SystemError keeps the errno, is_out_of_space tells a
// full disk (issue 28, items 1 and 7).
#include <cerrno>
#include <doctest/doctest.h>

#include "base/error.hpp"

using namespace hpak;

TEST_CASE("quoted: control characters escaped, long strings shortened with their length") {
  CHECK(quoted("py311") == "'py311'");
  CHECK(quoted("a\nb") == "'a\\nb'");
  CHECK(quoted(std::string("t\x1b[31m")) == "'t\\x1b[31m'");
  CHECK(quoted("tab\there\r") == "'tab\\there\\r'");
  CHECK(quoted(std::string(5000, 'x'), 10) == "'xxxxxxxxxx...' (5000 bytes)");
  CHECK(quoted(std::string("caf\xc3\xa9")) == "'caf\xc3\xa9'"); // UTF-8 is kept
  CHECK(escape_controls("one\ntwo") == "one\\ntwo");
  CHECK(escape_controls(std::string("a\0b", 3)) == "a\\x00b");
}

TEST_CASE("throw_errno: a SystemError with its errno; is_out_of_space for ENOSPC and EDQUOT only") {
#ifdef EDQUOT
  const int quota = EDQUOT;
#else
  const int quota = ENOSPC; // Windows' C runtime has none
#endif
  for (int err : {ENOSPC, quota, EIO}) {
    try {
      throw_errno("unable to write 'x'", err);
    } catch (const Error& e) {
      auto* s = dynamic_cast<const SystemError*>(&e);
      REQUIRE(s);
      CHECK(s->code() == err);
      CHECK(is_out_of_space(e) == (err != EIO));
    }
  }
  CHECK_FALSE(is_out_of_space(Error("unable to write 'x': No space left on device"))); // the text alone is not the errno
}
