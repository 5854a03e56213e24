// A library loaded at run time (os::load_library) and its functions bound by
// name, for a dependency only some commands need (libcurl for a remote, libzip
// for importing a zip): a failure is an Error naming the library, what hpak
// needs it for, and why it could not be used.
#pragma once

#include <string>

#include "base/error.hpp"
#include "base/os/sys.hpp"

namespace hpak::os {

class LoadedLibrary {
public:
  // `name` as the loader finds it ("libcurl.so.4"); `purpose` for messages
  // ("libcurl, for remote libraries"). Both outlive the object (literals).
  LoadedLibrary(const char* name, const char* purpose) : name_(name), purpose_(purpose), lib_(load_library(name)) {
    if (!lib_) fail(library_error());
  }
  // Sets `f` to the function `symbol`; throws if the library lacks it.
  template <class F> void bind(F& f, const char* symbol) const {
    f = reinterpret_cast<F>(library_symbol(lib_, symbol));
    if (!f) fail(std::string("it has no ") + symbol);
  }

private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(std::string("unable to load ") + name_ + " (" + purpose_ + "): " + why);
  }
  const char* name_;
  const char* purpose_;
  void* lib_;
};

} // namespace hpak::os
