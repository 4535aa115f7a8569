"""A loopback Hugging Face hub and file server for `vlmlens data` tests.

It speaks the subset of the hub's HTTP API that `huggingface_hub` uses to download a dataset repository:

- `GET /api/datasets/{repo}/revision/{rev}`: the repo info (`id`, `sha`, `siblings`) of `main`, a commit or a commit prefix
  (`history` holds older commits' trees); an unknown revision is a 404 with `X-Error-Code: RevisionNotFound`;
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
    def __init__(self, root, repo: str, commit: str = "0123456789abcdef0123456789abcdef01234567", files_root=None,
                 history: dict | None = None):
        self.root, self.repo, self.commit = Path(root), repo, commit
        self.trees = {commit: self.root, **{c: Path(r) for c, r in (history or {}).items()}}   # commit -> its tree; `main` is `commit`
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

    def repo_files(self, root=None) -> list[str]:
        root = Path(root or self.root)
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())

    def resolve(self, rev: str) -> str | None:
        "The commit a revision names: `main`, a full commit or a prefix of one (the hub resolves prefixes); None when none."
        if rev == "main": return self.commit
        hits = [c for c in self.trees if c.startswith(rev)] if len(rev) >= 7 else []
        return hits[0] if len(hits) == 1 else None

    # -- handlers ---------------------------------------------------------------------------------------------------
    def _json(self, h, obj, status=200, headers: dict | None = None):
        body = json.dumps(obj).encode()
        h.send_response(status); h.send_header("Content-Type", "application/json"); h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items(): h.send_header(k, v)
        h.end_headers(); h.wfile.write(body)

    def _handle(self, h, head: bool):
        path = unquote(urlparse(h.path).path)
        with self._lock: self.requests.append((h.command, path, h.headers.get("Range")))
        api = f"/api/datasets/{self.repo}/"
        m = re.match(rf"^{re.escape(api)}(revision|tree)/([^/]+)", path)
        if m:
            sha = self.resolve(m.group(2))
            if sha is None:                  # the hub's answer to an unknown revision (huggingface_hub: RevisionNotFoundError)
                return self._json(h, {"error": f"Invalid rev id: {m.group(2)}"}, 404, {"X-Error-Code": "RevisionNotFound"})
            root = self.trees[sha]
            if m.group(1) == "revision":
                return self._json(h, {"id": self.repo, "sha": sha, "private": False,
                                      "siblings": [{"rfilename": f} for f in self.repo_files(root)]})
            return self._json(h, [{"type": "file", "path": f, "size": (root / f).stat().st_size, "oid": self._oid(root, f)}
                                  for f in self.repo_files(root)])
        m = re.match(rf"^/datasets/{re.escape(self.repo)}/resolve/([^/]+)/(.+)$", path)
        if m:
            sha = self.resolve(m.group(1))
            if sha is None: return self._json(h, {"error": "Revision not found"}, 404, {"X-Error-Code": "RevisionNotFound"})
            return self._file(h, self.trees[sha] / m.group(2), m.group(2), head, hub=True, commit=sha)
        if path.startswith("/files/") and self.files_root is not None:
            rel = path[len("/files/"):]
            if rel in self.missing: return self._json(h, {"error": "gone"}, 404)
            return self._file(h, self.files_root / rel, rel, head, hub=False)
        self._json(h, {"error": f"no route {path}"}, 404)

    def _oid(self, root: Path, f: str) -> str:
        "The file's git blob id stand-in (sha1 of its bytes), computed once per size and mtime."
        st = (root / f).stat()
        key = (str(root), f, st.st_size, st.st_mtime_ns)
        if key not in self._oids: self._oids[key] = hashlib.sha1((root / f).read_bytes()).hexdigest()
        return self._oids[key]

    def _file(self, h, p: Path, rel: str, head: bool, hub: bool, commit: str | None = None):
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
        if hub: h.send_header("X-Repo-Commit", commit or self.commit)
        h.end_headers()
        if head: return
        try:
            for i in range(0, len(body), self.block):
                piece = body[i:i + self.block]
                h.wfile.write(piece); h.wfile.flush()
                with self._lock: self.sent[rel] += len(piece)
                if self.delay: time.sleep(self.delay)
        except (BrokenPipeError, ConnectionResetError): pass


# -- InfiniBench's hub release, as published ----------------------------------------------------------------------
# Evidence for every file below:
# - KerolosAtef/lmms-eval, lmms_eval/tasks/infinibench/utils.py @887fbb51fc764a003f61aa9943d77730053b9158: rows by
#   split from the hub dataset Vision-CAIR/InfiniBench, fields question_id, skill_name, split, video_path_mp4,
#   video_subtitles, question, options (a Python-literal string: ast.literal_eval), answer_idx, answer; validation rows
#   say split "dev"; videos are `{split}/{split}_videos.tar.gz.part_*`, concatenated in order, opened with
#   tarfile.open(path, "r") (compression detected) and unpacked into `<cache>/<split>/`, where video_path_mp4 and
#   video_subtitles are joined (TV_shows/videos/<show>/season_N/episode_M.mp4, TV_shows/subtitles/…, Movies/videos/…).
# - same repository @0b1b3f5 ("removed test config as test doesn't have GT"); utils.py infinibench_doc_to_target
#   returns "" for the test split: test rows carry no answer, and their MCQ rows no options.
# - hub dataset card @d04d214 lists train/train.csv, test/test.csv, validation/validation.csv; on main,
#   validation/validation.csv was deleted in commit 73fead8 and validation/skills_json/ holds the 8 skill files.
IB_PINNED = "73fead8" + "0" * 33          # the commit vlmlens pins (the hub resolves the 7-digit prefix)
IB_OLDER = "d04d214" + "0" * 33           # the card's commit: validation/validation.csv still there
IB_COLUMNS = ["question_id", "skill_name", "split", "video_path_mp4", "video_subtitles", "question", "options", "answer_idx", "answer"]
IB_EPISODE = ("TV_shows/videos/bbt/season_1/episode_1.mp4", "TV_shows/subtitles/bbt/season_1/episode_1.srt")
IB_MOVIE = ("Movies/videos/tt0120338.mp4", "Movies/subtitles/tt0120338.srt")
IB_SKILL_FILES = ("global_appearance", "scene_transitions", "character_actions", "choronological_understanding",
                  "summarization", "deep_context_understanding", "spoiler_questions", "linking_multiple_events")


def _ib_row(qid, skill, split, media, question, options="", answer_idx="", answer=""):
    return dict(zip(IB_COLUMNS, (qid, skill, split, media[0], media[1], question, options, answer_idx, answer)))


def ib_rows(split: str) -> list[dict]:
    "The rows of one split: the test split without answers (and its MCQ rows without options), the others with them."
    s = "dev" if split == "validation" else split
    if split == "test":
        return [_ib_row(1, "global_appearance", s, IB_EPISODE, "What is the correct sequence of Sheldon's outfits?"),
                _ib_row(2, "character_actions", s, IB_EPISODE, "What is the correct order of Penny's actions?"),
                _ib_row(3, "summarization", s, IB_EPISODE, "Please provide a very detailed summary of the video."),
                _ib_row(4, "spoiler_questions", s, IB_MOVIE, "How does the movie end?")]
    rows = [_ib_row(10, "global_appearance", s, IB_EPISODE, "What is the correct sequence of Sheldon's outfits?",
                    "['red shirt, blue jacket', 'blue jacket, red shirt', \"I don't know\"]", 0, "red shirt, blue jacket"),
            _ib_row(11, "character_actions", s, IB_EPISODE, "What is the correct order of Penny's actions?",
                    "[['answers the phone', 'bakes a cake'], ['bakes a cake', 'answers the phone'], \"I don't know\"]", 1,
                    "['bakes a cake', 'answers the phone']"),
            _ib_row(12, "scene_transitions", s, IB_EPISODE, "What is the correct sequence of scene transitions?",
                    "[['kitchen', 'office'], ['office', 'kitchen']]", 0, "['kitchen', 'office']"),
            _ib_row(13, "choronological_understanding", s, IB_MOVIE, "In what order do these events happen?",
                    "[['Jack boards', 'the ship sinks'], ['the ship sinks', 'Jack boards']]", 0, "['Jack boards', 'the ship sinks']"),
            _ib_row(14, "summarization", s, IB_EPISODE, "Please provide a very detailed summary of the video.", answer="Sheldon makes tea."),
            _ib_row(15, "deep_context_understanding", s, IB_EPISODE, "Why does Penny bake a cake?", answer="She promised one."),
            _ib_row(16, "spoiler_questions", s, IB_MOVIE, "How does the movie end?", answer="The ship sinks."),
            _ib_row(17, "linking_multiple_events", s, IB_MOVIE, "How are the two events linked?", answer="The iceberg.")]
    return rows if split == "validation" else rows[:3] + rows[4:5]


def _srt_text(lines) -> str:
    return "\r\n".join(f"{i}\r\n00:00:{i:02d},000 --> 00:00:{i:02d},900\r\n{t}\r\n" for i, t in enumerate(lines, 1))


def _write_csv(path: Path, rows, encoding="utf-8"):
    import csv
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, IB_COLUMNS, lineterminator="\r\n"); w.writeheader(); w.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue().encode(encoding))          # "utf-16" writes its byte-order mark first


def ib_media() -> dict:
    "The files a split's video archive holds: a real (tiny) episode and movie, and their subtitles; {relative path: bytes}."
    import tempfile
    from vlmlens import media
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for video, srt in (IB_EPISODE, IB_MOVIE):
            p = Path(tmp) / Path(video).name
            media.write_video(p, [media.frame_code_image(i) for i in range(16)], fps=2)
            out[video], out[srt] = p.read_bytes(), _srt_text(["Sheldon: Hello.", "Penny: Hi."]).encode()
    return out


def build_infinibench_hub(root: Path, parts: int = 3) -> dict:
    "The hub trees at the pinned commit and at the card's older commit; `{commit: tree folder}` and the archives' contents."
    import io
    import shutil
    import tarfile
    pinned, contents = root / "pinned", {}
    for split in ("test", "validation", "train"):
        d = pinned / split
        if split == "test": _write_csv(d / "test.csv", ib_rows(split))
        elif split == "train": _write_csv(d / "train.csv", ib_rows(split), encoding="utf-16")   # a UTF-16 rows file, BOM first
        else:
            (d / "skills_json").mkdir(parents=True)
            for skill in IB_SKILL_FILES:
                (d / "skills_json" / f"{skill}.json").write_text(json.dumps([r for r in ib_rows(split) if r["skill_name"] == skill], indent=1))
        d.mkdir(parents=True, exist_ok=True)
        files, buf = ib_media(), io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w" if split == "validation" else "w:gz") as t:   # validation: a plain tar behind .tar.gz names
            for name, blob in files.items():
                ti = tarfile.TarInfo(name); ti.size = len(blob); t.addfile(ti, io.BytesIO(blob))
        raw, contents[split] = buf.getvalue(), files
        for i in range(parts):
            (d / f"{split}_videos.tar.gz.part_a{chr(97 + i)}").write_bytes(raw[i * len(raw) // parts:(i + 1) * len(raw) // parts])
    older = root / "older"
    shutil.copytree(pinned, older)
    _write_csv(older / "validation" / "validation.csv", ib_rows("validation"))
    return {"root": pinned, "history": {IB_OLDER: older}, "contents": contents}
