#include "core/trust/signing.hpp"

#include <ctime>
#include <openssl/rand.h>

#include "base/os/sys.hpp"
#include "core/pack/pack_trust.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"

namespace hpak {

namespace {

const std::string kStatementHead = "hpak-signed-name 1\n";
const std::string kArmorBegin = "-----BEGIN SSH SIGNATURE-----";

ByteSpan span_of(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

void write_atomically(const std::string& path, const std::string& text, os::Mode mode) {
  AtomicFile f(path, mode);
  f.write(span_of(text));
  f.commit(/*fsync_first=*/true);
}

// A small file (at most `limit` bytes) or nullopt when it does not exist:
// hostile input (never through a symlink, never blocking on a FIFO, a
// regular file only). `st_out`: its fstat.
std::optional<std::string> read_small(const std::string& path, size_t limit, os::FileStat* st_out = nullptr) {
  Fd fd = open_regular_if_exists(path, Follow::NoLinks, limit, st_out);
  if (!fd) return std::nullopt;
  Bytes b = read_fd_bounded(fd.get(), path, limit);
  return std::string(b.begin(), b.end());
}

std::string user_shown(os::Uid uid) {
  std::string name;
  return (os::user_of(uid, &name, nullptr) && !name.empty() ? "'" + name + "' " : std::string()) + "(uid " + std::to_string(uid) + ")";
}

// Who owns the library: the owner of its folder (a member cannot change it).
os::Uid library_owner(const Library& lib) {
  os::FileStat st;
  if (os::stat_path(lib.root().c_str(), st) != 0) throw_errno("unable to stat library '" + lib.root() + "'");
  return st.st_uid;
}

// LIB/id and LIB/allowed_signers, read as read_small does. In a shared
// library any member can put a file in the library's folder, so these are
// taken only from the library's owner or root, and writable by no one else.
std::optional<std::string> read_owner_file(const Library& lib, const std::string& path, size_t limit) {
  os::FileStat st;
  auto text = read_small(path, limit, &st);
  if (!text || !lib.shared()) return text;
  os::Uid owner = library_owner(lib);
  if (st.st_uid != owner && st.st_uid != 0)
    throw Error("refusing '" + path + "': it belongs to " + user_shown(st.st_uid) + ", not to the library's owner " + user_shown(owner) +
                " or root (any member can put a file in a shared library's folder)");
  if (st.st_mode & 022) throw Error("refusing '" + path + "': it is writable by others than its owner");
  return text;
}

bool is_hex(const std::string& s, size_t n) { return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos; }

// Strict: the six lines, in order, nothing else.
std::optional<NameStatement> parse_statement(const std::string& text) {
  if (text.rfind(kStatementHead, 0) != 0) return std::nullopt;
  NameStatement s;
  size_t at = kStatementHead.size();
  auto field = [&](const std::string& key, std::string& value) {
    if (text.compare(at, key.size() + 1, key + " ") != 0) return false;
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) return false;
    value = text.substr(at + key.size() + 1, nl - at - key.size() - 1);
    at = nl + 1;
    return !value.empty();
  };
  std::string gen, when;
  if (!field("library", s.library) || !field("name", s.name) || !field("catalog", s.catalog) || !field("generation", gen) ||
      !field("time", when) || at != text.size())
    return std::nullopt;
  if (!is_hex(s.library, 32) || !is_hex(s.catalog, 64) || gen.find_first_not_of("0123456789") != std::string::npos ||
      when.find_first_not_of("0123456789") != std::string::npos || gen.size() > 18 || when.size() > 18)
    return std::nullopt;
  s.generation = std::stoull(gen);
  s.time = std::stoll(when);
  return s;
}

std::string signatures_dir(const Library& lib) { return lib.layout().signatures_dir(); }

std::string show_time(int64_t t) {
  time_t tt = time_t(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

} // namespace

std::string NameStatement::text() const {
  return kStatementHead + "library " + library + "\nname " + name + "\ncatalog " + catalog + "\ngeneration " +
         std::to_string(generation) + "\ntime " + std::to_string(time) + "\n";
}

std::string sign_pack_file(const std::string& pack_path, const std::string& key_path) {
  MappedFile m(pack_path);
  std::string sig = sshsig::sign_with_key_file(key_path, kSignatureNamespace, m.bytes());
  std::string out = pack_path + ".sig";
  write_atomically(out, sig, 0644);
  return out;
}

sshsig::Verdict verify_pack_file(const std::string& pack_path, const std::vector<sshsig::AllowedSigner>& allowed) {
  sshsig::Verdict v;
  std::string sig_path = pack_path + ".sig";
  try {
    auto text = read_small(sig_path, 1 << 20);
    if (!text) {
      v.why = "no signature '" + sig_path + "'";
      return v;
    }
    sshsig::Signature s = sshsig::parse_signature(sshsig::dearmor(*text, sig_path), sig_path);
    return sshsig::check(allowed, s, kSignatureNamespace, [&](const std::string& alg) { return sshsig::hash_file(alg, pack_path); },
                         int64_t(::time(nullptr)));
  } catch (const Error& e) {
    v.why = e.what();
    return v;
  }
}

std::string library_id(const Library& lib, bool create) {
  std::string path = lib.layout().id_file();
  for (int attempt = 0; attempt < 2; attempt++) {
    if (auto text = read_owner_file(lib, path, 64)) {
      if (text->size() != 33 || text->back() != '\n' || !is_hex(text->substr(0, 32), 32)) throw Error("library id file '" + path + "' is malformed");
      return text->substr(0, 32);
    }
    if (!create) return {};
    if (lib.shared() && os::euid() != 0 && os::euid() != library_owner(lib))
      throw Error("library '" + lib.root() + "' has no id ('" + path + "') yet: its owner " + user_shown(library_owner(lib)) +
                  " or root makes it ('hpak init --shared " + lib.root() + "')");
    uint8_t r[16];
    if (RAND_bytes(r, sizeof r) != 1) throw Error("no random bytes for a library id");
    AtomicFile f(path, 0444);
    std::string text = to_hex(ByteSpan(r, sizeof r)) + "\n";
    f.write(span_of(text));
    try {
      f.commit(true, /*no_replace=*/true);
    } catch (const Error&) {
      // Made by someone else at the same time: read theirs.
    }
  }
  throw Error("unable to create library id '" + path + "'");
}

NameStatement sign_name(Library& lib, const std::string& name, const std::string& key_path) {
  auto digest = lib.catalog_digest(name);
  if (!digest) {
    lib.load_catalog(name); // throws the usual "no catalog named" with suggestions
    throw Error("no catalog named '" + name + "'");
  }
  NameStatement st;
  st.library = library_id(lib, true);
  st.name = name;
  st.catalog = to_hex(*digest);
  st.generation = 1;
  if (auto old = read_name_signature(lib, name, nullptr)) st.generation = old->statement.generation + 1;
  st.time = int64_t(::time(nullptr));
  std::string text = st.text();
  std::string sig = sshsig::sign_with_key_file(key_path, kSignatureNamespace, span_of(text));
  std::string dir = signatures_dir(lib);
  os::Mode dmode = lib.shared() ? 02775 : 0755;
  if (os::mkdir_path(dir.c_str(), dmode) == 0 && lib.shared()) os::chmod_path(dir.c_str(), dmode);
  else if (errno != EEXIST && !path_exists(dir)) throw_errno("unable to create '" + dir + "'");
  write_atomically(dir + "/" + name, text + sig, lib.shared() ? 0664 : 0644);
  return st;
}

std::optional<SignedName> read_name_signature(const Library& lib, const std::string& name,
                                              const std::vector<sshsig::AllowedSigner>* allowed) {
  std::string why = Library::check_catalog_name(name);
  if (!why.empty()) throw Error(why);
  std::string path = signatures_dir(lib) + "/" + name;
  auto text = read_small(path, 1 << 16);
  if (!text) return std::nullopt;
  SignedName out;
  out.verdict.why = "not checked";
  size_t at = text->find(kArmorBegin);
  auto st = parse_statement(text->substr(0, at == std::string::npos ? text->size() : at));
  if (at == std::string::npos || !st) {
    out.verdict.why = "signature file '" + path + "' is malformed";
    return out;
  }
  out.statement = *st;
  std::string signed_text = text->substr(0, at);
  try {
    sshsig::Signature s = sshsig::parse_signature(sshsig::dearmor(text->substr(at), path), path);
    out.key = s.key.fingerprint();
    if (!allowed) return out;
    out.verdict = sshsig::check(*allowed, s, kSignatureNamespace,
                                [&](const std::string& alg) { return sshsig::hash_message(alg, span_of(signed_text)); },
                                int64_t(::time(nullptr)));
  } catch (const Error& e) {
    out.verdict.ok = false;
    out.verdict.why = e.what();
    return out;
  }
  if (!out.verdict.ok) return out;
  // Valid and allowed: it must speak of this library, this name, this digest.
  std::string by = " (signed by " + out.verdict.signer + ")";
  auto fail = [&](const std::string& w) {
    out.verdict.ok = false;
    out.verdict.why = w + by;
  };
  std::string id = library_id(lib, false);
  auto digest = lib.catalog_digest(name);
  if (st->library != id) fail("signature is for library " + st->library + ", this one is " + (id.empty() ? "unnamed" : id));
  else if (st->name != name) fail("signature is for name '" + st->name + "'");
  else if (!digest || to_hex(*digest) != st->catalog)
    fail("signature is for catalog " + st->catalog.substr(0, 16) + "…, the name holds " + (digest ? to_hex(*digest).substr(0, 16) + "…" : "nothing") +
         " (changed after signing)");
  return out;
}

Digest enforce_name_policy(const Library& lib, const std::string& name, const std::vector<sshsig::AllowedSigner>& allowed) {
  std::string lib_shown = "'" + lib.root() + "'";
  auto sn = read_name_signature(lib, name, &allowed);
  if (!sn) throw Error("refusing catalog '" + name + "' of library " + lib_shown + ": it is not signed (a signature is required)");
  if (!sn->verdict.ok) throw Error("refusing catalog '" + name + "' of library " + lib_shown + ": " + sn->verdict.why);
  const NameStatement& st = sn->statement;
  // Rollback: never a generation below the highest seen for this library and name.
  std::string why;
  std::string dir = user_private_dir("XDG_STATE_HOME", ".local/state", "generations", &why);
  if (dir.empty()) throw Error("refusing catalog '" + name + "': no private directory for the generations seen (" + (why.empty() ? "" : why + "; ") + "set XDG_STATE_HOME)");
  std::string state = dir + "/" + st.library + "-" + name;
  uint64_t seen = 0;
  os::FileStat sst;
  if (auto t = read_small(state, 64, &sst)) {
    if (sst.st_uid != os::euid()) throw Error("'" + state + "' is not this user's file");
    seen = std::strtoull(t->c_str(), nullptr, 10);
  }
  if (st.generation < seen)
    throw Error("refusing catalog '" + name + "' of library " + lib_shown + ": its signature has generation " +
                std::to_string(st.generation) + " (signed " + show_time(st.time) + " by " + sn->verdict.signer +
                "), older than generation " + std::to_string(seen) + " seen before (rolled back?)");
  if (st.generation > seen) write_atomically(state, std::to_string(st.generation) + "\n", 0600);
  return *digest_from_hex(st.catalog);
}

bool is_library_owner(const Library& lib) { return os::euid() == 0 || os::euid() == library_owner(lib); }

void init_trust_files(const Library& lib, const std::string& allowed_signers) {
  if (lib.shared() && is_library_owner(lib)) library_id(lib, /*create=*/true);
  if (allowed_signers.empty()) return;
  if (lib.shared() && !is_library_owner(lib))
    throw Error("only the owner of shared library '" + lib.root() + "' or root can make it require signatures");
  Bytes text = read_regular(allowed_signers, Follow::Links, 1 << 20);
  sshsig::parse_allowed_signers(std::string(text.begin(), text.end()), allowed_signers); // refuse a bad file now
  AtomicFile f(lib.layout().allowed_signers_file(), 0444);
  f.write(text);
  f.commit(/*fsync_first=*/true);
}

std::optional<SignaturePolicy> signature_policy(const Library& lib, const std::string& given) {
  SignaturePolicy p;
  if (!given.empty()) {
    p.file = given;
    p.signers = sshsig::load_allowed_signers(given);
    return p;
  }
  p.file = lib.layout().allowed_signers_file();
  auto text = read_owner_file(lib, p.file, 1 << 20);
  if (!text) return std::nullopt;
  p.signers = sshsig::parse_allowed_signers(*text, p.file);
  return p;
}

} // namespace hpak
