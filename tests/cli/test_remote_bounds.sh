#!/usr/bin/env bash
# A remote server is hostile input (issue 27): fetch bounds every byte it is
# sent, every request gets a deadline from its size and a minimum rate, and
# redirects go only where the request's credentials may go. Real servers on
# 127.0.0.1: nginx, and tests/tools/bad_http_server.py misbehaving on purpose.
#  1. a root claiming a 10^12-byte index, then a stream of zeros for it: the
#     fetch fails at once, in bounded memory (peak RSS measured by
#     /usr/bin/time); a root claiming an index larger than its pack can need
#     is refused before any index is asked for; an index that gives an
#     object more bytes than the catalog says is refused;
#  2. the root sent at 2 bytes/s: `--timeout 5 --attempts 1` gives up soon,
#     naming the minimum rate;
#  3. redirects: to another origin refused unless --follow-redirects, from
#     https to http always; the S3 session token and Authorization never
#     reach another host (logged by the server redirected to).
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl openssl; do
  need_tool "$tool"
done
[ -x /usr/bin/time ] || need_tool /usr/bin/time
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache
asan=0
if grep -qa -e __asan_init -e AddressSanitizer "$hpak"; then asan=1; fi

make_tree "$work/src" 40 5
run pack pack "$work/src" --into "$work/lib" --name env1 --no-relocate
expect_rc pack 0
www=$work/www
run pub publish "$work/lib" "$www/pub"
expect_rc pub 0
start_nginx "$www" "$work/nginx" || fail "nginx did not start"
digest=$(sed -n 's/^catalog env1 //p' "$www/pub/HPAKROOT")
pack=$(sed -n 's/^pack \(pack-[0-9a-f]*\.hpak\) .*/\1/p' "$www/pub/HPAKROOT" | sed -n 1p)

# --- 1. an index of 10^12 bytes, streamed as zeros -----------------------------
# rss_run NAME ARGS...: run, under /usr/bin/time -v (peak RSS in $rss_kb) and a
# 2 GiB address-space limit (not under ASan), killed after 120 s.
rss_run() {
  local name=$1
  shift
  rc=0
  (
    [ "$asan" = 1 ] || ulimit -v $((2 * 1024 * 1024))
    exec /usr/bin/time -v -o "$work/$name.time" timeout -s KILL 120 "$hpak" "$@"
  ) >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
  rss_kb=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$work/$name.time")
  [ -n "$rss_kb" ] || fail "$name: no peak RSS from /usr/bin/time: $(cat "$work/$name.time")"
}
mkdir -p "$www/bomb"
zeros=$(printf '%064d' 0)
printf 'hpak-remote 1\ngeneration 1\npack %s 1000000000000 %s 1000000000000\ncatalog env1 %s\nend\n' \
  "$pack" "$zeros" "$digest" >"$www/bomb/HPAKROOT"
start_bad zeros "$www/bomb" "$work/bomb.log" || fail "test server did not start"
rss_run bomb fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_bomb" --attempts 1 --timeout 5
[ "$rc" -ne 137 ] || fail "bomb: killed (hung, or out of its address space): $(head -c 500 "$work/bomb.err")"
refused bomb "index '.*pack-.*\.hidx' is not the index the root describes"
grep -q "\.hidx - zeros" "$work/bomb.log" || fail "bomb: the index was not asked for: $(cat "$work/bomb.log")"
limit=$([ "$asan" = 1 ] && echo 400000 || echo 100000)
[ "$rss_kb" -lt "$limit" ] || fail "bomb: peak RSS $rss_kb kB (more than $limit kB) for a stream of zeros"
echo "ok: an index bomb fails at its header, peak RSS $rss_kb kB"
# An index larger than its pack could need: refused before asking for it.
mkdir -p "$www/bomb2"
printf 'hpak-remote 1\ngeneration 1\npack %s 1000 %s 1000000000000\ncatalog env1 %s\nend\n' "$pack" "$zeros" "$digest" >"$www/bomb2/HPAKROOT"
start_bad zeros "$www/bomb2" "$work/bomb2.log" || fail "test server did not start"
rss_run bomb2 fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_bomb2" --attempts 1
refused bomb2 "refusing root of .*: it gives pack $pack \(1000 bytes\) an index of 1000000000000 bytes, more than such a pack can need"
if grep -q "\.hidx" "$work/bomb2.log"; then fail "bomb2: the index was asked for: $(cat "$work/bomb2.log")"; fi

# A pack of 10^12 bytes whose index places its catalog at the start and
# nothing after it: the catalog's range is what its size lets its entry
# take, not the rest of the pack, whatever the server then sends (zeros).
mkdir -p "$www/bomb3/packs"
fake=pack-$(printf '%064d' 3).hpak
cat_digest=$(printf '%064d' 4)
"$py" - "$www/bomb3" "$fake" "$cat_digest" <<'PY'
import hashlib, struct, sys
out, name, digest = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
pack_size = 10**12
head = b"HIDX" + struct.pack("<IQQ", 2, 1, pack_size) + bytes(32)
fanout = b"".join(struct.pack("<I", 0 if i < digest[0] else 1) for i in range(256))
record = struct.pack("<QQIBBH", 32, 1000, 0xFFFFFFFF, 2, 0, 0)  # a catalog entry of 1000 bytes at 32
body = head + fanout + digest + record
idx = body + hashlib.sha256(body).digest()
open(f"{out}/packs/{name[:-5]}.hidx", "wb").write(idx)
open(f"{out}/HPAKROOT", "w").write(
    f"hpak-remote 1\ngeneration 1\npack {name} {pack_size} {hashlib.sha256(idx).hexdigest()} {len(idx)}\n"
    f"catalog env1 {digest.hex()}\nend\n")
PY
start_bad zeropack "$www/bomb3" "$work/bomb3.log" || fail "test server did not start"
rss_run bomb3 fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_bomb3" --attempts 1 --timeout 5
[ "$rc" -ne 137 ] || fail "bomb3: killed (hung, or out of its address space): $(head -c 500 "$work/bomb3.err")"
refused bomb3 "object $cat_digest from '.*' \(offset 32\) has a bad entry header: refused, not stored"
grep -q "bytes=32-[0-9]* zeros" "$work/bomb3.log" || fail "bomb3: the catalog was not asked for: $(cat "$work/bomb3.log")"
asked=$(sed -n 's/.*bytes=32-\([0-9]*\) zeros/\1/p' "$work/bomb3.log" | sed -n 1p)
[ "$asked" -lt 100000 ] || fail "bomb3: a range of $asked bytes was asked for a catalog of 1000"
[ "$rss_kb" -lt "$limit" ] || fail "bomb3: peak RSS $rss_kb kB (more than $limit kB)"

# An index that makes an object larger than its catalog says (so that its
# range, held in memory, would be): refused before its range is asked for.
mkdir -p "$www/inflate"
cp -a "$www/pub/packs" "$www/inflate/"
"$py" - "$www/pub/HPAKROOT" "$www/inflate" <<'PY'
import hashlib, struct, sys
root, out = open(sys.argv[1]).read(), sys.argv[2]
lines = root.splitlines(keepends=True)
for i, line in enumerate(lines):
    f = line.split()
    if f[0] != "pack":
        continue
    idx_path = f"{out}/packs/{f[1][:-5]}.hidx"
    b = bytearray(open(idx_path, "rb").read())
    version, count = struct.unpack_from("<IQ", b, 4)
    size = 24 if version == 2 else 40
    for k in range(count):  # the first blob stored as an entry (not in a block)
        rec = 56 + 1024 + 32 * count + size * k
        member = struct.unpack_from("<I", b, rec + 16)[0] if version == 2 else 0xFFFFFFFF
        kind = b[rec + 20] if version == 2 else b[rec + 32]
        if member == 0xFFFFFFFF and kind == 1:
            break
    else:
        sys.exit("no blob entry in " + idx_path)
    struct.pack_into("<Q", b, rec + 8 if version == 2 else rec + 16, 10**12)  # its raw_len
    b[-32:] = hashlib.sha256(b[:-32]).digest()
    open(idx_path, "wb").write(b)
    f[3] = hashlib.sha256(b).hexdigest()
    lines[i] = " ".join(f) + "\n"
    break
open(f"{out}/HPAKROOT", "w").write("".join(lines))
PY
run inflate fetch "http://127.0.0.1:$nginx_port/inflate" env1 --into "$work/c_inflate" --attempts 1
refused inflate "the index of '.*/inflate/packs/pack-.*\.hpak' gives object [0-9a-f]{64} 1000000000000 bytes, catalog 'env1' [0-9]+"

# --- 2. the root at 2 bytes/s ---------------------------------------------------
start_bad trickle "$www/pub" "$work/trickle.log" || fail "test server did not start"
rss_run trickle fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_trickle" --timeout 5 --attempts 1
[ "$rc" -ne 137 ] || fail "trickle: a root sent at 2 bytes/s kept fetch --timeout 5 --attempts 1 alive for 120 s"
refused trickle "unable to fetch '.*/HPAKROOT': slower than the minimum rate \([0-9]+ bytes in [0-9.]+ s; at least 8192 bytes/s after the first 5 s\)"
echo "ok: a root at 2 bytes/s: $(err trickle)"

# --- 3. redirects ---------------------------------------------------------------
# Another origin (another port): refused by default, followed when asked.
start_bad offsite "$www" "$work/off.log" 0 --redirect-to "http://127.0.0.1:$nginx_port" || fail "test server did not start"
off=http://127.0.0.1:$bad_port/pub
run off fetch "$off" env1 --into "$work/c_off" --attempts 1
refused off "unable to fetch '$off/HPAKROOT': refusing its redirect to 'http://127.0.0.1:$nginx_port/pub/HPAKROOT': another origin than http://127.0.0.1:$bad_port"
run off_ok fetch "$off" env1 --into "$work/c_off2" --follow-redirects
expect_rc off_ok 0
# The same origin: followed (the redirect mode of test_remote.sh, here once more).
start_bad redirect "$www/pub" "$work/same.log" || fail "test server did not start"
run same fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_same" --attempts 1
expect_rc same 0
# From https to http: refused, even with --follow-redirects.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.pem" 2>"$work/openssl.err" || fail "openssl: $(cat "$work/openssl.err")"
start_bad offsite "$www" "$work/down.log" 0 --redirect-to "http://127.0.0.1:$nginx_port" --tls "$work/tls.pem" "$work/tls.key" ||
  fail "test server did not start"
for flag in "" --follow-redirects; do
  run down fetch "https://127.0.0.1:$bad_port/pub" env1 --into "$work/c_down" --attempts 1 --cacert "$work/tls.pem" $flag
  refused down "refusing its redirect to 'http://127.0.0.1:$nginx_port/pub/HPAKROOT': from https to http"
done
# S3 with a session token: the endpoint redirects to another host, which logs
# the headers it gets. Nothing reaches it by default; with --follow-redirects
# it gets requests without Authorization and without the token.
mkdir -p "$work/s3/bkt"
cp -a "$www/pub" "$work/s3/bkt/pub"
start_bad ok "$work/s3" "$work/s3other.log" 0 --log-headers || fail "test server did not start"
other=$bad_port
start_bad offsite "$work/s3" "$work/s3ep.log" 0 --log-headers --redirect-to "http://127.0.0.1:$other" || fail "test server did not start"
export AWS_ACCESS_KEY_ID=AKIDHPAKTEST AWS_SECRET_ACCESS_KEY=hpak-secret AWS_SESSION_TOKEN=hpak-session-token AWS_REGION=us-east-1
run s3off fetch s3://bkt/pub env1 --into "$work/c_s3" --s3-endpoint "http://127.0.0.1:$bad_port" --attempts 1
refused s3off "refusing its redirect to 'http://127.0.0.1:$other/bkt/pub/HPAKROOT': another origin"
grep -q "auth=1 token=1" "$work/s3ep.log" || fail "the S3 endpoint did not get a signed request with the token: $(cat "$work/s3ep.log")"
[ ! -s "$work/s3other.log" ] || fail "a refused redirect still reached the other host: $(cat "$work/s3other.log")"
run s3follow fetch s3://bkt/pub env1 --into "$work/c_s3b" --s3-endpoint "http://127.0.0.1:$bad_port" --follow-redirects
expect_rc s3follow 0
[ -s "$work/s3other.log" ] || fail "--follow-redirects did not follow"
if grep -v "auth=0 token=0" "$work/s3other.log"; then fail "credentials reached another host: $(cat "$work/s3other.log")"; fi
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION
echo "$test_name: ok"
