// core/relocation: classification of files holding a packed path, the action
// a restore takes for each kind and target length, the in-place rewrite
// (NUL-padded, streamed in any chunking), and the restore's refusal.
#include <doctest/doctest.h>

#include <string>

#include "core/pack/relocation.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

const std::string kRoot = "/opt/some-long-packed-root";

Bytes bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }
std::string str(const Bytes& b) { return std::string(b.begin(), b.end()); }

RelocKind kind_of(std::string_view content, const std::vector<std::string>& roots = {kRoot}) {
  Bytes b = bytes(content);
  return classify_relocated(b, find_relocations(b, roots), roots);
}

// An ELF-looking file: the magic, a RUNPATH-like string holding the root
// twice (':'-separated), more strings after it.
std::string elf_with_path(const std::string& root) {
  std::string s("\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0", 16);
  s += std::string("\0libc.so.6\0", 11);
  s += root + "/lib:" + root + "/lib64";
  s += std::string("\0after\0", 7);
  return s;
}

Node file_node(std::string path, std::string_view content, const std::vector<std::string>& roots) {
  Node n;
  n.type = NodeType::File;
  n.path = fx::kept(path);
  Bytes b = bytes(content);
  n.size = b.size();
  n.relocs = find_relocations(b, roots);
  if (!n.relocs.empty()) n.reloc_kind = classify_relocated(b, n.relocs, roots);
  return n;
}

} // namespace

TEST_CASE("classify: text, in-place binaries, same-length binaries, checksummed archives") {
  CHECK(kind_of("#!" + kRoot + "/bin/python3\nimport sys\n") == RelocKind::Text);
  CHECK(kind_of("home = " + kRoot + "\r\n\tinclude\x1b[0m\n") == RelocKind::Text); // tabs, CR, ESC are text
  CHECK(kind_of("caf\xc3\xa9 " + kRoot) == RelocKind::Text);                        // any high bytes
  CHECK(kind_of(elf_with_path(kRoot)) == RelocKind::InPlace);
  CHECK(kind_of(std::string("!<arch>\n", 8) + kRoot + std::string("\0", 1)) == RelocKind::InPlace);
  // A .pyc: magic, "\r\n", flags, mtime, size, then marshal data with the path.
  std::string pyc("\xa7\x0d\x0d\x0a\0\0\0\0\x01\x02\x03\x04\x10\0\0\0\xe3", 17);
  pyc += "\x73\x20\0\0\0" + kRoot + "/x.py";
  CHECK(kind_of(pyc) == RelocKind::SameLength);
  CHECK(kind_of(std::string("\x01\x02\0data ", 8) + kRoot) == RelocKind::SameLength); // unknown binary
  CHECK(kind_of(std::string("PK\x03\x04\x14\0\0\0", 8) + kRoot) == RelocKind::Verbatim);
  CHECK(kind_of(std::string("\x1f\x8b\x08\0", 4) + kRoot) == RelocKind::Verbatim);
  CHECK(kind_of(std::string("\x28\xb5\x2f\xfd\0", 5) + kRoot) == RelocKind::Verbatim);
  // A zip behind a stub (a launcher, a self-extracting archive): its end record marks it.
  CHECK(kind_of(std::string("\x7f" "ELF\x02\0", 6) + kRoot + std::string("\0PK\x05\x06\0\0", 8)) == RelocKind::Verbatim);
  // A text file that merely starts like bzip2 stays text.
  CHECK(kind_of("BZh is a prefix of " + kRoot) == RelocKind::Text);
}

TEST_CASE("classify: an ELF whose occurrence never ends its string is not patched in place") {
  std::string s("\x7f" "ELF\x02\x01\x01\0", 8);
  s += kRoot + std::string(kMaxInPlaceTail + 10, 'x') + std::string("\0", 1);
  CHECK(kind_of(s) == RelocKind::SameLength);
  std::string no_nul("\x7f" "ELF\x02\x01\x01\0", 8);
  no_nul += kRoot + "/lib";
  CHECK(kind_of(no_nul) == RelocKind::SameLength);
}

TEST_CASE("classify: any chunking gives the same kind") {
  const std::vector<std::string> roots{kRoot};
  // Three occurrences ending their strings; then a fourth whose string runs
  // past kMaxInPlaceTail, which makes the file same-length only.
  std::string ok = elf_with_path(kRoot) + std::string(5000, 'y') + std::string("\0", 1) + kRoot + std::string("\0tail", 5);
  std::string too_long = ok + kRoot + std::string(5000, 'z') + std::string("\0", 1);
  for (auto& [s, want] : {std::pair{ok, RelocKind::InPlace}, std::pair{too_long, RelocKind::SameLength}}) {
    Bytes b = bytes(s);
    auto relocs = find_relocations(b, roots);
    CHECK(classify_relocated(b, relocs, roots) == want);
    for (size_t step : {1, 3, 7, 64, 4096}) {
      CAPTURE(step);
      RelocClassifier c(relocs, roots);
      for (size_t at = 0; at < b.size(); at += step) c.feed(ByteSpan(b).subspan(at, std::min(step, b.size() - at)));
      CHECK(c.finish() == want);
    }
  }
}

TEST_CASE("reloc_action: by kind and target length") {
  const std::vector<std::string> roots{kRoot};
  Node text = file_node("t", "x=" + kRoot, roots), elf = file_node("e", elf_with_path(kRoot), roots);
  std::string pyc_like("\xa7\x0d\x0d\x0a\0\0\0\0\0\0\0\0\0\0\0\0", 16);
  Node pyc = file_node("p", pyc_like + kRoot, roots), zip = file_node("z", std::string("PK\x03\x04", 4) + kRoot, roots);
  const std::string same(kRoot.size(), 's'), shorter = "/s", longer = kRoot + "/more";
  CHECK(reloc_action(text, roots, longer) == RelocAction::Splice);
  CHECK(reloc_action(text, roots, shorter) == RelocAction::Splice);
  CHECK(reloc_action(elf, roots, same) == RelocAction::Splice);
  CHECK(reloc_action(elf, roots, shorter) == RelocAction::Pad);
  CHECK(reloc_action(elf, roots, longer) == RelocAction::Blocked);
  CHECK(reloc_action(elf, roots, RelocTo{longer, true}) == RelocAction::Keep);
  CHECK(reloc_action(pyc, roots, same) == RelocAction::Splice);
  CHECK(reloc_action(pyc, roots, shorter) == RelocAction::Keep);
  CHECK(reloc_action(pyc, roots, longer) == RelocAction::Keep);
  CHECK(reloc_action(zip, roots, same) == RelocAction::Keep);
  CHECK(reloc_action(text, roots, "") == RelocAction::None);
  CHECK(relocated_size(text, roots, longer) == text.size + 5);
  CHECK(relocated_size(elf, roots, shorter) == elf.size);
  CHECK(relocated_size(pyc, roots, longer) == pyc.size);
  Node unclassified = text;
  unclassified.reloc_kind = RelocKind::Unclassified;
  CHECK_THROWS_WITH(reloc_action(unclassified, roots, longer), doctest::Contains("internal error"));
}

TEST_CASE("in place: the target over the root, the rest of its string moved up, NULs before its terminator") {
  const std::vector<std::string> roots{kRoot};
  Bytes in = bytes(elf_with_path(kRoot));
  auto relocs = find_relocations(in, roots);
  const std::string target = "/t";
  Bytes out = relocate_bytes(in, relocs, roots, target, RelocAction::Pad);
  REQUIRE(out.size() == in.size());
  std::string want = std::string("\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0", 16) + std::string("\0libc.so.6\0", 11);
  want += "/t/lib:/t/lib64" + std::string(2 * (kRoot.size() - target.size()), '\0') + std::string("\0after\0", 7);
  CHECK(str(out) == want);
  // The same bytes in any chunking.
  for (size_t step : {1, 2, 5, 13, 100}) {
    Bytes got;
    auto put = [&](ByteSpan p) { got.insert(got.end(), p.begin(), p.end()); };
    Relocator r(relocs, roots, target, RelocAction::Pad);
    for (size_t at = 0; at < in.size(); at += step) r.feed(ByteSpan(in).subspan(at, std::min(step, in.size() - at)), put);
    r.finish(put);
    CHECK(got == out);
  }
  // Splice at the same length changes no size either.
  const std::string same(kRoot.size(), 'q');
  CHECK(relocate_bytes(in, relocs, roots, same, RelocAction::Splice).size() == in.size());
}

TEST_CASE("in place: a string whose terminator never comes still keeps the size (NULs at the end)") {
  const std::vector<std::string> roots{kRoot};
  Bytes in = bytes(std::string("\x7f" "ELF", 4) + kRoot + "/lib");
  auto relocs = find_relocations(in, roots);
  CHECK(relocate_bytes(in, relocs, roots, "/t", RelocAction::Pad).size() == in.size());
}

TEST_CASE("plan_relocation and the refusal name the first blocked file, the count and the longest target") {
  const std::vector<std::string> roots{kRoot, "/opt/r"};
  Catalog cat;
  cat.roots = roots;
  cat.nodes.push_back(file_node("bin/a", elf_with_path(kRoot), roots));
  cat.nodes.push_back(file_node("bin/b", std::string("\x7f" "ELF\0", 5) + "/opt/r/x" + std::string("\0", 1), roots));
  cat.nodes.push_back(file_node("bin/t", "#!" + kRoot + "/bin/python\n", roots));
  cat.nodes.push_back(file_node("lib/x.pyc", std::string("\xa7\x0d\x0d\x0a\0\0\0\0\0\0\0\0\0\0\0\0", 16) + kRoot, roots));
  RelocationPlan ok = plan_relocation(cat, "/x");
  CHECK(ok.blocked == 0);
  CHECK(ok.padded == 2);
  CHECK(ok.spliced == 1);
  CHECK(ok.kept == 1);
  RelocationPlan p = plan_relocation(cat, "/a/target/of/some/considerable/length");
  CHECK(p.blocked == 2);
  CHECK(p.first_blocked == "bin/a");
  CHECK(p.longest_target == 6); // "/opt/r"
  CHECK_THROWS_WITH(refuse_blocked(p, "/a/target/of/some/considerable/length", "T"),
                    doctest::Contains("'bin/a' and 1 more binary files hold the packed path"));
  CHECK_THROWS_WITH(check_relocation(cat, RelocTo{"/a/target/of/some/considerable/length", false}, "T"), doctest::Contains("at most 6 bytes"));
  RelocationPlan kept = check_relocation(cat, RelocTo{"/a/target/of/some/considerable/length", true}, "T");
  CHECK(kept.kept == 3);
}

TEST_CASE("classify_unclassified fills only the relocated files without a kind") {
  Catalog cat;
  cat.roots = {kRoot};
  cat.nodes.push_back(file_node("a", "x=" + kRoot, cat.roots));
  cat.nodes.push_back(file_node("b", "x=" + kRoot, cat.roots));
  cat.nodes.push_back(file_node("c", "nothing", cat.roots));
  cat.nodes[1].reloc_kind = RelocKind::Unclassified;
  int asked = 0;
  classify_unclassified(cat, [&](const Node& n) {
    asked++;
    CHECK(n.path == "b");
    return RelocKind::Verbatim;
  });
  CHECK(asked == 1);
  CHECK(cat.nodes[0].reloc_kind == RelocKind::Text);
  CHECK(cat.nodes[1].reloc_kind == RelocKind::Verbatim);
  CHECK(cat.nodes[2].reloc_kind == RelocKind::Unclassified);
}

TEST_CASE("windows paths: a root written with '\\' takes a Windows target with '\\'; others take it as it is") {
  CHECK(backslash_root("C:/Users/me/env") == "C:\\Users\\me\\env");
  CHECK(backslash_root("//server/share/env") == "\\\\server\\share\\env");
  CHECK(backslash_root("/opt/env").empty());         // a POSIX root: no second spelling
  CHECK(backslash_root("C:\\Users\\me\\env").empty()); // already in that form
  const std::vector<std::string> roots{"C:/Users/me/env", "C:\\Users\\me\\env"};
  const std::string in = "a=C:/Users/me/env/x\nb=C:\\Users\\me\\env\\Scripts\n";
  Bytes b = bytes(in);
  auto relocs = find_relocations(b, roots);
  REQUIRE(relocs.size() == 2);
  CHECK(str(relocate_bytes(b, relocs, roots, "Z:/t")) == "a=Z:/t/x\nb=Z:\\t\\Scripts\n");
  // A POSIX target (a Windows pack restored on Linux): written as it is for every root.
  CHECK(str(relocate_bytes(b, relocs, roots, "/home/me/t")) == "a=/home/me/t/x\nb=/home/me/t\\Scripts\n");
  // A POSIX root never takes the '\' form.
  const std::vector<std::string> posix{kRoot};
  Bytes p = bytes("x=" + kRoot + "/bin\n");
  CHECK(str(relocate_bytes(p, find_relocations(p, posix), posix, "Z:/t")) == "x=Z:/t/bin\n");
}
