// The os seam's ownership check (base/os/sys.hpp: not_private_why) on Windows
// (issue 30): the security descriptor of the open handle (GetSecurityInfo),
// its owner and the allow ACEs of its DACL. This user is the process token's
// user; Administrators and SYSTEM stand where root does on Linux. Deny ACEs
// are not needed for the verdict (they only take rights away); an ACE that
// applies only to children (INHERIT_ONLY_ACE) is not this file's; an allow ACE
// of a kind not read here (object or callback-object ACEs) is refused.
#include "base/os/windows/win.hpp"

#include <aclapi.h>
#include <sddl.h>

#include <memory>

namespace hpak::os {

namespace {

// The rights by which another SID could change the file, or what a directory holds.
constexpr ACCESS_MASK kChanging = FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES |
                                  FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_WRITE | GENERIC_ALL;

struct LocalFree_ {
  void operator()(void* p) const { LocalFree(p); }
};

// The user of this process's token (its SID copied into `out`); false on failure.
bool token_user(std::unique_ptr<BYTE[]>& out) {
  HANDLE tok = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok)) return false;
  DWORD n = 0;
  GetTokenInformation(tok, TokenUser, nullptr, 0, &n);
  out.reset(new BYTE[n ? n : 1]);
  bool ok = n && GetTokenInformation(tok, TokenUser, out.get(), n, &n);
  CloseHandle(tok);
  return ok;
}

bool is_well_known(PSID sid, WELL_KNOWN_SID_TYPE type) { return IsWellKnownSid(sid, type); }

// This user, Administrators or SYSTEM.
bool trusted(PSID sid, PSID me) {
  return EqualSid(sid, me) || is_well_known(sid, WinBuiltinAdministratorsSid) || is_well_known(sid, WinLocalSystemSid);
}

// "'DOMAIN\name' (S-1-...)", or the SID string alone when it names no account.
std::string shown(PSID sid) {
  std::string text = "an unreadable SID";
  wchar_t* str = nullptr;
  if (ConvertSidToStringSidW(sid, &str)) {
    text = win::narrow(str);
    LocalFree(str);
  }
  wchar_t name[256], domain[256];
  DWORD nn = 256, dn = 256;
  SID_NAME_USE use;
  if (!LookupAccountSidW(nullptr, sid, name, &nn, domain, &dn, &use)) return text;
  std::wstring who = dn ? std::wstring(domain) + L"\\" + name : std::wstring(name);
  return "'" + win::narrow(who) + "' (" + text + ")";
}

// Why an ACE of `dacl` lets another SID than `me` (and the trusted ones) change the file; "" when none does.
std::string foreign_writer(PACL dacl, PSID me) {
  for (DWORD i = 0; i < dacl->AceCount; i++) {
    ACE_HEADER* h = nullptr;
    if (!GetAce(dacl, i, reinterpret_cast<void**>(&h))) return "its DACL cannot be read";
    if (h->AceFlags & INHERIT_ONLY_ACE) continue;
    if (h->AceType == ACCESS_DENIED_ACE_TYPE || h->AceType == ACCESS_DENIED_CALLBACK_ACE_TYPE) continue;
    if (h->AceType != ACCESS_ALLOWED_ACE_TYPE && h->AceType != ACCESS_ALLOWED_CALLBACK_ACE_TYPE)
      return "its DACL holds an access-allowed ACE of a kind hpak does not read (type " + std::to_string(h->AceType) + ")";
    auto* ace = reinterpret_cast<ACCESS_ALLOWED_ACE*>(h); // the callback ACE starts the same way
    PSID sid = &ace->SidStart;
    if ((ace->Mask & kChanging) && !trusted(sid, me)) return shown(sid) + " may write it (its DACL allows it)";
  }
  return "";
}

// A handle of the same file with READ_CONTROL (hpak's opens do not ask for it):
// ReOpenFile, an open relative to the handle with no name, never by path.
struct Reopened {
  HANDLE h;
  explicit Reopened(HANDLE of)
      : h(ReOpenFile(of, READ_CONTROL, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)) {}
  ~Reopened() {
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
  }
};

} // namespace

std::string not_private_why(int fd, Mode) {
  HANDLE of = win::handle_of(fd);
  if (of == INVALID_HANDLE_VALUE) return "it is not open";
  Reopened r(of);
  if (r.h == INVALID_HANDLE_VALUE) return "it cannot be opened to read its security descriptor (Windows error " + std::to_string(GetLastError()) + ")";
  HANDLE h = r.h;
  PSID owner = nullptr;
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR sd = nullptr;
  DWORD rc = GetSecurityInfo(h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION, &owner, nullptr, &dacl,
                             nullptr, &sd);
  if (rc != ERROR_SUCCESS) return "its security descriptor cannot be read (Windows error " + std::to_string(rc) + ")";
  std::unique_ptr<void, LocalFree_> guard(sd);
  std::unique_ptr<BYTE[]> me;
  if (!token_user(me)) return "this process's user cannot be read (Windows error " + std::to_string(GetLastError()) + ")";
  PSID me_sid = reinterpret_cast<TOKEN_USER*>(me.get())->User.Sid;
  if (!owner || !trusted(owner, me_sid)) return "it belongs to " + (owner ? shown(owner) : std::string("no one")) + ", not to this user";
  if (!dacl) return "it has no DACL (anyone may do anything to it)";
  return foreign_writer(dacl, me_sid);
}

} // namespace hpak::os
