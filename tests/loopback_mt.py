"""Loopback machine-translation services: the REST subsets of AWS Translate, Azure Translator and Google Cloud
Translation that vlmlens' translation engines use, served by the same loopback server as the OpenAI/Gemini APIs.

Tests point the *real* clients (``boto3``'s ``translate`` client, ``azure-ai-translation-text``,
``google-cloud-translate`` over REST) at it, so that request building, authentication headers, response parsing and
error mapping go through the same code that talks to the real services.

Endpoints
---------
- ``POST /``  with ``X-Amz-Target: AWSShineFrontendService_20170701.TranslateText``   AWS Translate (JSON 1.1)
- ``POST /translate?api-version=...``                                                Azure Translator (text)
- ``POST /v3/projects/{project}/locations/{location}:translateText``                  Google Cloud Translation v3
- ``POST /v2/models/{model}/infer``   IndicTrans2's Triton server (KServe v2 JSON: ``INPUT_TEXT``, ``INPUT_LANGUAGE_ID``,
  ``OUTPUT_LANGUAGE_ID`` → ``OUTPUT_TEXT``; language ids ISO (``hi``) or FLORES-200 tags (``hin_Deva``))

What is translated: ``server.translator(text, source, target, engine) -> str`` (default :func:`cipher`, a reversible
letter-for-letter substitution into the target language's script that keeps digits, punctuation and ``[[n]]``
placeholders, so back-translation recovers the source). ``server.script(...)`` / ``server.responder`` script faults
exactly as in :mod:`loopback` (a :class:`loopback.Reply` with a status gets the service's own error body); ``call.api``
is ``"aws"``, ``"azure"``, ``"google"`` or ``"indictrans"``; :func:`mt_texts` gives the texts one call asked to translate.
"""
from __future__ import annotations

import asyncio
import json
import time
import unicodedata

from aiohttp import web

from loopback import Call, LoopbackServer, Reply

__all__ = ["MTLoopback", "MTLoopbackProcess", "cipher", "decipher", "mt_texts", "SCRIPT_BLOCKS", "MT_APIS"]

MT_APIS = ("aws", "azure", "google", "indictrans")
FLORES_TO_ISO = {"eng_Latn": "en", "hin_Deva": "hi", "tel_Telu": "te", "mar_Deva": "mr", "tam_Taml": "ta", "kan_Knda": "kn",
                 "ben_Beng": "bn"}
SCRIPT_BLOCKS = {"hi": 0x0900, "mr": 0x0900, "te": 0x0C00, "ta": 0x0B80, "kn": 0x0C80, "bn": 0x0980}


def _letters(lang: str) -> list[str]:
    "26 assigned letters of the language's script block (vowels and consonants), for the cipher."
    base = SCRIPT_BLOCKS.get(lang)
    if base is None: return [chr(c) for c in range(ord("a"), ord("z") + 1)]
    out = []
    for cp in range(base + 5, base + 0x3A):
        ch = chr(cp)
        if unicodedata.category(ch) == "Lo": out.append(ch)
        if len(out) == 26: break
    return out


def cipher(text: str, source: str, target: str, engine: str = "") -> str:
    "Lower-case Latin letters → letters of `target`'s script (and back when `target` is en); everything else kept."
    if target == "en": return decipher(text, source)
    table = dict(zip("abcdefghijklmnopqrstuvwxyz", _letters(target)))
    return "".join(table.get(c.lower(), c) if c.isascii() else c for c in text)


def decipher(text: str, lang: str) -> str:
    "The inverse of :func:`cipher` for text in `lang`'s script."
    table = dict(zip(_letters(lang), "abcdefghijklmnopqrstuvwxyz"))
    return "".join(table.get(c, c) for c in text)


def _mt_api(request) -> str | None:
    if request.headers.get("X-Amz-Target", "").endswith(".TranslateText"): return "aws"
    if request.path == "/translate": return "azure"
    if request.path.endswith(":translateText") and request.path.startswith("/v3/"): return "google"
    if request.path.startswith("/v2/models/") and request.path.endswith("/infer"): return "indictrans"
    return None


def _texts(api: str, body: dict) -> tuple[list[str], str | None, str]:
    "(texts, source language, target language) of one request."
    if api == "aws": return [body["Text"]], body.get("SourceLanguageCode"), body["TargetLanguageCode"]
    if api == "azure":
        inputs = body["inputs"]
        return [i["text"] for i in inputs], inputs[0].get("language"), inputs[0]["targets"][0]["language"]
    if api == "indictrans":
        ins = {i["name"]: [v[0] if isinstance(v, list) else v for v in i["data"]] for i in body["inputs"]}
        lang = lambda code: FLORES_TO_ISO.get(code, code)
        return ins["INPUT_TEXT"], lang(ins["INPUT_LANGUAGE_ID"][0]), lang(ins["OUTPUT_LANGUAGE_ID"][0])
    return list(body["contents"]), body.get("sourceLanguageCode"), body["targetLanguageCode"]


def _ok_body(api: str, outs: list[str], source, target) -> dict:
    if api == "aws": return {"TranslatedText": outs[0], "SourceLanguageCode": source, "TargetLanguageCode": target}
    if api == "azure":
        return {"value": [{"translations": [{"language": target, "text": o, "sourceCharacters": len(o)}]} for o in outs]}
    if api == "indictrans":
        return {"model_name": "nmt", "model_version": "1", "outputs": [{"name": "OUTPUT_TEXT", "datatype": "BYTES", "shape": [len(outs), 1],
                                                                       "data": list(outs)}]}
    return {"translations": [{"translatedText": o} for o in outs]}


_AWS_ERRORS = {429: "ThrottlingException", 403: "AccessDeniedException", 401: "UnrecognizedClientException",
               400: "InvalidRequestException", 500: "InternalServerException", 503: "ServiceUnavailableException"}


def _error_body(api: str, status: int, message: str | None) -> dict:
    msg = message or {429: "Rate exceeded (loopback)", 401: "invalid credentials (loopback)",
                      403: "access denied (loopback)"}.get(status, f"loopback error {status}")
    if api == "aws": return {"__type": _AWS_ERRORS.get(status, "InvalidRequestException"), "message": msg}
    if api == "azure": return {"error": {"code": status * 100, "message": msg}}
    if api == "indictrans": return {"error": msg}
    return {"error": {"code": status, "message": msg, "status": {429: "RESOURCE_EXHAUSTED", 401: "UNAUTHENTICATED",
                                                                 403: "PERMISSION_DENIED"}.get(status, "INVALID_ARGUMENT")}}


class MTLoopback(LoopbackServer):
    "A :class:`loopback.LoopbackServer` that also answers AWS Translate, Azure Translator and Google Translation v3."

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.translator = cipher

    def reset(self):
        super().reset()
        self.translator = cipher

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        api = _mt_api(request)
        if api is None: return await super()._handle(request)
        raw = await request.read()
        try: body = json.loads(raw)
        except ValueError: return web.json_response(_error_body(api, 400, "body is not JSON"), status=400)
        call = Call(api, request.method, request.path, dict(request.query), dict(request.headers), body, len(raw), time.monotonic())
        with self._lock:
            self.calls.append(call)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try: resp = await self._translate(api, call)
        finally:
            with self._lock: self.in_flight -= 1
        call.t_end, call.status = time.monotonic(), resp.status
        return resp

    async def _translate(self, api: str, call: Call) -> web.Response:
        if self.latency: await asyncio.sleep(self.latency)
        texts, source, target = _texts(api, call.json)
        r = self._choose(call)
        if isinstance(r, Reply) and r.delay: await asyncio.sleep(r.delay)
        if isinstance(r, Reply) and r.status >= 400:
            js = r.json if r.json is not None and "_message" not in r.json else _error_body(api, r.status, (r.json or {}).get("_message"))
            return web.json_response(js, status=r.status, headers=r.headers)
        if isinstance(r, dict): return web.json_response(r)
        outs = [r] * len(texts) if isinstance(r, str) else [self.translator(t, source or "en", target, api) for t in texts]
        return web.json_response(_ok_body(api, outs, source, target))


def mt_texts(call: Call) -> list[str]:
    "The texts one MT request asked to translate."
    return _texts(call.api, call.json or {})[0]


class MTLoopbackProcess:
    """An :class:`MTLoopback` in a child process (its CPU time does not compete with the client for the GIL), for the
    benchmarks: default answers (:func:`cipher`) and `latency` only; counters from `GET /_loopback/stats`."""

    def __init__(self, latency: float = 0.0):
        self.latency, self.proc, self.url = latency, None, None

    def __enter__(self):
        import subprocess, sys
        self.proc = subprocess.Popen([sys.executable, __file__, "--latency", str(self.latency)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line: raise RuntimeError("MT loopback process did not start")
        self.url = json.loads(line)["url"]
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        try: self.proc.wait(10)
        except Exception: self.proc.kill()

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


if __name__ == "__main__":
    import argparse, sys
    ap = argparse.ArgumentParser(description="vlmlens loopback MT services (and OpenAI/Gemini)")
    ap.add_argument("--latency", type=float, default=0.0)
    a = ap.parse_args()
    with MTLoopback(latency=a.latency) as s:
        print(json.dumps({"url": s.url}), flush=True)
        sys.stdin.read()
