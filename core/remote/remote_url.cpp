#include "core/remote/remote_url.hpp"

#include <cctype>

#include "base/error.hpp"
#include "core/remote/schemes.hpp"

namespace hpak::remote {

namespace {

bool scheme_char(char c, bool first) {
  return std::isalpha((unsigned char)c) || (!first && (std::isdigit((unsigned char)c) || c == '+' || c == '-' || c == '.'));
}

// The length of "SCHEME" in "SCHEME://...", or 0.
size_t scheme_length(const std::string& text) {
  size_t sep = text.find("://");
  if (sep == std::string::npos || sep == 0) return 0;
  for (size_t i = 0; i < sep; i++)
    if (!scheme_char(text[i], i == 0)) return 0;
  return sep;
}

std::string known_schemes() {
  std::string out;
  for (const Scheme& s : schemes()) out += std::string(out.empty() ? "" : ", ") + s.name + "://";
  return out + " or a directory";
}

[[noreturn]] void unusable(const std::string& text, const std::string& shape, const std::string& why) {
  throw Error(quoted(text, 200) + " is not " + shape + " URL: " + why);
}

} // namespace

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool looks_like_url(const std::string& text) { return scheme_length(text) > 0; }

namespace url_parts {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

std::string parse_authority(const std::string& authority, uint16_t default_port, RemoteUrl& out) {
  std::string hostport = authority.substr(authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
  size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']', colon) != std::string::npos) colon = std::string::npos; // inside [v6]
  out.host = hostport.substr(0, colon);
  out.port = default_port;
  out.port_given = colon != std::string::npos;
  if (out.host.empty() || out.host == "[]") return "no host";
  if (out.host.find_first_of(" \t\r\n") != std::string::npos) return "a space in its host";
  if (!out.port_given) return "";
  std::string port = hostport.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) == 0 ||
      std::stoul(port) > 65535)
    return "port " + quoted(port, 20) + " is not a number from 1 to 65535";
  out.port = uint16_t(std::stoul(port));
  return "";
}

} // namespace url_parts

RemoteUrl parse_remote_url(const std::string& text) {
  if (text.empty()) unusable(text, "a remote", "it is empty");
  for (char c : text)
    if ((unsigned char)c < 0x20 || c == 0x7f) unusable(text, "a remote", "a control character in it");
  RemoteUrl url;
  size_t n = scheme_length(text);
  // The text, or what follows "SCHEME://", without its trailing slashes.
  std::string rest = strip_trailing_slashes(n ? text.substr(n + 3) : text);
  url.text = n ? text.substr(0, n + 3) + rest : rest;
  url.scheme = n ? url_parts::lower(text.substr(0, n)) : "file";
  const Scheme* s = find_scheme(url.scheme);
  if (!s) unusable(text, "a remote", "unknown scheme '" + url.scheme + "' (hpak reads " + known_schemes() + ")");
  std::string why = s->parse(rest, n > 0, url);
  if (!why.empty()) unusable(text, s->shape, why);
  return url;
}

} // namespace hpak::remote
