"""A loopback Hugging Face hub and file server for `vlmlens data` tests.

It speaks the subset of the hub's HTTP API that `huggingface_hub` uses to download a dataset repository:

- `GET /api/datasets/{repo}/revision/{rev}`: the repo info (`id`, `sha`, `siblings`);
- `GET /api/datasets/{repo}/tree/{rev}?recursive=True`: the file listing (`type`, `path`, `size`, `oid`);
- `HEAD|GET /datasets/{repo}/resolve/{rev}/{path}`: the file, with `X-Repo-Commit`, `ETag` and `Range` support;

and serves plain files under `/files/{path}` (HTTPS sources, yt-dlp's generic extractor), also with `Range`.
Every body byte it sends is counted in `sent[path]`, so a test can measure what a resumed download fetched twice.
`delay` (seconds per `block` bytes) slows the transfer so that a test can kill a client midway.
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class HubServer:
    def __init__(self, root, repo: str, commit: str = "0123456789abcdef0123456789abcdef01234567", files_root=None):
        self.root, self.repo, self.commit = Path(root), repo, commit
        self.files_root = Path(files_root) if files_root else None
        self.sent = defaultdict(int)                 # path -> body bytes sent
        self.requests: list[tuple[str, str, str | None]] = []   # (method, path, Range header)
        self.delay, self.block = 0.0, 64 * 1024
        self.missing: set[str] = set()               # /files/ paths answered 404 (a removed video)
        self._lock = threading.Lock()
        self._oids: dict = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def setup(self):
                super().setup()
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # no Nagle stall between headers and body
            def do_HEAD(self): outer._handle(self, head=True)
            def do_GET(self): outer._handle(self, head=False)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None                # a client killed mid-transfer is expected here
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str: return f"http://127.0.0.1:{self.httpd.server_port}"

    def __enter__(self): self.thread.start(); return self
    def __exit__(self, *a): self.httpd.shutdown(); self.httpd.server_close()

    def repo_files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    # -- handlers ---------------------------------------------------------------------------------------------------
    def _json(self, h, obj, status=200):
        body = json.dumps(obj).encode()
        h.send_response(status); h.send_header("Content-Type", "application/json"); h.send_header("Content-Length", str(len(body)))
        h.end_headers(); h.wfile.write(body)

    def _handle(self, h, head: bool):
        path = unquote(urlparse(h.path).path)
        with self._lock: self.requests.append((h.command, path, h.headers.get("Range")))
        api = f"/api/datasets/{self.repo}/"
        if path.startswith(api + "revision/"):
            return self._json(h, {"id": self.repo, "sha": self.commit, "private": False,
                                  "siblings": [{"rfilename": f} for f in self.repo_files()]})
        if path.startswith(api + "tree/"):
            return self._json(h, [{"type": "file", "path": f, "size": (self.root / f).stat().st_size, "oid": self._oid(f)}
                                  for f in self.repo_files()])
        m = re.match(rf"^/datasets/{re.escape(self.repo)}/resolve/[^/]+/(.+)$", path)
        if m: return self._file(h, self.root / m.group(1), m.group(1), head, hub=True)
        if path.startswith("/files/") and self.files_root is not None:
            rel = path[len("/files/"):]
            if rel in self.missing: return self._json(h, {"error": "gone"}, 404)
            return self._file(h, self.files_root / rel, rel, head, hub=False)
        self._json(h, {"error": f"no route {path}"}, 404)

    def _oid(self, f: str) -> str:
        "The file's git blob id stand-in (sha1 of its bytes), computed once per size and mtime."
        st = (self.root / f).stat()
        key = (f, st.st_size, st.st_mtime_ns)
        if key not in self._oids: self._oids[key] = hashlib.sha1((self.root / f).read_bytes()).hexdigest()
        return self._oids[key]

    def _file(self, h, p: Path, rel: str, head: bool, hub: bool):
        if not p.is_file(): return self._json(h, {"error": "Entry not found"}, 404)
        data = p.read_bytes()
        start, status = 0, 200
        rng = h.headers.get("Range")
        if rng and (m := re.match(r"bytes=(\d+)-", rng)):
            start = int(m.group(1))
            if start >= len(data):
                h.send_response(416); h.send_header("Content-Range", f"bytes */{len(data)}"); h.send_header("Content-Length", "0")
                return h.end_headers()
            status = 206
        body = data[start:]
        h.send_response(status)
        h.send_header("Content-Type", "video/mp4" if p.suffix == ".mp4" else "application/octet-stream")
        h.send_header("Content-Length", str(len(body))); h.send_header("Accept-Ranges", "bytes")
        h.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
        if status == 206: h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if hub: h.send_header("X-Repo-Commit", self.commit)
        h.end_headers()
        if head: return
        try:
            for i in range(0, len(body), self.block):
                piece = body[i:i + self.block]
                h.wfile.write(piece); h.wfile.flush()
                with self._lock: self.sent[rel] += len(piece)
                if self.delay: time.sleep(self.delay)
        except (BrokenPipeError, ConnectionResetError): pass
