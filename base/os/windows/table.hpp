// One open descriptor of the Windows os seam (base/os/windows/win.hpp): for
// base/os/windows/*.cpp only.
#pragma once

#include <memory>
#include <string>

#include "base/os/windows/win.hpp"

namespace hpak::os::win {

struct Entry {
  HANDLE h = INVALID_HANDLE_VALUE;
  std::wstring path; // full, '\' separators, no \\?\ prefix; empty for the standard handles
  bool dir = false;
  int lock = 0;      // the LOCK_SH / LOCK_EX this handle holds (flock)
  HANDLE dir_lock = nullptr; // a directory's flock: its named mutex, while held
  // A listing in progress (read_dirents): FindFirstFileExW's handle and an entry read but not yet returned.
  HANDLE find = INVALID_HANDLE_VALUE;
  bool find_started = false, find_done = false, have_pending = false;
  WIN32_FIND_DATAW pending{};
};

// The entry of `fd` (nullptr with errno EBADF), kept alive while held.
std::shared_ptr<Entry> entry_of(int fd);
// Removes `fd` from the table and returns its entry (close).
std::shared_ptr<Entry> take_entry(int fd);
int add_entry(std::shared_ptr<Entry> e);

} // namespace hpak::os::win
