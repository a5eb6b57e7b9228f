// hlo-layout explorer: plain JavaScript, no libraries. The server lays the graph out
// (service/explorer/graph_view.py); this file only draws it on a canvas, so a module of 10k
// instructions draws in a few hundred milliseconds.
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const embeddedNode = document.getElementById("embedded-data");
  const embedded = embeddedNode ? JSON.parse(embeddedNode.textContent) : null;

  // Geometry of the drawing, in world units (CSS pixels at zoom 1).
  const COL_W = 130, NODE_W = 112, NODE_H = 22, LAYER_H = 46, HEAD_H = 26, PAD = 12, GAP = 14;
  const TEXT_CHUNK = 200; // lines of the annotated text per lazily laid out block

  const state = {
    report: null, view: null, xlaScore: null, folded: new Set(), panels: [], panelOf: [],
    scale: 1, ox: 0, oy: 0, selected: -1, selectedConversion: -1, renderMs: null, timings: null,
    byComputation: [], edgesByComputation: [], cellIndex: [],
  };
  window.hloExplorer = state; // read by the tests and the benchmark
  state.geometry = { COL_W, NODE_W, NODE_H, LAYER_H, HEAD_H, PAD };

  let token = "";
  try { token = sessionStorage.getItem("hlo-layout-token") || ""; } catch (e) { token = ""; }

  function setStatus(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // `timing` (optional) receives the milliseconds of the request: `send` (the body made and
  // handed to fetch), `wait` (sent -> answer headers: upload, queue, server work),
  // `download` (headers -> JSON parsed) and `server` (the server's own Server-Timing steps,
  // and `cpu`, their CPU time).
  async function api(path, body, timing) {
    const headers = {};
    const started = performance.now();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (token) headers["Authorization"] = "Bearer " + token;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const sent = performance.now();
    const response = await fetch(path, {
      method: body === undefined ? "GET" : "POST", headers, body: payload,
    });
    const answered = performance.now();
    if (response.status === 401) {
      $("token-form").hidden = false;
      $("token").focus();
      throw new Error("the server needs an API token: enter it above and run again");
    }
    let data;
    try { data = await response.json(); } catch (e) { data = { message: "answer " + response.status }; }
    if (!response.ok) {
      const where = data.line ? ` (line ${data.line}, column ${data.column})` : "";
      const failure = new Error(`${data.type || response.status}: ${data.message}${where}`);
      failure.body = data;
      throw failure;
    }
    if (timing) {
      timing.send = sent - started;
      timing.wait = answered - sent;
      timing.download = performance.now() - answered;
      timing.server = serverTiming(response.headers.get("Server-Timing"));
    }
    return data;
  }

  function serverTiming(header) {
    const out = {};
    for (const part of (header || "").split(",")) {
      const match = part.trim().match(/^([\w-]+);dur=([\d.]+)$/);
      if (match) out[match[1]] = Number(match[2]);
    }
    return out;
  }

  // ---------------------------------------------------------------- result numbers

  function formatGap(gap) {
    return gap === null || gap === undefined ? "n/a" : (100 * gap).toFixed(2) + " %";
  }

  function numberRows(report, xlaScore) {
    const rows = [
      ["status", "status", report.status],
      ["chosen_by", "answer from", report.chosen_by],
      ["objective", "cost (ns)", report.objective],
      ["lower_bound", "proven lower bound (ns)", report.lower_bound],
      ["gap", "gap", formatGap(report.gap)],
    ];
    for (const [name, value] of Object.entries(report.baselines || {})) {
      rows.push(["baselines." + name, name + " layouts (ns)", value]);
    }
    if (xlaScore !== null && xlaScore !== undefined) {
      rows.push(["xla", "XLA's layouts, scored (ns)", xlaScore]);
    }
    rows.push(["inserted", "conversions inserted", (report.inserted || []).length]);
    for (const [name, value] of Object.entries(report.breakdown || {})) {
      rows.push(["breakdown." + name, name + " (ns)", value]);
    }
    if (report.problem) {
      rows.push(["problem.nodes", "problem nodes", report.problem.nodes]);
      rows.push(["problem.relations", "problem relations", report.problem.relations]);
    }
    return rows;
  }

  function showNumbers(report, xlaScore) {
    const body = $("numbers").querySelector("tbody");
    body.replaceChildren();
    for (const [field, label, value] of numberRows(report, xlaScore)) {
      const tr = el("tr", { "data-field": field });
      tr.append(el("th", { scope: "row" }, label), el("td", { class: "num" }, value));
      body.append(tr);
    }
    const measured = $("measured");
    measured.replaceChildren();
    if (report.measured) showMeasured(measured, report.measured);
    $("result-section").hidden = false;
  }

  // The `measured` section (XLA:CPU run times beside the model's prediction): its module rows
  // as a table, everything else as name/value rows; every cell names its JSON path.
  function showMeasured(box, measured) {
    box.append(el("h3", {}, "Measured in XLA:CPU"));
    const table = el("table", { id: "measured-table" });
    for (const [path, value] of flatten({ ...measured, modules: undefined }, "measured")) {
      if (value === undefined) continue;
      const tr = el("tr", { "data-field": path });
      tr.append(el("th", { scope: "row" }, path.slice("measured.".length)),
        el("td", { class: "num" }, value));
      table.append(tr);
    }
    box.append(table);
    const rows = Array.isArray(measured.modules) ? measured.modules : [];
    if (!rows.length) return;
    const columns = [...new Set(rows.flatMap((row) => flatten(row, "").map(([k]) => k.slice(1))))];
    const modules = el("table", { id: "measured-modules" });
    const head = el("tr");
    for (const column of columns) head.append(el("th", { scope: "col" }, column));
    modules.append(head);
    rows.forEach((row, k) => {
      const tr = el("tr");
      const values = new Map(flatten(row, "").map(([key, v]) => [key.slice(1), v]));
      for (const column of columns) {
        const value = values.has(column) ? values.get(column) : "";
        tr.append(el("td", { class: "num", "data-field": `measured.modules.${k}.${column}` },
          value === null ? "" : value));
      }
      modules.append(tr);
    });
    box.append(modules);
  }

  function flatten(value, prefix) {
    if (value === null || typeof value !== "object") return [[prefix, value]];
    const out = [];
    for (const [k, v] of Object.entries(value)) out.push(...flatten(v, prefix + "." + k));
    return out;
  }

  // ---------------------------------------------------------------- graph layout and drawing

  function indexView(view) {
    const n = view.nodes.name.length, cs = view.computations.length;
    state.byComputation = Array.from({ length: cs }, () => []);
    state.edgesByComputation = Array.from({ length: cs }, () => []);
    state.cellIndex = Array.from({ length: cs }, () => new Map());
    for (let i = 0; i < n; i++) {
      const c = view.nodes.computation[i];
      state.byComputation[c].push(i);
      state.cellIndex[c].set(view.nodes.layer[i] * 65536 + view.nodes.column[i], i);
    }
    for (let e = 0; e < view.edges.source.length; e++) {
      state.edgesByComputation[view.nodes.computation[view.edges.source[e]]].push(e);
    }
    state.folded = new Set();
    view.computations.forEach((comp, c) => { if (!comp.entry) state.folded.add(c); });
  }

  function layoutPanels() {
    const view = state.view;
    const order = view.computations.map((_, c) => c);
    order.sort((a, b) => (view.computations[b].entry ? 1 : 0) - (view.computations[a].entry ? 1 : 0) || a - b);
    let y = 0;
    state.panels = [];
    state.panelOf = new Array(view.computations.length);
    for (const c of order) {
      const comp = view.computations[c];
      const folded = state.folded.has(c);
      const w = Math.max(360, comp.columns * COL_W + 2 * PAD);
      const h = folded ? HEAD_H : HEAD_H + comp.layers * LAYER_H + PAD;
      const panel = { c, x: 0, y, w, h, folded };
      state.panels.push(panel);
      state.panelOf[c] = panel;
      y += h + GAP;
    }
    state.worldHeight = y;
  }

  function nodeXY(i) {
    const panel = state.panelOf[state.view.nodes.computation[i]];
    return [panel.x + PAD + state.view.nodes.column[i] * COL_W,
      panel.y + HEAD_H + state.view.nodes.layer[i] * LAYER_H + 8];
  }

  function draw() {
    const started = performance.now();
    paint();
    state.lastDrawMs = performance.now() - started;
  }

  function paint() {
    const canvas = $("graph"), ctx = canvas.getContext("2d"), view = state.view;
    const W = canvas.width, H = canvas.height, s = state.scale;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#fbfbfb";
    ctx.fillRect(0, 0, W, H);
    if (!view) return;
    ctx.setTransform(s, 0, 0, s, -state.ox * s, -state.oy * s);
    const x0 = state.ox, y0 = state.oy, x1 = x0 + W / s, y1 = y0 + H / s;
    const families = view.families, nodes = view.nodes, edges = view.edges;
    for (const panel of state.panels) {
      if (panel.y > y1 || panel.y + panel.h < y0 || panel.x > x1 || panel.x + panel.w < x0) continue;
      const comp = view.computations[panel.c];
      ctx.lineWidth = 1 / s;
      ctx.strokeStyle = "#666";
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(panel.x, panel.y, panel.w, panel.h);
      ctx.strokeRect(panel.x, panel.y, panel.w, panel.h);
      ctx.fillStyle = comp.entry ? "#1f2933" : "#3d4f61";
      ctx.fillRect(panel.x, panel.y, panel.w, HEAD_H);
      if (s > 0.08) {
        ctx.fillStyle = "#ffffff";
        ctx.font = "13px sans-serif";
        ctx.fillText(`${panel.folded ? "\u25B8" : "\u25BE"} ${comp.name}  (${comp.instructions} instructions${comp.entry ? ", entry" : ""})`,
          panel.x + 8, panel.y + 17);
      }
      if (panel.folded) continue;
      // Edges: grey; the ones that carry a conversion red, thick and dashed.
      ctx.beginPath();
      ctx.strokeStyle = "#9aa5b1";
      ctx.lineWidth = 1 / s;
      ctx.globalAlpha = s < 0.3 ? 0.25 : 1; // zoomed out, thousands of edges: let nodes show
      const marked = [];
      for (const e of state.edgesByComputation[panel.c]) {
        if (edges.conversion[e] >= 0) { marked.push(e); continue; }
        edgePath(ctx, edges.source[e], edges.target[e], x0, y0, x1, y1);
      }
      ctx.stroke();
      ctx.globalAlpha = 1;
      if (marked.length) {
        ctx.beginPath();
        ctx.strokeStyle = "#c00000";
        ctx.lineWidth = Math.max(3, 2 / s);
        ctx.setLineDash([6, 3]);
        for (const e of marked) edgePath(ctx, edges.source[e], edges.target[e], -1e9, -1e9, 1e9, 1e9);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      const text = s > 0.45;
      ctx.font = "11px sans-serif";
      for (const i of state.byComputation[panel.c]) {
        const [x, y] = nodeXY(i);
        if (x > x1 || x + NODE_W < x0 || y > y1 || y + NODE_H < y0) continue;
        ctx.fillStyle = families[nodes.family[i]].colour;
        ctx.fillRect(x, y, NODE_W, Math.max(NODE_H, 3 / s)); // at least 3 pixels tall
        if (nodes.conversion[i] >= 0) {
          ctx.strokeStyle = "#c00000";
          ctx.lineWidth = Math.max(3, 2 / s);
          ctx.strokeRect(x, y, NODE_W, NODE_H);
        } else if (text) {
          ctx.strokeStyle = "#555";
          ctx.lineWidth = 1 / s;
          ctx.strokeRect(x, y, NODE_W, NODE_H);
        }
        if (i === state.selected) {
          ctx.strokeStyle = "#f59f00";
          ctx.lineWidth = Math.max(4, 3 / s);
          ctx.strokeRect(x - 3, y - 3, NODE_W + 6, NODE_H + 6);
        }
        if (text) {
          ctx.fillStyle = "#111";
          const label = (nodes.conversion[i] >= 0 ? "\u21C4 " : "") + nodes.opcode[i];
          ctx.fillText(label.length > 17 ? label.slice(0, 16) + "\u2026" : label, x + 4, y + 15);
        }
      }
    }
  }

  function edgePath(ctx, a, b, x0, y0, x1, y1) {
    const [ax, ay] = nodeXY(a), [bx, by] = nodeXY(b);
    if (Math.max(ax, bx) + NODE_W < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) + NODE_H < y0 || Math.min(ay, by) > y1) return;
    ctx.moveTo(ax + NODE_W / 2, ay + NODE_H);
    ctx.lineTo(bx + NODE_W / 2, by);
  }

  function hit(px, py) {
    const wx = state.ox + px / state.scale, wy = state.oy + py / state.scale;
    for (const panel of state.panels) {
      if (wy < panel.y || wy > panel.y + panel.h || wx < panel.x || wx > panel.x + panel.w) continue;
      if (wy < panel.y + HEAD_H) return { panel };
      if (panel.folded) return null;
      const column = Math.floor((wx - panel.x - PAD) / COL_W);
      const layer = Math.floor((wy - panel.y - HEAD_H - 8) / LAYER_H);
      const i = state.cellIndex[panel.c].get(layer * 65536 + column);
      if (i === undefined) return null;
      const [x, y] = nodeXY(i);
      return wx >= x && wx <= x + NODE_W && wy >= y && wy <= y + NODE_H ? { node: i } : null;
    }
    return null;
  }

  function toggleFold(c, unfold) {
    const folded = state.folded.has(c);
    const want = unfold === undefined ? !folded : !unfold;
    if (want) state.folded.add(c); else state.folded.delete(c);
    const box = document.querySelector(`#computations input[data-computation="${c}"]`);
    if (box) box.checked = !want;
    layoutPanels();
    draw();
  }

  function fit() {
    const canvas = $("graph");
    const first = state.panels[0];
    if (!first) return;
    state.scale = Math.min(1.2, Math.max(0.02, (canvas.width - 10) / first.w));
    state.ox = -5 / state.scale;
    state.oy = -5 / state.scale;
    draw();
  }

  function centerOn(i) {
    const canvas = $("graph");
    if (state.scale < 0.6) state.scale = 0.8;
    const [x, y] = nodeXY(i);
    state.ox = x + NODE_W / 2 - canvas.width / 2 / state.scale;
    state.oy = y + NODE_H / 2 - canvas.height / 2 / state.scale;
  }

  function selectNode(i, fromText) {
    const view = state.view, nodes = view.nodes;
    const c = nodes.computation[i];
    if (state.folded.has(c)) toggleFold(c, true);
    state.selected = i;
    centerOn(i);
    draw();
    const conversion = nodes.conversion[i];
    if (conversion >= 0) showConversion(conversion);
    else showNode(i);
    if (!fromText) selectLine(nodes.line[i]);
  }

  function dl(pairs) {
    const list = el("dl");
    for (const [k, v] of pairs) {
      const dt = el("dt", {}, k), dd = el("dd", { "data-field": k }, v);
      list.append(dt, dd);
    }
    return list;
  }

  function showNode(i) {
    const nodes = state.view.nodes;
    const details = $("details");
    details.replaceChildren(el("h3", {}, nodes.name[i]), dl([
      ["computation", state.view.computations[nodes.computation[i]].name],
      ["opcode", nodes.opcode[i]], ["shape", nodes.shape[i]],
      ["layout family", state.view.families[nodes.family[i]].name],
      ["cost terms (ns)", nodes.cost_ns[i]],
    ]));
  }

  function showConversion(k) {
    const conversion = state.view.conversions[k];
    state.selectedConversion = k;
    const details = $("details");
    details.replaceChildren(el("h3", {}, `conversion #${k}: ${conversion.value}`), dl([
      ["from", conversion.from], ["to", conversion.to], ["bytes", conversion.bytes],
      ["cost_ns", conversion.cost_ns], ["runs", conversion.runs],
      ["shared", String(conversion.shared)], ["for", `${conversion.for} operand ${conversion.operand}`],
      ["why", conversion.why],
    ]));
    const button = el("button", { type: "button" }, "Draw both layouts in memory order");
    button.addEventListener("click", () => drawPictures([conversion.from, conversion.to]));
    details.append(button);
  }

  function selectConversion(k) {
    const conversion = state.view.conversions[k];
    const target = conversion.node !== null ? conversion.node : conversion.user;
    if (target !== null && target !== undefined) selectNode(target);
    showConversion(k);
  }

  // ---------------------------------------------------------------- the view, as a whole

  function showView(view) {
    const start = performance.now();
    state.view = view;
    state.selected = -1;
    indexView(view);
    layoutPanels();
    $("graph-section").hidden = false;
    const canvas = $("graph");
    canvas.width = Math.max(480, Math.min(1400, document.documentElement.clientWidth - 420));
    fit();
    buildLegend(view);
    buildComputations(view);
    buildConversions(view);
    buildNames(view);
    // Two frames: the first paints what was drawn, the second starts once it is on screen.
    return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
      state.renderMs = Math.round(performance.now() - start);
      $("render-time").textContent = `${view.nodes.name.length} instructions drawn in ${state.renderMs} ms`;
      resolve();
    })));
  }

  function buildLegend(view) {
    const legend = $("legend");
    legend.replaceChildren(el("strong", {}, "Layout families:"));
    view.families.forEach((family) => {
      const item = el("span");
      const swatch = el("span", { class: "swatch", style: `background:${family.colour}` });
      item.append(swatch, document.createTextNode(family.name));
      legend.append(item);
    });
    const conv = el("span");
    conv.append(el("span", { class: "swatch", style: "background:#fff;border:3px solid #c00000" }),
      document.createTextNode("conversion (red, dashed edge)"));
    legend.append(conv);
  }

  function buildComputations(view) {
    const list = $("computations");
    list.replaceChildren();
    const fragment = document.createDocumentFragment();
    view.computations.forEach((comp, c) => {
      const li = el("li");
      const id = "comp-" + c;
      const box = el("input", { type: "checkbox", id, "data-computation": String(c) });
      box.checked = !state.folded.has(c);
      box.addEventListener("change", () => toggleFold(c, box.checked));
      li.append(box, el("label", { for: id }, `${comp.name} (${comp.instructions})`));
      fragment.append(li);
    });
    list.append(fragment);
  }

  function buildConversions(view) {
    const body = $("conversions").querySelector("tbody");
    body.replaceChildren();
    view.conversions.forEach((conversion, k) => {
      const tr = el("tr", { "data-conversion": String(k) });
      const button = el("button", { type: "button", "aria-label": `show conversion ${k} in the graph` }, String(k));
      button.addEventListener("click", () => selectConversion(k));
      const first = el("td");
      first.append(button);
      tr.append(first, el("td", {}, conversion.value), el("td", {}, conversion.for),
        el("td", {}, conversion.from), el("td", {}, conversion.to),
        el("td", { class: "num", "data-field": "bytes" }, conversion.bytes),
        el("td", { class: "num", "data-field": "cost_ns" }, conversion.cost_ns),
        el("td", {}, conversion.why));
      body.append(tr);
    });
    if (!view.conversions.length) {
      const tr = el("tr");
      tr.append(el("td", { colspan: "8" }, "no conversions"));
      body.append(tr);
    }
  }

  function buildNames(view) {
    const list = $("names");
    list.replaceChildren();
    if (view.nodes.name.length > 3000) return; // typing a full name still works
    const fragment = document.createDocumentFragment();
    for (const name of view.nodes.name) fragment.append(el("option", { value: name }));
    list.append(fragment);
  }

  // ---------------------------------------------------------------- annotated text

  function showText(text, view) {
    const pre = $("module-text");
    pre.replaceChildren();
    const lineToNode = new Map();
    view.nodes.line.forEach((line, i) => { if (line !== null) lineToNode.set(line, i); });
    // Lines go in chunks the browser lays out only when scrolled into view (CSS
    // content-visibility), so 20k lines cost little more than 200 after the graph is drawn.
    const fragment = document.createDocumentFragment();
    let chunk = null;
    text.split("\n").forEach((line, k) => {
      const number = k + 1;
      if (k % TEXT_CHUNK === 0) {
        chunk = el("div", { class: "chunk" });
        fragment.append(chunk);
      }
      const span = el("span", { class: "ln", id: "L" + number }, line);
      const i = lineToNode.get(number);
      if (i !== undefined) {
        span.dataset.node = String(i);
        const conversion = view.nodes.conversion[i];
        if (conversion >= 0) {
          span.classList.add("conv");
          const link = el("a", { href: "#graph", "data-conversion": String(conversion) },
            `  \u2190 conversion #${conversion}: ${view.conversions[conversion].why}`);
          span.append(link);
        }
      }
      chunk.append(span);
    });
    pre.append(fragment);
    $("text-section").hidden = false;
  }

  // textMs: building the text's elements; settledMs (when the click's time is known): from
  // the click to the second frame after the text is in place, when the page answers again.
  function timedText(text, view, clicked) {
    const start = performance.now();
    showText(text, view);
    state.textMs = Math.round(performance.now() - start);
    if (clicked === undefined) return;
    requestAnimationFrame(() => requestAnimationFrame(() => {
      state.settledMs = Math.round(performance.now() - clicked);
    }));
  }

  function selectLine(line) {
    const pre = $("module-text");
    pre.querySelectorAll(".ln.selected").forEach((n) => n.classList.remove("selected"));
    if (line === null || line === undefined) return;
    const span = document.getElementById("L" + line);
    if (!span) return;
    span.classList.add("selected");
    pre.scrollTop = span.offsetTop - pre.offsetTop - pre.clientHeight / 2;
  }

  // ---------------------------------------------------------------- memory-order pictures

  async function drawPictures(shapes, kind, blockedSpec, quiet) {
    const box = $("pictures");
    box.replaceChildren();
    for (const shape of shapes) {
      if (embedded) {
        const svg = (embedded.pictures || {})[shape];
        const holder = el("div");
        if (svg) holder.innerHTML = svg;
        else holder.textContent = `${shape}: not in this report (hlo-layout explain-layout '${shape}' --svg out.svg draws it)`;
        box.append(holder);
        continue;
      }
      const body = { shape };
      if (kind === "blocked") body.blocked = blockedSpec;
      else if (kind) body.format = kind;
      try {
        const answer = await api("/v1/layout-picture", body);
        const holder = el("div", { "data-shape": shape });
        holder.innerHTML = answer.svg; // our own SVG, built by the server from numbers
        box.append(holder);
      } catch (err) {
        box.append(el("p", { class: "error", role: "alert" }, `${shape}: ${err.message}`));
      }
    }
    if (!quiet) $("picture-section").scrollIntoView({ block: "nearest" });
  }

  // ---------------------------------------------------------------- batch summary

  function batchRows(data) {
    if (Array.isArray(data.modules)) return data.modules;
    if (Array.isArray(data.results)) { // GET /v1/batches/{id}
      return data.results.map((item) => {
        const r = item.result || {};
        const b = r.baselines || {};
        return {
          module: item.name, status: item.status, solve_status: r.status,
          objective: r.objective, baseline_default: b.default, baseline_greedy: b.greedy,
          lower_bound: r.lower_bound, gap: r.gap,
        };
      });
    }
    throw new Error("not a batch summary (no modules or results)");
  }

  function showBatch(data) {
    const rows = batchRows(data);
    const box = $("batch");
    box.replaceChildren();
    const counts = {};
    for (const row of rows) {
      const key = row.status + (row.solve_status ? " / " + row.solve_status : "");
      counts[key] = (counts[key] || 0) + 1;
    }
    const countList = el("ul", { id: "batch-counts" });
    for (const [key, count] of Object.entries(counts).sort()) {
      countList.append(el("li", { "data-status": key }, `${key}: ${count}`));
    }
    box.append(el("h3", {}, `${rows.length} modules`), countList);
    const gained = rows.map((row) => ({
      row, gain: typeof row.objective === "number" && typeof row.baseline_default === "number"
        ? row.baseline_default - row.objective : null,
    }));
    gained.sort((a, b) => (b.gain ?? -Infinity) - (a.gain ?? -Infinity));
    const table = el("table", { id: "batch-table" });
    const head = el("tr");
    for (const h of ["module", "status", "cost (ns)", "default (ns)", "greedy (ns)", "saved vs default (ns)", "gap"]) {
      head.append(el("th", { scope: "col" }, h));
    }
    table.append(head);
    for (const { row, gain } of gained) {
      const tr = el("tr", { "data-module": row.module });
      tr.append(el("td", {}, row.module), el("td", {}, row.status + (row.solve_status ? " " + row.solve_status : "")),
        el("td", { class: "num" }, row.objective ?? ""), el("td", { class: "num" }, row.baseline_default ?? ""),
        el("td", { class: "num" }, row.baseline_greedy ?? ""), el("td", { class: "num gain" }, gain ?? ""),
        el("td", { class: "num" }, row.gap === null || row.gap === undefined ? "" : formatGap(row.gap)));
      table.append(tr);
    }
    box.append(table);
  }

  // ---------------------------------------------------------------- running

  // The assign options as the form sets them; normalization left out is the target's passes.
  function options() {
    const normalize = $("normalize").value;
    return {
      time_limit_s: Number($("time-limit").value),
      entry_layout: $("entry-layout").value,
      max_candidates: Number($("max-candidates").value),
      seed: Number($("seed").value),
      emit_bitcasts: $("emit-bitcasts").checked,
      verify: $("verify-layouts").checked,
      ...(normalize === "default" ? {} : { normalize: normalize ? normalize.split(",") : [] }),
    };
  }

  async function runAssign(clicked) {
    const hlo = $("hlo").value;
    const target = $("target").value;
    setStatus("solving\u2026");
    state.report = null;
    state.input = hlo;
    const report = await api("/v1/assign", { hlo, target, options: options() });
    state.report = report;
    let xlaScore = null;
    const xla = $("xla-hlo").value.trim();
    if (xla) {
      try {
        xlaScore = (await api("/v1/score", { hlo: xla, target })).cost;
      } catch (err) {
        setStatus(`XLA's layouts could not be scored: ${err.message}`, true);
      }
    }
    state.xlaScore = xlaScore;
    showNumbers(report, xlaScore);
    setStatus("drawing the graph\u2026");
    const timing = {};
    const view = await api("/v1/graph-view", { hlo: report.hlo, inserted: report.inserted, terms: report.terms }, timing);
    await showView(view);
    showTimings(timing, clicked);
    timedText(report.hlo, view, clicked);
    setStatus(`${report.status}: cost ${report.objective} ns, ${report.inserted.length} conversions`);
  }

  // Ours against XLA's own layouts in XLA:CPU (POST /v1/measure): XLA's laid-out module when
  // one is given, else XLA's layout-assignment pass on the input. A module the path cannot
  // run comes back as a 422 naming it and why; what did run is still shown.
  async function runMeasure() {
    const report = state.report;
    if (!report || !report.hlo) throw new Error("run assign first: the measurement runs its answer");
    const body = {
      modules: [], target: report.target,
      options: { reps: Number($("reps").value), seed: Number($("seed").value) },
    };
    const xla = $("xla-hlo").value.trim();
    if (xla) body.modules.push({ label: "xla", hlo: xla }); else body.xla_layouts_of = state.input;
    body.modules.push({ label: "ours", hlo: report.hlo });
    const box = $("measured");
    box.replaceChildren();
    setStatus("measuring in XLA:CPU\u2026");
    try {
      const measured = await api("/v1/measure", body);
      state.measured = measured;
      showMeasured(box, measured);
      const ours = measured.modules[measured.modules.length - 1];
      setStatus(`measured: ours ${ours.median_ms} ms, ${ours.verdict} against ${measured.reference}`);
    } catch (err) {
      box.append(el("p", { class: "error", role: "alert", id: "measure-error" }, err.message));
      if (err.body && err.body.measured) showMeasured(box, err.body.measured);
      throw err;
    }
  }

  async function runGraphOnly(clicked) {
    setStatus("drawing the graph\u2026");
    const hlo = $("hlo").value;
    const timing = {};
    const view = await api("/v1/graph-view", { hlo }, timing);
    await showView(view);
    showTimings(timing, clicked);
    timedText(hlo, view, clicked);
    setStatus(`graph of ${view.module}: ${view.nodes.name.length} instructions`);
  }

  // `work` gets the time of the click (or key press) that started it.
  function guarded(work) {
    return async (event) => {
      const clicked = event && event.timeStamp ? event.timeStamp : performance.now();
      if (event) event.preventDefault();
      try { await work(clicked); } catch (err) { setStatus(err.message, true); }
    };
  }

  // Where the time from the click to the drawn graph went (state.timings, in ms, and a line
  // above the graph): the graph-view request's parts, the server's own steps, the drawing.
  function showTimings(timing, clicked) {
    const parts = { ...timing, render: state.renderMs, total: performance.now() - clicked };
    for (const key of Object.keys(parts)) {
      if (typeof parts[key] === "number") parts[key] = Math.round(parts[key] * 10) / 10;
    }
    state.timings = parts;
    const steps = Object.entries(parts.server || {}).filter(([k]) => k !== "cpu");
    const spent = steps.reduce((sum, [, v]) => sum + v, 0);
    const other = parts.send + parts.wait - spent + parts.download;
    $("render-time").textContent = `${state.view.nodes.name.length} instructions drawn ` +
      `${(parts.total / 1000).toFixed(2)} s after the click (server ${Math.round(spent)} ms: ` +
      `${steps.map(([k, v]) => `${k} ${Math.round(v)}`).join(", ")}; request, transfer and ` +
      `JSON ${Math.round(other)} ms; drawing ${parts.render} ms)`;
  }

  function wireCanvas() {
    const canvas = $("graph");
    let drag = null;
    canvas.addEventListener("mousedown", (e) => { drag = { x: e.offsetX, y: e.offsetY, moved: false }; });
    canvas.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        state.ox -= dx / state.scale; state.oy -= dy / state.scale;
        drag.x = e.offsetX; drag.y = e.offsetY;
        draw();
      }
    });
    canvas.addEventListener("mouseup", (e) => {
      const wasDrag = drag && drag.moved;
      drag = null;
      if (wasDrag || !state.view) return;
      const found = hit(e.offsetX, e.offsetY);
      if (!found) return;
      if (found.panel) toggleFold(found.panel.c);
      else selectNode(found.node);
    });
    canvas.addEventListener("mouseleave", () => { drag = null; });
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.offsetX, e.offsetY);
    }, { passive: false });
    canvas.addEventListener("keydown", (e) => {
      const step = 80 / state.scale;
      const keys = {
        ArrowLeft: () => { state.ox -= step; }, ArrowRight: () => { state.ox += step; },
        ArrowUp: () => { state.oy -= step; }, ArrowDown: () => { state.oy += step; },
        "+": () => zoom(1.25), "=": () => zoom(1.25), "-": () => zoom(0.8), f: fit,
        n: () => stepConversion(1), p: () => stepConversion(-1),
      };
      if (!keys[e.key] || !state.view) return;
      e.preventDefault();
      keys[e.key]();
      draw();
    });
  }

  function zoom(factor, px, py) {
    const canvas = $("graph");
    px = px === undefined ? canvas.width / 2 : px;
    py = py === undefined ? canvas.height / 2 : py;
    const wx = state.ox + px / state.scale, wy = state.oy + py / state.scale;
    state.scale = Math.min(4, Math.max(0.01, state.scale * factor));
    state.ox = wx - px / state.scale;
    state.oy = wy - py / state.scale;
    draw();
  }

  function stepConversion(direction) {
    const total = state.view.conversions.length;
    if (!total) return;
    const next = state.selectedConversion < 0 ? (direction > 0 ? 0 : total - 1)
      : (state.selectedConversion + direction + total) % total;
    selectConversion(next);
  }

  async function loadExamples() {
    try {
      const names = await api("/v1/examples");
      for (const name of names) $("example").append(el("option", { value: name }, name));
      const targets = (await api("/v1/targets")).targets;
      const select = $("target"), chosen = select.value;
      select.replaceChildren(...targets.map((t) => el("option", { value: t.name }, t.name)));
      select.value = targets.some((t) => t.name === chosen) ? chosen : targets[0].name;
      select.dataset.loaded = "true";
    } catch (err) {
      setStatus(err.message, true);
    }
  }

  function wire() {
    wireCanvas();
    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      token = $("token").value.trim();
      try { sessionStorage.setItem("hlo-layout-token", token); } catch (err) { /* private mode */ }
      $("token-form").hidden = true;
      setStatus("token set");
      if ($("example").options.length <= 1) loadExamples();
    });
    $("run-form").addEventListener("submit", guarded(runAssign));
    $("graph-only").addEventListener("click", guarded(runGraphOnly));
    $("measure-form").addEventListener("submit", guarded(runMeasure));
    $("example").addEventListener("change", guarded(async () => {
      const name = $("example").value;
      if (!name) return;
      const found = await api("/v1/examples/" + encodeURIComponent(name));
      $("hlo").value = found.hlo;
      $("xla-hlo").value = found.xla_hlo || "";
      setStatus(`example ${name} loaded`);
    }));
    $("file").addEventListener("change", async () => {
      const file = $("file").files[0];
      if (file) { $("hlo").value = await file.text(); setStatus(`${file.name} loaded`); }
    });
    $("unfold-all").addEventListener("click", () => { state.folded.clear(); syncBoxes(); layoutPanels(); draw(); });
    $("fold-all").addEventListener("click", () => {
      state.view.computations.forEach((comp, c) => { if (!comp.entry) state.folded.add(c); });
      syncBoxes(); layoutPanels(); draw();
    });
    $("fit").addEventListener("click", fit);
    $("find").addEventListener("change", () => {
      const i = state.view ? state.view.nodes.name.indexOf($("find").value.trim()) : -1;
      if (i >= 0) selectNode(i); else setStatus(`no instruction named ${$("find").value}`, true);
    });
    $("module-text").addEventListener("click", (e) => {
      const link = e.target.closest("a[data-conversion]");
      if (link) { e.preventDefault(); selectConversion(Number(link.dataset.conversion)); $("graph").focus(); return; }
      const line = e.target.closest(".ln[data-node]");
      if (line) selectNode(Number(line.dataset.node), true);
    });
    $("picture-form").addEventListener("submit", guarded(() => {
      const kind = $("picture-kind").value;
      return drawPictures([$("shape").value.trim()], kind, $("blocked").value.trim());
    }));
    $("batch-form").addEventListener("submit", guarded(async () => {
      const file = $("summary-file").files[0];
      if (file) { showBatch(JSON.parse(await file.text())); return; }
      const id = $("batch-id").value.trim();
      if (!id || embedded) throw new Error("choose a summary.json file or give a batch id");
      showBatch(await api("/v1/batches/" + encodeURIComponent(id) + "?results=true"));
    }));
  }

  function syncBoxes() {
    document.querySelectorAll("#computations input[data-computation]").forEach((box) => {
      box.checked = !state.folded.has(Number(box.dataset.computation));
    });
  }

  async function start() {
    wire();
    if (embedded) { // a report written by `hlo-layout assign --html`: everything is here
      $("input-section").hidden = true;
      $("measure-form").hidden = true; // (its `measured` section, if any, is shown below)
      showNumbers(embedded.report, embedded.xla_score);
      state.report = embedded.report;
      await showView(embedded.view);
      showText(embedded.report.hlo, embedded.view);
      const shapes = Object.keys(embedded.pictures || {});
      if (shapes.length) { $("shape").value = shapes[0]; drawPictures(shapes.slice(0, 2), "", "", true); }
      return;
    }
    await loadExamples();
  }

  start();
})();
