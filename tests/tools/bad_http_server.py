#!/usr/bin/env python3
"""A small HTTP server that serves a directory the way real servers misbehave
(tests/cli/test_remote.sh). Listens on 127.0.0.1, port chosen by the kernel and
written to --port-file. Every request is logged to --log as "PATH RANGE STATUS".

Modes (--mode), applied to files under packs/ only unless said otherwise:
  ok        ranges served properly (206)
  full200   Range ignored: 200 with the whole file
  short     first attempt of each (path, range): a 206 cut off half-way
  reset     first attempt of each (path, range): connection reset, no answer
  503       first two attempts of each (path, range): 503
  429       first attempt of each (path, range): 429 with Retry-After: 1
  redirect  every path (root too) answered 302 to /r/PATH, served there
  slow      first attempt of each (path, range): no byte for 30 s
  corrupt   .hpak bodies with one byte flipped (every attempt)
  gone      .hpak files: 404
  stale     the first GET of HPAKROOT answered with HPAKROOT.stale
  failafter N .hpak range requests after the first N: 500 (every attempt)
  zeros     .hidx files: 200 claiming 10^12 bytes, then zeros until the client
            hangs up (a root that claims such an index is the test's)
  zeropack  .hpak range requests: 206 for the range asked, all zeros (the
            root and index are the test's, naming a pack of any size)
  trickle   HPAKROOT (only): its bytes at 2 per second
  offsite   every path answered 302 to --redirect-to + PATH (another origin)
With --log-headers each log line also says whether the request carried an
Authorization and an x-amz-security-token header ("auth=1 token=0").
With --tls CERT KEY it serves https.
"""
import argparse, os, socket, struct, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True)
ap.add_argument("--mode", default="ok")
ap.add_argument("--after", type=int, default=0)
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--redirect-to", default="")
ap.add_argument("--log-headers", action="store_true")
ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
args = ap.parse_args()

lock = threading.Lock()
attempts = {}
served_packs = [0]


def first_attempts(key, n):
    with lock:
        attempts[key] = attempts.get(key, 0) + 1
        return attempts[key] <= n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def log(self, status):
        extra = ""
        if args.log_headers:
            auth = int("Authorization" in self.headers)
            token = int("x-amz-security-token" in self.headers)
            extra = f" auth={auth} token={token}"
        with lock, open(args.log, "a") as f:
            f.write(f"{self.path} {self.headers.get('Range', '-')} {status}{extra}\n")

    def send(self, status, body=b"", headers=(), length=None):
        self.log(status)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path
        mode = args.mode
        if mode == "redirect":
            if not path.startswith("/r/"):
                return self.send(302, headers=[("Location", "/r" + path)])
            path = path[2:]
        if mode == "offsite":
            return self.send(302, headers=[("Location", args.redirect_to + path)])
        rel = os.path.normpath(path.lstrip("/"))
        if rel.startswith("..") or os.path.isabs(rel):
            return self.send(403)
        if mode == "stale" and rel == "HPAKROOT" and first_attempts("root", 1):
            rel = "HPAKROOT.stale"
        if mode == "zeros" and rel.startswith("packs/") and rel.endswith(".hidx"):
            return self.stream_zeros()  # whether or not there is such a file
        if mode == "zeropack" and rel.startswith("packs/") and rel.endswith(".hpak") and self.headers.get("Range"):
            return self.stream_zeros(self.headers.get("Range"))
        full = os.path.join(args.root, rel)
        if not os.path.isfile(full):
            return self.send(404)
        with open(full, "rb") as f:
            data = f.read()
        is_pack = rel.startswith("packs/")
        rng = self.headers.get("Range")
        key = (path, rng)
        if mode == "trickle" and rel == "HPAKROOT":
            return self.trickle(data)
        if is_pack and mode == "gone" and rel.endswith(".hpak"):
            return self.send(404)
        if is_pack and mode == "503" and first_attempts(key, 2):
            return self.send(503, b"busy")
        if is_pack and mode == "429" and first_attempts(key, 1):
            return self.send(429, b"slow down", headers=[("Retry-After", "1")])
        if is_pack and mode == "reset" and first_attempts(key, 1):
            self.log("reset")
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if is_pack and mode == "slow" and first_attempts(key, 1):
            self.log("slow")
            time.sleep(30)
            return
        if is_pack and mode == "corrupt" and rel.endswith(".hpak"):
            data = bytearray(data)
            if rng:
                start = int(rng.split("=")[1].split("-")[0])
                # flip the last byte of the range: inside an object's payload
                end = min(int(rng.split("-")[1]), len(data) - 1)
                data[end] ^= 0x40
            else:
                data[len(data) // 2] ^= 0x40
            data = bytes(data)
        if is_pack and mode == "failafter" and rel.endswith(".hpak") and rng:
            with lock:
                served_packs[0] += 1
                over = served_packs[0] > args.after
            if over:
                return self.send(500, b"broken")
        if rng and mode != "full200":
            start_s, end_s = rng.split("=")[1].split("-")
            start, end = int(start_s), min(int(end_s), len(data) - 1)
            body = data[start:end + 1]
            headers = [("Content-Range", f"bytes {start}-{end}/{len(data)}")]
            if is_pack and mode == "short" and first_attempts(key, 1):
                self.send(206, body[: len(body) // 2], headers=headers, length=len(body))
                self.close_connection = True
                return
            return self.send(206, body, headers=headers)
        return self.send(200, data)


    def stream_zeros(self, rng=None):
        self.log("zeros")
        length = 10**12
        if rng:
            start, end = (int(x) for x in rng.split("=")[1].split("-"))
            length = end - start + 1
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{10**12}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        chunk = bytes(1 << 16)
        try:
            while length > 0:
                n = min(length, len(chunk))
                self.wfile.write(chunk[:n])
                length -= n
        except OSError:
            self.close_connection = True

    def trickle(self, data):
        self.log("trickle")
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(0, len(data), 2):
                self.wfile.write(data[i:i + 2])
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            self.close_connection = True


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
if args.tls:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.tls[0], args.tls[1])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
