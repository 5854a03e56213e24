// bench/corpus_content.cpp — content generators behind hpak-gencorpus (see
// corpus_content.hpp).  Text kinds are built from a fixed vocabulary with a
// per-file "local" identifier set, so they repeat like real code and
// compress ~3-4x with zstd -3; binary kinds mix repetitive opcode streams,
// string tables, tables of small integers and some incompressible blobs
// (~2x).  Everything is driven by bench::Rng, so output is reproducible.
#include "corpus_content.hpp"

#include <cstring>

#include "prng.hpp"

namespace bench {
namespace {

const std::vector<std::string_view> kWords = {
    "data", "config", "util", "parse", "read", "write", "file", "path", "node", "tree",
    "value", "key", "index", "table", "array", "frame", "series", "model", "layer", "tensor",
    "buffer", "stream", "cache", "request", "response", "client", "server", "session", "token",
    "error", "warning", "handler", "base", "core", "common", "helper", "format", "string", "text",
    "encode", "decode", "json", "yaml", "xml", "html", "http", "url", "socket", "thread",
    "process", "task", "queue", "event", "loop", "async", "sync", "lock", "time", "date",
    "clock", "timer", "log", "debug", "info", "test", "check", "mock", "fixture", "plugin",
    "hook", "extension", "module", "package", "build", "compile", "link", "install", "setup",
    "option", "arg", "param", "field", "attr", "schema", "type", "spec", "signature", "method",
    "func", "object", "instance", "factory", "registry", "manager", "context", "scope", "state",
    "status", "result", "output", "input", "source", "target", "dest", "name", "label", "tag",
    "group", "item", "entry", "record", "row", "column", "cell", "shape", "size", "length",
    "count", "offset", "start", "stop", "step", "min", "max", "sum", "mean", "norm", "scale",
    "transform", "filter", "map", "reduce", "sort", "merge", "split", "join", "concat", "stack",
    "slice", "select", "query", "search", "match", "pattern", "regex", "rule", "policy", "auth",
    "user", "account", "role", "secret", "hash", "digest", "crypto", "cipher", "sign", "verify",
    "cert", "ssl", "proxy", "retry", "backoff", "limit", "rate", "metric", "stats", "plot",
    "figure", "axis", "color", "style", "theme", "font", "image", "pixel", "audio", "codec",
    "compress", "archive", "backend", "driver", "device", "memory", "pool", "alloc", "graph",
    "edge", "vertex", "route", "view", "template", "render", "widget", "window", "dialog",
    "button", "menu", "locale", "unicode", "ascii", "bytes", "chunk", "block", "page", "cursor",
    "iter", "gen", "wrap", "proxy", "meta", "dtype", "ndim", "axes", "grid", "mesh", "solver",
    "matrix", "vector", "sparse", "dense", "linalg", "random", "seed", "sample", "dist",
    "kernel", "weight", "bias", "grad", "optim", "loss", "batch", "epoch", "fit", "predict",
    "score", "encoder", "decoder", "parser", "lexer", "ast", "visitor", "compat", "legacy",
    "version", "platform", "env", "shell", "command", "cli", "main", "run", "exit", "signal",
};

const std::vector<std::string_view> kEnglish = {
    "the", "a", "an", "of", "to", "in", "is", "for", "and", "or", "with", "this", "that", "be",
    "are", "if", "not", "when", "returns", "given", "value", "object", "used", "by", "on",
    "from", "as", "it", "can", "will", "should", "may", "each", "all", "any", "default", "new",
    "list", "number", "which", "where", "instead", "also", "only", "must", "see", "note",
    "otherwise", "raised", "called", "passed", "current", "specified", "optional", "method",
    "function", "argument", "the", "the", "of", "a", "to", "is", "in",
};

const std::vector<std::string_view> kExc = {"ValueError", "TypeError", "KeyError", "RuntimeError",
                                            "OSError", "IndexError", "AttributeError",
                                            "NotImplementedError"};
const std::vector<std::string_view> kBuiltins = {"len", "isinstance", "getattr", "str", "int",
                                                 "list", "dict", "tuple", "sorted", "range",
                                                 "enumerate", "zip", "super", "hasattr", "repr"};
const std::vector<std::string_view> kCTypes = {"int", "Py_ssize_t", "PyObject *", "const char *",
                                               "void *", "double", "uint32_t", "size_t",
                                               "unsigned int", "long"};

std::string camel(std::string_view snake) {
  std::string s;
  bool up = true;
  for (char c : snake) {
    if (c == '_') { up = true; continue; }
    s += up && c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c;
    up = false;
  }
  return s;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (auto &c : u)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return u;
}

std::string reloc_line(Kind k, const std::string &p, int variant) {
  switch (k) {
    case Kind::Script: return variant ? "# prefix: " + p + "\n" : "#!" + p + "/bin/python3.11\n";
    case Kind::Pc: return variant ? "# installed under " + p + "\n" : "prefix=" + p + "\n";
    case Kind::Py:
      return variant ? "sys.path.insert(0, \"" + p + "/lib/python3.11/site-packages\")\n"
                     : "BUILD_PREFIX = \"" + p + "\"\n";
    case Kind::CHeader: return "#define INSTALL_PREFIX \"" + p + "\"\n";
    case Kind::Json:
      return variant ? "        \"prefix\": \"" + p + "\",\n" : "{\"prefix\": \"" + p + "\",\n";
    case Kind::Cfg: return "prefix = " + p + "\n";
    default: return "Location: " + p + "/lib/python3.11/site-packages\n";
  }
}

class Gen {
 public:
  Gen(uint64_t size, uint64_t cseed, const std::string *reloc)
      : r_(cseed), size_(size), reloc_(reloc) {
    out_.reserve(size + 4096);
  }

  std::string run(Kind k) {
    if (size_ == 0) return {};
    kind_ = k;
    next_reloc_ = 3000 + r_.below(12000);
    switch (k) {
      case Kind::Py: py_module(); break;
      case Kind::Script: script(); break;
      case Kind::Pyc: pyc(); break;
      case Kind::So: so(); break;
      case Kind::CHeader: cheader(); break;
      case Kind::Prose: prose_doc(); break;
      case Kind::Json: json(); break;
      case Kind::Record: record(); break;
      case Kind::Cfg: cfg(); break;
      case Kind::Pc: pc(); break;
      case Kind::Data: data(); break;
    }
    out_.resize(size_);
    return std::move(out_);
  }

 private:
  bool full() const { return out_.size() >= size_; }
  std::string_view word() { return kWords[r_.skewed(kWords.size())]; }
  const std::string &id() { return local_[r_.skewed(local_.size())]; }

  void init_locals() {
    size_t n = 24 + r_.below(40);
    local_.clear();
    for (size_t i = 0; i < n; ++i) {
      std::string s(word());
      if (r_.chance(2, 3)) (s += '_') += word();
      if (r_.chance(1, 6)) (s += '_') += word();
      if (r_.chance(1, 8)) s = "_" + s;
      local_.push_back(std::move(s));
    }
  }

  // Emit the relocation path in the header and then every few KB.
  void reloc_header() {
    if (reloc_) out_ += reloc_line(kind_, *reloc_, 0);
  }
  void maybe_reloc() {
    if (reloc_ && out_.size() >= next_reloc_) {
      out_ += reloc_line(kind_, *reloc_, 1);
      next_reloc_ = out_.size() + 4000 + r_.below(20000);
    }
  }

  void sentence() {
    size_t n = 5 + r_.below(10);
    for (size_t i = 0; i < n; ++i) {
      std::string_view w = r_.chance(1, 2) ? kEnglish[r_.skewed(kEnglish.size())] : word();
      if (i == 0) out_ += static_cast<char>(w[0] >= 'a' ? w[0] - 32 : w[0]), out_ += w.substr(1);
      else (out_ += ' ') += w;
    }
    out_ += '.';
  }
  void paragraph(std::string_view indent) {
    size_t line_start = out_.size();
    out_ += indent;
    size_t n = 2 + r_.below(5);
    for (size_t i = 0; i < n; ++i) {
      sentence();
      if (out_.size() - line_start > 70) {
        out_ += '\n';
        line_start = out_.size();
        out_ += indent;
      } else {
        out_ += ' ';
      }
    }
    out_ += "\n";
  }

  // ---- Python -----------------------------------------------------------
  void ind(int d) { out_.append(static_cast<size_t>(4 * d), ' '); }
  void lit() {
    switch (r_.below(7)) {
      case 0: out_ += std::to_string(r_.below(10)); break;
      case 1: out_ += std::to_string(r_.below(1024)); break;
      case 2: ((out_ += '"') += word()) += '"'; break;
      case 3: out_ += "None"; break;
      case 4: out_ += r_.chance(1, 2) ? "True" : "False"; break;
      case 5: (out_ += "self.") += id(); break;
      default: out_ += id(); break;
    }
  }
  void args() {
    size_t n = r_.below(4);
    for (size_t i = 0; i < n; ++i) {
      if (i) out_ += ", ";
      if (r_.chance(1, 3)) (out_ += id()) += '=';
      lit();
    }
  }
  void call() {
    if (r_.chance(1, 4)) out_ += kBuiltins[r_.below(kBuiltins.size())];
    else if (r_.chance(1, 2)) (out_ += "self.") += id();
    else out_ += id();
    out_ += '(';
    args();
    out_ += ')';
  }
  void cond() {
    switch (r_.below(5)) {
      case 0: (out_ += id()) += " is None"; break;
      case 1: (out_ += "not ") += id(); break;
      case 2: ((out_ += "isinstance(") += id()) += ", " + camel(word()) + ")"; break;
      case 3: (((out_ += id()) += " == ") += '"') += std::string(word()) + '"'; break;
      default: ((out_ += "len(") += id()) += ") > " + std::to_string(r_.below(8)); break;
    }
  }
  void stmt(int d) {
    ind(d);
    unsigned c = static_cast<unsigned>(r_.below(d < 5 ? 14 : 8));
    switch (c) {
      case 0: (out_ += id()) += " = "; call(); out_ += '\n'; break;
      case 1: ((out_ += "self.") += id()) += " = "; lit(); out_ += '\n'; break;
      case 2: out_ += "return "; lit(); out_ += '\n'; break;
      case 3: ((((out_ += "raise ") += kExc[r_.below(kExc.size())]) += "(f\"")); sentence();
              ((out_ += " {") += id()) += "!r}\")\n"; break;
      case 4: out_ += "# "; sentence(); out_ += '\n'; break;
      case 5: call(); out_ += '\n'; break;
      case 6: (out_ += id()) += " += "; lit(); out_ += '\n'; break;
      case 7: ((((((out_ += id()) += " = [") += id()) += " for ") += id()) += " in ") += id();
              out_ += "]\n"; break;
      case 8: case 9: out_ += "if "; cond(); out_ += ":\n"; body(d + 1);
              if (r_.chance(1, 3)) { ind(d); out_ += "else:\n"; body(d + 1); } break;
      case 10: (((out_ += "for ") += id()) += " in ") += id(); out_ += ":\n"; body(d + 1); break;
      case 11: out_ += "try:\n"; body(d + 1); ind(d);
               ((out_ += "except ") += kExc[r_.below(kExc.size())]) += " as exc:\n"; body(d + 1); break;
      case 12: ((out_ += "with open(") += id()) += ", \"rb\") as fh:\n"; body(d + 1); break;
      default: ((out_ += "while ") += id()) += ":\n"; body(d + 1); break;
    }
  }
  void body(int d) {
    size_t n = 1 + r_.below(d < 4 ? 4 : 2);
    for (size_t i = 0; i < n; ++i) stmt(d);
  }
  void docstring(int d) {
    ind(d);
    out_ += "\"\"\"";
    sentence();
    if (r_.chance(1, 2)) {
      out_ += "\n\n";
      paragraph(std::string(static_cast<size_t>(4 * d), ' '));
      ind(d);
      out_ += "Args:\n";
      for (size_t i = 0, n = 1 + r_.below(3); i < n; ++i) {
        ind(d + 1);
        (out_ += id()) += ": ";
        sentence();
        out_ += '\n';
      }
      ind(d);
    }
    out_ += "\"\"\"\n";
  }
  void def(int d, bool method) {
    ind(d);
    ((out_ += "def ") += id()) += method ? "(self" : "(";
    for (size_t i = 0, n = r_.below(4); i < n; ++i) {
      if (method || i) out_ += ", ";
      out_ += id();
      if (r_.chance(1, 3)) out_ += "=None";
    }
    out_ += r_.chance(1, 3) ? ") -> " + camel(word()) + ":\n" : "):\n";
    if (r_.chance(1, 2)) docstring(d + 1);
    for (size_t i = 0, n = 2 + r_.below(8); i < n; ++i) stmt(d + 1);
    out_ += '\n';
  }
  void py_imports() {
    for (size_t i = 0, n = 1 + r_.below(6); i < n; ++i) {
      if (r_.chance(1, 2)) ((out_ += "import ") += word()) += '\n';
      else ((((out_ += "from .") += word()) += " import ") += camel(word())) += ", " + id() + "\n";
    }
    out_ += '\n';
  }
  void py_body() {
    while (!full()) {
      maybe_reloc();
      unsigned c = static_cast<unsigned>(r_.below(10));
      if (c < 4) {
        ((out_ += "class ") += camel(id())) += "(" + camel(word()) + "):\n";
        docstring(1);
        out_ += '\n';
        for (size_t i = 0, n = 2 + r_.below(5); i < n && !full(); ++i) def(1, true);
      } else if (c < 8) {
        def(0, false);
      } else if (c == 8) {
        for (size_t i = 0, n = 2 + r_.below(6); i < n; ++i) {
          (out_ += upper(id())) += " = ";
          lit();
          out_ += '\n';
        }
        out_ += '\n';
      } else {
        out_ += "# ";
        sentence();
        out_ += "\n\n";
      }
    }
  }
  void py_module() {
    init_locals();
    reloc_header();
    if (r_.chance(2, 3)) docstring(0);
    py_imports();
    py_body();
  }
  void script() {
    init_locals();
    if (reloc_) reloc_header();
    else out_ += "#!/usr/bin/env python3\n";
    out_ += "# -*- coding: utf-8 -*-\nimport re\nimport sys\n";
    (((out_ += "from ") += word()) += ".cli import ") += "main\n";
    out_ += "if __name__ == \"__main__\":\n"
            "    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n"
            "    sys.exit(main())\n";
    py_body();
  }

  // ---- other text kinds ------------------------------------------------
  void cheader() {
    init_locals();
    std::string guard = upper(id()) + "_H";
    out_ += "#ifndef " + guard + "\n#define " + guard + "\n\n";
    reloc_header();
    out_ += "#include \"Python.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    while (!full()) {
      maybe_reloc();
      switch (r_.below(5)) {
        case 0: out_ += "/* "; sentence(); out_ += " */\n"; break;
        case 1:
          (out_ += "#define ") += upper(id()) + " " + std::to_string(r_.below(256)) + "\n";
          break;
        case 2:
          out_ += "typedef struct {\n";
          for (size_t i = 0, n = 2 + r_.below(6); i < n; ++i)
            ((((out_ += "    ") += kCTypes[r_.below(kCTypes.size())]) += ' ') += id()) += ";\n";
          (out_ += "} ") += camel(id()) + "Object;\n\n";
          break;
        default:
          ((((out_ += "PyAPI_FUNC(") += kCTypes[r_.below(kCTypes.size())]) += ") Py") +=
              camel(id())) += "_" + camel(word()) + "(";
          for (size_t i = 0, n = 1 + r_.below(3); i < n; ++i)
            (out_ += i ? ", " : "") += kCTypes[r_.below(kCTypes.size())];
          out_ += ");\n";
      }
    }
  }
  void prose_doc() {
    init_locals();
    reloc_header();
    while (!full()) {
      maybe_reloc();
      switch (r_.below(6)) {
        case 0: out_ += "\n## " + camel(word()) + " " + camel(word()) + "\n\n"; break;
        case 1:
          for (size_t i = 0, n = 2 + r_.below(4); i < n; ++i) { out_ += "- "; sentence(); out_ += '\n'; }
          out_ += '\n';
          break;
        case 2: out_ += "```python\n"; body(0); out_ += "```\n\n"; break;
        default: paragraph(""); out_ += '\n';
      }
    }
  }
  void hex(size_t n) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; ++i) out_ += d[r_.below(16)];
  }
  void b64(size_t n) {
    static const char d[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (size_t i = 0; i < n; ++i) out_ += d[r_.below(64)];
  }
  void relpath() {
    out_ += "lib/python3.11/site-packages/";
    for (size_t i = 0, n = 1 + r_.below(3); i < n; ++i) (out_ += id()) += '/';
    (out_ += id()) += ".py";
  }
  void json() {
    init_locals();
    if (reloc_) reloc_header();
    else out_ += "{\n";
    out_ += "  \"build\": \"py311h";
    hex(7);
    out_ += "_0\",\n  \"channel\": \"https://conda.anaconda.org/conda-forge/linux-64\",\n";
    out_ += "  \"depends\": [\n    \"python >=3.11\"\n  ],\n  \"files\": [\n";
    size_t nfiles = 2 + r_.below(30);
    for (size_t i = 0; i < nfiles; ++i) { out_ += "    \""; relpath(); out_ += "\",\n"; }
    out_ += "  ],\n  \"paths_data\": {\n    \"paths\": [\n";
    while (!full()) {
      maybe_reloc();
      out_ += "      {\n        \"_path\": \"";
      relpath();
      out_ += "\",\n        \"path_type\": \"hardlink\",\n        \"sha256\": \"";
      hex(64);
      out_ += "\",\n        \"size_in_bytes\": " + std::to_string(r_.logish(40, 200000)) + "\n      },\n";
    }
  }
  void record() {
    init_locals();
    std::string pkg(word());
    while (!full()) {
      for (size_t i = 0, n = r_.below(3); i < n; ++i) ((out_ += pkg) += '/') += id(), out_ += '/';
      (out_ += id()) += r_.chance(1, 4) ? ".cpython-311.pyc,sha256=" : ".py,sha256=";
      b64(43);
      out_ += "," + std::to_string(r_.logish(40, 100000)) + "\n";
    }
  }
  void cfg() {
    init_locals();
    reloc_header();
    while (!full()) {
      maybe_reloc();
      if (r_.chance(1, 5)) (out_ += "\n[") += id() + "]\n";
      else if (r_.chance(1, 6)) { out_ += "# "; sentence(); out_ += '\n'; }
      else { (out_ += id()) += " = "; lit(); out_ += '\n'; }
    }
  }
  void pc() {
    init_locals();
    if (reloc_) reloc_header();
    else out_ += "prefix=/usr/local\n";
    std::string name(word());
    out_ += "exec_prefix=${prefix}\nlibdir=${exec_prefix}/lib\nincludedir=${prefix}/include\n\n";
    out_ += "Name: " + name + "\nDescription: ";
    sentence();
    out_ += "\nVersion: " + std::to_string(r_.below(4)) + "." + std::to_string(r_.below(20)) + "." +
            std::to_string(r_.below(10)) + "\nLibs: -L${libdir} -l" + name +
            "\nCflags: -I${includedir}\n";
    while (!full()) { maybe_reloc(); out_ += "# "; sentence(); out_ += '\n'; }
  }

  // ---- binary kinds -----------------------------------------------------
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  void rnd(size_t n) {
    for (size_t i = 0; i < n; i += 8) le(r_.next(), static_cast<int>(n - i < 8 ? n - i : 8));
  }
  void so() {
    init_locals();
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        3, 0, 0x3e, 0, 1, 0, 0, 0};
    out_.append(reinterpret_cast<const char *>(elf), sizeof elf);
    out_.append(40, '\0');
    uint64_t addr = 0x1000 + 16 * r_.below(256);
    while (!full()) {
      unsigned c = static_cast<unsigned>(r_.below(20));
      if (c < 10) {  // code: idioms from a fixed table, local edits, calls
        for (size_t i = 0, n = 32 + r_.below(512); i < n; ++i) {
          size_t at = out_.size();
          out_ += idioms()[r_.skewed3(idioms().size())];
          if (r_.chance(1, 2)) out_[at + r_.below(out_.size() - at)] = static_cast<char>(r_.below(256));
          if (r_.chance(2, 5)) {  // call/jmp rel32: small signed displacement
            out_ += r_.chance(2, 3) ? '\xe8' : '\xe9';
            le(r_.below(1 << 18) - (r_.chance(1, 2) ? (1 << 18) : 0), 4);
          }
        }
      } else if (c < 13) {  // .dynstr: symbol names
        for (size_t i = 0, n = 16 + r_.below(128); i < n; ++i) {
          out_ += r_.chance(1, 2) ? "Py" + camel(id()) + "_" + camel(word()) : "_ZN" + id();
          out_ += '\0';
        }
      } else if (c < 15) {  // .rela.dyn: 24-byte entries
        for (size_t i = 0, n = 16 + r_.below(128); i < n; ++i) {
          addr += 8 * (1 + r_.skewed(8));
          le(addr, 8);
          le(8 + r_.below(3), 8);
          le(r_.below(1 << 16), 8);
        }
      } else if (c == 15) {  // alignment padding
        out_.append(16 + r_.below(512), '\0');
      } else if (c < 19) {  // .rodata: jump tables / small constants
        uint64_t base = r_.below(1 << 20), stride = 1 + r_.below(64);
        for (size_t i = 0, n = 8 + r_.below(128); i < n; ++i) le(base + i * stride + r_.below(4), 4);
      } else {  // compressed blobs, hashes, float constants
        rnd(64 + r_.below(512));
      }
    }
  }
  // Fixed (seed-independent) tables of instruction sequences, like the
  // recurring idioms of compiled code: x86-ish for .so, CPython-ish for .pyc.
  // Small enough (~16 KB) to sit inside a gzip window.
  template <class Unit>
  static std::vector<std::string> build_idioms(uint64_t seed, size_t count, Unit unit) {
    Rng fixed(seed);
    std::vector<std::string> t(count);
    for (auto &s : t)
      for (uint64_t j = 0, n = 2 + fixed.below(6); j < n; ++j) unit(fixed, s);
    return t;
  }
  static const std::vector<std::string> &idioms() {
    static const std::vector<std::string> table = [] {
      static const unsigned char lead[] = {0x48, 0x89, 0x8b, 0xe8, 0x0f, 0x83, 0x85, 0x74,
                                           0x75, 0xc3, 0x41, 0x4c, 0x31, 0xff, 0x66, 0x90};
      std::vector<std::string> ops = build_idioms(0x0bc0de5eedULL, 160, [](Rng &f, std::string &s) {
        s += static_cast<char>(s.empty() ? lead[f.below(sizeof lead)] : f.below(256));
      });
      for (auto &o : ops) o.resize(1 + o.size() % 3);
      return build_idioms(0x1d10a5ULL, 1024, [&ops](Rng &f, std::string &s) {
        s += ops[f.skewed(ops.size())];
        uint64_t k = f.below(10);
        if (k >= 4) s += static_cast<char>(f.below(256));
        if (k >= 7) s.append(3, static_cast<char>(k == 9 ? 0xff : 0));
      });
    }();
    return table;
  }
  static const std::vector<std::string> &pyc_idioms() {
    static const std::vector<std::string> table = build_idioms(0x9c0de5ULL, 512, [](Rng &f, std::string &s) {
      static const unsigned char ops[] = {0x97, 0x64, 0x7c, 0x7d, 0x53, 0x74, 0xa6, 0xab, 0x6a,
                                          0x01, 0x5a, 0x65, 0x72, 0x6e, 0x71, 0x84, 0x8c, 0x02};
      s += static_cast<char>(ops[f.skewed(sizeof ops)]);
      s += static_cast<char>(f.skewed3(24));
    });
    return table;
  }
  void pyc() {
    init_locals();
    static const unsigned char magic[] = {0xa7, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0};
    out_.append(reinterpret_cast<const char *>(magic), sizeof magic);
    le(1704067200, 4);
    le(size_, 4);
    while (!full()) {
      unsigned c = static_cast<unsigned>(r_.below(10));
      if (c < 4) {
        out_ += "\xe3";
        for (size_t i = 0, n = 4 + r_.below(24); i < n; ++i) {
          size_t at = out_.size();
          out_ += pyc_idioms()[r_.skewed(pyc_idioms().size())];
          if (r_.chance(1, 3)) out_[at + 1] = static_cast<char>(r_.below(64));
        }
      } else if (c < 7) {
        const std::string &s = id();
        out_ += r_.chance(1, 2) ? '\xda' : 'z';
        out_ += static_cast<char>(s.size());
        out_ += s;
      } else if (c == 7) {
        out_ += 'r';
        le(r_.skewed(256), 4);
      } else if (c == 8) {
        out_ += 'i';
        le(r_.below(100000), 4);
      } else {
        size_t at = out_.size();
        out_ += 's';
        out_.append(4, '\0');
        sentence();
        uint64_t n = out_.size() - at - 5;
        for (int i = 0; i < 4; ++i) out_[at + 1 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
      }
    }
  }
  void data() {  // gettext .mo-like: header, offset tables, NUL-terminated strings
    init_locals();
    le(0x950412de, 4);
    le(0, 4);
    uint64_t n = 8 + r_.below(64), off = 28 + 16 * n;
    le(n, 4);
    le(28, 4);
    le(28 + 8 * n, 4);
    le(0, 8);
    for (uint64_t i = 0; i < 2 * n; ++i) {
      uint64_t len = 10 + r_.below(80);
      le(len, 4);
      le(off, 4);
      off += len + 1;
    }
    while (!full()) {
      sentence();
      out_ += '\0';
      if (r_.chance(1, 10)) rnd(16 + r_.below(64));
    }
  }

  Rng r_;
  uint64_t size_;
  const std::string *reloc_;
  Kind kind_ = Kind::Py;
  uint64_t next_reloc_ = 0;
  std::string out_;
  std::vector<std::string> local_;
};

}  // namespace

const std::vector<std::string_view> &vocabulary() { return kWords; }

bool reloc_capable(Kind k) {
  switch (k) {
    case Kind::Py: case Kind::Script: case Kind::CHeader: case Kind::Prose:
    case Kind::Json: case Kind::Cfg: case Kind::Pc:
      return true;
    default:
      return false;
  }
}

uint64_t reloc_min_size(Kind k, const std::string &reloc) {
  return reloc_line(k, reloc, 0).size() + 32;
}

std::string make_content(Kind k, uint64_t size, uint64_t cseed, const std::string *reloc) {
  if (reloc && !reloc_capable(k)) reloc = nullptr;
  return Gen(size, cseed, reloc).run(k);
}

}  // namespace bench
