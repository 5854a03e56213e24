// Names a Windows file system (NTFS, ReFS; the Win32 namespace) cannot hold,
// found in a catalog before anything is written (issue 30). A POSIX catalog
// may hold any byte but '/' and NUL in a name; on Windows these fail, or worse,
// mean something else:
//   - two paths equal but for case (Windows folds case: the second would
//     overwrite the first);
//   - a reserved device name, alone or before a dot: CON, PRN, AUX, NUL,
//     COM1-COM9, LPT1-LPT9 (any case; "nul.txt" names the device too);
//   - a name ending in a dot or a space (Win32 strips them: "a." is "a");
//   - a character Win32 refuses or reads as syntax: < > : " \ | ? * and the
//     control characters 1-31 (':' would name an alternate data stream,
//     '\' a directory);
//   - a symlink target holding '\' or ':' is left alone: it is a string the
//     link holds, checked when the link is made.
// Case folding here is ASCII's and the Latin-1, Greek and Cyrillic letters'
// simple upper case; Windows' own table covers more of Unicode, so a pair of
// names that differ only in the case of other scripts is not caught here (the
// create then fails on that file, and the restore says which).
#pragma once

#include <string>

#include "formats/catalog_format.hpp"

namespace hpak {

// The first problem, as one line naming the path (and the other path of a
// case pair), or "" when every name of `cat` can be created on Windows.
std::string windows_name_problem(const formats::Catalog& cat);
// Throws that problem as an Error, if there is one.
void refuse_windows_names(const formats::Catalog& cat);

// The problem of one path component, or "" (exposed for the unit tests).
std::string windows_component_problem(const std::string& name);

} // namespace hpak
