#include "core/remote/schemes.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "core/remote/dir/dir_backend.hpp"
#include "core/remote/http/http_backend.hpp"
#include "core/remote/s3/s3_backend.hpp"

namespace hpak::remote {

const std::vector<Scheme>& schemes() {
  static const std::vector<Scheme> table = {
      {"file", "a directory", "a file:///DIR", true, parse_dir_url, open_dir},
      {"http", "HTTP", "an http://HOST[:PORT][/PATH]", false, parse_http_url, open_http},
      {"https", "HTTP", "an https://HOST[:PORT][/PATH]", false, parse_http_url, open_http},
      {"s3", "an s3:// URL", "an s3://BUCKET/PREFIX", true, parse_s3_url, open_s3},
  };
  return table;
}

const Scheme* find_scheme(std::string_view name) {
  for (const Scheme& s : schemes())
    if (name == s.name) return &s;
  return nullptr;
}

namespace {

// "a directory or an s3:// URL": the labels of the schemes publish can write to.
std::string writable_labels() {
  std::vector<std::string> labels;
  for (const Scheme& s : schemes())
    if (s.writable && std::find(labels.begin(), labels.end(), s.label) == labels.end()) labels.push_back(s.label);
  std::string out;
  for (size_t i = 0; i < labels.size(); i++) out += (i == 0 ? "" : i + 1 == labels.size() ? " or " : ", ") + labels[i];
  return out;
}

} // namespace

std::unique_ptr<Backend> open_backend(const RemoteUrl& url, const BackendOptions& opts, Access access) {
  const Scheme* s = find_scheme(url.scheme);
  if (!s) throw Error(quoted(url.text, 200) + ": unknown scheme '" + url.scheme + "'");
  if (access == Access::Write && !s->writable)
    throw Error("'" + url.text + "': publish writes to " + writable_labels() + ", not over " + s->label);
  return s->open(url, opts, access);
}

} // namespace hpak::remote
