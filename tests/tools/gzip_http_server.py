#!/usr/bin/env python3
"""A file server that compresses its answers the way Apache does with
mod_deflate forced (tests/cli/test_remote_servers.sh): ranges honoured (206
with the slice asked for), every 200 and 206 body gzipped and sent with
Content-Encoding: gzip, whatever the request's Accept-Encoding says. With
--honour-identity it sends the bytes as they are to a request whose
Accept-Encoding is exactly "identity" (a server that honours it), and gzips
the others (no Accept-Encoding header means any encoding, RFC 9110 12.5.3).
Listens on 127.0.0.1, port chosen by the kernel and written to --port-file.
Every request is logged to --log as "PATH RANGE ACCEPT-ENCODING STATUS ENCODING".
"""
import argparse, gzip, os, re, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--honour-identity", action="store_true")
args = ap.parse_args()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, extra=()):
        accept = self.headers.get("Accept-Encoding", "-")
        encoding = "identity" if args.honour_identity and accept.strip() == "identity" else "gzip"
        if encoding == "gzip" and status in (200, 206):
            body = gzip.compress(body)
        with lock, open(args.log, "a") as f:
            f.write(f"{self.path} {self.headers.get('Range', '-')} {accept} {status} {encoding}\n")
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        if encoding == "gzip" and status in (200, 206):
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        rel = self.path.split("?")[0].lstrip("/")
        path = os.path.join(args.root, rel)
        if ".." in rel.split("/") or not os.path.isfile(path):
            self.answer(404, b"not found\n")
            return
        with open(path, "rb") as f:
            data = f.read()
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if not m:
            self.answer(200, data)
            return
        start = int(m.group(1))
        end = min(int(m.group(2)) + 1 if m.group(2) else len(data), len(data))
        if start >= end:
            self.answer(416, b"", [("Content-Range", f"bytes */{len(data)}")])
            return
        self.answer(206, data[start:end], [("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")])


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
server.serve_forever()
