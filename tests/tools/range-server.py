#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small HTTP server on 127.0.0.1 for the remote-checkpoint tests (tests/cli/tst_remote.cpp).

Serves the files under --root (read-only, nothing outside it) on a port the kernel picks, and
prints that port on its first line of output. The first path segment says how it behaves:

  /ok/PATH       honours Range requests (206 with Content-Range), as S3, GCS and the Hub's CDN do
  /norange/PATH  ignores Range: 200 and the whole file
  /drop/PATH     honours Range, announces the whole body, then closes the connection half-way
  /lie/PATH      honours Range, but its Content-Length says 100 bytes fewer than the body it sends
  /slow/PATH     honours Range, 1 KiB of body every 0.1 s (for the app's Cancel)
  /stats         JSON: {"requests": N, "body_bytes": N} served so far (what the client really read)

It binds the loopback address only; no test touches any other address.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATS = {"requests": 0, "body_bytes": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."

    def log_message(self, *args):  # quiet: the test reads stdout for the port only
        pass

    def _file(self):
        parts = self.path.split("?", 1)[0].lstrip("/").split("/", 1)
        if len(parts) != 2 or parts[0] not in ("ok", "norange", "drop", "lie", "slow"):
            return None, None
        mode, rest = parts
        real_root = os.path.realpath(self.root)
        path = os.path.realpath(os.path.join(real_root, rest))
        if not path.startswith(real_root + os.sep) or not os.path.isfile(path):
            return mode, None
        return mode, path

    def _send_plain(self, status, text):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self):
        with LOCK:
            STATS["requests"] += 1
        if self.path.startswith("/stats"):
            with LOCK:
                self._send_plain(200, json.dumps(STATS))
            return
        mode, path = self._file()
        if path is None:
            self._send_plain(404, "not found\n")
            return
        size = os.path.getsize(path)
        first, last, partial = 0, size - 1, False
        header = self.headers.get("Range")
        if header and mode != "norange":
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", header.strip())
            if not match:
                self._send_plain(416, "bad range\n")
                return
            first = int(match.group(1))
            last = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
            if first >= size or first > last:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            partial = True
        length = last - first + 1 if size else 0
        self.send_response(206 if partial else 200)
        self.send_header("Accept-Ranges", "none" if mode == "norange" else "bytes")
        if partial:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        announced = length
        if mode == "lie":
            announced = max(length - 100, 0)
            self.send_header("Connection", "close")
            self.close_connection = True
        if mode == "drop":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Length", str(announced))
        self.send_header("ETag", '"%x-%x"' % (size, int(os.path.getmtime(path))))
        self.end_headers()
        if self.command == "HEAD":
            return
        to_send = length // 2 if mode == "drop" else length
        with open(path, "rb") as f:
            f.seek(first)
            remaining = to_send
            try:
                while remaining > 0:
                    chunk = f.read(min(remaining, 1024 if mode == "slow" else 1 << 20))
                    if not chunk:
                        break
                    if mode == "slow":
                        time.sleep(0.1)
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    remaining -= len(chunk)
                    with LOCK:
                        STATS["body_bytes"] += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return
        if mode == "drop":
            self.wfile.flush()
            self.connection.shutdown(2)
            self.close_connection = True

    do_GET = _serve
    do_HEAD = _serve


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    Handler.root = args.root
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
