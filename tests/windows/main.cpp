// doctest entry point of hpak_win_tests.exe (cmake/windows.cmake): the unit tests of the rooms that build
// for Windows and of the os seam there (test_os_windows.cpp), run under Wine by scripts/build-windows.sh.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
