// vlmlens results viewer. From file:// the data arrive through <script> tags (browsers refuse to fetch local files);
// served by `vlmlens view --serve` they are fetched as JSON from the same origin with the token of the printed address.
"use strict";
(function () {
  const TOKEN = new URLSearchParams(location.search).get("token");
  const withToken = (u) => (TOKEN ? u + (u.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN) : u);
  const getJSON = (u) => fetch(withToken(u), { credentials: "same-origin" }).then((r) => {
    if (!r.ok) throw new Error(`${u}: ${r.status} ${r.statusText}`);
    return r.json();
  });
  const fail = (msg) => { document.querySelector("#detail").textContent = msg; document.body.dataset.ready = "1"; };
  if (TOKEN) getJSON("data.json").then(start, (e) => fail(String(e.message || e)));
  else {
    const s = document.createElement("script");
    s.src = "data.js";
    s.onload = () => start(window.VLMLENS_INDEX);
    s.onerror = () => fail("data.js is missing: write this view again with `vlmlens view`.");
    document.head.append(s);
  }

function start(IX) {
  const $ = (s) => document.querySelector(s);
  if (!IX) return fail("data.js is missing: write this view again with `vlmlens view`.");
  IX.res = Object.assign(Object.create(null), IX.res);              // run keys from a link: "constructor" names no run
  const OUT = IX.outcomes, N = IX.keys.length, RUNS = IX.runs, PAGE = 50, CATS = ["benchmark", "subset", "language", "locale"];
  const MARK = { missing: "–", correct: "✓", wrong: "✗", invalid: "?", errored: "!", unscored: "·" };
  const keyAt = new Map(IX.keys.map((k, i) => [k, i]));
  const token = (v) => (v === null || v === undefined || v === "" ? "(none)" : String(v));

  // ---- DOM helper: text is always set as text, never parsed as HTML (model answers are arbitrary)
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of kids.flat(3)) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const badge = (o, title) => h("span", { class: "b o-" + o, title: title || o }, MARK[o] || o);

  // ---- pages of details, loaded on demand through <script> tags
  const pages = {}, waiting = {};
  window.VLMLENS_DETAIL = function (i, page) { pages[i] = page; (waiting[i] || []).forEach((f) => f(page)); delete waiting[i]; };
  function loadPage(i, done, fail) {
    if (pages[i]) return done(pages[i]);
    if (waiting[i]) return waiting[i].push(done);
    waiting[i] = [done];
    if (TOKEN) return getJSON("details/" + String(i).padStart(5, "0") + ".json").then((p) => window.VLMLENS_DETAIL(i, p),
      (e) => { delete waiting[i]; fail(String(e.message || e)); });
    const s = h("script", { src: "details/" + String(i).padStart(5, "0") + ".js" });
    s.onerror = () => { delete waiting[i]; fail("details/" + String(i).padStart(5, "0") + ".js could not be loaded"); };
    document.head.append(s);
  }

  // ---- state <-> URL fragment (deep links per item and per filter)
  const DEFAULTS = { q: "", benchmark: "", subset: "", language: "", locale: "", run: "any", outcome: "", jmin: "", jmax: "",
    flipA: "", flipB: "", page: "0", item: "", aligned: "", runs: "", cmp: "", sort: "" };
  let state = { ...DEFAULTS }, pageGiven = false;
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    state = { ...DEFAULTS };
    pageGiven = p.has("page");
    for (const k of Object.keys(DEFAULTS)) if (p.has(k)) state[k] = p.get(k);
  }
  function hashOf(s, pin) {           // pin: the page was chosen (pager, keys), so page 0 is written too and beats the item's own page
    const p = new URLSearchParams();
    for (const k of Object.keys(DEFAULTS)) if (s[k] !== DEFAULTS[k] || (pin && k === "page" && s.item)) p.set(k, s[k]);
    return "#" + p.toString();
  }
  function go(changes) {
    const next = { ...state, ...changes };
    if (!("page" in changes) && !("item" in changes) && !("aligned" in changes)) next.page = "0";
    const target = hashOf(next, "page" in changes);
    if (target === location.hash || (target === "#" && !location.hash)) { state = next; render(); }
    else location.hash = target;
  }
  window.addEventListener("hashchange", () => { readHash(); render(); });

  // ---- which runs the list shows (a column each, or their counts when many) and which the item compares side by side
  const WITH = RUNS.filter((r) => IX.res[r.key]), BADGES = 6;
  const decoded = (x) => { try { return decodeURIComponent(x); } catch (e) { return null; } };    // a link cut mid-escape
  const keysOf = (v) => v.split(",").map(decoded).filter((k) => k !== null && IX.res[k]);
  const joinKeys = (ks) => ks.map(encodeURIComponent).join(",");
  const listed = () => (state.runs ? keysOf(state.runs) : WITH.slice(0, WITH.length <= BADGES ? BADGES : 4).map((r) => r.key));
  const compared = () => (state.cmp ? keysOf(state.cmp) : listed().slice(0, 4));
  const runOf = new Map(RUNS.map((r) => [r.key, r]));

  // ---- filtering
  // search reads the question, id and gold at once, and each run's answer, thinking, judge reply and error once search.js(on) arrives
  let searchText = null, more = null, asked = false;
  function loadSearch() {
    if (asked) return;
    asked = true;
    const got = (texts) => { if (Array.isArray(texts) && texts.length === N) { more = texts; searchText = null; render(); } };
    if (TOKEN) getJSON("search.json").then(got, () => {});
    else { const s = h("script", { src: "search.js" }); s.onload = () => got(window.VLMLENS_SEARCH); document.head.append(s); }
  }
  function searchable(i) {
    if (!searchText) searchText = IX.keys.map((k, j) => (k + "\n" + IX.q[j] + "\n" + IX.gold[j]).toLowerCase() + (more ? "\n" + more[j] : ""));
    return searchText[i];
  }
  const runsFor = () => (state.run === "any" ? RUNS.map((r) => r.key) : [state.run]).filter((k) => IX.res[k]);
  function filtered() {
    const want = {};
    for (const c of CATS) if (state[c] !== "") want[c] = IX.cats[c].v.map(token).indexOf(state[c]);
    const terms = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    if (terms.length) loadSearch();
    const rks = runsFor(), oc = state.outcome ? OUT.indexOf(state.outcome) : -1;
    const jmin = state.jmin === "" ? null : Number(state.jmin), jmax = state.jmax === "" ? null : Number(state.jmax);
    const fa = IX.res[state.flipA], fb = IX.res[state.flipB], flips = fa && fb && state.flipA !== state.flipB;
    const out = [];
    for (let i = 0; i < N; i++) {
      let ok = true;
      for (const c in want) if (IX.cats[c].c[i] !== want[c]) { ok = false; break; }
      if (!ok) continue;
      if (state.run !== "any" && IX.res[state.run] && IX.res[state.run].o[i] === 0) continue;   // a run chosen: its items only
      if (oc >= 0 && !rks.some((r) => IX.res[r].o[i] === oc)) continue;
      if (jmin !== null || jmax !== null) {
        if (!rks.some((r) => { const j = IX.res[r].j[i]; return j !== null && (jmin === null || j >= jmin) && (jmax === null || j <= jmax); })) continue;
      }
      if (flips) {
        const a = fa.o[i], b = fb.o[i];
        if (a === 0 || b === 0 || (a === 1) === (b === 1)) continue;
      }
      if (terms.length) { const s = searchable(i); if (!terms.every((t) => s.includes(t))) continue; }
      out.push(i);
    }
    return sortRows(out);
  }
  // ---- sorting by any column: "item", "subset", "lang", "question", "n:<outcome>" (how many listed runs had it), "r:<run key>"
  function sortRows(rows) {
    if (!state.sort) return rows;
    const desc = state.sort.startsWith("-"), col = desc ? state.sort.slice(1) : state.sort;
    const cat = (n) => (i) => token(IX.cats[n].v[IX.cats[n].c[i]]);
    const lang = (i) => { const l = cat("locale")(i); return l !== "(none)" ? l : cat("language")(i); };
    let key;
    if (col === "item") key = (i) => IX.keys[i];
    else if (col === "subset") key = cat("subset");
    else if (col === "lang") key = lang;
    else if (col === "question") key = (i) => IX.q[i];
    else if (col.startsWith("r:") && IX.res[col.slice(2)]) { const o = IX.res[col.slice(2)].o; key = (i) => o[i]; }
    else if (col.startsWith("n:")) { const oc = OUT.indexOf(col.slice(2)), ks = listed(); key = (i) => ks.reduce((n, k) => n + (IX.res[k].o[i] === oc), 0); }
    else return rows;
    const v = rows.map(key), ix = rows.map((_, j) => j);
    ix.sort((a, b) => (v[a] < v[b] ? -1 : v[a] > v[b] ? 1 : a - b) * (desc ? -1 : 1));
    return ix.map((j) => rows[j]);
  }

  // ---- header: the runs and what is missing from each
  const acc = (r) => (r.overall && r.overall.accuracy !== undefined && r.overall.accuracy !== null ? (100 * r.overall.accuracy).toFixed(1) + "%" : "–");
  function provenance(r) {
    const p = r.provenance || {};
    return [p.vlmlens ? "vlmlens " + p.vlmlens : null, p.commit ? "commit " + p.commit : null, p.model_id ? "model " + p.model_id : null,
      p.model_revision ? "revision " + p.model_revision : null, p.data ? "data " + p.data : null].filter(Boolean).join(" · ");
  }
  function renderRuns() {
    const bad = RUNS.filter((r) => (r.problems || []).length);
    const one = RUNS.length === 1 ? RUNS[0] : null;
    $("#runs").replaceChildren(...[
      h("button", { id: "pick", "aria-expanded": "false", onclick: () => togglePicker() },
        one ? `${one.label} · ${one.model || "?"} · ${one.status} · ${one.n_items} items · acc ${acc(one)}` : `${RUNS.length} runs · ${listed().length} listed · ${compared().length} side by side`, " ▾"),
      bad.length ? h("span", { class: "problem", id: "run-problems", title: bad.map((r) => r.label + ": " + r.problems.join("; ")).join("\n") },
        `${bad.length} run${bad.length > 1 ? "s" : ""} with problems: ${bad.slice(0, 3).map((r) => r.key + " (" + r.status + ")").join(", ")}${bad.length > 3 ? " …" : ""}`) : null].filter(Boolean));
  }
  function togglePicker(open) {
    const panel = $("#picker"), show = open === undefined ? panel.hidden : open;
    panel.hidden = !show; $("#pick").setAttribute("aria-expanded", String(show));
    if (show) renderPicker();
  }
  function renderPicker() {
    const L = new Set(listed()), C = new Set(compared());
    const set = (which, k, on) => {
      const cur = which === "runs" ? listed() : compared(), next = on ? [...cur, k] : cur.filter((x) => x !== k);
      go({ [which]: joinKeys(RUNS.map((r) => r.key).filter((x) => next.includes(x))) });
    };
    const box = (which, r, on) => (IX.res[r.key] ? h("input", { type: "checkbox", class: "pick-" + which, "data-run": r.key, checked: on,
      onchange: (e) => set(which, r.key, e.target.checked) }) : "");
    $("#picker").replaceChildren(h("div", { class: "picker-head" }, `${RUNS.length} runs: tick the runs the list shows and those an item shows side by side`,
      h("button", { onclick: () => togglePicker(false) }, "close")),
      h("table", { id: "run-table" }, h("tr", {}, ["list", "side by side", "run", "model", "status", "items", "accuracy", "provenance", "problems"].map((x) => h("th", {}, x))),
        RUNS.map((r) => h("tr", { "data-run": r.key, title: r.dir }, h("td", {}, box("runs", r, L.has(r.key))), h("td", {}, box("cmp", r, C.has(r.key))),
          h("td", {}, h("b", {}, r.key), r.label !== r.key ? h("div", { class: "sub" }, r.label) : null), h("td", {}, r.model || "?"), h("td", {}, r.status), h("td", {}, r.n_items), h("td", {}, acc(r)),
          h("td", { class: "prov" }, provenance(r)), h("td", { class: "problem" }, (r.problems || []).join("; "))))));
  }

  function select(id, label, value, options) {
    return h("label", {}, label, h("select", { id: "f-" + id, onchange: (e) => go({ [id]: e.target.value }) },
      options.map(([v, t]) => h("option", { value: v, selected: v === value }, t))));
  }
  function renderFilters() {
    const f = [];
    let timer = null;
    f.push(h("label", {}, "search", h("input", { id: "f-q", type: "search", value: state.q, placeholder: "question, id, gold, answers, judge, errors", title: "searches questions, ids, gold answers, and each run's answer, thinking, judge reply and error",
      oninput: (e) => { clearTimeout(timer); const v = e.target.value; timer = setTimeout(() => go({ q: v }), 200); } })));
    for (const c of CATS) {
      const vocab = [...new Set(IX.cats[c].v.map(token))];
      if (vocab.length > 1 || state[c]) f.push(select(c, c, state[c], [["", "all"], ...vocab.sort().map((v) => [v, v])]));
    }
    f.push(select("outcome", "outcome", state.outcome, [["", "any"], ...OUT.map((o) => [o, o])]));
    if (RUNS.length > 1) f.push(select("run", "in run", state.run, [["any", "any run"], ...RUNS.map((r) => [r.key, r.label])]));
    const num = (id, label) => h("label", {}, label, h("input", { id: "f-" + id, type: "number", step: "any", value: state[id],
      onchange: (e) => go({ [id]: e.target.value }) }));
    if (RUNS.some((r) => IX.res[r.key] && IX.res[r.key].j.some((j) => j !== null))) f.push(num("jmin", "judge ≥"), num("jmax", "judge ≤"));
    if (RUNS.length > 1) {
      const opts = [["", "–"], ...RUNS.map((r) => [r.key, r.label])];
      f.push(select("flipA", "flips between", state.flipA, opts), select("flipB", "and", state.flipB, opts));
    }
    f.push(h("a", { href: hashOf({ ...state, page: "0", item: "" }), title: "link to this selection" }, "link"));
    const focused = document.activeElement && document.activeElement.id;
    $("#filters").replaceChildren(...f);
    if (focused && focused.startsWith("f-")) { const e = document.getElementById(focused); if (e) { e.focus(); if (e.type === "search") e.setSelectionRange(e.value.length, e.value.length); } }
  }

  let listRows = [], listPage = 0;
  const common = (ks) => { if (ks.length < 2) return 0; let n = 0; while (ks.every((k) => k.length > n + 1 && k[n] === ks[0][n])) n++; return n; };   // run-000, run-001: 000, 001
  function renderList(rows) {
    const lost = state.run !== "any" && !RUNS.some((r) => r.key === state.run);
    if (lost) rows = [];                                          // a link to a run this view does not hold: no other run's items
    let p = Math.max(0, Math.min(Number(state.page) || 0, Math.ceil(rows.length / PAGE) - 1));
    const at = state.item && !pageGiven ? rows.indexOf(keyAt.get(state.item)) : -1;
    if (at >= 0) p = Math.floor(at / PAGE);                       // a link to an item: the page its row is on
    const shown = rows.slice(p * PAGE, p * PAGE + PAGE);
    listRows = rows; listPage = p;
    $("#count").textContent = (lost ? `no run ${state.run} in this view · ` : "") + (rows.length === N ? `${N} items` : `${rows.length} of ${N} items`);
    const ks = listed(), each = ks.length <= BADGES;
    const th = (col, label, attrs) => h("th", { ...attrs, class: ((attrs || {}).class || "") + " sortable" + (state.sort.replace(/^-/, "") === col ? " sorted" : ""), "data-sort": col,
      onclick: () => go({ sort: state.sort === col ? "-" + col : state.sort === "-" + col ? "" : col }) },
      label, state.sort === col ? " ▴" : state.sort === "-" + col ? " ▾" : "");
    const head = h("tr", {}, th("item", "item", { class: "k" }),
      each ? ks.map((k) => th("r:" + k, k.slice(common(ks)) || k, { title: k + ": " + runOf.get(k).label, class: "r" })) :
        th("n:correct", `${ks.length} runs ✓/✗/!`, { title: "correct / wrong / invalid or errored, over the listed runs (sorted by correct)" }),
      th("subset", "subset"), th("lang", "lang"), th("question", "question"));
    const body = shown.map((i) => {
      const k = IX.keys[i], c = (n) => token(IX.cats[n].v[IX.cats[n].c[i]]);
      const n = (o) => ks.reduce((m, r) => m + (IX.res[r].o[i] === OUT.indexOf(o)), 0);
      return h("tr", { class: "item" + (k === state.item ? " sel" : ""), "data-key": k, onclick: () => go({ item: k, aligned: "" }) },
        h("td", { class: "k", title: k }, h("bdi", { dir: "ltr" }, k)),      // the cell is right-to-left (its ellipsis on the left), the id is not
        each ? ks.map((r) => h("td", { class: "r" }, badge(OUT[IX.res[r].o[i]], runOf.get(r).label + ": " + OUT[IX.res[r].o[i]]))) :
          h("td", { class: "counts" }, h("span", { class: "ok" }, n("correct")), "/", h("span", { class: "bad" }, n("wrong")), "/", h("span", { class: "err" }, n("invalid") + n("errored"))),
        h("td", { class: "s" }, c("subset")), h("td", { class: "l" }, c("locale") !== "(none)" ? c("locale") : c("language")),
        h("td", { class: "q", dir: "auto", title: IX.q[i] }, IX.q[i]));
    });
    $("#list").replaceChildren(h("thead", {}, head), h("tbody", {}, body));
    const sel = $("#list tr.sel");
    if (sel) sel.scrollIntoView({ block: "nearest" });
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    $("#pager").replaceChildren(
      h("button", { id: "prev", disabled: p === 0, onclick: () => go({ page: String(p - 1) }) }, "‹ prev"),
      `page ${p + 1} of ${pages}`,
      h("button", { id: "next", disabled: p >= pages - 1, onclick: () => go({ page: String(p + 1) }) }, "next ›"));
  }

  // ---- one item
  const kv = (pairs) => h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "object" ? JSON.stringify(v) : String(v))]));
  const fmt = (x, d) => (x === null || x === undefined ? null : Number(x).toFixed(d));

  function goldIndices(it) {
    const a = it.answer;
    if (typeof a === "number" && Number.isInteger(a)) return [a];
    if (Array.isArray(a) && a.every((x) => Number.isInteger(x))) return a;
    return [];
  }
  function renderItem(it) {
    const gold = it.answer_type && it.answer_type.startsWith("mcq") ? goldIndices(it) : [];
    const opts = (it.options || []).map((o, j) => h("li", { class: gold.includes(j) ? "gold" : null, dir: "auto" }, typeof o === "object" ? JSON.stringify(o) : o));
    return [
      h("h2", { id: "item-title" }, it.sample_id),
      kv([["benchmark", it.benchmark], ["subset", it.subset], ["language", it.language], ["locale", it.locale], ["align_id", it.align_id], ["answer type", it.answer_type]]),
      h("h3", {}, "question"), h("pre", { id: "question", dir: "auto" }, it.question || ""),
      opts.length ? h("ol", { class: "options", type: "A" }, opts) : null,
      gold.length ? null : kv([["gold", it.gold_text !== null && it.gold_text !== undefined ? it.gold_text : it.answer]]),
      it.reasoning ? h("details", {}, h("summary", {}, "reasoning chain (gold)"), h("pre", { dir: "auto" }, typeof it.reasoning === "string" ? it.reasoning : JSON.stringify(it.reasoning, null, 1))) : null,
    ];
  }

  // frames in a strip, each opened larger on click (Escape or a click closes it)
  function zoom(src, caption) {
    const z = $("#zoom");
    z.replaceChildren(h("figure", {}, h("img", { src: withToken(src), alt: caption }), h("figcaption", { dir: "auto" }, caption)));
    z.hidden = false;
  }
  function renderMedia(m) {
    if (!m) return null;
    const fig = (src, cap, cls, sub) => h("figure", { class: cls, title: cap + (sub ? " · " + sub : ""), onclick: () => zoom(src, cap + (sub ? " · " + sub : "")) },
      h("img", { src: withToken(src), alt: cap }), h("figcaption", {}, cap));
    return [
      (m.missing || []).map((x) => h("div", { class: "missing" }, "not shown: " + x)),
      m.frames && m.frames.length ? h("div", { class: "strip", title: `${m.frames.length} frames given` }, m.frames.map((f, j) =>
        fig(f.src, `#${j + 1} · ${f.t.toFixed(2)} s`, "frame", f.sub))) : null,
      m.images && m.images.length ? h("div", { class: "strip" }, m.images.map((s, j) => fig(s, `image ${j + 1}`, "image"))) : null,
      m.text && m.text.length ? h("details", {}, h("summary", {}, "text sent"), h("pre", { dir: "auto" }, m.text.join("\n\n"))) : null,
    ];
  }

  function renderGraph(g, failed) {
    if (!g || g.error) return g ? h("div", { class: "missing" }, g.error) : null;
    const depth = {}, ids = g.nodes.map((n) => n.id);
    const pre = {}; for (const [a, b] of g.edges) (pre[b] = pre[b] || []).push(a);
    const d = (id, seen) => { if (depth[id] !== undefined) return depth[id]; if (seen.has(id)) return 0; seen.add(id); return (depth[id] = Math.max(0, ...(pre[id] || []).map((p) => d(p, seen) + 1))); };
    ids.forEach((id) => d(id, new Set()));
    const cols = {}, pos = {}, W = 150, H = 34;
    for (const id of ids) { const c = depth[id]; cols[c] = (cols[c] || 0) + 1; pos[id] = [c * (W + 30) + 4, (cols[c] - 1) * (H + 10) + 4]; }
    const ns = "http://www.w3.org/2000/svg", el = (t, a, txt) => { const e = document.createElementNS(ns, t); for (const k in a) e.setAttribute(k, a[k]); if (txt) e.textContent = txt; return e; };
    const width = (Math.max(...Object.values(depth), 0) + 1) * (W + 30), height = Math.max(...Object.values(cols), 1) * (H + 10);
    const svg = el("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}` });
    for (const [a, b] of g.edges) if (pos[a] && pos[b]) svg.append(el("line", { x1: pos[a][0] + W, y1: pos[a][1] + H / 2, x2: pos[b][0], y2: pos[b][1] + H / 2, stroke: "#8c959f" }));
    for (const n of g.nodes) {
      const [x, y] = pos[n.id], t = el("title", {}, `${n.id} (${n.kind}) ${n.text}` + (n.start !== null && n.start !== undefined ? ` [${n.start}–${n.end} s]` : ""));
      const r = el("rect", { x, y, width: W, height: H, rx: 4, class: failed.has(n.id) ? "failed" : "" });
      const tx = el("text", { x: x + 4, y: y + 13 }, `${n.id} · ${n.kind}`), t2 = el("text", { x: x + 4, y: y + 27 }, String(n.text).slice(0, 26));
      const gr = el("g", {}); gr.append(t, r, tx, t2); svg.append(gr);
    }
    return svg;
  }
  function renderEvidence(ev) {
    if (!ev) return null;
    const recs = (ev.isolation || []).filter((r) => r.rounds);
    const failed = new Set(recs.flatMap((r) => r.rounds.map((x) => x.node).filter(Boolean)));
    return h("details", { open: true, class: "evidence" }, h("summary", {}, "evidence graph and error isolation"),
      renderGraph(ev.graph, failed),
      recs.map((r) => [h("h3", {}, `isolation (${r.mode}): ${r.outcome}`, r.errors && r.errors.length ? " · errors: " + r.errors.join(", ") : ""),
        h("table", { class: "aligned" }, h("tr", {}, ["round", "failed node", "label", "hint", "response"].map((x) => h("th", {}, x))),
          r.rounds.map((x) => h("tr", {}, h("td", {}, x.round), h("td", {}, x.node || "–"), h("td", {}, x.label || x.error || "–"),
            h("td", { dir: "auto" }, x.hint || ""), h("td", { dir: "auto" }, (x.response || "").slice(0, 400)))))]),
      (ev.isolation || []).filter((r) => !r.rounds).map((r) => h("div", { class: "missing" }, `${r.type || "record"}: ${r.error || JSON.stringify(r)}`)));
  }

  // the chosen runs side by side: one row per field, one column per run, so answers line up
  const FIELDS = [
    ["frames", (r) => renderMedia(r.media)],
    ["answer", (r) => h("pre", { class: "raw", dir: "auto" }, r.raw === null || r.raw === undefined ? "(no answer)" : r.raw)],
    ["parsed", (r) => kv([["parsed", r.parsed], ["valid", r.valid === null || r.valid === undefined ? null : String(r.valid)],
      ["finish", r.finish_reason], ["truncated", r.raw_truncated ? "stored text cut" : null]])],
    ["outcome", (r) => [badge(r.outcome), " ", r.outcome, r.score !== null && r.score !== undefined ? ` · score ${fmt(r.score, 3)}` : "",
      r.error ? h("div", { class: "missing error" }, r.error) : null]],
    ["thinking", (r) => (r.thinking ? h("details", {}, h("summary", {}, `thinking (${r.thinking.length} characters)`), h("pre", { dir: "auto" }, r.thinking)) : null)],
    ["judge", (r) => (r.judge ? [kv([["judge", r.judge.judge_id], ["prompt", r.judge.prompt_sha256 ? r.judge.prompt_sha256.slice(0, 16) : null],
      ["score", r.judge.score], ["valid", String(r.judge.valid)], ["flags", (r.judge.flags || []).join(", ")]]),
      h("pre", { class: "judge", dir: "auto" }, r.judge.raw || "(no reply)")] : null)],
    ["tokens", (r) => kv([...Object.entries(r.tokens || {}), ["latency (s)", fmt(r.latency_s, 3)]])],
    ["cost", (r) => (r.cost_usd === null || r.cost_usd === undefined ? null : "$" + Number(r.cost_usd).toPrecision(3))],
    ["more", (r) => kv(Object.entries(r.row || {}).filter(([k]) => !(k in (r.tokens || {})) && !["cost_usd", "latency_s", "finish_reason"].includes(k)))],
  ];
  function renderCompare(d, keys) {
    const res = keys.map((k) => d.runs[k]);
    const empty = (x) => x === null || x === undefined || x === "" || (Array.isArray(x) && x.flat(3).every((y) => y === null || y === undefined || y === ""));
    const rows = FIELDS.map(([name, f]) => [name, res.map((r) => (!r || r.outcome === "missing" ? null : f(r)))])
      .filter(([name, cells]) => name === "answer" || name === "outcome" || cells.some((c) => !empty(c)));
    return h("table", { id: "compare", class: keys.length > 4 ? "wide" : null },
      h("thead", {}, h("tr", {}, h("th", { class: "field" }, ""), keys.map((k) => h("th", { class: "col-head", "data-run": k, title: runOf.get(k).dir },
        k, h("div", { class: "sub" }, runOf.get(k).label !== k ? runOf.get(k).label + " · " : "", runOf.get(k).model || "", " · ", runOf.get(k).status))))),
      h("tbody", {}, rows.map(([name, cells]) => h("tr", { "data-field": name }, h("th", { class: "field" }, name),
        cells.map((c, j) => h("td", { class: "col", "data-run": keys[j] }, c === null && (!res[j] || res[j].outcome === "missing") ?
          (name === "outcome" ? [badge("missing"), " no prediction in this run"] : "") : c))))));
  }

  function alignedKeys(i) {
    const c = IX.cats.align_id, code = c.c[i];
    if (c.v[code] === null || c.v[code] === undefined) return [];
    const out = []; for (let j = 0; j < N; j++) if (c.c[j] === code) out.push(j);
    return out;
  }
  function renderAligned(i) {
    const same = alignedKeys(i);
    if (same.length < 2) return null;
    const lang = (j) => token(IX.cats.locale.v[IX.cats.locale.c[j]]) !== "(none)" ? token(IX.cats.locale.v[IX.cats.locale.c[j]]) : token(IX.cats.language.v[IX.cats.language.c[j]]);
    const runs = compared().map((k) => runOf.get(k));
    return h("section", { id: "aligned" }, h("h3", {}, `aligned items (align_id ${IX.cats.align_id.v[IX.cats.align_id.c[i]]})`),
      h("table", { class: "aligned" }, h("tr", {}, h("th", {}, "language"), h("th", {}, "question"), h("th", {}, "gold"), runs.map((r) => h("th", { title: r.label }, r.key))),
        same.map((j) => h("tr", { class: j === i ? "sel" : null }, h("td", {}, h("a", { href: hashOf({ ...state, item: IX.keys[j] }) }, lang(j))),
          h("td", { dir: "auto" }, IX.q[j]), h("td", { dir: "auto" }, IX.gold[j]), runs.map((r) => h("td", {}, badge(OUT[IX.res[r.key].o[j]])))))));
  }

  function renderDetail() {
    const i = keyAt.get(state.item);
    if (state.item && i === undefined) return $("#detail").replaceChildren(h("div", { class: "missing" }, `no item ${state.item} in this view`));
    if (i === undefined) return $("#detail").replaceChildren(h("p", { class: "hint" }, "Choose an item on the left."));
    const want = state.item;
    $("#detail").replaceChildren(h("p", { class: "hint" }, "loading…"));
    loadPage(Math.floor(i / IX.chunk), (page) => {
      if (state.item !== want) return;
      const d = page[want];
      if (!d) return $("#detail").replaceChildren(h("div", { class: "missing" }, `item ${want} is not in its page of details`));
      const keys = compared();
      $("#detail").replaceChildren(h("div", {}, renderItem(d.item)), h("div", {}, renderAligned(i)),
        h("h2", {}, keys.length > 1 ? `${keys.length} runs side by side` : "run", WITH.length > keys.length ?
          h("button", { class: "more-runs", onclick: () => togglePicker(true) }, `choose among ${WITH.length}`) : null),
        renderCompare(d, keys),
        h("div", {}, keys.filter((k) => d.runs[k] && d.runs[k].evidence).map((k) => h("section", { class: "col evidence-of", "data-run": k },
          h("h3", {}, k), renderEvidence(d.runs[k].evidence)))));
    }, (msg) => $("#detail").replaceChildren(h("div", { class: "missing" }, msg)));
  }

  function render() {
    renderRuns();
    if (!$("#picker").hidden) renderPicker();
    renderFilters();
    renderList(filtered());
    renderDetail();
    if (!document.body.dataset.readyMs) document.body.dataset.readyMs = String(Math.round(performance.now()));   // first page shown
    document.body.dataset.ready = "1";
  }
  // ---- keyboard: j/k or ↓/↑ the next or previous item, n/p or →/← the next or previous page, / the search box, Escape closes
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { $("#zoom").hidden = true; togglePicker(false); return; }
    const t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA"))) return;
    const move = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[e.key];
    if (move !== undefined && listRows.length) {                   // on to the next or previous page at its end
      const at = state.item ? listRows.indexOf(keyAt.get(state.item)) : -1;
      const j = Math.max(0, Math.min(listRows.length - 1, at < 0 ? listPage * PAGE : at + move));
      e.preventDefault(); go({ item: IX.keys[listRows[j]], aligned: "", page: String(Math.floor(j / PAGE)) });
    } else if (e.key === "n" || e.key === "ArrowRight") { e.preventDefault(); const b = $("#next"); if (b && !b.disabled) b.click(); }
    else if (e.key === "p" || e.key === "ArrowLeft") { e.preventDefault(); const b = $("#prev"); if (b && !b.disabled) b.click(); }
    else if (e.key === "/") { e.preventDefault(); $("#f-q").focus(); }
  });
  $("#zoom").addEventListener("click", () => { $("#zoom").hidden = true; });
  renderRuns();
  readHash();
  render();
}
})();
