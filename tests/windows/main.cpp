// doctest entry point of hpak_win_tests.exe (cmake/windows.cmake): the unit tests of the rooms that build
// for Windows, run under Wine by scripts/build-windows.sh. No tree fixture: those tests touch no disk.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
