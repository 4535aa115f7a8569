"""The results viewer (`vlmlens view`, `vlmlens.view`): the site's data from real demo runs (two complete runs that
disagree, one killed before its summary, one whose media has since moved), its bad input, its server, and the page
itself in a real headless Chromium (Debian's `chromium` + `chromium-driver`, driven by Selenium): no console errors,
a filter narrows the list, an item shows its frames, a deep link opens the right item."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from vlmlens import media, view
from vlmlens.benchmarks.demo import build_demo_data
from vlmlens.core import Generation, Judgment, RunConfig
from vlmlens.evidence import GRAPH_DIR, ISOLATION_FILE, EvidenceGraph, Node, safe_name, save_graph
from vlmlens.runner import run
from vlmlens.store import Run, RunSet, RunStore

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


class Scripted:
    "A backend that answers from a script (`answers[sample_id]`, default 'A'), failing the ids in `errors`."
    name, model_id, revision, languages = "scripted", "scripted-model", None, ("en", "hi", "te")
    def __init__(self, answers=None, errors=()): self.answers, self.errors = answers or {}, set(errors)
    def generate(self, reqs, **kw):
        return [Generation(None, {}, error="ServerError: 500 from the provider") if r.sample_id in self.errors else
                Generation(self.answers.get(r.sample_id, "A"), {"input_tokens": 12, "output_tokens": 1}, 0.02, finish_reason="stop")
                for r in reqs]
    def info(self): return {"name": self.name}
    def close(self): pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    "Demo runs on a private copy of the demo data: 'always-a' (8 frames), 'gold' (4 frames; right on most, one error), a killed run, a moved-media run."
    root = tmp_path_factory.mktemp("view")
    data = build_demo_data(root / "data")
    samples = [json.loads(l) for l in data.read_text(encoding="utf-8").splitlines()]
    gold = {s["id"]: "ABCD"[s["answer"]] for s in samples if s.get("answer_type") == "mcq" and isinstance(s.get("answer"), int)}
    err = sorted(gold)[0]
    base = dict(benchmark="demo", data_path=str(data), model="scripted", output_root=str(root / "runs"), progress=False)
    run(RunConfig(**base, num_frames=8, run_name="always-a"), backend=Scripted())
    run(RunConfig(**base, num_frames=4, run_name="gold"), backend=Scripted(gold, errors={err}))
    run(RunConfig(**base, num_frames=6, run_name="killed"), backend=Scripted())
    for f in ("summary.json", "scores.csv"): (root / "runs" / "killed" / f).unlink()     # what a run killed before its summary leaves
    moved = root / "moved-data"
    shutil.copytree(data.parent, moved)
    run(RunConfig(**{**base, "data_path": str(moved / "samples.jsonl"), "output_root": str(root / "moved-runs")}, num_frames=8, run_name="moved"),
        backend=Scripted())
    vids = sorted({m["path"] for s in samples for m in s["media"] if m["kind"] == "video"})
    gone = moved / vids[0]                                                               # paths are relative to the data folder
    gone.rename(gone.with_name("elsewhere.mp4"))                                         # the media has since moved
    # a judge's verdict and a CURVE-style evidence graph with its isolation rounds on one item of the 'gold' run, written through
    # the store and the evidence module as `vlmlens isolate` writes them
    judged = next(s["id"] for s in samples if "video_color" in s["id"])
    gold_run = RunStore(root / "runs" / "gold", Run.read(root / "runs" / "gold").config_hash)
    gold_run.append_judgment(Judgment(judged, "judge-x", "ab" * 32, raw="The answer matches the reference. Score: 9", score=9.0, valid=True))
    g = EvidenceGraph(judged, [Node("n1", "visual", "the first scene is red", 0.0, 1.2), Node("n2", "knowledge", "red is a colour"),
                               Node("n3", "reasoning", "so the answer is red")], [("n1", "n3"), ("n2", "n3")], 9.5)
    save_graph(g, root / "runs" / "gold" / GRAPH_DIR / f"{safe_name(judged)}.json")
    gold_run.append_record(ISOLATION_FILE, {"sample_id": judged, "mode": "iterative", "outcome": "resolved", "errors": ["perception"],
        "rounds": [{"round": 1, "prompt": "p", "response": "blue", "node": "n1", "label": "perception", "hint": "Look at the first scene."},
                   {"round": 2, "prompt": "p", "response": "red", "node": None, "label": None}], "n_nodes": 3, "n_unevaluated": 0})
    gold_run.close()
    (root / "runs" / "broken").mkdir(); (root / "runs" / "broken" / "run.json").write_text("{not json")   # a run folder that cannot be read
    return {"root": root, "runs": root / "runs", "judged": judged, "moved": root / "moved-runs", "gold": gold, "err": err, "gone": gone, "data": data}


@pytest.fixture(scope="module")
def site(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "view"
    view.write_site([runs["runs"], runs["moved"]], out, progress=False)
    return out


def _index(site):
    text = (site / "data.js").read_text(encoding="utf-8")
    return json.loads(text[len("window.VLMLENS_INDEX="):].rstrip().rstrip(";"))


def _details(site, key):
    ix = _index(site)
    i = ix["keys"].index(key)
    text = (site / "details" / f"{i // ix['chunk']:05d}.js").read_text(encoding="utf-8")
    return json.loads(text[text.index(",") + 1:text.rindex(")")])[key]


def test_site_shows_each_runs_answer_and_what_is_missing(runs, site):
    ix = _index(site)
    by = {r["name"]: r for r in ix["runs"]}
    assert set(by) == {"always-a", "gold", "killed", "moved", "broken"}
    assert by["broken"]["status"] == "broken" and "cannot read the run's config" in " ".join(by["broken"]["problems"])
    assert by["broken"]["key"] not in ix["res"] or set(ix["res"][by["broken"]["key"]]["o"]) == {0}
    assert by["killed"]["status"] == "partial" and any("no summary.json" in p for p in by["killed"]["problems"])
    k_gold, k_a = by["gold"]["key"], by["always-a"]["key"]
    d = _details(site, runs["err"])
    assert d["runs"][k_gold]["outcome"] == "errored" and "ServerError" in d["runs"][k_gold]["error"]
    assert d["runs"][k_a]["raw"] == "A" and d["runs"][k_a]["valid"] is True
    # items whose outcome flips between the two runs: the gold run is right where 'A' is wrong
    o = ix["outcomes"]
    flips = [k for i, k in enumerate(ix["keys"]) if {o[ix["res"][k_gold]["o"][i]], o[ix["res"][k_a]["o"][i]]} == {"correct", "wrong"}]
    assert flips and all(runs["gold"][k] != "A" for k in flips)
    # the killed run's items keep the scores their predictions carry
    assert set(o[c] for c in ix["res"][by["killed"]["key"]]["o"]) <= {"correct", "wrong", "invalid"}


def test_frames_are_the_ones_the_run_used(runs, site):
    "The thumbnails are the frames at the timestamps each run's own frame settings give (8 in one run, 4 in the other)."
    ix = _index(site)
    by = {r["name"]: r["key"] for r in ix["runs"]}
    key = next(k for k in ix["keys"] if "video_color" in k)
    d = _details(site, key)
    cfg = Run.read(runs["runs"] / "always-a").config
    from vlmlens.benchmarks.base import get_benchmark
    b = get_benchmark("demo")
    s = next(s for s in b.load(cfg)[0] if s.id == key)
    path = s.media_of("video")[0].path
    for name, n in (("always-a", 8), ("gold", 4)):
        fr = d["runs"][by[name]]["media"]["frames"]
        assert [f["t"] for f in fr] == [round(t, 3) for t in media.sample_frames(path, num_frames=n).timestamps_s]
        assert all((site / f["src"]).is_file() for f in fr)


def test_frames_follow_the_count_the_models_context_allowed(runs, tmp_path):
    "A run whose model could hold fewer frames than configured (run.json `frames_fit`) shows the frames it was actually given."
    from vlmlens.benchmarks.base import get_benchmark
    run_ = Run.read(runs["runs"] / "always-a")
    b = get_benchmark("demo")
    s = next(s for s in b.load(run_.config)[0] if s.subset == "video_color")
    got = view.item_media(b, s, run_.config, {**run_.info, "frames_fit": {"requested": 8, "used": 3}}, view.Thumbs(tmp_path))
    assert [f["t"] for f in got["frames"]] == [round(t, 3) for t in media.sample_frames(s.media_of("video")[0].path, num_frames=3).timestamps_s]


def test_moved_media_is_named_per_item_and_the_rest_still_shows(runs, site):
    ix = _index(site)
    k = next(r["key"] for r in ix["runs"] if r["name"] == "moved")
    missing = [key for key in ix["keys"] if (_details(site, key)["runs"].get(k) or {}).get("media", {}).get("missing")]
    assert missing, "no item says that its media is missing"
    d = _details(site, missing[0])["runs"][k]["media"]["missing"][0]
    assert runs["gone"].name in d and "MediaError" in d
    shown = [key for key in ix["keys"] if (_details(site, key)["runs"].get(k) or {}).get("media", {}).get("frames")]
    assert shown, "items whose media did not move still show their frames"


def test_a_run_whose_scores_cannot_be_read_is_named_and_the_others_still_show(runs, tmp_path):
    root = tmp_path / "runs"
    for name in ("gold", "always-a"): shutil.copytree(runs["runs"] / name, root / name)
    (root / "gold" / "scores.csv").write_bytes(b"sample_id,score\n\xff\xfe\x00broken,\x00\n")       # not UTF-8: pandas refuses it
    out = view.write_site(root, tmp_path / "site", frames=False, progress=False).parent
    ix = _index(out)
    by = {r["name"]: r for r in ix["runs"]}
    assert any("scores.csv" in p and "cannot read" in p for p in by["gold"]["problems"]), by["gold"]["problems"]
    assert len(ix["keys"]) == 45 and set(ix["res"][by["always-a"]["key"]]["o"]) <= {1, 2}
    d = _details(out, runs["err"])
    assert d["runs"][by["gold"]["key"]]["outcome"] == "errored"          # its predictions still show


def test_run_keys_are_the_runs_own_so_links_survive_a_rebuild(runs, tmp_path):
    "A link to a run opens the same run after the view is rebuilt with other runs beside it."
    one = view.write_site(runs["runs"] / "gold", tmp_path / "v", frames=False, progress=False).parent
    link = view.deep_link(one, runs["runs"] / "gold", "wrong")
    view.write_site([runs["runs"] / "always-a", runs["moved"], runs["runs"] / "gold"], one, frames=False, progress=False)
    by = {m["key"]: m["name"] for m in view.view_index(one)["runs"]}
    assert by["gold"] == "gold" and link.endswith("#run=gold&outcome=wrong") and view.deep_link(one, runs["runs"] / "gold", "wrong") == link
    twin = tmp_path / "elsewhere" / "gold"; shutil.copytree(runs["runs"] / "gold", twin)               # two runs named alike
    keys = [m["key"] for m in view.view_index(view.write_site([runs["runs"] / "gold", twin], one, frames=False, progress=False).parent)["runs"]]
    assert len(set(keys)) == 2 and all(k.startswith("gold") for k in keys)


def test_live_and_cut_runs_are_told_apart_and_list_and_detail_agree(runs, tmp_path):
    "A run being written is 'running' with its items' subsets and languages; a line cut mid-write is named once, with its number."
    root = tmp_path / "runs"
    for name in ("killed", "gold"): shutil.copytree(runs["runs"] / name, root / name, ignore=shutil.ignore_patterns(".lock*"))
    for f in ("summary.json", "scores.csv"): (root / "gold" / f).unlink()
    p = root / "gold" / "predictions.jsonl"; lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join(lines[:20]) + lines[20][:30])                                  # killed mid-line at line 21
    live = RunStore(root / "killed", Run.read(root / "killed").config_hash).lock()         # a process is writing it now
    try: out = view.write_site(root, tmp_path / "site", frames=False, progress=False).parent
    finally: live.close()
    ix = _index(out)
    by = {r["name"]: r for r in ix["runs"]}
    assert by["killed"]["status"] == "running" and any(p.startswith("running") for p in by["killed"]["problems"])
    assert by["gold"]["status"] == "partial"
    cut = [p for p in by["gold"]["problems"] if "line" in p]
    assert len(cut) == 1 and "predictions.jsonl line 21" in cut[0], by["gold"]["problems"]
    assert {"video_color", "image_color"} <= set(ix["cats"]["subset"]["v"]) and {"en", "hi", "te"} <= set(ix["cats"]["language"]["v"])
    o = ix["outcomes"]
    for k in ix["keys"]:
        i = ix["keys"].index(k)
        for name in ("killed", "gold"):
            shown = (_details(out, k)["runs"].get(name) or {"outcome": "missing"})["outcome"]
            assert o[ix["res"][name]["o"][i]] == shown, (k, name)                          # the list and the item agree
    assert sum(c == o.index("missing") for c in ix["res"]["gold"]["o"]) == len(ix["keys"]) - 20


def test_a_run_with_a_relative_data_path_shows_its_frames_from_anywhere(runs, tmp_path, monkeypatch):
    shutil.copytree(runs["data"].parent, tmp_path / "d")
    monkeypatch.chdir(tmp_path)
    run(RunConfig(benchmark="demo", data_path="d/samples.jsonl", model="scripted", output_root="runs", num_frames=2, run_name="rel",
                  progress=False), backend=Scripted())
    monkeypatch.chdir(tmp_path / "runs")
    out = view.write_site("rel", tmp_path / "site", progress=False).parent
    ix = _index(out)
    assert not [p for p in ix["runs"][0]["problems"] if "could not be loaded" in p], ix["runs"][0]["problems"]
    assert len(_details(out, next(k for k in ix["keys"] if "video_color" in k))["runs"]["rel"]["media"]["frames"]) == 2
    info = json.loads((tmp_path / "runs" / "rel" / "run.json").read_text())
    assert info["cwd"] == str(tmp_path)
    del info["dataset"]                                                  # found again from the folder the run ran from alone
    (tmp_path / "runs" / "rel" / "run.json").write_text(json.dumps(info))
    out = view.write_site("rel", tmp_path / "site", progress=False).parent
    assert len(_details(out, next(k for k in ix["keys"] if "video_color" in k))["runs"]["rel"]["media"]["frames"]) == 2


def test_view_cli_bad_input_is_one_line_and_creates_nothing(tmp_path):
    empty = tmp_path / "empty"; empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args in ([str(empty)], [str(tmp_path / "nowhere")]):
        p = subprocess.run([sys.executable, "-m", "vlmlens", "view", *args, "--out", str(tmp_path / "site")], capture_output=True,
                           text=True, env=env, cwd=tmp_path)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
        assert not (tmp_path / "site").exists()


def test_view_cli_refuses_to_replace_a_folder_that_is_not_a_view(runs, tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    p = subprocess.run([sys.executable, "-m", "vlmlens", "view", str(runs["runs"] / "gold"), "--out", str(tmp_path), "--no-frames"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 2 and "not a vlmlens view" in p.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def _get(url, **headers):
    "`(status, body, headers)` of a GET with `headers`."
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as r: return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e: return e.code, b"", e.headers


def test_server_binds_loopback_and_serves_nothing_outside_the_view(site, tmp_path):
    (site.parent / "secret.txt").write_text("outside")
    os.symlink(site.parent / "secret.txt", site / "link.txt")
    srv = view.server(site, 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        assert srv.server_address[0] == "127.0.0.1"
        base, tok = f"http://127.0.0.1:{srv.server_address[1]}", f"?token={srv.token}"
        status, body, h = _get(base + "/data.json" + tok)
        assert status == 200 and json.loads(body)["keys"] == _index(site)["keys"]
        assert h["Content-Type"].startswith("application/json") and h["X-Content-Type-Options"] == "nosniff"
        assert h["Cross-Origin-Resource-Policy"] == "same-origin"
        for bad in ("/../secret.txt", "/%2e%2e/secret.txt", "/link.txt", "/details/", "/data.js", "/details/00000.js"):
            assert _get(base + bad + tok)[0] == 404, bad
    finally:
        srv.shutdown(); srv.server_close(); (site / "link.txt").unlink()


def test_server_answers_only_its_own_page(site):
    "A foreign Host (DNS rebinding), another origin or site, and a missing or wrong token are refused; the page's own code is open."
    import http.client
    srv = view.server(site, 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        base, tok = f"http://127.0.0.1:{port}", f"?token={srv.token}"
        assert srv.url == base + "/" + tok and len(srv.token) >= 32
        assert view.server(site, 0).token != srv.token                             # one token per start
        for path in ("/", "/index.html", "/data.json", "/details/00000.json", "/thumbs/x.jpg", "/data.json?token=" + "x" * 32):
            assert _get(base + path)[0] == 403, path
        assert _get(base + "/app.js")[0] == _get(base + "/style.css")[0] == 200
        for headers in ({"Origin": "http://127.0.0.1:1"}, {"Origin": "null"}, {"Sec-Fetch-Site": "same-site"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Host": "attacker.example"}, {"Host": f"attacker.example:{port}"}, {"Host": "127.0.0.1:1"}):
            assert _get(base + "/data.json" + tok, **headers)[0] == 403, headers
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.putrequest("GET", "/data.json" + tok, skip_host=True); c.endheaders()               # no Host header at all
        assert c.getresponse().status == 403; c.close()
        for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
            assert _get(base + "/data.json" + tok, Host=host, Origin=f"http://{host}", **{"Sec-Fetch-Site": "same-origin"})[0] == 200
    finally:
        srv.shutdown(); srv.server_close()


def test_show_renders_the_same_site_inline(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = view.show(runs["runs"] / "gold", frames=False)
    assert frame.src == "vlmlens-view/index.html" and (tmp_path / "vlmlens-view" / "data.js").is_file()
    assert 'src="vlmlens-view/index.html"' in frame._repr_html_()


# ---------------------------------------------------------------- the page in a real browser

@pytest.fixture(scope="module")
def browser():
    "Headless Debian Chromium through its chromedriver (`make install` installs both); a fresh profile, no network services."
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", f"--user-data-dir={tempfile.mkdtemp(prefix='vlmlens-chromium-')}", "--window-size=1500,1000"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    "Where the page's screenshots go: a temporary folder, or `$VLMLENS_SCREENSHOTS` (tools/view_screenshots.py: docs/figures)."
    return Path(os.environ.get("VLMLENS_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))


def _screenshot(browser, folder, name):
    folder.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(folder / name)) and (folder / name).read_bytes()[:4] == b"\x89PNG"


def _open(browser, url):
    from selenium.webdriver.support.ui import WebDriverWait
    browser.get("about:blank"); browser.get_log("browser")
    browser.get(url)
    WebDriverWait(browser, 10).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _wait(browser, fn):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(browser, 10).until(lambda d: fn(d))


def _rows(browser):
    return browser.execute_script("return [...document.querySelectorAll('#list tr.item')].map(r => r.dataset.key)")


def _errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def test_page_loads_without_console_errors_and_filters_narrow_the_list(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    _open(browser, (site / "index.html").as_uri())
    n = len(_index(site)["keys"])
    assert browser.find_element(By.ID, "count").text == f"{n} items"
    assert len(_rows(browser)) == min(n, 50)
    Select(browser.find_element(By.ID, "f-subset")).select_by_value("video_color")
    _wait(browser, lambda d: "of" in d.find_element(By.ID, "count").text)
    rows = _rows(browser)
    assert rows and len(rows) < n and all("video_color" in k for k in rows)
    assert "subset=video_color" in browser.current_url                          # the filter is a deep link
    Select(browser.find_element(By.ID, "f-outcome")).select_by_value("errored")
    _wait(browser, lambda d: len(_rows(d)) < len(rows) or not _rows(d))
    assert _errors(browser) == []


def test_search_and_flips_between_two_runs(runs, site, browser):
    from selenium.webdriver.common.by import By
    ix = _index(site)
    by = {r["name"]: r["key"] for r in ix["runs"]}
    _open(browser, (site / "index.html").as_uri() + f"#flipA={by['always-a']}&flipB={by['gold']}")
    flips = _rows(browser)
    assert flips and all(runs["gold"].get(k) != "A" for k in flips)
    _open(browser, (site / "index.html").as_uri())
    box = browser.find_element(By.ID, "f-q")
    box.send_keys("video_order-001-hi")
    _wait(browser, lambda d: _rows(d) == ["demo-video_order-001-hi"])
    assert _errors(browser) == []


def test_an_item_shows_its_frames_and_a_deep_link_opens_it(site, browser, shots):
    from selenium.webdriver.common.by import By
    key = "demo-video_subtitles-000-hi"
    _open(browser, (site / "index.html").as_uri() + "#item=" + key)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail figure.frame img"))
    assert browser.find_element(By.ID, "item-title").text == key
    imgs = browser.find_elements(By.CSS_SELECTOR, "#detail .col[data-run='always-a'] figure.frame img")
    assert len(imgs) == 8
    _wait(browser, lambda d: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i) for i in imgs))
    assert "gold" in browser.find_element(By.CSS_SELECTOR, ".options li.gold").get_attribute("class")
    aligned = browser.find_elements(By.CSS_SELECTOR, "#aligned tr a")
    assert sorted(a.text for a in aligned) == ["en", "hi", "te"]                   # HinTel-style aligned items side by side
    _screenshot(browser, shots, "view_item.png")
    aligned[0].click()
    _wait(browser, lambda d: d.find_element(By.ID, "item-title").text == key.replace("-hi", "-en"))
    # a click in the list opens an item, and its deep link opens it again
    browser.find_elements(By.CSS_SELECTOR, "#list tr.item")[3].click()
    other = _wait(browser, lambda d: (t := d.find_element(By.ID, "item-title").text) != key.replace("-hi", "-en") and t)
    url = browser.current_url
    _open(browser, url)
    _wait(browser, lambda d: d.find_element(By.ID, "item-title").text == other)
    assert _errors(browser) == []


def test_moved_media_and_errors_show_in_the_page(runs, site, browser, shots):
    from selenium.webdriver.common.by import By
    _open(browser, (site / "index.html").as_uri() + "#item=" + runs["err"])
    _wait(browser, lambda d: d.find_elements(By.ID, "item-title"))
    text = browser.find_element(By.ID, "detail").text
    assert "ServerError: 500 from the provider" in text
    _open(browser, (site / "index.html").as_uri() + "#outcome=errored")
    _screenshot(browser, shots, "view_list.png")
    assert _errors(browser) == []


def test_judge_reply_and_evidence_graph_show_beside_the_answer(runs, site, browser, shots):
    from selenium.webdriver.common.by import By
    ix = _index(site)
    gold = next(r["key"] for r in ix["runs"] if r["name"] == "gold")
    i = ix["keys"].index(runs["judged"])
    assert ix["res"][gold]["j"][i] == 9.0
    _open(browser, (site / "index.html").as_uri() + f"#jmin=8&run={gold}")
    assert _rows(browser) == [runs["judged"]]                                      # the judge-score filter
    _open(browser, (site / "index.html").as_uri() + "#item=" + runs["judged"])
    col = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f".col[data-run='{gold}'] svg.graph"))[0]
    assert len(col.find_elements(By.CSS_SELECTOR, "rect")) == 3 and len(col.find_elements(By.CSS_SELECTOR, "rect.failed")) == 1
    text = "\n".join(c.text for c in browser.find_elements(By.CSS_SELECTOR, f".col[data-run='{gold}']"))     # its column of the comparison
    assert "The answer matches the reference. Score: 9" in text and "judge-x" in text and "abababab" in text
    assert "isolation (iterative): resolved" in text and "Look at the first scene." in text
    browser.execute_script("arguments[0].scrollIntoView()", col)
    _screenshot(browser, shots, "view_evidence.png")
    assert _errors(browser) == []


def test_a_hand_made_link_naming_no_run_breaks_nothing(site, browser):
    "Run keys and escapes a link may carry that name no run of the view ('constructor', a cut %-escape): the list says so, no script error."
    from selenium.webdriver.common.by import By
    for frag in ("run=constructor", "runs=toString,%25E0&cmp=constructor", "sort=r:__proto__&flipA=constructor&flipB=hasOwnProperty"):
        _open(browser, (site / "index.html").as_uri() + "#" + frag)
        assert _errors(browser) == [], frag
        count = browser.find_element(By.ID, "count").text
        assert count.startswith("no run constructor") if frag.startswith("run=") else count.endswith("items"), (frag, count)


PAYLOAD = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


def test_hostile_text_in_every_new_field_is_shown_as_text(runs, browser, tmp_path):
    "A run folder, model id, commit, data source, answer, thinking and error that hold markup: shown as text in the list, the search "
    "results, the run picker (provenance, problems) and the comparison; none of it runs."
    from selenium.webdriver.common.by import By
    run_dir = tmp_path / "runs" / PAYLOAD.replace("/", "|")
    shutil.copytree(runs["runs"] / "gold", run_dir, ignore=shutil.ignore_patterns(".lock*"))
    info = json.loads((run_dir / "run.json").read_text())
    info.update(model_id=PAYLOAD, git={"commit": PAYLOAD, "dirty": True}, dataset={"source": PAYLOAD, "location": PAYLOAD})
    (run_dir / "run.json").write_text(json.dumps(info))
    lines = [json.loads(l) for l in (run_dir / "predictions.jsonl").read_text().splitlines()]
    for d in lines: d.update(raw=PAYLOAD + " basket", extra={**(d.get("extra") or {}), "thinking": PAYLOAD})
    (run_dir / "predictions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines) + '{"cut')      # a problem to show, too
    site = view.write_site(tmp_path / "runs", tmp_path / "site", frames=False, progress=False).parent
    key = next(k for k in _index(site)["keys"] if "video_color" in k)
    _open(browser, (site / "index.html").as_uri() + "#q=basket&item=" + key)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare tr[data-field=answer] td"))
    browser.find_element(By.ID, "pick").click()
    _wait(browser, lambda d: d.find_element(By.ID, "picker").is_displayed())
    browser.execute_script("document.querySelectorAll('#compare details').forEach((e) => e.open = true)")
    assert browser.execute_script("return window.pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#runs img, #picker img, #list img, #compare img, script:not([src])")
    assert len(_rows(browser)) == 45                                        # the search found the answers
    text = lambda sel: browser.find_element(By.CSS_SELECTOR, sel).text
    assert PAYLOAD + " basket" in text("#compare tr[data-field=answer]") and PAYLOAD in text("#compare tr[data-field=thinking]")
    row = text("#run-table tr:nth-child(2)")
    assert row.count(PAYLOAD) >= 3 and "line" in row, row                   # folder, model, commit, data; the cut line named
    assert _errors(browser) == []


def test_served_view_has_no_console_errors(site, browser):
    srv = view.server(site, 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        _open(browser, srv.url + "#item=demo-image_color-000-te")
        from selenium.webdriver.common.by import By
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail figure.image img"))
        assert _errors(browser) == []
    finally:
        srv.shutdown(); srv.server_close()


ATTACK = """<!doctype html><title>another site</title><script>
window.got = {};
const T = "TARGET", tok = "?token=TOKEN";
function note(k, v) { window.got[k] = v; }
fetch(T + "/data.json").then(r => r.text()).then(t => note("fetch", t.slice(0, 40)), e => note("fetch", "refused"));
fetch(T + "/data.json" + tok).then(r => r.text()).then(t => note("fetch-token", t.slice(0, 40)), e => note("fetch-token", "refused"));
window.VLMLENS_INDEX = null; window.VLMLENS_DETAIL = (i, p) => note("detail", p);
for (const [k, u] of [["data.js", "/data.js"], ["data.json", "/data.json" + tok], ["details", "/details/00000.js" + tok]]) {
  const s = document.createElement("script"); s.src = T + u;
  s.onload = () => note(k, window.VLMLENS_INDEX ? "read" : "loaded, nothing read"); s.onerror = () => note(k, "refused");
  document.head.append(s);
}
const i = new Image(); i.onload = () => note("img", "read"); i.onerror = () => note("img", "refused"); i.src = T + "/THUMB" + tok;
</script>"""


def test_a_page_of_another_origin_reads_nothing_of_a_served_view(site, browser, tmp_path, monkeypatch):
    "A page served from another loopback port (another origin, same site) fails to read the view, even knowing its token."
    import http.server, functools
    seen = []
    refusal = view.ViewHandler.refusal
    monkeypatch.setattr(view.ViewHandler, "refusal", lambda self: seen.append((self.path, r := refusal(self))) or r)
    srv = view.server(site, 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    thumb = next((site / "thumbs").iterdir()).name
    evil = tmp_path / "evil"; evil.mkdir()
    (evil / "attack.html").write_text(ATTACK.replace("TARGET", f"http://127.0.0.1:{srv.server_address[1]}").replace("TOKEN", srv.token)
                                      .replace("THUMB", "thumbs/" + thumb))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(evil)))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{other.server_address[1]}/attack.html")
        got = _wait(browser, lambda d: (g := d.execute_script("return window.got")) and len(g) >= 6 and g)
        assert got == {"fetch": "refused", "fetch-token": "refused", "data.js": "refused", "data.json": "refused",
                       "details": "refused", "img": "refused"}, got
        assert seen and all(why for _, why in seen), seen                 # the server refused every one of them
        browser.get_log("browser")
    finally:
        srv.shutdown(); srv.server_close(); other.shutdown(); other.server_close()


def test_serve_builds_each_page_of_details_when_the_browser_asks(runs, browser, tmp_path):
    "`vlmlens view --serve`: only the index is written; an item's page (frames included) is built when the browser opens it."
    from selenium.webdriver.common.by import By
    page, pages = view.build_site([runs["runs"], runs["moved"]], tmp_path / "lazy", progress=False, pages=False)
    assert list((page.parent / "details").iterdir()) == []
    srv = view.server(page.parent, 0, pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        _open(browser, srv.url + "#item=demo-video_subtitles-000-hi")
        imgs = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#detail .col[data-run='always-a'] figure.frame img"))
        assert len(imgs) == 8
        _wait(browser, lambda d: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i) for i in imgs))
        assert [p.name for p in (page.parent / "details").iterdir()] == ["00000.js"]
        assert _errors(browser) == []
    finally:
        srv.shutdown(); srv.server_close()


def test_view_cli_port_out_of_range_is_one_line_before_writing(runs, tmp_path):
    for port in ("99999", "-1"):
        p = subprocess.run([sys.executable, "-m", "vlmlens", "view", str(runs["runs"] / "gold"), "--serve", "--port", port, "--out",
                            str(tmp_path / "site")], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--port" in p.stderr, p.stderr
        assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("n_runs", [4, 32, 128])
def test_many_runs_keep_the_list_on_the_first_screen_and_answers_side_by_side(runs, browser, tmp_path, n_runs, shots):
    "At 1400×900: a one-line run header, the first item on the first screen, a readable question column, the compared runs' answers on one row."
    from selenium.webdriver.common.by import By
    root = tmp_path / "runs"
    for j in range(n_runs):
        shutil.copytree(runs["runs"] / ("gold" if j % 2 else "always-a"), root / f"run-{j:03d}", ignore=shutil.ignore_patterns(".lock*"))
    site = view.write_site(root, tmp_path / "site", frames=False, progress=False).parent
    size = browser.get_window_size()
    browser.set_window_size(1400, 900)
    try:
        key = "demo-video_color-000-en"
        _open(browser, (site / "index.html").as_uri() + "#item=" + key)
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare tr[data-field=answer] td"))
        m = browser.execute_script("""const r = (s) => document.querySelector(s).getBoundingClientRect();
          const ans = [...document.querySelectorAll('#compare tr[data-field=answer] td')].map((e) => e.getBoundingClientRect());
          return {header: r('header').height, filters: r('#filters').bottom, row: r('#list tr.item').bottom, q: r('#list td.q').width,
                  page: document.scrollingElement.scrollHeight, inner: innerHeight, width: innerWidth,
                  tops: ans.map((b) => Math.round(b.top)), rights: ans.map((b) => b.right), cols: ans.length}""")
        _screenshot(browser, shots, f"view_{n_runs}_runs.png")
        assert m["header"] <= 40 and m["filters"] <= 130, m                  # the run header is one line, whatever the number of runs
        assert m["row"] < 250 and m["page"] <= m["inner"], m                  # the list starts on the first screen; no page scrollbar
        assert m["q"] >= 150, m                                               # the question column is readable
        assert m["cols"] == 4 and len(set(m["tops"])) == 1 and max(m["rights"]) <= m["width"], m   # four answers on one row, on screen
        # the run picker: another run side by side
        browser.find_element(By.ID, "pick").click()
        last = f"run-{n_runs - 1:03d}"
        box = browser.find_element(By.CSS_SELECTOR, f"#picker input.pick-cmp[data-run='{last}']")
        was = box.is_selected()
        assert was == (n_runs == 4)                                           # four runs: all side by side; more: the first four
        box.click()
        _wait(browser, lambda d: bool(d.find_elements(By.CSS_SELECTOR, f"#compare td.col[data-run='{last}']")) != was)
        assert "cmp=" in browser.current_url and len(browser.find_elements(By.CSS_SELECTOR, "#compare tr[data-field=answer] td")) == (3 if was else 5)
        browser.find_element(By.TAG_NAME, "body").send_keys("\ue00c")     # Escape closes the picker
        _wait(browser, lambda d: not d.find_element(By.ID, "picker").is_displayed())
        assert _errors(browser) == []
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_triage_search_answers_sort_keys_provenance_and_a_larger_frame(runs, site, browser):
    "Search reads judge replies and errors; a column header sorts; j/k move through the list; each run shows its provenance; a frame opens larger."
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    _open(browser, (site / "index.html").as_uri() + "#q=" + "matches%20the%20reference")
    _wait(browser, lambda d: _rows(d) == [runs["judged"]])                        # the judge's reply
    _open(browser, (site / "index.html").as_uri() + "#q=servererror")
    _wait(browser, lambda d: _rows(d) == [runs["err"]])                           # the error
    _open(browser, (site / "index.html").as_uri())
    browser.find_element(By.CSS_SELECTOR, "#list th[data-sort=question]").click()
    _wait(browser, lambda d: "sort=question" in d.current_url)
    qs = browser.execute_script("return [...document.querySelectorAll('#list td.q')].map(e => e.title)")
    assert qs == sorted(qs) and len(qs) == 45
    first = _rows(browser)
    browser.find_elements(By.CSS_SELECTOR, "#list tr.item")[0].click()
    _wait(browser, lambda d: d.find_element(By.ID, "item-title").text == first[0])
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _wait(browser, lambda d: d.find_element(By.ID, "item-title").text == first[1])
    browser.find_element(By.TAG_NAME, "body").send_keys("k")
    _wait(browser, lambda d: d.find_element(By.ID, "item-title").text == first[0])
    browser.find_element(By.ID, "pick").click()
    row = browser.find_element(By.CSS_SELECTOR, "#run-table tr[data-run='gold']").text
    assert "vlmlens " in row and "model scripted-model" in row and "commit" in row, row
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    _open(browser, (site / "index.html").as_uri() + "#item=demo-video_color-000-en")
    fig = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare .strip figure.frame"))[0]
    fig.click()
    big = _wait(browser, lambda d: d.find_element(By.ID, "zoom").is_displayed() and d.find_element(By.CSS_SELECTOR, "#zoom img"))
    assert big.size["height"] > 3 * fig.find_element(By.TAG_NAME, "img").size["height"]
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    _wait(browser, lambda d: not d.find_element(By.ID, "zoom").is_displayed())
    assert _errors(browser) == []


def test_served_search_reads_answers_too(runs, browser, tmp_path):
    "Under --serve the texts search reads are built on the first search, from every page's text: no frame is decoded for it."
    page, pages = view.build_site(runs["runs"] / "gold", tmp_path / "lazy", progress=False, pages=False)
    srv = view.server(page.parent, 0, pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        _open(browser, srv.url + "#q=servererror")
        _wait(browser, lambda d: _rows(d) == [runs["err"]])
        assert _errors(browser) == []
        assert not (page.parent / "thumbs").exists() and not list((page.parent / "details").iterdir())
    finally:
        srv.shutdown(); srv.server_close()


def _scored_run(root, name, rows, **cfg):
    "A HinTel run as its scores.csv and summary (the way tests/test_vs_paper.py makes runs the papers report)."
    from vlmlens.metrics import rates
    c = RunConfig(**{"benchmark": "hintel", "model": "gpt-4.1", "judge": "gpt-4.1-2025-04-14", **cfg}, run_name=name, output_root=str(root))
    st = RunStore(root / name, c.hash(), config=c.to_dict()).prepare()
    st.write_run_json({"config": c.to_dict(), "config_hash": c.hash(), "model": {"model_id": c.model}})
    st.write_scores_csv(rows); st.write_summary({"overall": rates(rows), "groups": [{"subset": "vqav2", "language": cfg["language"], **rates(rows)}]})
    st.close()


def test_an_item_id_reads_as_written_in_the_list(tmp_path, browser):
    "The id column cuts a long id at its start ('…clip(17)') yet shows each id in its own order: '(2)q' is not drawn 'q(2)'."
    ids = ("(2)q", "a-very-long-video-file-name-of-the-benchmark.mp4#clip(17)")
    _scored_run(tmp_path / "runs", "hi", [{"sample_id": sid, "subset": "vqav2", "language": "hi", "valid": True, "error": None, "score": 1.0}
                                          for sid in ids], language="hi")
    site = view.write_site(tmp_path / "runs", tmp_path / "site", frames=False, progress=False).parent
    _open(browser, (site / "index.html").as_uri())
    got = browser.execute_script("""return [...document.querySelectorAll('#list td.k')].map((td) => {
      const w = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), n = w.nextNode(), r = document.createRange(), L = n.textContent.length;
      const x = (i) => { r.setStart(n, i); r.setEnd(n, i + 1); return r.getBoundingClientRect(); };
      const b = td.getBoundingClientRect();
      return [n.textContent, x(0).left < x(L - 1).left, x(L - 1).right <= b.right + 1, x(0).left >= b.left]; })""")
    assert got == [[ids[0], True, True, True], [ids[1], True, True, False]], got      # in order; the long one keeps its end
    assert _errors(browser) == []


def test_the_pager_and_keys_leave_the_page_of_the_open_item(tmp_path, browser):
    "With an item open on page 2, '‹ prev' shows page 1 (the item stays open); j on a page's last row goes on to the next page, k back."
    from selenium.webdriver.common.by import By
    _scored_run(tmp_path / "runs", "hi", [{"sample_id": f"q-{i:03d}", "subset": "vqav2", "language": "hi", "valid": True, "error": None,
                                           "score": float(i % 2)} for i in range(120)], language="hi")
    site = view.write_site(tmp_path / "runs", tmp_path / "site", frames=False, progress=False).parent
    pager = lambda d: d.find_element(By.ID, "pager").text
    title = lambda d: d.execute_script("return document.getElementById('item-title')?.textContent")
    _open(browser, (site / "index.html").as_uri() + "#item=q-060")
    _wait(browser, lambda d: title(d) == "q-060" and "page 2 of 3" in pager(d))
    browser.find_element(By.ID, "prev").click()
    _wait(browser, lambda d: "page 1 of 3" in pager(d))
    assert _rows(browser)[0] == "q-000" and title(browser) == "q-060"
    browser.find_elements(By.CSS_SELECTOR, "#list tr.item")[-1].click()
    _wait(browser, lambda d: title(d) == "q-049")
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _wait(browser, lambda d: title(d) == "q-050" and "page 2 of 3" in pager(d))
    assert browser.find_element(By.CSS_SELECTOR, "#list tr.sel").get_attribute("data-key") == "q-050"
    browser.find_element(By.TAG_NAME, "body").send_keys("k")
    _wait(browser, lambda d: title(d) == "q-049" and "page 1 of 3" in pager(d))
    assert _errors(browser) == []


def test_report_rows_and_vs_paper_rows_link_to_their_items_in_the_view(tmp_path, browser):
    "`vlmlens report RUNS --format md --vs-paper --view DIR`: each row links to the view's list of its items; the links open them."
    item = lambda i, lang, score, error=None: {"sample_id": f"vqav2-{lang}-{i}", "subset": "vqav2", "language": lang, "valid": error is None,
                                               "error": error, "score": None if error else score}
    _scored_run(tmp_path / "runs", "hi", [item(i, "hi", float(i < 680)) for i in range(1000)], language="hi")
    _scored_run(tmp_path / "runs", "te", [item(i, "te", float(i < 200), "timeout" if i >= 950 else None) for i in range(1000)], language="te")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "vlmlens", "report", "runs", "--format", "md", "--vs-paper", "--view", "view"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    links = re.findall(r"\[(items|wrong|invalid|errored)\]\((view/index\.html#[^)]+)\)", p.stdout)       # relative: report and view move together
    vs = p.stdout[p.stdout.index("Ours beside the papers"):]
    vs_links = re.findall(r"\[items\]\((view/index\.html#[^)]+)\)", vs)
    assert links and "file://" not in p.stdout
    moved = tmp_path / "shared"; moved.mkdir(); shutil.move(str(tmp_path / "view"), str(moved / "view"))       # both moved elsewhere
    at = lambda u: (moved / u.split("#")[0]).as_uri() + "#" + u.split("#", 1)[1]
    links = [(k, at(u)) for k, u in links]; vs_links = [at(u) for u in vs_links]
    errored = [u for k, u in links if k == "errored" and "language=te" in u]
    assert errored
    _open(browser, errored[0])
    rows = _rows(browser)
    assert len(rows) == 50 and all(r.startswith("vqav2-te-") and int(r.rsplit("-", 1)[1]) >= 950 for r in rows)
    _open(browser, next(u for u in vs_links if "language=hi" in u))
    assert browser.execute_script("return document.getElementById('count').textContent").startswith("1000")
    # a link to one item opens it and shows its row, on whatever page of the list it falls
    _open(browser, (moved / "view" / "index.html").as_uri() + "#" + view.deep_link(moved / "view", item="vqav2-te-977").split("#")[1])
    _wait(browser, lambda d: d.execute_script("return document.getElementById('item-title')?.textContent") == "vqav2-te-977")
    sel = browser.execute_script("const r = document.querySelector('#list tr.sel'), b = r && r.getBoundingClientRect();"
                                 "return r && [r.dataset.key, b.top >= 0 && b.bottom <= innerHeight, document.getElementById('pager').textContent]")
    assert sel[0] == "vqav2-te-977" and sel[1] and "page 1 of" not in sel[2], sel
    assert _errors(browser) == []
    # a CSV gets each row's address; a text report is refused with one line, before anything is written
    p = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(tmp_path / "runs" / "hi"), "--format", "csv", "--view", str(moved / "view")],
                       capture_output=True, text=True, env=env, timeout=300, cwd=moved)
    assert p.returncode == 0 and p.stdout.splitlines()[0].endswith("view_url") and "view/index.html#run=hi" in p.stdout, p.stderr
    p = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(tmp_path / "runs"), "--view", str(tmp_path / "other")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 2 and "--format md or csv" in p.stderr and not (tmp_path / "other").exists()


# ---------------------------------------------------------------- W&B export, offline, read back

def _wandb_records(path):
    """The records of an offline run's `.wandb` file. Its framing is W&B's datastore format (a LevelDB-style log: a 7-byte
    header `:W&B` + magic + version, then 32 KiB blocks of records `crc32 | length (u16) | type (full/first/middle/last)`;
    wandb/wandb, core/pkg/leveldb and the former wandb/sdk/internal/datastore.py); each record is a `wandb_internal_pb2.Record`."""
    import struct
    from wandb.proto import wandb_internal_pb2 as pb
    b, pos, buf, out = Path(path).read_bytes(), 7, b"", []
    assert b[:4] == b":W&B"
    while pos + 7 <= len(b):
        if 32768 - pos % 32768 < 7: pos += 32768 - pos % 32768; continue
        _, n, t = struct.unpack("<IHB", b[pos:pos + 7]); data = b[pos + 7:pos + 7 + n]; pos += 7 + n
        if t == 0: break
        buf = data if t in (1, 2) else buf + data
        if t in (1, 4):
            r = pb.Record(); r.ParseFromString(buf); out.append(r)
    return out


def test_report_to_wandb_logs_summary_and_items_with_frames(runs, tmp_path):
    wb = tmp_path / "wb"
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "offline", "WANDB_DIR": str(wb), "WANDB_DATA_DIR": str(wb / "data"),
           "WANDB_CACHE_DIR": str(wb / "cache"), "WANDB_CONFIG_DIR": str(wb / "config"), "WANDB_SILENT": "true",
           "WANDB_API_KEY": "local-" + "k" * 40, "WANDB_PROJECT": "vlmlens-test"}
    p = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(runs["runs"] / "gold"), "--to", "wandb"], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert re.search(r"wandb: gold: 45 items logged as run \w+", p.stdout), p.stdout
    files = list(wb.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 1
    recs = _wandb_records(files[0])
    run_rec = next(r.run for r in recs if r.WhichOneof("record_type") == "run")
    assert run_rec.project == "vlmlens-test" and run_rec.display_name == "gold"
    cfg = {u.key: json.loads(u.value_json) for u in run_rec.config.update}
    assert cfg["num_frames"] == 4 and cfg["run"] == "gold"
    info = json.loads((runs["runs"] / "gold" / "run.json").read_text())
    assert cfg["config_hash"] == info["config_hash"] and cfg["vlmlens_version"] == info["vlmlens_version"] and "model_revision" in cfg
    assert cfg["provenance"]["model_id"] == "scripted-model"
    summary = {u.key: json.loads(u.value_json) for r in recs if r.WhichOneof("record_type") == "summary" for u in r.summary.update if u.key}
    acc = json.loads((runs["runs"] / "gold" / "summary.json").read_text())["overall"]["accuracy"]
    assert summary["accuracy"] == pytest.approx(acc) and summary["n_errors"] == 1
    # the items table (staged for upload with its images) holds every item, its answer, outcome and frame strip
    tables = [json.loads(f.read_text()) for f in (wb / "data").rglob("*") if f.is_file() and f.read_bytes()[:1] == b"{"]
    table = next(t for t in tables if t.get("_type") == "table")
    rows = [dict(zip(table["columns"], r)) for r in table["data"]]
    assert len(rows) == 45
    err = next(r for r in rows if r["sample_id"] == runs["err"])
    assert err["outcome"] == "errored" and "ServerError" in err["error"]
    vid = next(r for r in rows if "video_color" in r["sample_id"])
    assert vid["raw"] == runs["gold"][vid["sample_id"]] and vid["outcome"] == "correct"
    assert len(json.loads(vid["frame_times_s"])) == 4
    img = vid["frames"]
    assert img["_type"] == "image-file" and img["height"] == 90 and img["width"] > 4 * 100           # four frames side by side
    pngs = [f for f in (wb / "data").rglob("*") if f.is_file() and f.read_bytes()[:4] == b"\x89PNG"]
    assert any(hashlib.sha256(f.read_bytes()).hexdigest() == img["sha256"] for f in pngs)
    # the key came from the environment and was written nowhere
    for f in tmp_path.rglob("*"):
        if f.is_file(): assert b"k" * 40 not in f.read_bytes(), f


def test_report_to_wandb_failures_are_one_line_and_quick(runs, tmp_path):
    "No key: refused before anything is read; a server that cannot be reached: refused after a bounded wait; exit 2, one line each."
    import time
    base = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env = {**base, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "WANDB_DIR": str(tmp_path / "wb")}
    for extra, says in (({}, "no API key"), ({"WANDB_API_KEY": "test-wandb-key.not-real", "WANDB_BASE_URL": "http://127.0.0.1:1"}, "cannot be reached")):
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "vlmlens", "report", str(runs["runs"] / "gold"), "--to", "wandb"], capture_output=True,
                           text=True, env={**env, **extra}, cwd=tmp_path, timeout=120)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and says in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and time.monotonic() - t < 60
    assert not (tmp_path / "wb").exists()


def test_show_leaves_a_link_in_a_notebook_executed_elsewhere(runs, tmp_path):
    "A notebook executed by nbconvert/papermill is untrusted when opened: Jupyter strips its iframe, and the link beside it remains."
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from vlmlens import view\nview.show({str(runs['runs'] / 'gold')!r}, frames=False)")])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = nb.cells[0].outputs[0]["data"]
    assert '<a href="vlmlens-view/index.html"' in out["text/html"] and "<iframe" in out["text/html"]
    assert out["text/plain"] == "vlmlens view: vlmlens-view/index.html" and (tmp_path / "vlmlens-view" / "index.html").is_file()


def test_view_writes_nothing_to_the_cache(runs, tmp_path, monkeypatch):
    "A demo run whose generated data has gone from the cache is shown with what it recorded; nothing is generated or decoded into the cache."
    run(RunConfig(benchmark="demo", model="scripted", num_frames=2, output_root=str(tmp_path / "runs"), run_name="demo", progress=False),
        backend=Scripted())
    cache = tmp_path / "empty-cache"; cache.mkdir()
    p = subprocess.run([sys.executable, "-m", "vlmlens", "view", str(tmp_path / "runs"), "--out", str(tmp_path / "site"), "--no-progress"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO), "VLMLENS_CACHE": str(cache)}, timeout=300)
    assert p.returncode == 0 and p.stderr == "", p.stderr                    # no progress bar either
    assert list(cache.iterdir()) == []
    ix = _index(tmp_path / "site")
    assert any("demo data is not in" in x for x in ix["runs"][0]["problems"]) and len(ix["keys"]) == 45
    assert _details(tmp_path / "site", ix["keys"][0])["runs"]["demo"]["raw"] == "A"
    # with the data there, frames are shown, decoded in memory: the frame cache on disk is not even opened (the run filled it
    # with these very frames, so a view writing there would add no file: counting files could not tell)
    from vlmlens import media
    def opened(*a, **k): raise AssertionError("the view opened the frame cache on disk")
    monkeypatch.setattr(media.DiskFrameStore, "__init__", opened)
    view.write_site(tmp_path / "runs", tmp_path / "site2", progress=False)
    key = next(k for k in _index(tmp_path / "site2")["keys"] if "video_color" in k)
    assert len(_details(tmp_path / "site2", key)["runs"]["demo"]["media"]["frames"]) == 2
