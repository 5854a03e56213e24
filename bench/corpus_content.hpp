// bench/corpus_content.hpp — file-content generators for hpak-gencorpus.
// Each generator produces bytes that compress roughly like the real thing
// (pseudo-Python from a fixed vocabulary, C headers, prose, conda-meta JSON,
// ELF-like shared objects, .pyc-like bytecode), fully determined by
// (kind, size, content seed, relocation path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

enum class Kind : uint8_t {
  Py,       // Python source (.py, .pyi, .pyx)
  Script,   // bin/ entry point: shebang + Python stub
  Pyc,      // __pycache__/*.pyc: marshal-like bytecode
  So,       // shared objects and ELF executables
  CHeader,  // include/**/*.h
  Prose,    // README/METADATA/LICENSE/man pages/docs
  Json,     // conda-meta/*.json, package data
  Record,   // *.dist-info/RECORD
  Cfg,      // .cfg/.ini/.toml-ish
  Pc,       // lib/pkgconfig/*.pc
  Data,     // .mo catalogs and other mixed binary data
};

// True for kinds that may carry the relocation path (text kinds).
bool reloc_capable(Kind k);

// Smallest size for which make_content() can embed `reloc` at least once.
uint64_t reloc_min_size(Kind k, const std::string &reloc);

// Exactly `size` bytes of content of kind k.  If reloc is non-null the
// content contains *reloc at least once (size >= reloc_min_size required).
std::string make_content(Kind k, uint64_t size, uint64_t cseed, const std::string *reloc);

// Shared identifier vocabulary (also used for file and package names).
const std::vector<std::string_view> &vocabulary();

}  // namespace bench
