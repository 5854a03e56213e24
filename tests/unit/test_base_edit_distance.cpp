// base/edit_distance: the Levenshtein distance behind "did you mean".
#include <doctest/doctest.h>

#include "base/edit_distance.hpp"

using hpak::edit_distance;

TEST_CASE("edit_distance: insertions, deletions, substitutions") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("restore", "restore") == 0);
  CHECK(edit_distance("restor", "restore") == 1);   // insertion
  CHECK(edit_distance("restorre", "restore") == 1); // deletion
  CHECK(edit_distance("verity", "verify") == 1);    // substitution
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("sitting", "kitten") == 3);
  CHECK(edit_distance("python-3.10", "python-3.12") == 1);
}
