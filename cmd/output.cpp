#include "cmd/output.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/os/sys.hpp"
#include "cmd/command.hpp"
#include "cmd/log.hpp"

namespace hpak::cmd {

static bool g_progress_shown = false;

Progress progress_bar() {
  end_phases(); // of the previous engine call, if one is still open
  const bool bar = !global().quiet && os::is_terminal(os::kStderr), log = debug_on();
  if (!bar && !log) return {};
  return [bar, log, last = std::chrono::steady_clock::time_point{}](std::string_view phase, uint64_t done, uint64_t total) mutable {
    if (log) {
      clear_progress();
      log_progress(phase, done, total);
    }
    if (!bar) return;
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    fprintf(stderr, "\r%.*s: %llu/%llu (%d%%)\033[K", int(phase.size()), phase.data(), (unsigned long long)done,
            (unsigned long long)total, total ? int(done * 100 / total) : 100);
    g_progress_shown = true;
  };
}

void clear_progress() {
  if (g_progress_shown) fprintf(stderr, "\r\033[K");
  g_progress_shown = false;
}

std::string relocation_line(const RelocCounts& c) {
  if (!c.total()) return {};
  std::string out;
  auto part = [&](uint64_t n, const std::string& what) {
    if (!n) return;
    out += (out.empty() ? "relocation: " : ", ") + std::to_string(n) + " " + what;
  };
  part(c.text, "text (any target path)");
  if (c.in_place) part(c.in_place, "binary in place (target paths of at most " + std::to_string(c.in_place_limit) + " bytes)");
  part(c.same_length, "same length only (.pyc, other binaries: left as packed at another length)");
  part(c.verbatim, "never rewritten (zip, compressed)");
  return out;
}

void relocation_json(JsonWriter& w, const RelocCounts& c) {
  w.key("relocation").begin_object().field("text", c.text).field("in_place", c.in_place);
  if (c.in_place) w.field("in_place_max_target", c.in_place_limit);
  else w.key("in_place_max_target").value(nullptr);
  w.field("same_length", c.same_length).field("verbatim", c.verbatim).end();
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  char buf[32];
  snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string mode_string(char type, uint32_t mode) {
  std::string s(10, '-');
  s[0] = type;
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; i++)
    if (mode & (1u << (8 - i))) s[1 + i] = rwx[i];
  if (mode & 04000) s[3] = (mode & 0100) ? 's' : 'S';
  if (mode & 02000) s[6] = (mode & 010) ? 's' : 'S';
  if (mode & 01000) s[9] = (mode & 01) ? 't' : 'T';
  return s;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool finish_stdout() {
  clear_progress();
  if (fflush(stdout) != 0 || ferror(stdout)) {
    log_error(std::string("unable to write to standard output: ") + strerror(errno));
    return false;
  }
  return true;
}

} // namespace hpak::cmd
