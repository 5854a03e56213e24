// hpak index PACK: rebuild PACK's .hidx from the pack alone; --show lists it.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/pack/pack_reader.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string pack;
  bool show = false, json = false, no_write = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("pack", o->pack, "Pack file")->required();
  app.add_flag("--show", o->show, "List the objects: digest, kind, codec, offset, stored and raw size (and block:N for the Nth member of a block)");
  app.add_flag("--json", o->json, "With --show: JSON lines");
  app.add_flag("--no-write", o->no_write, "Do not write the index file (with --show: list only)");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  PackReader pack(o.pack, /*use_index_file=*/false);
  log_pack(pack);
  for (auto& d : pack.damage()) spdlog::warn("'{}' offset {}: {}", o.pack, d.offset, d.why);
  const formats::IndexView& idx = pack.index();
  std::vector<formats::IndexRecord> recs;
  for (uint64_t i = 0; i < idx.count(); i++) recs.push_back(idx.record_at(i));
  if (!o.no_write) {
    Bytes bytes = formats::encode_index(recs, pack.bytes().size(), pack.stored_trailer(), pack.index_version());
    AtomicFile f(index_path_for(o.pack), 0644);
    f.write(bytes);
    f.commit();
  }
  if (o.show) {
    // An entry's stored size from its header (a v2 index leaves it to the
    // pack); a block member has none of its own: it shows 0 and its position.
    JsonWriter w;
    for (auto& rec : recs) {
      formats::IndexRecord r = pack.complete_or_same(rec);
      bool member = r.member != formats::kNoMember;
      if (o.json) {
        w.begin_object().field("digest", to_hex(r.digest)).field("kind", formats::kind_name(r.kind));
        w.field("codec", formats::codec_name(r.codec)).field("offset", r.offset).field("stored", r.stored_len).field("raw", r.raw_len);
        if (member) w.field("member", r.member);
        w.end().newline().print(stdout);
      } else
        printf("%s %-7s %-9s %12llu %10llu %10llu%s\n", to_hex(r.digest).c_str(), formats::kind_name(r.kind),
               formats::codec_name(r.codec), (unsigned long long)r.offset, (unsigned long long)r.stored_len,
               (unsigned long long)r.raw_len, member ? (" block:" + std::to_string(r.member)).c_str() : "");
    }
  }
  return pack.damage().empty() ? kExitOk : kExitProblem;
}
} // namespace

extern const Command cmd_index{"index", "Rebuild a pack's index (.hidx) from the pack alone", setup};

} // namespace hpak::cmd
