// The guard of MappedFile's mappings (base/os/file.cpp), one implementation a
// platform.
//
// Linux (base/os/linux/map_guard.cpp): a read of a mapped file past its current
// end (another process truncated it after it was mapped) or of a page the disk
// cannot deliver (EIO) raises SIGBUS, which would end the process. Every
// MappedFile registers its range here; the handler replaces the faulting page
// of a registered range with a page of zeros and marks the range, so the read
// goes on, the checksums the reader checks fail on the zeros, and the reader
// reports the mapping as shrunk (MappedFile::shrunk). A SIGBUS outside every
// registered range goes to the handler installed before (or ends the process,
// as without this). Registration is lock-free (a fixed table of slots); the
// handler only loads atomics and calls mmap.
//
// Windows (base/os/windows/file.cpp): nothing to guard. Windows refuses to
// truncate a file while a view of it is mapped (ERROR_USER_MAPPED_FILE), so a
// mapping never loses pages: no slot (-1), never faulted.
#pragma once

#include <cstddef>

namespace hpak::os {

// The slot guarding [addr, addr + size), or -1 when every slot is taken
// (the range is then unguarded: a SIGBUS there ends the process).
int guard_mapping(const void* addr, size_t size);
// Before the range is unmapped.
void unguard_mapping(int slot);
// Has a read of the slot's range faulted since it was guarded?
bool mapping_faulted(int slot);

} // namespace hpak::os
