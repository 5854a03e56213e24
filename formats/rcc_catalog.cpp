#include "formats/rcc_catalog.hpp"

#include <nlohmann/json.hpp>

namespace hpak::formats {

using nlohmann::json;

uint32_t go_mode_to_posix(uint32_t m) {
  uint32_t p = m & kGoModePerm;
  if (m & kGoModeSetuid) p |= 04000;
  if (m & kGoModeSetgid) p |= 02000;
  if (m & kGoModeSticky) p |= 01000;
  return p;
}

bool go_mode_is_special(uint32_t m) {
  return m & (kGoModeDevice | kGoModeNamedPipe | kGoModeSocket | kGoModeCharDevice | kGoModeIrregular);
}

namespace {

// Reads one JSON catalog; `where` names the catalog and `at` the entry in errors.
struct Reader {
  const std::string& where;

  [[noreturn]] void fail(const std::string& at, const std::string& why) const {
    throw Corrupt(where, 0, (at.empty() ? std::string("catalog") : "'" + at + "'") + ": " + why);
  }

  const json& field(const json& obj, const char* key, const std::string& at) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(at, std::string("no \"") + key + "\"");
    return *it;
  }

  std::string str(const json& obj, const char* key, const std::string& at, bool required = true) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) fail(at, std::string("no \"") + key + "\"");
      return {};
    }
    if (!it->is_string()) fail(at, std::string("\"") + key + "\" is not a string");
    return it->get<std::string>();
  }

  uint32_t mode(const json& obj, const std::string& at) const {
    const json& v = field(obj, "mode", at);
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) fail(at, "\"mode\" is not a Go file mode");
    return uint32_t(v.get<uint64_t>());
  }

  int64_t offset(const json& v, const std::string& at, const char* what) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(at, std::string(what) + " is not a non-negative integer");
    return v.get<int64_t>();
  }

  const json& object(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    if (!v.is_object() && !v.is_null()) fail(at, std::string("\"") + key + "\" is not an object");
    return v;
  }

  RccFile file(const json& j, const std::string& at) const {
    if (!j.is_object()) fail(at, "file entry is not an object");
    RccFile f;
    f.name = str(j, "name", at);
    f.symlink = str(j, "symlink", at, false);
    f.size = offset(field(j, "size", at), at, "\"size\"");
    f.mode = mode(j, at);
    f.digest = str(j, "digest", at);
    const json& rw = field(j, "rewrite", at);
    if (!rw.is_array() && !rw.is_null()) fail(at, "\"rewrite\" is not a list");
    if (rw.is_array()) {
      f.rewrite.reserve(rw.size());
      for (const json& o : rw) f.rewrite.push_back(offset(o, at, "a rewrite offset"));
    }
    return f;
  }

  void dir(const json& j, const std::string& at, RccDir& d, int depth) const {
    if (!j.is_object()) fail(at, "directory entry is not an object");
    if (depth > 2048) fail(at, "directories nested deeper than 2048");
    d.name = str(j, "name", at);
    d.symlink = str(j, "symlink", at, false);
    d.mode = mode(j, at);
    if (auto it = j.find("shadow"); it != j.end() && !it->is_null()) {
      if (!it->is_boolean()) fail(at, "\"shadow\" is not a boolean");
      d.shadow = it->get<bool>();
    }
    const std::string prefix = at.empty() ? "" : at + "/";
    const json& files = object(j, "files", at);
    if (files.is_object())
      for (auto& [k, v] : files.items()) d.files.emplace(k, file(v, prefix + k));
    const json& subdirs = object(j, "subdirs", at);
    if (subdirs.is_object())
      for (auto& [k, v] : subdirs.items()) dir(v, prefix + k, d.subdirs[k], depth + 1);
  }
};

} // namespace

RccCatalog parse_rcc_catalog(ByteSpan bytes, const std::string& where) {
  json j = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Corrupt(where, 0, "not a JSON rcc catalog");
  if (!j.is_object()) throw Corrupt(where, 0, "not a JSON object");
  Reader r{where};
  RccCatalog c;
  c.rcc = r.str(j, "rcc", "", false);
  c.identity = r.str(j, "identity", "");
  c.path = r.str(j, "path", "");
  c.controller = r.str(j, "controller", "", false);
  c.space = r.str(j, "space", "", false);
  c.platform = r.str(j, "platform", "", false);
  c.blueprint = r.str(j, "blueprint", "", false);
  if (auto it = j.find("lifted"); it != j.end() && it->is_boolean()) c.lifted = it->get<bool>();
  r.dir(r.field(j, "tree", ""), "", c.tree, 0);
  return c;
}

} // namespace hpak::formats
