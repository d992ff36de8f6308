/* pytest_evals red-team viewer.
 *
 * Reads the runs embedded as JSON (see pytest_evals/families/redteam/viewdata.py for the keys)
 * and renders them. Every value from the data reaches the page through textContent,
 * attribute setters or SVG attributes, never parsed as HTML, so text that looks like
 * markup stays text. All numbers were computed in Python; this script formats, sorts
 * and draws them.
 */
(function () {
  "use strict";

  var NA = "N/A";
  var SVGNS = "http://www.w3.org/2000/svg";
  var COLORS = ["#2f6fdb", "#e07b00", "#1a9c5b", "#c62f6e", "#7a4fd6", "#0097a7", "#8d6e00", "#d84315", "#546e7a", "#6d9f00"];
  var SHAPES = ["circle", "square", "triangle", "diamond", "cross", "star"];

  var DATA = null;
  var state = { run: 0, tab: "overview", seed: 0, prompt: null, attack: null, response: null, filter: "", histLevel: "prompt", evoSeed: 0, attrSeed: 0, attr: null };
  var TABS = ["overview", "explore", "analytics", "evolution", "attributes"];
  // Per-table sort and page, kept across re-renders: id -> {key, dir, page, size}.
  var tableState = {};

  // ---------------------------------------------------------------- DOM helpers
  function el(tag, props, children) {
    var e = document.createElement(tag);
    setProps(e, props);
    appendAll(e, children);
    return e;
  }

  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") e.textContent = attrs[k];
        else e.setAttribute(k, String(attrs[k]));
      });
    }
    appendAll(e, children);
    return e;
  }

  function setProps(e, props) {
    if (!props) return;
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (v === undefined || v === null) return;
      if (k === "text") e.textContent = String(v);
      else if (k === "class") e.className = v;
      else if (k === "dataset") Object.keys(v).forEach(function (d) { e.dataset[d] = String(v[d]); });
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    });
  }

  function appendAll(e, children) {
    if (!children) return;
    children.forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.append(typeof c === "string" ? document.createTextNode(c) : c);
    });
  }

  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  // ---------------------------------------------------------------- formatting
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  /* A score as rm-bias's viewer writes it (Python's f"{x:.3f}"). toFixed rounds an exact
   * tie up in magnitude, Python to even: a bf16 reward of 3.0625 is "3.062" there and would
   * be "3.063" here. The value's exact decimal expansion (toFixed is exact to 100 places)
   * tells a tie from a near-tie. */
  function fmt(v, digits) {
    if (!isNum(v)) return NA;
    var d = digits === undefined ? 3 : digits;
    var up = v.toFixed(d);
    if (v === 0 && 1 / v < 0) return "-" + up;  // Python keeps the sign of -0.0
    if (Math.abs(v) >= 1e21) return up;
    var full = Math.abs(v).toFixed(Math.min(100, d + 40));
    var cut = full.indexOf(".") + 1 + d;
    if (!/^50*$/.test(full.slice(cut))) return up;
    var down = full.slice(0, d ? cut : cut - 1);
    if (Number(down.charAt(down.length - 1)) % 2 === 1) return up;
    return (v < 0 ? "-" : "") + down;
  }
  function preview(text, n) {
    var one = String(text).replace(/\s+/g, " ").trim();
    n = n || 140;
    return one.length > n ? one.slice(0, n - 1) + "\u2026" : one;
  }
  function mean(xs) {
    var d = xs.filter(isNum);
    if (!d.length) return null;
    var s = 0;
    d.forEach(function (x) { s += x; });
    return s / d.length;
  }

  // ---------------------------------------------------------------- data access
  function run() { return DATA.runs[state.run]; }
  function seed() { var r = run(); return r ? r.seeds[state.seed] : null; }
  function promptObj() { var s = seed(); return s && state.prompt !== null ? s.prompts[state.prompt] : null; }
  function attackObj() { var p = promptObj(); return p && state.attack !== null ? p.attacks[state.attack] : null; }

  // Rater indexes (into run.raters) that have at least one value in the given rows.
  function ratersPresent(rows, pick) {
    var r = run();
    var out = [];
    r.raters.forEach(function (_, i) {
      if (rows.some(function (row) { return pick(row, i); })) out.push(i);
    });
    return out;
  }

  // ---------------------------------------------------------------- sortable table
  /* opts: id, columns [{key, label, kind: "num"|"int"|"text"|"hash", value(row), display(row)?}],
   * rows (objects with .idx = position in the source list), selected (idx or null), onSelect. */
  function table(opts) {
    var st = tableState[opts.id] || (tableState[opts.id] = {
      key: opts.sort ? opts.sort.key : null, dir: opts.sort ? opts.sort.dir : 1, page: 0, size: opts.pageSize || 100 });
    var rows = opts.rows.slice();
    if (st.key !== null) {
      var col = opts.columns.filter(function (c) { return c.key === st.key; })[0];
      if (col) {
        var numeric = col.kind !== "text" && col.kind !== "hash";
        rows.sort(function (a, b) {
          var va = col.value(a), vb = col.value(b);
          var na = numeric ? !isNum(va) : va === null || va === undefined;
          var nb = numeric ? !isNum(vb) : vb === null || vb === undefined;
          if (na || nb) return na === nb ? a.idx - b.idx : (na ? 1 : -1); // N/A last either way
          var c = numeric ? va - vb : String(va).localeCompare(String(vb));
          return c !== 0 ? c * st.dir : a.idx - b.idx;
        });
      }
    }
    var size = st.size > 0 ? st.size : rows.length || 1;
    var pages = Math.max(1, Math.ceil(rows.length / size));
    if (st.page >= pages) st.page = pages - 1;
    var shown = rows.slice(st.page * size, st.page * size + size);

    var wrap = el("div", { class: "tablebox", id: opts.id + "-box" });
    var pager = el("div", { class: "pager" });
    var from = rows.length ? st.page * size + 1 : 0;
    var to = Math.min(rows.length, (st.page + 1) * size);
    var rerender = function () { var fresh = table(opts); wrap.replaceWith(fresh); };
    pager.append(
      el("button", { type: "button", class: "prev", disabled: st.page === 0 ? "disabled" : null, text: "\u2039 Prev",
        onclick: function () { st.page -= 1; rerender(); } }),
      el("span", { class: "range", text: from + "\u2013" + to + " of " + rows.length }),
      el("button", { type: "button", class: "next", disabled: st.page >= pages - 1 ? "disabled" : null, text: "Next \u203A",
        onclick: function () { st.page += 1; rerender(); } })
    );
    var sizeSel = el("select", { class: "page-size", onchange: function (ev) { st.size = Number(ev.target.value); st.page = 0; rerender(); } });
    [25, 100, 500, 0].forEach(function (n) {
      var o = el("option", { value: n, text: n === 0 ? "all" : String(n) });
      if (n === st.size) o.selected = true;
      sizeSel.append(o);
    });
    pager.append(el("label", {}, ["rows per page ", sizeSel]));

    var thead = el("tr");
    opts.columns.forEach(function (c) {
      var th = el("th", { text: c.label, dataset: { key: c.key } });
      if (st.key === c.key) th.className = st.dir > 0 ? "sorted-asc" : "sorted-desc";
      th.addEventListener("click", function () {
        if (st.key === c.key) st.dir = -st.dir;
        else { st.key = c.key; st.dir = c.kind === "text" || c.kind === "hash" ? 1 : -1; }
        st.page = 0;
        rerender();
      });
      thead.append(th);
    });
    var tbody = el("tbody");
    shown.forEach(function (row) {
      var tr = el("tr", { dataset: { idx: row.idx } });
      if (row.idx === opts.selected) tr.className = "selected";
      opts.columns.forEach(function (c) {
        var v = c.value(row);
        var td = el("td", { dataset: { col: c.key } });
        if (c.kind === "num" || c.kind === "int") {
          td.className = isNum(v) ? "num" : "num na";
          td.textContent = c.kind === "int" ? (isNum(v) ? String(v) : NA) : fmt(v);
          td.dataset.value = isNum(v) ? String(v) : "";
        } else {
          var full = v === null || v === undefined ? "" : String(v);
          td.textContent = c.kind === "hash" ? full : preview(full);
          if (c.kind === "hash") td.className = "hash";
          if (c.flag) {
            var why = c.flag(row);
            if (why) { td.className += " flag"; td.title = why; td.dataset.flag = "1"; td.prepend(el("span", { class: "flagmark", text: "\u26A0 " })); }
          }
          if (full.length > 140) td.title = full.slice(0, 4000);
        }
        tr.append(td);
      });
      tr.addEventListener("click", function () { opts.onSelect(row.idx); });
      tbody.append(tr);
    });
    var tbl = el("table", { class: "grid", id: opts.id }, [el("thead", {}, [thead]), tbody]);
    // A pager on a five-row table is noise: show it once paging can matter.
    if (rows.length > 25) wrap.append(pager);
    wrap.append(el("div", { class: "tablewrap" }, [tbl]));
    return wrap;
  }

  function fullText(id, parts) {
    var box = el("div", { class: "fulltext", id: id });
    parts.forEach(function (p) {
      if (p.text === null || p.text === undefined) return;
      box.append(el("div", { class: "label", text: p.label }), el("pre", { class: p.cls || "", text: p.text }));
    });
    return box;
  }

  function jsonText(obj) {
    return obj && Object.keys(obj).length ? JSON.stringify(obj, null, 2) : null;
  }

  // ---------------------------------------------------------------- overview
  function runCounts(r) {
    var c = { prompts: 0, attacks: 0, responses: 0, steps: {}, na: 0 };
    r.seeds.forEach(function (s) {
      s.prompts.forEach(function (p) {
        c.prompts += 1;
        if (p.step !== null) c.steps[p.step] = true;
        p.attacks.forEach(function (a) {
          c.attacks += 1;
          c.responses += a.resp.length;
          if (!isNum(a.adv)) c.na += 1;
        });
      });
    });
    var steps = Object.keys(c.steps).map(Number).sort(function (a, b) { return a - b; });
    c.stepText = steps.length ? (steps.length === 1 ? String(steps[0]) : steps[0] + "\u2013" + steps[steps.length - 1] + " (" + steps.length + " steps)") : NA;
    return c;
  }

  function card(k, v, id) { return el("div", { class: "card", id: id }, [el("div", { class: "k", text: k }), el("div", { class: "v", text: v })]); }

  function renderOverview() {
    var view = clear(document.getElementById("view-overview"));
    var r = run();
    if (!r) { view.append(el("p", { class: "muted", text: "No runs found under " + DATA.source + " (expected <runner>/<run>/seed_<id>/<hash>.json)." })); return; }
    var c = runCounts(r);
    view.append(
      el("h2", { text: "Run " + r.id }),
      el("p", { class: "muted", text: r.path }),
      el("div", { class: "cards", id: "overview-cards" }, [
        card("Runner", r.runner, "ov-runner"),
        card("Seeds", String(r.seeds.length), "ov-seeds"),
        card("System prompts", String(c.prompts), "ov-prompts"),
        card("Attacks", String(c.attacks), "ov-attacks"),
        card("Responses", String(c.responses), "ov-responses"),
        card("Steps", c.stepText, "ov-steps"),
        card("Raters", r.raters.map(function (x) { return x.name; }).join(", ") || NA, "ov-raters"),
        r.nullRaw ? card("Missing raw scores (null)", String(r.nullRaw), "ov-nullraw") : null,
        r.attrs && r.attrs.length ? card("Attribute stats (final_stats)", r.attrs.length + " seed file(s)", "ov-attrs") : null
      ])
    );
    var rows = r.seeds.map(function (s, i) {
      var steps = {};
      var means = [];
      var best = null;
      var attacks = 0;
      s.prompts.forEach(function (p) {
        if (p.step !== null) steps[p.step] = true;
        attacks += p.attacks.length;
        if (isNum(p.mean)) { means.push(p.mean); if (best === null || p.mean > best) best = p.mean; }
      });
      return { idx: i, seed: s.id, prompts: s.prompts.length, attacks: attacks, steps: Object.keys(steps).length,
        meanOfMeans: mean(means), best: best, cluster: s.cluster && s.cluster.summary ? s.cluster.summary : "" };
    });
    view.append(el("h3", { text: "Seeds" }), table({
      id: "seeds-table", rows: rows, selected: null, pageSize: 100,
      columns: [
        { key: "seed", label: "Seed", kind: "text", value: function (x) { return x.seed; } },
        { key: "prompts", label: "System Prompts", kind: "int", value: function (x) { return x.prompts; } },
        { key: "attacks", label: "Attacks", kind: "int", value: function (x) { return x.attacks; } },
        { key: "steps", label: "Steps", kind: "int", value: function (x) { return x.steps; } },
        { key: "mean", label: "Mean of Mean Adv Score", kind: "num", value: function (x) { return x.meanOfMeans; } },
        { key: "best", label: "Best Mean Adv Score", kind: "num", value: function (x) { return x.best; } },
        { key: "cluster", label: "Cluster Summary", kind: "text", value: function (x) { return x.cluster; } }
      ],
      onSelect: function (i) { state.seed = i; state.prompt = state.attack = state.response = null; showTab("explore"); }
    }));
    if (r.warnings.length) {
      var wl = el("ul");
      r.warnings.forEach(function (w) { wl.append(el("li", { text: w.file + ": " + w.message })); });
      view.append(el("h3", { text: "Warnings (" + r.warnings.length + ")" }), el("div", { class: "issues", id: "warnings" }, [wl]));
    }
    if (r.issues.length) {
      var list = el("ul");
      r.issues.forEach(function (iss) {
        list.append(el("li", { text: iss.file + (iss.field ? " \u2014 field '" + iss.field + "'" : "") + ": " + iss.message }));
      });
      view.append(el("h3", { text: "Skipped files (" + r.issues.length + ")" }), el("div", { class: "issues", id: "issues" }, [list]));
    }
    view.append(el("h3", { text: "All runs" }), table({
      id: "runs-table", pageSize: 100, selected: state.run,
      rows: DATA.runs.map(function (x, i) { var k = runCounts(x); return { idx: i, id: x.id, seeds: x.seeds.length, prompts: k.prompts, attacks: k.attacks }; }),
      columns: [
        { key: "id", label: "Run", kind: "text", value: function (x) { return x.id; } },
        { key: "seeds", label: "Seeds", kind: "int", value: function (x) { return x.seeds; } },
        { key: "prompts", label: "System Prompts", kind: "int", value: function (x) { return x.prompts; } },
        { key: "attacks", label: "Attacks", kind: "int", value: function (x) { return x.attacks; } }
      ],
      onSelect: function (i) { selectRun(i); }
    }));
  }

  // ---------------------------------------------------------------- explore
  function renderExplore() {
    var view = clear(document.getElementById("view-explore"));
    var r = run();
    if (!r || !r.seeds.length) { view.append(el("p", { class: "muted", text: "This run has no seeds." })); return; }
    var seedSel = el("select", { id: "seed-picker", onchange: function (ev) {
      state.seed = Number(ev.target.value); state.prompt = state.attack = state.response = null; renderExplore();
    } });
    r.seeds.forEach(function (s, i) {
      var o = el("option", { value: i, text: "seed_" + s.id + " (" + s.prompts.length + " prompts)" });
      if (i === state.seed) o.selected = true;
      seedSel.append(o);
    });
    var filter = el("input", { type: "search", id: "prompt-filter", placeholder: "filter system prompts or hashes", value: state.filter });
    filter.addEventListener("input", function (ev) {
      state.filter = ev.target.value;
      if (tableState["prompts-table"]) tableState["prompts-table"].page = 0;
      var box = document.getElementById("prompts-table-box");
      if (box) box.replaceWith(promptsTable());
    });
    view.append(el("div", { class: "controls" }, [el("label", {}, ["Seed ", seedSel]), filter]));
    var s = seed();
    if (s.cluster) {
      view.append(fullText("cluster-info", [
        { label: "Cluster summary", text: s.cluster.summary || "" },
        { label: "Sample train prompts (" + (s.cluster.sample_train_prompts || []).length + ", batch size " + (s.cluster.train_batch_size === null || s.cluster.train_batch_size === undefined ? NA : s.cluster.train_batch_size) + ")",
          text: (s.cluster.sample_train_prompts || []).join("\n\n") || null }
      ]));
    }
    view.append(edgeRulesBox(), el("h2", { text: "System prompts" }), promptsTable());
    var detail = el("div", { id: "prompt-detail" });
    view.append(detail);
    renderPromptDetail(detail);
  }

  function ours() { return !!(DATA.edges && DATA.edges.mode === "ours"); }

  /* The five edge cases and how they are read in this page (see edge_rules.py). */
  function edgeRulesBox() {
    var e = DATA.edges || { mode: "rm-bias", rules: [] };
    var box = el("details", { id: "edge-rules", class: "fulltext" }, [
      el("summary", { text: "Edge rules: " + (e.mode === "ours" ? "ours (--edge-rules ours)" : "rm-bias's viewer (default)") })
    ]);
    var list = el("ul");
    e.rules.forEach(function (r) {
      var text = e.mode === "ours" ? r.ours + " — why: " + r.reason + " (rm-bias's viewer: " + r.rmbias + ")"
        : r.rmbias + " (--edge-rules ours: " + r.ours + ", because " + r.reason + ")";
      list.append(el("li", { dataset: { rule: r.key }, text: text }));
    });
    box.append(list);
    return box;
  }

  function promptsTable() {
    var s = seed();
    var needle = state.filter.trim().toLowerCase();
    var rows = [];
    s.prompts.forEach(function (p, i) {
      if (needle && p.sp.toLowerCase().indexOf(needle) < 0 && p.h.indexOf(needle) < 0) return;
      rows.push({ idx: i, p: p });
    });
    return table({
      id: "prompts-table", rows: rows, selected: state.prompt, pageSize: 100,
      // rm-bias's default order: the file's mean_score (0 when absent), highest first;
      // under --edge-rules ours the mean computed from the attacks.
      sort: ours() ? { key: "mean", dir: -1 } : { key: "fsort", dir: -1 },
      columns: [
        { key: "step", label: "Step", kind: "int", value: function (x) { return x.p.step; } },
        { key: "op", label: "Operation", kind: "text", value: function (x) { return x.p.op; } },
        { key: "sp", label: "System Prompt", kind: "text", value: function (x) { return x.p.sp; } },
        { key: "mean", label: "Mean Adv Score", kind: "num", value: function (x) { return x.p.mean; } },
        { key: "std", label: "Std Adv Score", kind: "num", value: function (x) { return x.p.std; } },
        { key: "n", label: "Num Attacks", kind: "int", value: function (x) { return x.p.attacks.length; } },
        { key: "fsort", label: "File mean_score", kind: "num", value: function (x) { return x.p.fsort; } },
        { key: "hash", label: "Hash", kind: "hash", value: function (x) { return x.p.h; },
          flag: function (x) { return x.p.hashOk ? null : "the file name is not the md5 of this system prompt"; } }
      ],
      onSelect: function (i) { state.prompt = i; state.attack = state.response = null; refreshExplore(); }
    });
  }

  function refreshExplore() {
    var box = document.getElementById("prompts-table-box");
    if (box) box.replaceWith(promptsTable());
    var detail = clear(document.getElementById("prompt-detail"));
    renderPromptDetail(detail);
  }

  function renderPromptDetail(detail) {
    var p = promptObj();
    if (!p) { detail.append(el("p", { class: "muted", text: "Click a system prompt to see its attacks." })); return; }
    var r = run();
    detail.append(
      el("div", { class: "crumbs" }, [el("span", { text: r.id }), el("span", { text: "seed_" + seed().id }), el("span", { text: p.h })]),
      fullText("prompt-fulltext", [
        { label: "System prompt", text: p.sp, cls: "sp-text" },
        { label: "Meta", text: "step " + (p.step === null ? NA : p.step) + ", operation " + (p.op === null ? NA : p.op) + (jsonText(p.meta) ? "\n" + jsonText(p.meta) : "") },
        { label: "File", text: p.file + (p.hashOk ? "" : "\n\u26A0 the file name is not the md5 of this system prompt") },
        { label: "Scores", text: "mean " + fmt(p.mean) + ", std " + fmt(p.std) + " (computed from the attacks' adversarial scores, as rm-bias's viewer does)" +
          "\nthe file's mean_score " + fmt(p.fmean) + ", stdev_score " + fmt(p.fstd) +
          (isNum(p.fmean) && !isNum(p.mean) ? " (rm-bias writes 0.0 when no attack has a score)" : "") }
      ])
    );
    var raters = ratersPresent(p.attacks, function (a, i) { return isNum(a.mr[i]) || isNum(a.mn[i]); });
    var columns = [
      { key: "u", label: "User Prompt", kind: "text", value: function (x) { return x.a.u; } },
      { key: "adv", label: "Adversarial Score", kind: "num", value: function (x) { return x.a.adv; } }
    ];
    raters.forEach(function (ri) {
      var name = r.raters[ri].name;
      columns.push({ key: "mr" + ri, label: "Mean Raw | " + name, kind: "num", value: function (x) { return x.a.mr[ri]; } });
      columns.push({ key: "mn" + ri, label: "Mean Norm | " + name, kind: "num", value: function (x) { return x.a.mn[ri]; } });
    });
    detail.append(el("h2", { text: "Attacks (" + p.attacks.length + ")" }), table({
      id: "attacks-table", pageSize: 100, selected: state.attack, columns: columns,
      rows: p.attacks.map(function (a, i) { return { idx: i, a: a }; }),
      onSelect: function (i) {
        state.attack = i; state.response = null;
        var d = clear(document.getElementById("prompt-detail"));
        renderPromptDetail(d);
        var target = document.getElementById("attack-detail");
        if (target && target.scrollIntoView) target.scrollIntoView({ block: "nearest" });
      }
    }));
    var ad = el("div", { id: "attack-detail" });
    detail.append(ad);
    renderAttackDetail(ad);
  }

  function renderAttackDetail(detail) {
    var a = attackObj();
    if (!a) { detail.append(el("p", { class: "muted", text: "Click an attack to see its rated responses." })); return; }
    var r = run();
    detail.append(fullText("attack-fulltext", [
      { label: "User prompt", text: a.u, cls: "user-text" },
      { label: "System prompt of this attack", text: a.sys },
      { label: "Adversarial score", text: fmt(a.adv, 6) +
        (a.advSrc === "computed" ? " (computed from the default rater pair)" : a.advSrc === "file" ? " (from the file: " + (a.advWhy || "the ratings give none") + ")" : " (" + (a.advWhy || "missing data") + ")") +
        (a.advNote ? "\naveraged over the normalized scores present (partial scores 'average', as rm-bias): " + a.advNote : "") +
        (isNum(a.stored) && a.advSrc === "computed" && Math.abs(a.stored - a.adv) > 1e-9 ? "\nthe file's aux_info.adversarial_score is " + fmt(a.stored, 6) : "") },
      { label: "Attack aux_info", text: jsonText(a.aux) }
    ]));
    var raters = ratersPresent(a.resp, function (x, i) { return isNum(x.raw[i]) || isNum(x.norm[i]); });
    var columns = [
      { key: "a", label: "Response", kind: "text", value: function (x) { return x.r.a; } },
      { key: "len", label: "Length", kind: "int", value: function (x) { return x.r.len; } }
    ];
    raters.forEach(function (ri) {
      var name = r.raters[ri].name;
      columns.push({ key: "raw" + ri, label: "Raw | " + name, kind: "num", value: function (x) { return x.r.raw[ri]; } });
      columns.push({ key: "norm" + ri, label: "Norm | " + name, kind: "num", value: function (x) { return x.r.norm[ri]; } });
    });
    detail.append(el("h2", { text: "Rated responses (" + a.resp.length + ")" }), table({
      id: "responses-table", pageSize: 100, selected: state.response, columns: columns,
      rows: a.resp.map(function (x, i) { return { idx: i, r: x }; }),
      onSelect: function (i) {
        state.response = i;
        var d = clear(document.getElementById("attack-detail"));
        renderAttackDetail(d);
      }
    }));
    if (state.response !== null && a.resp[state.response]) {
      var x = a.resp[state.response];
      var parts = [{ label: "Response " + (state.response + 1), text: x.a, cls: "response-text" }];
      r.raters.forEach(function (rt, i) {
        if (!isNum(x.raw[i]) && !isNum(x.norm[i]) && !(x.why && x.why[i])) return;
        var twice = x.twice && x.twice.indexOf(rt.name) >= 0 ? (ours() ? " [rated more than once: the first rating is shown (edge rules 'ours')]" : " [rated more than once: the last rating is shown, as rm-bias's viewer]") : "";
        parts.push({ label: rt.name + " (" + (rt.type === null || rt.type === undefined ? "rating_function_type not given" : rt.type) + "): raw " + (isNum(x.raw[i]) ? fmt(x.raw[i]) : "missing (null)") + ", normalized " + fmt(x.norm[i]) + twice,
          text: (x.why && x.why[i]) || "(no reasoning recorded)", cls: "reasoning" });
        if (x.x && x.x[String(i)]) parts.push({ label: rt.name + " aux_info", text: jsonText(x.x[String(i)]) });
      });
      detail.append(fullText("response-fulltext", parts));
    }
  }

  // ---------------------------------------------------------------- charts
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    var raw = (hi - lo) / count;
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / mag;
    var step = mag * (f >= 7.5 ? 10 : f >= 3.5 ? 5 : f >= 1.5 ? 2 : 1);
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toFixed(10)));
    return out;
  }

  function frame(opts) {
    var W = opts.width || 640, H = opts.height || 300, m = { l: 56, r: 16, t: 14, b: 42 };
    var root = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    root.append(svg("title", { text: opts.title }));
    var x0 = opts.x[0], x1 = opts.x[1], y0 = opts.y[0], y1 = opts.y[1];
    if (!(x1 > x0)) { x0 -= 1; x1 += 1; }
    if (!(y1 > y0)) { y0 -= 1; y1 += 1; }
    if (opts.padY) { var pad = (y1 - y0) * 0.06; y0 -= pad; y1 += pad; }
    var sx = function (v) { return m.l + (v - x0) / (x1 - x0) * (W - m.l - m.r); };
    var sy = function (v) { return H - m.b - (v - y0) / (y1 - y0) * (H - m.t - m.b); };
    var axis = svg("g", { class: "axis" });
    axis.append(svg("line", { x1: m.l, y1: H - m.b, x2: W - m.r, y2: H - m.b }), svg("line", { x1: m.l, y1: m.t, x2: m.l, y2: H - m.b }));
    (opts.xTicks || niceTicks(x0, x1, 6)).forEach(function (t) {
      if (t < x0 - 1e-9 || t > x1 + 1e-9) return;
      axis.append(svg("line", { x1: sx(t), y1: H - m.b, x2: sx(t), y2: H - m.b + 4 }));
      axis.append(svg("text", { x: sx(t), y: H - m.b + 16, "text-anchor": "middle", text: opts.xFmt ? opts.xFmt(t) : String(t) }));
    });
    niceTicks(y0, y1, 5).forEach(function (t) {
      if (t < y0 - 1e-9 || t > y1 + 1e-9) return;
      axis.append(svg("line", { x1: m.l - 4, y1: sy(t), x2: m.l, y2: sy(t) }));
      axis.append(svg("line", { x1: m.l, y1: sy(t), x2: W - m.r, y2: sy(t), stroke: "#eee" }));
      axis.append(svg("text", { x: m.l - 7, y: sy(t) + 4, "text-anchor": "end", text: String(t) }));
    });
    axis.append(svg("text", { x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle", text: opts.xLabel }));
    axis.append(svg("text", { x: 14, y: (m.t + H - m.b) / 2, "text-anchor": "middle", transform: "rotate(-90 14 " + (m.t + H - m.b) / 2 + ")", text: opts.yLabel }));
    root.append(axis);
    return { svg: root, sx: sx, sy: sy, W: W, H: H, m: m };
  }

  function shapeAt(shape, x, y, r, color, label) {
    var node;
    if (shape === "circle") node = svg("circle", { cx: x, cy: y, r: r });
    else if (shape === "square") node = svg("rect", { x: x - r, y: y - r, width: 2 * r, height: 2 * r });
    else {
      var pts;
      if (shape === "triangle") pts = [[0, -1.2], [1.1, 0.8], [-1.1, 0.8]];
      else if (shape === "diamond") pts = [[0, -1.3], [1.1, 0], [0, 1.3], [-1.1, 0]];
      else if (shape === "cross") pts = [[-0.4, -1.2], [0.4, -1.2], [0.4, -0.4], [1.2, -0.4], [1.2, 0.4], [0.4, 0.4], [0.4, 1.2], [-0.4, 1.2], [-0.4, 0.4], [-1.2, 0.4], [-1.2, -0.4], [-0.4, -0.4]];
      else { pts = []; for (var k = 0; k < 10; k++) { var a = Math.PI * k / 5 - Math.PI / 2, rr = k % 2 ? 0.55 : 1.3; pts.push([Math.cos(a) * rr, Math.sin(a) * rr]); } }
      node = svg("polygon", { points: pts.map(function (p) { return (x + p[0] * r).toFixed(2) + "," + (y + p[1] * r).toFixed(2); }).join(" ") });
    }
    node.setAttribute("fill", color);
    node.setAttribute("fill-opacity", "0.75");
    if (label) node.append(svg("title", { text: label }));
    return node;
  }

  function legend(items) {
    var box = el("div", { class: "legend" });
    items.forEach(function (it) {
      var sw;
      if (it.shape) {
        sw = svg("svg", { width: 14, height: 14, viewBox: "0 0 14 14" });
        sw.append(shapeAt(it.shape, 7, 7, 5, "#555"));
      } else {
        sw = el("span", { class: "sw" });
        sw.style.backgroundColor = it.color;
      }
      box.append(el("span", {}, [sw, " " + it.label]));
    });
    return box;
  }

  function seedColor(i) { return COLORS[i % COLORS.length]; }

  function histogram(r) {
    var box = el("div", { class: "chart", id: "hist-chart" });
    var series = r.seeds.map(function (s) {
      var vals = [];
      s.prompts.forEach(function (p) {
        if (state.histLevel === "prompt") vals.push(p.mean);
        else p.attacks.forEach(function (a) { vals.push(a.adv); });
      });
      return vals;
    });
    var all = [], na = 0;
    series.forEach(function (vs) { vs.forEach(function (v) { if (isNum(v)) all.push(v); else na += 1; }); });
    var levelSel = el("select", { id: "hist-level", onchange: function (ev) { state.histLevel = ev.target.value; renderAnalytics(); } });
    [["prompt", "system prompt mean adversarial score"], ["attack", "attack adversarial score"]].forEach(function (o) {
      var opt = el("option", { value: o[0], text: o[1] });
      if (o[0] === state.histLevel) opt.selected = true;
      levelSel.append(opt);
    });
    box.append(el("h3", { text: "Histogram of adversarial scores by seed" }), el("div", { class: "controls" }, [el("label", {}, ["Level ", levelSel])]));
    if (!all.length) { box.append(el("p", { class: "muted", text: "No adversarial scores (" + na + " N/A)." })); return box; }
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
    var nb = 24, width = (hi - lo) / nb;
    var counts = series.map(function (vs) {
      var c = new Array(nb).fill(0);
      vs.forEach(function (v) { if (isNum(v)) c[Math.min(nb - 1, Math.floor((v - lo) / width))] += 1; });
      return c;
    });
    var tops = new Array(nb).fill(0);
    counts.forEach(function (c) { c.forEach(function (n, b) { tops[b] += n; }); });
    var f = frame({ title: "Histogram of adversarial scores", x: [lo, hi], y: [0, Math.max.apply(null, tops)], xLabel: state.histLevel === "prompt" ? "mean adversarial score of a system prompt" : "adversarial score of an attack", yLabel: "count", xFmt: function (t) { return String(Number(t.toFixed(3))); } });
    var bars = svg("g", { class: "bars" });
    var base = new Array(nb).fill(0);
    counts.forEach(function (c, si) {
      c.forEach(function (n, b) {
        if (!n) return;
        var x = f.sx(lo + b * width), x2 = f.sx(lo + (b + 1) * width);
        var y = f.sy(base[b] + n), y2 = f.sy(base[b]);
        var rect = svg("rect", { x: x + 0.5, y: y, width: Math.max(1, x2 - x - 1), height: Math.max(0, y2 - y), fill: seedColor(si) });
        rect.append(svg("title", { text: "seed_" + r.seeds[si].id + ": " + n + " in [" + (lo + b * width).toFixed(3) + ", " + (lo + (b + 1) * width).toFixed(3) + ")" }));
        bars.append(rect);
        base[b] += n;
      });
    });
    f.svg.append(bars);
    box.append(f.svg, legend(r.seeds.map(function (s, i) { return { color: seedColor(i), label: "seed_" + s.id }; })));
    box.append(el("p", { class: "muted", text: all.length + " scores" + (na ? ", " + na + " N/A not shown" : "") }));
    return box;
  }

  function jitter(hash) {
    var h = 0;
    for (var i = 0; i < Math.min(8, hash.length); i++) h = (h * 31 + hash.charCodeAt(i)) % 1000;
    return (h / 1000 - 0.5) * 0.5;
  }

  function scatter(r) {
    var box = el("div", { class: "chart", id: "scatter-chart" });
    box.append(el("h3", { text: "Mean adversarial score over steps (colour: seed, shape: operation)" }));
    var ops = [], pts = [], na = 0;
    r.seeds.forEach(function (s, si) {
      s.prompts.forEach(function (p, pi) {
        if (ops.indexOf(p.op) < 0) ops.push(p.op);
        if (!isNum(p.mean)) { na += 1; return; }
        pts.push({ si: si, pi: pi, p: p, step: p.step === null ? 0 : p.step });
      });
    });
    if (!pts.length) { box.append(el("p", { class: "muted", text: "No scored system prompts (" + na + " N/A)." })); return box; }
    var xs = pts.map(function (d) { return d.step; }), ys = pts.map(function (d) { return d.p.mean; });
    var f = frame({ title: "Scores over steps", x: [Math.min.apply(null, xs) - 0.5, Math.max.apply(null, xs) + 0.5], y: [Math.min.apply(null, ys), Math.max.apply(null, ys)], xLabel: "step", yLabel: "mean adversarial score", padY: true,
      xTicks: niceTicks(Math.min.apply(null, xs), Math.max.apply(null, xs), 8).filter(function (t) { return t === Math.round(t); }) });
    var g = svg("g", { class: "points" });
    pts.forEach(function (d) {
      var node = shapeAt(SHAPES[ops.indexOf(d.p.op) % SHAPES.length], f.sx(d.step + jitter(d.p.h)), f.sy(d.p.mean), 4, seedColor(d.si),
        "seed_" + r.seeds[d.si].id + " step " + d.p.step + " " + d.p.op + ": " + fmt(d.p.mean) + " \u2014 " + preview(d.p.sp, 80));
      node.addEventListener("click", function () { state.seed = d.si; state.prompt = d.pi; state.attack = state.response = null; showTab("explore"); });
      g.append(node);
    });
    f.svg.append(g);
    box.append(f.svg,
      legend(r.seeds.map(function (s, i) { return { color: seedColor(i), label: "seed_" + s.id }; })),
      legend(ops.map(function (o, i) { return { shape: SHAPES[i % SHAPES.length], label: o }; })));
    if (na) box.append(el("p", { class: "muted", text: na + " system prompts with N/A mean not shown" }));
    return box;
  }

  function population(r) {
    var box = el("div", { class: "chart", id: "population-chart" });
    box.append(el("h3", { text: "Population over time" }));
    var withHist = r.seeds.map(function (s, i) { return { s: s, i: i }; }).filter(function (d) { return d.s.population && Object.keys(d.s.population).length; });
    if (!withHist.length) {
      box.append(el("p", { class: "muted", text: "No population_history.json in this run" + (r.runner === "evo" ? "." : " (population charts are for evo runs).") }));
      return box;
    }
    var lines = withHist.map(function (d) {
      var byHash = {};
      d.s.prompts.forEach(function (p) { byHash[p.h] = p; });
      var steps = Object.keys(d.s.population).map(Number).sort(function (a, b) { return a - b; });
      return { i: d.i, s: d.s, pts: steps.map(function (st) {
        var members = Object.keys(d.s.population[String(st)]);
        var scores = members.map(function (h) { return byHash[h] ? byHash[h].mean : null; });
        var defined = scores.filter(isNum);
        return { step: st, size: members.length, mean: mean(defined), max: defined.length ? Math.max.apply(null, defined) : null };
      }) };
    });
    function chart(title, key, yLabel) {
      var all = [], xs = [];
      lines.forEach(function (l) { l.pts.forEach(function (p) { xs.push(p.step); if (isNum(p[key])) all.push(p[key]); }); });
      if (!all.length) return el("p", { class: "muted", text: title + ": no data" });
      var f = frame({ title: title, width: 460, height: 260, x: [Math.min.apply(null, xs), Math.max.apply(null, xs)], y: [key === "size" ? 0 : Math.min.apply(null, all), Math.max.apply(null, all)], xLabel: "step", yLabel: yLabel, padY: key !== "size",
        xTicks: niceTicks(Math.min.apply(null, xs), Math.max.apply(null, xs), 8).filter(function (t) { return t === Math.round(t); }) });
      lines.forEach(function (l) {
        var pts = l.pts.filter(function (p) { return isNum(p[key]); });
        f.svg.append(svg("polyline", { points: pts.map(function (p) { return f.sx(p.step).toFixed(2) + "," + f.sy(p[key]).toFixed(2); }).join(" "), fill: "none", stroke: seedColor(l.i), "stroke-width": 2 }));
        pts.forEach(function (p) {
          f.svg.append(svg("circle", { cx: f.sx(p.step), cy: f.sy(p[key]), r: 3, fill: seedColor(l.i) }, [svg("title", { text: "seed_" + l.s.id + " step " + p.step + ": " + (key === "size" ? p.size : fmt(p[key])) })]));
        });
      });
      return el("div", { class: "subchart" }, [el("div", { class: "muted", text: title }), f.svg]);
    }
    box.append(el("div", { class: "subcharts" }, [chart("Population size", "size", "prompts"), chart("Mean adversarial score of the population", "mean", "mean score"), chart("Best adversarial score in the population", "max", "max score")]));
    box.append(legend(lines.map(function (l) { return { color: seedColor(l.i), label: "seed_" + l.s.id }; })));
    return box;
  }

  function renderAnalytics() {
    var view = clear(document.getElementById("view-analytics"));
    var r = run();
    if (!r) return;
    view.append(el("h2", { text: "Analytics: " + r.id }), histogram(r), el("br"), scatter(r), el("br"), population(r));
  }

  // ---------------------------------------------------------------- evolution
  /* rm-bias's Evolution view: which prompts were in the population at each step (with the
   * generation recorded for them), the candidates of that step that were not, population
   * vs non-population scores, and the operations that produced the prompts. A prompt's
   * score is its mean adversarial score (N/A when none of its attacks has one). */
  function everInPopulation(s) {
    var inPop = {};
    if (s.population) Object.keys(s.population).forEach(function (st) { Object.keys(s.population[st]).forEach(function (h) { inPop[h] = true; }); });
    return inPop;
  }

  function promptRows(list, withGeneration, generations) {
    return list.map(function (d) {
      return { idx: d.pi, p: d.p, gen: withGeneration ? generations[d.p.h] : null };
    });
  }

  function evoTable(id, rows, withGeneration) {
    var columns = [
      { key: "hash", label: "Hash", kind: "hash", value: function (x) { return x.p.h; } },
      { key: "sp", label: "System Prompt", kind: "text", value: function (x) { return x.p.sp; } },
      { key: "mean", label: "Score", kind: "num", value: function (x) { return x.p.mean; } },
      { key: "op", label: "Operation", kind: "text", value: function (x) { return x.p.op === null ? "unknown" : x.p.op; } }
    ];
    if (withGeneration) columns.push({ key: "gen", label: "Generation", kind: "int", value: function (x) { return x.gen; } });
    return table({ id: id, rows: rows, selected: null, pageSize: 100, sort: { key: "mean", dir: -1 }, columns: columns,
      onSelect: function (i) { state.seed = state.evoSeed; state.prompt = i; state.attack = state.response = null; showTab("explore"); } });
  }

  function timeline(s) {
    var box = el("div", { id: "evo-timeline" });
    box.append(el("h3", { text: "Population timeline of seed_" + s.id }));
    if (!s.population || !Object.keys(s.population).length) {
      box.append(el("p", { class: "muted", text: "No population_history.json for this seed." }));
      return box;
    }
    var byHash = {};
    s.prompts.forEach(function (p, pi) { byHash[p.h] = { p: p, pi: pi }; });
    var steps = Object.keys(s.population).map(Number).sort(function (a, b) { return a - b; });
    steps.forEach(function (st, k) {
      var members = s.population[String(st)];
      var hashes = Object.keys(members);
      var found = hashes.filter(function (h) { return byHash[h]; }).map(function (h) { return byHash[h]; });
      var details = el("details", { id: "evo-step-" + st, class: "evo-step", dataset: { step: st } });
      if (k === steps.length - 1) details.open = true;
      details.append(el("summary", { text: "Step " + st + " \u2014 population size " + hashes.length }));
      if (!hashes.length) details.append(el("p", { class: "muted", text: "No prompts in the population at this step." }));
      else details.append(evoTable("evo-pop-" + st, promptRows(found, true, members), true));
      if (found.length < hashes.length) details.append(el("p", { class: "muted", text: (hashes.length - found.length) + " member(s) have no system prompt file in this seed" }));
      var candidates = [];
      s.prompts.forEach(function (p, pi) { if (p.step === st && !(p.h in members)) candidates.push({ p: p, pi: pi }); });
      if (candidates.length) {
        details.append(el("h4", { text: "Non-population candidates generated at this step (" + candidates.length + ")" }));
        details.append(evoTable("evo-cand-" + st, promptRows(candidates, false, {}), false));
      }
      box.append(details);
    });
    return box;
  }

  function popScatter(r) {
    var box = el("div", { class: "chart", id: "pop-scatter-chart" });
    box.append(el("h3", { text: "Scores: population vs non-population (colour: ever in the population, shape: operation)" }));
    var ops = [], pts = [], na = 0;
    r.seeds.forEach(function (s, si) {
      var inPop = everInPopulation(s);
      s.prompts.forEach(function (p, pi) {
        var op = p.op === null ? "unknown" : p.op;
        if (ops.indexOf(op) < 0) ops.push(op);
        if (!isNum(p.mean)) { na += 1; return; }
        pts.push({ si: si, pi: pi, p: p, op: op, pop: !!inPop[p.h], step: p.step === null ? 0 : p.step });
      });
    });
    if (!pts.length) { box.append(el("p", { class: "muted", text: "No scored system prompts (" + na + " N/A)." })); return box; }
    var xs = pts.map(function (d) { return d.step; }), ys = pts.map(function (d) { return d.p.mean; });
    var f = frame({ title: "Population vs non-population", x: [Math.min.apply(null, xs) - 0.5, Math.max.apply(null, xs) + 0.5], y: [Math.min.apply(null, ys), Math.max.apply(null, ys)], xLabel: "step", yLabel: "mean adversarial score", padY: true,
      xTicks: niceTicks(Math.min.apply(null, xs), Math.max.apply(null, xs), 8).filter(function (t) { return t === Math.round(t); }) });
    var g = svg("g", { class: "points" });
    pts.forEach(function (d) {
      var node = shapeAt(SHAPES[ops.indexOf(d.op) % SHAPES.length], f.sx(d.step + jitter(d.p.h)), f.sy(d.p.mean), 4, d.pop ? COLORS[0] : COLORS[1],
        (d.pop ? "population" : "not in population") + ": seed_" + r.seeds[d.si].id + " step " + d.step + " " + d.op + ": " + fmt(d.p.mean) + " \u2014 " + preview(d.p.sp, 80));
      node.setAttribute("data-pop", d.pop ? "1" : "0");
      node.addEventListener("click", function () { state.seed = d.si; state.prompt = d.pi; state.attack = state.response = null; showTab("explore"); });
      g.append(node);
    });
    f.svg.append(g);
    box.append(f.svg, legend([{ color: COLORS[0], label: "in the population at some step" }, { color: COLORS[1], label: "never in the population" }]),
      legend(ops.map(function (o, i) { return { shape: SHAPES[i % SHAPES.length], label: o }; })));
    if (na) box.append(el("p", { class: "muted", text: na + " system prompts with N/A mean not shown" }));
    return box;
  }

  function operationStats(r) {
    var byOp = {}, order = [];
    r.seeds.forEach(function (s) {
      s.prompts.forEach(function (p) {
        var op = p.op === null ? "unknown" : p.op;
        if (!byOp[op]) { byOp[op] = { op: op, n: 0, scores: [] }; order.push(op); }
        byOp[op].n += 1;
        if (isNum(p.mean)) byOp[op].scores.push(p.mean);
      });
    });
    return order.map(function (op) { var o = byOp[op]; return { op: op, n: o.n, mean: mean(o.scores), scored: o.scores.length }; });
  }

  function pie(stats) {
    var box = el("div", { class: "chart", id: "ops-pie" });
    box.append(el("h3", { text: "Distribution of operations" }));
    var total = stats.reduce(function (t, o) { return t + o.n; }, 0);
    var W = 300, R = 110, cx = 150, cy = 125;
    var root = svg("svg", { width: W, height: 250, viewBox: "0 0 " + W + " 250", role: "img" }, [svg("title", { text: "Distribution of operations" })]);
    var angle = -Math.PI / 2;
    stats.forEach(function (o, i) {
      var frac = o.n / total, label = o.op + ": " + o.n + " (" + (100 * frac).toFixed(1) + "%)", node;
      if (frac >= 1) node = svg("circle", { cx: cx, cy: cy, r: R });
      else {
        var a2 = angle + frac * 2 * Math.PI;
        var large = frac > 0.5 ? 1 : 0;
        node = svg("path", { d: "M" + cx + "," + cy + " L" + (cx + R * Math.cos(angle)).toFixed(2) + "," + (cy + R * Math.sin(angle)).toFixed(2) +
          " A" + R + "," + R + " 0 " + large + " 1 " + (cx + R * Math.cos(a2)).toFixed(2) + "," + (cy + R * Math.sin(a2)).toFixed(2) + " Z" });
        angle = a2;
      }
      node.setAttribute("fill", COLORS[i % COLORS.length]);
      node.setAttribute("class", "slice");
      node.setAttribute("data-op", o.op);
      node.setAttribute("data-count", String(o.n));
      node.append(svg("title", { text: label }));
      root.append(node);
    });
    box.append(root, legend(stats.map(function (o, i) { return { color: COLORS[i % COLORS.length], label: o.op + " (" + o.n + ")" }; })));
    return box;
  }

  function opBars(stats) {
    var box = el("div", { class: "chart", id: "ops-bar" });
    box.append(el("h3", { text: "Mean score by operation" }));
    var rows = stats.filter(function (o) { return isNum(o.mean); }).sort(function (a, b) { return b.mean - a.mean; });
    if (!rows.length) { box.append(el("p", { class: "muted", text: "No scored system prompts." })); return box; }
    var lo = Math.min(0, Math.min.apply(null, rows.map(function (o) { return o.mean; })));
    var hi = Math.max(0, Math.max.apply(null, rows.map(function (o) { return o.mean; })));
    var f = frame({ title: "Mean score by operation", width: 460, height: 260, x: [0, rows.length], y: [lo, hi], xLabel: "operation", yLabel: "mean score", padY: true, xTicks: [] });
    var g = svg("g", { class: "bars" });
    var slot = (f.sx(1) - f.sx(0));
    rows.forEach(function (o, i) {
      var x = f.sx(i) + slot * 0.15, y0 = f.sy(0), y1 = f.sy(o.mean);
      var rect = svg("rect", { x: x, y: Math.min(y0, y1), width: slot * 0.7, height: Math.max(1, Math.abs(y1 - y0)), fill: COLORS[stats.indexOf(o) % COLORS.length], "data-op": o.op, "data-mean": String(o.mean) },
        [svg("title", { text: o.op + ": mean " + fmt(o.mean) + " over " + o.scored + " scored prompt(s)" })]);
      g.append(rect, svg("text", { x: x + slot * 0.35, y: f.H - f.m.b + 14, "text-anchor": "middle", text: preview(o.op, 16) }));
    });
    f.svg.append(g);
    box.append(f.svg);
    return box;
  }

  function renderEvolution() {
    var view = clear(document.getElementById("view-evolution"));
    var r = run();
    if (!r || !r.seeds.length) { view.append(el("p", { class: "muted", text: "This run has no seeds." })); return; }
    if (state.evoSeed >= r.seeds.length) state.evoSeed = 0;
    var seedSel = el("select", { id: "evo-seed-picker", onchange: function (ev) { state.evoSeed = Number(ev.target.value); renderEvolution(); } });
    r.seeds.forEach(function (s, i) {
      var o = el("option", { value: i, text: "seed_" + s.id + (s.population ? " (" + Object.keys(s.population).length + " steps)" : " (no population history)") });
      if (i === state.evoSeed) o.selected = true;
      seedSel.append(o);
    });
    var stats = operationStats(r);
    view.append(el("h2", { text: "Evolution: " + r.id }), popScatter(r), el("br"),
      el("div", { class: "subcharts", id: "ops-charts" }, [pie(stats), opBars(stats)]),
      el("div", { class: "controls" }, [el("label", {}, ["Seed ", seedSel])]), timeline(r.seeds[state.evoSeed]));
  }

  // ---------------------------------------------------------------- live data (pytest-evals viz --watch)
  /* The server answers "version" and "data.json"; when the version moves, the new data
   * replaces the old and the current tab is drawn again with the same selections. */
  function applyData(next) {
    // Selections are kept by identity (run id, seed id, prompt hash): new files may shift positions.
    var old = { run: run() ? run().id : null, seed: seed() ? seed().id : null, evo: run() && run().seeds[state.evoSeed] ? run().seeds[state.evoSeed].id : null,
      prompt: promptObj() ? promptObj().h : null };
    DATA = next;
    var picker = clear(document.getElementById("run-picker"));
    DATA.runs.forEach(function (r, i) { picker.append(el("option", { value: i, text: r.id })); });
    var ri = DATA.runs.map(function (r) { return r.id; }).indexOf(old.run);
    if (ri !== state.run) { state.run = ri < 0 ? 0 : ri; tableState = {}; }
    picker.value = String(state.run);
    var r = run();
    var ids = r ? r.seeds.map(function (s) { return s.id; }) : [];
    state.seed = Math.max(0, ids.indexOf(old.seed));
    state.evoSeed = Math.max(0, ids.indexOf(old.evo));
    var pi = seed() && old.prompt !== null ? seed().prompts.map(function (p) { return p.h; }).indexOf(old.prompt) : -1;
    if (pi < 0) state.prompt = state.attack = state.response = null;
    else state.prompt = pi;
    showLabel();
    var y = window.scrollY;
    showTab(state.tab);
    window.scrollTo(0, y);
    document.documentElement.dataset.version = String(DATA.version);
  }

  function showLabel() {
    document.getElementById("generated").textContent = (DATA.watch ? "live, version " + DATA.version + ", updated " : "generated ") + DATA.generated + (DATA.source ? " from " + DATA.source : "");
    document.getElementById("partial-mode").textContent = "partial scores: " + (DATA.partial === "na" ? "na (N/A when any is missing)" : "average of those present (rm-bias)") +
      " · edge rules: " + (ours() ? "ours" : "rm-bias");
  }

  function startWatching() {
    if (!DATA.watch || !/^https?:$/.test(location.protocol) || !window.fetch) return;
    var busy = false;
    setInterval(function () {
      if (busy) return;
      busy = true;
      fetch("version", { cache: "no-store" }).then(function (resp) { return resp.text(); }).then(function (v) {
        if (Number(v) === DATA.version) return null;
        return fetch("data.json", { cache: "no-store" }).then(function (resp) { return resp.json(); }).then(applyData);
      }).catch(function () { /* the server stopped: keep showing the last data */ }).then(function () { busy = false; });
    }, Math.max(0.5, DATA.watch) * 1000);
  }

  // ---------------------------------------------------------------- navigation
  // ---------------------------------------------------------------- attribute stats (final_stats)
  /* rm-bias's current runs write final_stats/seed_<i>.json: attributes with their student and
   * teacher win rates and the rollouts behind them. The file's order (by student win rate) is
   * kept; the rates recomputed from the rollouts are shown beside the stored ones. */
  function renderAttributes() {
    var view = clear(document.getElementById("view-attributes"));
    var r = run();
    var attrs = r && r.attrs ? r.attrs : [];
    if (!attrs.length) { view.append(el("p", { class: "muted", text: "This run has no final_stats/seed_<i>.json attribute statistics." })); return; }
    if (state.attrSeed === undefined || state.attrSeed >= attrs.length) state.attrSeed = 0;
    var sel = el("select", { id: "attr-seed-picker", onchange: function (ev) { state.attrSeed = Number(ev.target.value); state.attr = null; renderAttributes(); } });
    attrs.forEach(function (a, i) {
      var o = el("option", { value: i, text: "seed_" + a.seed + " (" + a.items.length + " attributes)" });
      if (i === state.attrSeed) o.selected = true;
      sel.append(o);
    });
    var a = attrs[state.attrSeed];
    view.append(el("div", { class: "controls" }, [el("label", {}, ["Seed ", sel])]), el("p", { class: "muted", text: a.file }));
    view.append(el("h2", { text: "Attributes" }), table({
      id: "attributes-table", pageSize: 100, selected: state.attr === undefined ? null : state.attr,
      rows: a.items.map(function (x, i) { return { idx: i, x: x }; }),
      columns: [
        { key: "rank", label: "#", kind: "int", value: function (o) { return o.idx + 1; } },
        { key: "attr", label: "Attribute", kind: "text", value: function (o) { return o.x.attr; } },
        { key: "sw", label: "Student winrate", kind: "num", value: function (o) { return o.x.sw; } },
        { key: "swc", label: "Student (recomputed)", kind: "num", value: function (o) { return o.x.swc; } },
        { key: "tw", label: "Teacher winrate", kind: "num", value: function (o) { return o.x.tw; } },
        { key: "twc", label: "Teacher (recomputed)", kind: "num", value: function (o) { return o.x.twc; } },
        { key: "prompts", label: "User prompts", kind: "int", value: function (o) { return o.x.prompts; } },
        { key: "n", label: "Rollouts", kind: "int", value: function (o) { return o.x.n; } }
      ],
      onSelect: function (i) { state.attr = i; renderAttributes(); }
    }));
    if (state.attr === null || state.attr === undefined || !a.items[state.attr]) {
      view.append(el("p", { class: "muted", text: "Click an attribute to see its rollouts." }));
      return;
    }
    var x = a.items[state.attr];
    var check = function (stored, computed) {
      if (!isNum(stored) && !isNum(computed)) return NA;
      var same = isNum(stored) && isNum(computed) && Math.abs(stored - computed) <= 1e-9;
      return fmt(stored, 6) + (same ? " (recomputed from the rollouts: the same)" : " (recomputed from the rollouts: " + fmt(computed, 6) + ")");
    };
    view.append(fullText("attribute-fulltext", [
      { label: "Attribute", text: x.attr, cls: "attr-text" },
      { label: "Student winrate", text: check(x.sw, x.swc) },
      { label: "Teacher winrate", text: check(x.tw, x.twc) },
      { label: "Meta", text: jsonText(x.meta) },
      { label: "Rollouts", text: x.n + " over " + x.prompts + " user prompt(s)" + (x.nulls ? ", " + x.nulls + " null (failed) rollout(s)" : "") }
    ]));
    view.append(el("h2", { text: "Rollouts (" + x.n + ")" }), table({
      id: "rollouts-table", pageSize: 100, selected: null,
      rows: x.roll.map(function (o, i) { return { idx: i, o: o }; }),
      columns: [
        { key: "u", label: "User prompt", kind: "text", value: function (o) { return o.o.u; } },
        { key: "rw", label: "Rewritten response", kind: "text", value: function (o) { return o.o.rw; } },
        { key: "base", label: "Baseline response", kind: "text", value: function (o) { return o.o.base; } },
        { key: "ss", label: "Student score", kind: "num", value: function (o) { return o.o.ss; } },
        { key: "ts", label: "Teacher score", kind: "num", value: function (o) { return o.o.ts; } }
      ],
      onSelect: function () { /* the cells hold the text; nothing more to open */ }
    }));
  }

  function showTab(name) {
    state.tab = name;
    TABS.forEach(function (t) {
      document.getElementById("view-" + t).hidden = t !== name;
      document.getElementById("tab-" + t).className = t === name ? "active" : "";
    });
    window.scrollTo(0, 0);
    if (name === "overview") renderOverview();
    else if (name === "explore") renderExplore();
    else if (name === "evolution") renderEvolution();
    else if (name === "attributes") renderAttributes();
    else renderAnalytics();
  }

  function selectRun(i) {
    state.run = i; state.seed = 0; state.evoSeed = 0; state.attrSeed = 0; state.attr = null; state.prompt = state.attack = state.response = null; state.filter = "";
    tableState = {};
    document.getElementById("run-picker").value = String(i);
    showTab(state.tab);
  }

  function init() {
    DATA = JSON.parse(document.getElementById("viz-data").textContent);
    showLabel();
    document.documentElement.dataset.version = String(DATA.version || 0);
    var picker = document.getElementById("run-picker");
    DATA.runs.forEach(function (r, i) { picker.append(el("option", { value: i, text: r.id })); });
    picker.addEventListener("change", function (ev) { selectRun(Number(ev.target.value)); });
    document.querySelectorAll("#tabs button").forEach(function (b) {
      b.addEventListener("click", function () { showTab(b.dataset.tab); });
    });
    showTab("overview");
    startWatching();
    // Milliseconds from navigation start to a rendered page (read by bench/bench_viewer.py).
    document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
    document.documentElement.dataset.ready = "1";
  }

  try {
    init();
  } catch (err) {
    var box = document.getElementById("fatal");
    box.hidden = false;
    box.textContent = "The viewer failed to start: " + (err && err.message ? err.message : String(err));
    document.documentElement.dataset.ready = "error";
    throw err;
  }
})();
