"""A loopback HTTP server that speaks the subset of the OpenAI and Gemini REST APIs vlmlens uses.

Tests point the *real* ``openai`` and ``google-genai`` clients at it (``base_url``), so request
building, response parsing, retries and error mapping are exercised through the same code that
talks to the real services. It lives in ``tests/``, never in the package.

Endpoints
---------
- ``POST /v1/chat/completions``                         OpenAI chat completions (also any OpenAI-compatible server)
- ``POST /{v}/models/{model}:generateContent``            Gemini generateContent (``{v}``: v1, v1beta, ...)
- ``POST /v1/messages``                                 Anthropic Messages API (Claude)
- ``POST /upload/{v}/files``                            Gemini Files API, resumable upload (``X-Goog-Upload-*`` headers):
  ``start`` returns ``X-Goog-Upload-URL``; ``upload[, finalize]`` chunks go to that URL
- ``GET /{v}/files/{id}``                               file metadata; ``state`` is ``PROCESSING`` for the first
  ``processing_polls`` reads, then ``ACTIVE``
- ``DELETE /{v}/files/{id}``                            delete
- ``POST /{v}/cachedContents``                          Gemini explicit context cache: ``model``, ``contents``,
  ``systemInstruction``, ``ttl`` (``"300s"``); refused (400) below ``cache_min_tokens``; answers ``name``,
  ``expireTime`` and ``usageMetadata.totalTokenCount``. ``GET``/``PATCH`` (``ttl``)/``DELETE /{v}/cachedContents/{id}``;
  ``GET /{v}/cachedContents`` lists the live ones.
  A generateContent naming ``cachedContent`` reads it: an unknown or expired cache is a 403 (as the real API answers),
  a live one adds its tokens to ``promptTokenCount`` and reports them as ``cachedContentTokenCount``. Entries expire
  ``ttl`` seconds after creation on ``server.cache_clock`` (replace it, or call ``expire_cached_contents()``);
  ``server.cached_contents`` holds the live ones, ``server.cached_deleted`` the names deleted by clients;
  ``server.cache_create_faults = [503]`` makes the next creation(s) fail with those statuses.

A ``fileData`` part in generateContent must name an existing ACTIVE file, or the server answers 400
like the real API.

Scripting
---------
``server.responder = fn`` where ``fn(call)`` gets a :class:`Call` (``call.api`` is ``"openai"`` or ``"gemini"``,
``call.json`` the request body, ``call.text`` all text parts joined) and returns one of

- ``None``: the default answer (``server.default_text``),
- a ``str``: a successful answer with that text, shaped for the API that was called,
- a ``dict``: a 200 JSON body, sent as is,
- a :class:`Reply`: full control (status, headers, JSON or raw body, extra delay, hang).

``server.script(r1, r2, ...)`` queues replies for the next generation requests, in arrival order
(``None`` in the queue means "default"); the queue is consulted before ``responder``. Helpers build the
common faults: :func:`rate_limited`, :func:`server_error`, :func:`client_error`, :func:`hang`,
:func:`malformed`, :func:`slow_drip` (headers at once, then the body one byte every ``interval`` seconds),
:func:`openai_refusal`, :func:`gemini_blocked`. :class:`FaultMix` is a responder that answers a random share
of requests with 429 + Retry-After, 5xx or a slow drip (the benchmarks' fault mix).

Adding an API: give ``_api_of`` a rule for its path, ``Call.text``/``Call.model`` a branch, and ``_answer`` /
``_error_body`` the API's success and error shapes; the scripting, faults and accounting then work unchanged.

Accounting: ``server.calls`` (every request, with timings), ``server.count(api)``, ``server.max_in_flight``
(generation requests in flight at once), ``server.files``, ``server.uploads``, ``server.deleted``.
``server.prompt_cache = PromptCache("openai" | "gemini" | "anthropic")`` makes the default answers report the
provider's prompt-cache usage fields (prefix matching, minimum length, breakpoints, expiry) for the requests' prompts.
``server.latency`` adds a simulated service time to every generation request.

``LoopbackProcess`` runs the same server in a child process (``python tests/loopback.py --latency 0.2``
prints its URL), for benchmarks where the server's CPU time must not compete with the client's; its
``faults=dict(p429=..., p5xx=..., pdrip=..., retry_after=..., drip=...)`` installs a :class:`FaultMix` there.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import random
import re
import threading
from collections import Counter
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

__all__ = ["Reply", "Call", "LoopbackServer", "LoopbackProcess", "FaultMix", "rate_limited", "server_error", "client_error", "hang",
           "malformed", "slow_drip", "openai_chat", "openai_refusal", "gemini_content", "gemini_blocked",
           "anthropic_message", "anthropic_refusal", "PromptCache"]


@dataclass
class Reply:
    "A scripted HTTP reply. `json=None` with an error status gets the API's error body."
    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0          # extra seconds before replying
    hang: bool = False          # never reply; returns when the client disconnects or the server stops
    text: str | None = None     # a successful answer with this text (shaped for the API)
    retry_info: float | None = None  # Gemini: put a google.rpc.RetryInfo retryDelay (seconds) in the error body
    drip: float = 0.0           # send the headers at once, then the body one byte every `drip` seconds
    drip_bytes: int | None = None  # with `drip`: how many bytes to drip before sending the rest at once (None: all)


@dataclass
class Call:
    "One request the server received."
    api: str                    # "openai", "gemini" or "files"
    method: str
    path: str
    query: dict
    headers: dict
    json: Any
    body_size: int
    t_start: float
    t_end: float | None = None
    status: int | None = None
    cache_usage: dict | None = None   # with a PromptCache: {"prompt", "read", "write"} tokens of this request
    cached_content: Any = None        # Gemini: the explicit context cache the request named (a _CachedContent), if live

    @property
    def text(self) -> str:
        "All text parts of the request, joined by newlines."
        out = []
        if self.api == "openai":
            for m in (self.json or {}).get("messages", []):
                c = m.get("content")
                if isinstance(c, str): out.append(c)
                else: out += [p.get("text", "") for p in c or [] if p.get("type") == "text"]
        elif self.api == "gemini":
            j = self.json or {}
            cc = self.cached_content.body if self.cached_content is not None else {}
            si = _get(j, "systemInstruction") or _get(cc, "systemInstruction") or {}
            out += [p.get("text", "") for p in si.get("parts", []) if "text" in p]
            for c in cc.get("contents", []) + j.get("contents", []):
                out += [p["text"] for p in c.get("parts", []) if "text" in p]
        elif self.api == "anthropic":
            j = self.json or {}
            sys_ = j.get("system")
            out += [sys_] if isinstance(sys_, str) else [b.get("text", "") for b in sys_ or [] if b.get("type") == "text"]
            for m in j.get("messages", []):
                c = m.get("content")
                out += [c] if isinstance(c, str) else [b.get("text", "") for b in c or [] if b.get("type") == "text"]
        return "\n".join(out)

    @property
    def model(self) -> str | None:
        if self.api == "openai": return (self.json or {}).get("model")
        if self.api == "gemini": return self.path.split("/models/", 1)[1].split(":", 1)[0]
        if self.api == "anthropic": return (self.json or {}).get("model")
        return None


def _snake(k: str) -> str: return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), k)

def _get(d: dict, key: str, default=None):
    "A Gemini request field by its camelCase or snake_case name (the SDK sends both spellings)."
    if not isinstance(d, dict): return default
    return d[key] if key in d else d.get(_snake(key), default)


# ----------------------------------------------------------------------------- reply helpers

def rate_limited(retry_after: float | str | None = 1, status: int = 429, retry_info: float | None = None) -> Reply:
    "HTTP 429 with an optional `Retry-After` header (seconds) and, for Gemini, an optional RetryInfo delay in the body."
    return Reply(status, headers={} if retry_after is None else {"Retry-After": str(retry_after)}, retry_info=retry_info)

def server_error(status: int = 500) -> Reply: return Reply(status)
def client_error(status: int = 400, message: str = "bad request") -> Reply: return Reply(status, json={"_message": message})
def hang() -> Reply: return Reply(hang=True)
def malformed(body: str = '{"choices": [ this is not json') -> Reply:
    return Reply(200, body=body, headers={"Content-Type": "application/json"})
def slow_drip(interval: float = 1.5, nbytes: int | None = None, text: str | None = None) -> Reply:
    "A successful answer whose body arrives one byte every `interval` s (the first `nbytes` bytes; then the rest)."
    return Reply(text=text, drip=interval, drip_bytes=nbytes)


class FaultMix:
    "A responder: a random share of requests get 429 + Retry-After, 5xx, or a slow drip; the rest the default answer."

    def __init__(self, p429: float = 0.01, p5xx: float = 0.01, pdrip: float = 0.005, retry_after: float = 2.0,
                 drip: float = 1.5, drip_bytes: int | None = None, seed: int = 0):
        self.p429, self.p5xx, self.pdrip, self.retry_after, self.drip, self.drip_bytes = p429, p5xx, pdrip, retry_after, drip, drip_bytes
        self.rng, self.lock, self.counts = random.Random(seed), threading.Lock(), Counter()

    def __call__(self, call):
        with self.lock:
            x = self.rng.random()
            kind = "429" if x < self.p429 else "5xx" if x < self.p429 + self.p5xx else \
                "drip" if x < self.p429 + self.p5xx + self.pdrip else "ok"
            self.counts[kind] += 1
        if kind == "429": return rate_limited(self.retry_after)
        if kind == "5xx": return server_error(503)
        if kind == "drip": return slow_drip(self.drip, self.drip_bytes)
        return None


def openai_chat(text: str | None, *, prompt_tokens: int = 10, completion_tokens: int | None = None,
                reasoning_tokens: int | None = None, finish_reason: str = "stop", refusal: str | None = None,
                model: str = "loopback", reasoning: str | None = None, reasoning_field: str = "reasoning_content") -> dict:
    """A chat.completion body; `reasoning`: the thinking a server with a reasoning parser returns beside the answer.

    vLLM names the message field `reasoning` (formerly `reasoning_content`; docs.vllm.ai/en/stable/features/
    reasoning_outputs), SGLang `reasoning_content` (docs.sglang.ai, "Reasoning Parser")."""
    ct = completion_tokens if completion_tokens is not None else len((text or "").split()) + (reasoning_tokens or 0)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": ct, "total_tokens": prompt_tokens + ct}
    if reasoning_tokens is not None: usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return {"id": "chatcmpl-loopback", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": text, "refusal": refusal,
                                     **({reasoning_field: reasoning} if reasoning is not None else {})}}],
            "usage": usage}

def openai_refusal(message: str = "I'm sorry, I can't help with that.") -> dict:
    "A chat.completion whose message carries a `refusal` and no content."
    return openai_chat(None, refusal=message, completion_tokens=8)

def gemini_content(text: str | None, *, prompt_tokens: int = 10, candidates_tokens: int | None = None,
                   thoughts_tokens: int | None = None, finish_reason: str = "STOP", model: str = "loopback",
                   thought: str | None = None) -> dict:
    """A GenerateContentResponse body; `thought`: a thought-summary part (`"thought": true`, before the answer part), as
    Gemini returns with `thinkingConfig.includeThoughts` (ai.google.dev/gemini-api/docs/thinking, "Thought summaries")."""
    ct = candidates_tokens if candidates_tokens is not None else len((text or "").split())
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": ct, "totalTokenCount": prompt_tokens + ct + (thoughts_tokens or 0)}
    if thoughts_tokens is not None: usage["thoughtsTokenCount"] = thoughts_tokens
    cand = {"index": 0, "finishReason": finish_reason}
    parts = ([{"text": thought, "thought": True}] if thought is not None else []) + ([{"text": text}] if text is not None else [])
    if parts: cand["content"] = {"role": "model", "parts": parts}
    return {"candidates": [cand], "usageMetadata": usage, "modelVersion": model, "responseId": "loopback"}

def _thoughts_if_asked(request: dict, js: dict) -> dict:
    """Gemini returns thought-summary parts only to a request whose `thinkingConfig.includeThoughts` is true (by default only
    the final answer: ai.google.dev/gemini-api/docs/thinking, "Thought summaries"); drop them from an answer otherwise."""
    tc = _get(_get(request, "generationConfig") or {}, "thinkingConfig") or {}
    if _get(tc, "includeThoughts"): return js
    for c in js.get("candidates") or []:
        parts = (c.get("content") or {}).get("parts")
        if parts: c["content"]["parts"] = [p for p in parts if not p.get("thought")]
        if parts is not None and not c["content"]["parts"]: del c["content"]
    return js

def anthropic_message(text: str | None, *, input_tokens: int = 10, output_tokens: int | None = None, thinking: str | None = None,
                      stop_reason: str = "end_turn", model: str = "loopback") -> dict:
    "A Messages API answer (thinking blocks first, as Claude returns them)."
    content = ([{"type": "thinking", "thinking": thinking, "signature": "loopback"}] if thinking else []) + \
              ([{"type": "text", "text": text}] if text is not None else [])
    ot = output_tokens if output_tokens is not None else len((text or "").split()) + len((thinking or "").split())
    return {"id": "msg_loopback", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": ot}}

def anthropic_refusal() -> dict:
    "A Messages API answer that stopped for a refusal (no text)."
    return anthropic_message(None, output_tokens=0, stop_reason="refusal")

def gemini_blocked(reason: str = "SAFETY") -> dict:
    "A prompt blocked by Gemini's safety filters (no candidates, `promptFeedback.blockReason`)."
    return {"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}}


_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

def _error_body(api: str, status: int, message: str | None = None, retry_info: float | None = None) -> dict:
    msg = message or {429: "Rate limit reached (loopback)", 400: "bad request"}.get(status, f"loopback error {status}")
    if api == "gemini":
        err = {"code": status, "message": msg, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}
        if retry_info is not None: err["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_info:g}s"}]
        return {"error": err}
    if api == "anthropic":
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}
        return {"type": "error", "error": {"type": kind.get(status, "api_error" if status >= 500 else "invalid_request_error"), "message": msg}}
    return {"error": {"message": msg, "type": "rate_limit_error" if status == 429 else "invalid_request_error" if status < 500 else "server_error",
                      "param": None, "code": None}}


# ----------------------------------------------------------------------------- server

_OPENAI_PARTS = {"text": "text", "image_url": "image_url", "video_url": "video_url"}

def _check_openai_media(body: dict) -> str | None:
    "Why a chat-completions body breaks the media schema vLLM documents, or None. Parts: text/image_url/video_url, each a\n"
    "{'url': ...} object (data URLs of the right media type); `media_io_kwargs` {'video': {...}} and `mm_processor_kwargs`\n"
    "objects (vllm-project/vllm docs/features/multimodal_inputs.md; vllm/multimodal/media/video.py VideoMediaIO)."
    for m in body.get("messages", []):
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            kind = part.get("type")
            if kind not in _OPENAI_PARTS: return f"unknown content part type {kind!r}"
            if kind == "text":
                if not isinstance(part.get("text"), str): return "text part without a string 'text'"
                continue
            obj = part.get(kind)
            url = obj.get("url") if isinstance(obj, dict) else None
            if not isinstance(url, str): return f"{kind} part without a {{'url': ...}} object"
            media = kind.split("_")[0]
            if url.startswith("data:") and not url.startswith(f"data:{media}/"): return f"{kind} data URL is not {media}/*"
    mio = body.get("media_io_kwargs")
    if mio is not None and (not isinstance(mio, dict) or not all(isinstance(v, dict) for v in mio.values())):
        return "media_io_kwargs must map a modality to an object"
    if body.get("mm_processor_kwargs") is not None and not isinstance(body["mm_processor_kwargs"], dict):
        return "mm_processor_kwargs must be an object"
    return None


def _api_of(path: str) -> str:
    "Which API a request path belongs to: 'openai', 'gemini' (generateContent), 'anthropic' (Messages) or 'files' (Gemini Files API)."
    if path.endswith("/chat/completions"): return "openai"
    if ":generateContent" in path: return "gemini"
    if "/cachedContents" in path: return "caches"
    if path.endswith("/v1/messages"): return "anthropic"
    return "files"


@dataclass
class _File:
    name: str
    display_name: str | None
    mime_type: str
    data: bytes = b""
    polls: int = 0
    state: str = "PROCESSING"
    create_time: str = ""
    version: str = "v1beta"


def _rfc3339(t: float) -> str: return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


@dataclass
class _CachedContent:
    name: str
    body: dict
    tokens: int
    expires: float


class LoopbackServer:
    "See the module docstring. `with LoopbackServer() as s:` starts it on 127.0.0.1 on a free port."

    def __init__(self, latency: float = 0.0, default_text: str = "A", processing_polls: int = 1, hang_limit_s: float = 60.0):
        self.latency, self.default_text, self.processing_polls, self.hang_limit_s = latency, default_text, processing_polls, hang_limit_s
        self.responder: Callable[[Call], Any] | None = None
        self.prompt_cache: PromptCache | None = None      # a provider's prompt cache behind the default answers
        self._queue: list = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._uploads_pending: dict[str, dict] = {}
        self.port: int | None = None
        self.reset()

    # -- lifecycle
    def start(self) -> "LoopbackServer":
        ready = threading.Event()
        err: list = []

        def main():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._astart())
            except BaseException as e:  # pragma: no cover - surfaced to the caller
                err.append(e); ready.set(); return
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=main, name="loopback-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if err: raise err[0]
        if self.port is None: raise RuntimeError("loopback server did not start within 30 s")
        return self

    async def _astart(self):
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=1024 ** 3)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def stop(self):
        if self._loop is None: return
        self._loop.call_soon_threadsafe(self._stopping.set)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop = None

    def __enter__(self): return self.start()
    def __exit__(self, *exc): self.stop()

    @property
    def url(self) -> str: return f"http://127.0.0.1:{self.port}"
    @property
    def openai_base_url(self) -> str: return self.url + "/v1"
    @property
    def gemini_base_url(self) -> str: return self.url
    @property
    def anthropic_base_url(self) -> str: return self.url

    # -- scripting and accounting
    def reset(self):
        "Forget calls, files, counters, the script queue and the responder."
        with self._lock:
            self.calls: list[Call] = []
            self.in_flight = 0
            self.max_in_flight = 0
            self.files: dict[str, _File] = {}
            self.uploads = 0
            self.deleted: list[str] = []
            self._queue = []
            self.responder = None
            self.prompt_cache = None
            self.cached_contents: dict[str, _CachedContent] = {}
            self.cache_min_tokens, self.cache_clock = 1024, time.monotonic   # explicit caches: minimum size, clock for expiry
            self.cache_create_faults: list[int] = []      # statuses the next cachedContents creations answer with, in order
            self.cached_deleted: list[str] = []

    def script(self, *replies):
        "Queue replies for the next generation requests (arrival order); `None` means the default answer."
        with self._lock: self._queue.extend(replies)

    def count(self, api: str | None = None) -> int:
        "Number of requests received (for one api: 'openai', 'gemini', 'files')."
        with self._lock: return sum(1 for c in self.calls if api is None or c.api == api)

    def requests(self, api: str | None = None) -> list[Call]:
        with self._lock: return [c for c in self.calls if api is None or c.api == api]

    # -- request handling
    def stats(self) -> dict:
        "Counters as JSON (also served at GET /_loopback/stats)."
        with self._lock:
            counts: dict = {}
            for c in self.calls: counts[c.api] = counts.get(c.api, 0) + 1
            statuses = Counter(str(c.status) for c in self.calls if c.api != "files")
            faults = dict(getattr(self.responder, "counts", {}) or {})
            return {"counts": counts, "max_in_flight": self.max_in_flight, "uploads": self.uploads, "deleted": list(self.deleted),
                    "statuses": dict(statuses), "faults": faults}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/_loopback/"):                  # control endpoints for a server in another process
            if path == "/_loopback/reset" and request.method == "POST":
                self.reset(); return web.json_response({})
            if path == "/_loopback/stats": return web.json_response(self.stats())
        if request.method == "GET" and path.endswith("/models"):   # the reachability check a run makes first: not a call
            return web.json_response({"object": "list", "data": []})
        raw = await request.read()
        api = _api_of(path)
        body = None
        if raw and api != "files" or (api == "files" and request.headers.get("X-Goog-Upload-Command", "") == "start"):
            try: body = json.loads(raw) if raw else None
            except ValueError: return web.json_response(_error_body(api if api != "files" else "gemini", 400, "body is not JSON"), status=400)
        call = Call(api, request.method, path, dict(request.query), dict(request.headers), body, len(raw), time.monotonic())
        with self._lock: self.calls.append(call)
        if api == "files":
            resp = await self._files(request, raw, body)
        elif api == "caches":
            resp = self._caches(request, body)
        else:
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                resp = await self._generate(request, call)
            finally:
                with self._lock: self.in_flight -= 1
        call.t_end, call.status = time.monotonic(), resp.status
        return resp

    def _choose(self, call: Call):
        with self._lock:
            if self._queue: return self._queue.pop(0) or (self.responder(call) if self.responder else None)
        return self.responder(call) if self.responder else None

    async def _generate(self, request: web.Request, call: Call) -> web.StreamResponse:
        if self.latency: await asyncio.sleep(self.latency)
        if call.api == "gemini":
            missing = self._check_gemini_files(call.json or {})
            if missing: return web.json_response(_error_body("gemini", 400, missing), status=400)
            name = _get(call.json or {}, "cachedContent")
            if name:
                cc = self.cached_contents.get(name)
                if cc is None or cc.expires <= self.cache_clock():
                    return web.json_response(_error_body("gemini", 403, "CachedContent not found (or permission denied)"), status=403)
                call.cached_content = cc
        if call.api == "openai":
            bad = _check_openai_media(call.json or {})
            if bad: return web.json_response(_error_body("openai", 400, bad), status=400)
        r = self._choose(call)
        if r is None: r = Reply(text=self.default_text)
        elif isinstance(r, str): r = Reply(text=r)
        elif isinstance(r, dict): r = Reply(json=r)
        if r.delay: await asyncio.sleep(r.delay)
        if r.hang:
            t0 = time.monotonic()
            while time.monotonic() - t0 < self.hang_limit_s and not self._stopping.is_set():
                if request.transport is None or request.transport.is_closing(): break
                await asyncio.sleep(0.02)
            return web.Response(status=504, text="hung request ended")
        if r.body is not None:
            body, headers = (r.body.encode() if isinstance(r.body, str) else r.body), dict(r.headers)
        else:
            js = r.json
            if js is None and (r.text is not None or r.drip and r.status < 400):
                js = self._answer(call, r.text if r.text is not None else self.default_text)
            if js is None or (r.status >= 400 and "_message" in js):
                js = _error_body(call.api, r.status, (js or {}).get("_message"), r.retry_info)
            if call.api == "gemini": js = _thoughts_if_asked(call.json or {}, js)
            body, headers = json.dumps(js).encode(), {"Content-Type": "application/json", **r.headers}
        if r.drip: return await self._drip(request, r, body, headers)
        return web.Response(status=r.status, body=body, headers=headers)

    async def _drip(self, request: web.Request, r: Reply, body: bytes, headers: dict) -> web.StreamResponse:
        "Headers at once, then the body one byte every `r.drip` seconds (stops when the client goes away)."
        resp = web.StreamResponse(status=r.status, headers=headers)
        resp.content_length = len(body)
        await resp.prepare(request)
        n = len(body) if r.drip_bytes is None else min(len(body), r.drip_bytes)
        try:
            for k in range(n):
                await resp.write(body[k:k + 1])
                t0 = time.monotonic()
                while time.monotonic() - t0 < r.drip:
                    if self._stopping.is_set() or request.transport is None or request.transport.is_closing(): return resp
                    await asyncio.sleep(min(0.02, r.drip))
            await resp.write(body[n:])
            await resp.write_eof()
        except (ConnectionResetError, ConnectionError, RuntimeError):
            pass
        return resp

    def _answer(self, call: Call, text: str) -> dict:
        "A deterministic successful answer; token counts are derived from the request size (the prompt's, with a prompt cache)."
        if self.prompt_cache is not None: return self._answer_with_context(call, self._cached_answer(call, text))
        n_in = max(1, call.body_size // 4)
        if call.api == "openai": return openai_chat(text, prompt_tokens=n_in, model=call.model or "loopback")
        if call.api == "anthropic": return anthropic_message(text, input_tokens=n_in, model=call.model or "loopback")
        return self._answer_with_context(call, gemini_content(text, prompt_tokens=n_in, model=call.model or "loopback"))

    def _answer_with_context(self, call: Call, js: dict) -> dict:
        "A Gemini answer's usage with the explicit cache the request named: its tokens in the prompt, reported as cached."
        cc = call.cached_content
        if call.api != "gemini" or cc is None or "usageMetadata" not in js: return js
        um = js["usageMetadata"]
        um["promptTokenCount"] = um.get("promptTokenCount", 0) + cc.tokens
        um["totalTokenCount"] = um.get("totalTokenCount", 0) + cc.tokens
        um["cachedContentTokenCount"] = um.get("cachedContentTokenCount", 0) + cc.tokens
        return js

    def _cached_answer(self, call: Call, text: str) -> dict:
        "The default answer with the usage fields of `self.prompt_cache` (the API's own field names)."
        u = self.prompt_cache.usage(call.api, call.json)
        call.cache_usage = u
        if call.api == "openai":
            js = openai_chat(text, prompt_tokens=u["prompt"], model=call.model or "loopback")
            js["usage"]["prompt_tokens_details"] = {"cached_tokens": u["read"], "audio_tokens": 0}
        elif call.api == "anthropic":
            js = anthropic_message(text, input_tokens=u["prompt"] - u["read"] - u["write"], model=call.model or "loopback")
            js["usage"].update(cache_read_input_tokens=u["read"], cache_creation_input_tokens=u["write"],
                               cache_creation={"ephemeral_5m_input_tokens": u["write"] - u.get("write_1h", 0),
                                               "ephemeral_1h_input_tokens": u.get("write_1h", 0)})
        else:
            js = gemini_content(text, prompt_tokens=u["prompt"], model=call.model or "loopback")
            if u["read"]: js["usageMetadata"]["cachedContentTokenCount"] = u["read"]
        return js

    def _check_gemini_files(self, js: dict) -> str | None:
        "Like the real API: a fileData part must name an existing, ACTIVE file."
        for c in js.get("contents", []):
            for p in c.get("parts", []):
                fd = _get(p, "fileData")
                if not fd: continue
                name = "files/" + (_get(fd, "fileUri") or "").rstrip("/").rsplit("/", 1)[-1]
                f = self.files.get(name)
                if f is None: return f"File {name} not found"
                if f.state != "ACTIVE": return f"The File {name} is not in an ACTIVE state and usage is not allowed."
        return None

    # -- Gemini explicit context caches
    def expire_cached_contents(self):
        "Let every explicit cache expire now, as if its ttl had passed (the service then forgets it)."
        with self._lock: self.cached_contents.clear()

    def _cache_json(self, cc: _CachedContent) -> dict:
        exp = time.time() + max(0.0, cc.expires - self.cache_clock())
        return {"name": cc.name, "model": _get(cc.body, "model"), "displayName": _get(cc.body, "displayName"),
                "createTime": _rfc3339(time.time()), "updateTime": _rfc3339(time.time()), "usageMetadata": {"totalTokenCount": cc.tokens},
                "expireTime": _rfc3339(exp)}

    def _caches(self, request: web.Request, body) -> web.Response:
        path, method, now = request.path, request.method, self.cache_clock()
        if method == "POST" and re.match(r"^/v1\w*/cachedContents$", path):
            body = body or {}
            with self._lock: fault = self.cache_create_faults.pop(0) if self.cache_create_faults else None
            if fault: return web.json_response(_error_body("gemini", fault), status=fault)
            missing = self._check_gemini_files(body)
            if missing: return web.json_response(_error_body("gemini", 400, missing), status=400)
            n = max(1, len(b"".join(b for b, _ in PromptCache.blocks("gemini", body))) // 4)
            if n < self.cache_min_tokens:
                return web.json_response(_error_body("gemini", 400, f"Cached content is too small. total_token_count={n}, "
                                                                    f"min_total_token_count={self.cache_min_tokens}"), status=400)
            ttl = float(str(_get(body, "ttl") or "3600s").rstrip("s"))
            cc = _CachedContent(f"cachedContents/loop{next(self._ids)}", body, n, now + ttl)
            with self._lock: self.cached_contents[cc.name] = cc
            return web.json_response(self._cache_json(cc))
        if method == "GET" and re.match(r"^/v1\w*/cachedContents$", path):      # caches.list: the live ones (one page)
            with self._lock: live = [c for c in self.cached_contents.values() if c.expires > now]
            return web.json_response({"cachedContents": [self._cache_json(c) for c in live]})
        m = re.match(r"^/v1\w*/(cachedContents/[^/]+)$", path)
        cc = self.cached_contents.get(m.group(1)) if m else None
        if cc is None or cc.expires <= now:
            return web.json_response(_error_body("gemini", 404, f"no cached content at {path}"), status=404)
        if method == "DELETE":
            with self._lock:
                del self.cached_contents[cc.name]
                self.cached_deleted.append(cc.name)
            return web.json_response({})
        if method == "PATCH": cc.expires = now + float(str(_get(body or {}, "ttl") or "3600s").rstrip("s"))
        return web.json_response(self._cache_json(cc))

    # -- Gemini Files API
    def _file_json(self, f: _File) -> dict:
        return {"name": f.name, "displayName": f.display_name, "mimeType": f.mime_type, "sizeBytes": str(len(f.data)),
                "createTime": f.create_time, "updateTime": f.create_time, "expirationTime": f.create_time,
                "sha256Hash": base64.b64encode(hashlib.sha256(f.data).hexdigest().encode()).decode(),
                "uri": f"{self.url}/{f.version}/{f.name}", "state": f.state, "source": "UPLOADED"}

    async def _files(self, request: web.Request, raw: bytes, body) -> web.Response:
        path, method = request.path, request.method
        cmd = request.headers.get("X-Goog-Upload-Command", "")
        if method == "POST" and path.startswith("/upload/") and cmd == "start":
            if request.headers.get("X-Goog-Upload-Protocol") != "resumable":
                return web.json_response(_error_body("gemini", 400, "expected X-Goog-Upload-Protocol: resumable"), status=400)
            uid = f"u{next(self._ids)}"
            meta = (body or {}).get("file") or {}
            self._uploads_pending[uid] = {"data": bytearray(), "meta": meta, "version": path.split("/")[2],
                                          "mime": request.headers.get("X-Goog-Upload-Header-Content-Type") or meta.get("mimeType") or "application/octet-stream",
                                          "size": int(request.headers.get("X-Goog-Upload-Header-Content-Length", "0"))}
            return web.json_response({}, headers={"X-Goog-Upload-URL": f"{self.url}{path}?upload_id={uid}&upload_protocol=resumable",
                                                  "X-Goog-Upload-Status": "active"})
        if method == "POST" and path.startswith("/upload/") and cmd.startswith("upload"):
            uid = request.query.get("upload_id")
            up = self._uploads_pending.get(uid)
            if up is None: return web.json_response(_error_body("gemini", 404, f"unknown upload {uid}"), status=404)
            if int(request.headers.get("X-Goog-Upload-Offset", "-1")) != len(up["data"]):
                return web.json_response(_error_body("gemini", 400, "bad X-Goog-Upload-Offset"), status=400)
            up["data"] += raw
            if "finalize" not in cmd: return web.json_response({}, headers={"X-Goog-Upload-Status": "active"})
            del self._uploads_pending[uid]
            if up["size"] and up["size"] != len(up["data"]):
                return web.json_response(_error_body("gemini", 400, "size mismatch"), status=400)
            name = up["meta"].get("name") or f"files/loop{next(self._ids)}"
            f = _File(name, up["meta"].get("displayName"), up["mime"], bytes(up["data"]), version=up["version"],
                      state="PROCESSING" if self.processing_polls > 0 else "ACTIVE",
                      create_time=time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()))
            with self._lock:
                self.files[name] = f
                self.uploads += 1
            return web.json_response({"file": self._file_json(f)}, headers={"X-Goog-Upload-Status": "final"})
        m = re.match(r"^/(v1\w*)/(files/[^/]+)$", path)
        if m:
            name = m.group(2)
            f = self.files.get(name)
            if f is None: return web.json_response(_error_body("gemini", 404, f"File {name} not found"), status=404)
            if method == "GET":
                f.polls += 1
                if f.polls >= self.processing_polls: f.state = "ACTIVE"
                return web.json_response(self._file_json(f))
            if method == "DELETE":
                with self._lock:
                    del self.files[name]
                    self.deleted.append(name)
                return web.json_response({})
        return web.json_response(_error_body("gemini", 404, f"no route {method} {path}"), status=404)


# ----------------------------------------------------------------------------- provider prompt caches

class PromptCache:
    """A provider's prompt cache as its documentation describes it, behind the default answers (`server.prompt_cache`).

    The prompt is the request body's system text and messages, block by block, in order; a token is 4 bytes.

    - ``"openai"`` (automatic prompt caching): a prompt of at least ``min_tokens`` (1024) reads the longest prefix it
      shares with an earlier answered request, in steps of ``step_tokens`` (128), when that prefix is at least
      ``min_tokens``; reported as ``usage.prompt_tokens_details.cached_tokens``.
    - ``"gemini"`` (implicit caching): the same prefix rule, reported as ``usageMetadata.cachedContentTokenCount``.
    - ``"anthropic"`` (``cache_control`` breakpoints): only a prefix that ends at a block marked ``cache_control`` is
      cached (at least ``min_tokens``); the longest marked prefix already cached is read (``cache_read_input_tokens``),
      the last marked prefix is written when it is not (``cache_creation_input_tokens``, split by lifetime in
      ``cache_creation``); ``input_tokens`` counts the rest. A breakpoint with ``"ttl": "1h"`` lives 3600 s, others ``ttl_s``.

    Entries expire ``ttl_s`` seconds after their last use (``clock`` may be replaced to test expiry).
    """

    def __init__(self, kind: str, min_tokens: int = 1024, step_tokens: int = 128, ttl_s: float = 300.0, clock=time.monotonic):
        self.kind, self.min_tokens, self.step_tokens, self.ttl_s, self.clock = kind, min_tokens, step_tokens, ttl_s, clock
        self._seen: dict[str, float] = {}          # prefix hash -> expiry
        self._lock = threading.Lock()

    @staticmethod
    def blocks(api: str, js: dict) -> list[tuple[bytes, bool]]:
        "The prompt as (bytes, marked with cache_control) blocks, in the order the model reads them."
        js, out = js or {}, []
        def add(b):
            cc = b.get("cache_control") if isinstance(b, dict) else None
            mark = (3600.0 if isinstance(cc, dict) and cc.get("ttl") == "1h" else True) if cc is not None else False  # a 1h entry: its ttl
            if cc is not None: b = {k: v for k, v in b.items() if k != "cache_control"}
            out.append((json.dumps(b, sort_keys=True).encode(), mark))
        if api == "anthropic":
            s = js.get("system")
            for b in ([s] if isinstance(s, str) else s or []): add(b)
        if api == "gemini":
            for b in (_get(js, "systemInstruction") or {}).get("parts", []): add(b)
        for m in js.get("messages" if api != "gemini" else "contents", []):
            c = m.get("content") if api != "gemini" else m.get("parts")
            for b in ([c] if isinstance(c, str) else c or []): add(b)
        return out

    def _live(self, h: str, now: float) -> bool:
        t = self._seen.get(h)
        return t is not None and t > now

    def usage(self, api: str, js: dict) -> dict:
        "`{'prompt', 'read', 'write'}` token counts for one request, updating the cache as the provider would."
        blocks, now = self.blocks(api, js), self.clock()
        data = b"".join(b for b, _ in blocks)
        n = max(1, len(data) // 4)
        with self._lock:
            if self.kind == "anthropic": return self._breakpoints(blocks, n, now)
            step = self.step_tokens * 4
            hashes, h = [], hashlib.sha256()
            for i in range(0, len(data) - len(data) % step, step):
                h.update(data[i:i + step]); hashes.append(h.hexdigest())
            hit = 0
            while hit < len(hashes) and self._live(hashes[hit], now): hit += 1
            read = hit * self.step_tokens if n >= self.min_tokens and hit * self.step_tokens >= self.min_tokens else 0
            for x in hashes: self._seen[x] = now + self.ttl_s
            return {"prompt": n, "read": read, "write": 0}

    def _breakpoints(self, blocks, n: int, now: float) -> dict:
        h, size, marks = hashlib.sha256(), 0, []
        for b, mark in blocks:
            h.update(b); size += len(b)
            if mark and size // 4 >= self.min_tokens: marks.append((h.hexdigest(), size // 4, self.ttl_s if mark is True else mark))
        cached = [t for x, t, _ in marks if self._live(x, now)]
        read = max(cached, default=0)
        write = marks[-1][1] - read if marks and not self._live(marks[-1][0], now) else 0
        for x, _, ttl in marks:
            if self._live(x, now) or x == (marks[-1][0] if marks else None): self._seen[x] = now + ttl
        write_1h = write if write and marks[-1][2] == 3600.0 else 0
        return {"prompt": n, "read": read, "write": write, "write_1h": write_1h}


# ----------------------------------------------------------------------------- in another process

class LoopbackProcess:
    """A LoopbackServer in a child process (so its CPU time does not compete with the client for the GIL).

    Only the default answers and `latency` are available; counters come from `GET /_loopback/stats`."""

    def __init__(self, latency: float = 0.0, default_text: str = "A", faults: dict | None = None):
        self.latency, self.default_text, self.faults, self.proc, self.url = latency, default_text, faults, None, None

    def __enter__(self):
        import subprocess, sys
        args = [sys.executable, __file__, "--latency", str(self.latency), "--default-text", self.default_text]
        if self.faults: args += ["--faults", json.dumps(self.faults)]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line: raise RuntimeError("loopback server process did not start")
        self.url = json.loads(line)["url"]
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        try: self.proc.wait(10)
        except Exception: self.proc.kill()

    @property
    def openai_base_url(self) -> str: return self.url + "/v1"
    @property
    def gemini_base_url(self) -> str: return self.url
    @property
    def anthropic_base_url(self) -> str: return self.url

    def _get(self, path, method="GET"):
        import urllib.request
        with urllib.request.urlopen(urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)) as r:
            return json.loads(r.read())

    def stats(self) -> dict: return self._get("/_loopback/stats")
    def count(self, api: str | None = None) -> int:
        c = self.stats()["counts"]
        return sum(c.values()) if api is None else c.get(api, 0)
    @property
    def max_in_flight(self) -> int: return self.stats()["max_in_flight"]
    def reset(self): self._get("/_loopback/reset", "POST")


def _serve_main(argv=None):
    "Run a LoopbackServer until stdin closes; print its URL as a JSON line first."
    import argparse, sys
    ap = argparse.ArgumentParser(description="vlmlens loopback OpenAI/Gemini server")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--default-text", default="A")
    ap.add_argument("--faults", help="JSON keyword arguments of FaultMix (e.g. '{\"p429\": 0.01}')")
    a = ap.parse_args(argv)
    with LoopbackServer(latency=a.latency, default_text=a.default_text) as s:
        if a.faults: s.responder = FaultMix(**json.loads(a.faults))
        print(json.dumps({"url": s.url}), flush=True)
        sys.stdin.read()          # until the parent closes our stdin (or dies)


if __name__ == "__main__":
    _serve_main()
