// Where a restore gets object bytes from: one pack (`hpak unpack`) or every
// pack of a library (`hpak restore`). `locate` is thread-safe.
#pragma once

#include <optional>

#include "core/pack/pack_reader.hpp"

namespace hpak {

struct ObjectRef {
  const PackReader* pack = nullptr;
  formats::IndexRecord rec;
};

class ObjectSource {
public:
  virtual ~ObjectSource() = default;
  virtual std::optional<ObjectRef> locate(const Digest& d) const = 0;
};

class PackSource : public ObjectSource {
public:
  explicit PackSource(const PackReader& p) : pack_(p) {}
  std::optional<ObjectRef> locate(const Digest& d) const override {
    auto r = pack_.find(d);
    if (!r) return std::nullopt;
    return ObjectRef{&pack_, *r};
  }

private:
  const PackReader& pack_;
};

} // namespace hpak
