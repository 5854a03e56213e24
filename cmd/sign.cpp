// hpak sign -k KEY PACK | hpak sign -k KEY LIB NAME: an SSHSIG signature
// (namespace "hpak", checkable with `ssh-keygen -Y verify`) of a pack file
// (PACK.sig) or of a library name (LIB/signatures/NAME): core/trust/signing.hpp.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "core/trust/signing.hpp"
#include "base/os/file.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string key;
  std::vector<std::string> args;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("-k,--key", o->key, "OpenSSH Ed25519 private key (a passphrase-protected one is signed by the ssh-agent holding it)")->required();
  app.add_option("target", o->args, "A pack file, or a library directory and a catalog name")->required()->expected(1, 2);
  return [o] { return run(*o); };
}

int run(const Options& o) {
  if (o.args.size() == 1) {
    std::string sig = sign_pack_file(o.args[0], o.key);
    Bytes b = read_file(sig);
    sshsig::Signature s = sshsig::parse_signature(sshsig::dearmor(std::string(b.begin(), b.end()), sig), sig);
    printf("signed '%s' with key %s: wrote '%s'\n", o.args[0].c_str(), s.key.fingerprint().c_str(), sig.c_str());
    return kExitOk;
  }
  Library lib(o.args[0]);
  NameStatement st = sign_name(lib, o.args[1], o.key);
  auto sn = read_name_signature(lib, o.args[1], nullptr);
  printf("signed '%s' in library '%s' (catalog %s, generation %llu) with key %s\n", o.args[1].c_str(), o.args[0].c_str(),
         st.catalog.c_str(), (unsigned long long)st.generation, sn ? sn->key.c_str() : "?");
  return kExitOk;
}
} // namespace

extern const Command cmd_sign{"sign", "Sign a pack file or a library name (SSHSIG, checkable with ssh-keygen)", setup,
                              /*hidden=*/false, /*positionals=*/"PACK | LIB CATALOG"};

} // namespace hpak::cmd
