// Tributary dashboard: polls the JSON endpoints once a second and draws
// the jobs table, the selected job's fragment graph (SVG), four line charts
// (canvas) and the event log. No libraries, nothing fetched but /api/*.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#3b7dd8", "#d8653b", "#2f9e5b", "#9b59b6", "#c9a227", "#17a2b8", "#e83e8c", "#6c757d"];
const state = { job: null, jobs: [] };

const params = new URLSearchParams(location.search);
if (params.has("job")) state.job = Number(params.get("job"));

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

function fmtNum(v) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(1) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100 || v === Math.round(v)) return String(Math.round(v));
  if (a < 1) return String(Number(v.toPrecision(2)));
  return v.toFixed(1);
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- jobs ----

function renderJobs(jobs) {
  state.jobs = jobs;
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren();
  document.getElementById("jobs-empty").hidden = jobs.length > 0;
  if (state.job === null && jobs.length > 0) state.job = jobs[0].id;
  for (const j of jobs) {
    const tr = el("tr", { "data-job-id": j.id, "data-job-name": j.name });
    if (j.id === state.job) tr.className = "selected";
    tr.append(el("td", { class: "num" }, j.id), el("td", {}, j.name), el("td", {}, j.kind || ""));
    tr.append(el("td", { class: "state state-" + j.state }, j.state));
    const prog = el("td", { class: "progress" });
    const bar = el("span", { class: "bar" });
    const fill = el("span");
    fill.style.width = Math.max(0, Math.min(100, j.progress)).toFixed(1) + "%";
    bar.append(fill);
    let text = j.progress.toFixed(1) + "%";
    if (j.state === "BACKFILLING") {
      text += " (" + fmtNum(j.backfill_rows) + (j.backfill_estimate > 0 ? " / " + fmtNum(j.backfill_estimate) : "") + " rows)";
    }
    prog.append(bar, el("span", { class: "progress-text" }, text));
    tr.append(prog);
    tr.append(el("td", { class: "num" }, j.fragments), el("td", { class: "num" }, j.actors), el("td", { class: "num" }, fmtNum(j.rows_per_sec)));
    tr.addEventListener("click", () => {
      state.job = j.id;
      renderJobs(state.jobs);
      refreshGraph();
    });
    body.append(tr);
  }
}

// ---- fragment graph ----

function renderGraph(g) {
  const box = document.getElementById("graph");
  document.getElementById("graph-title").textContent = "of " + g.name + " (job " + g.job + ")";
  // Levels: a fragment with no inputs is at level 0, others one past their deepest input.
  const byID = new Map(g.fragments.map((f) => [f.id, f]));
  const inputs = new Map(g.fragments.map((f) => [f.id, []]));
  for (const e of g.edges) if (inputs.has(e.to)) inputs.get(e.to).push(e.from);
  const level = new Map();
  const levelOf = (id, seen) => {
    if (level.has(id)) return level.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    let l = 0;
    for (const from of inputs.get(id) || []) if (byID.has(from)) l = Math.max(l, levelOf(from, seen) + 1);
    level.set(id, l);
    return l;
  };
  const columns = [];
  for (const f of g.fragments) {
    const l = levelOf(f.id, new Set());
    (columns[l] = columns[l] || []).push(f);
  }
  const W = 190, H = 66, GX = 130, GY = 28, PAD = 12;
  const rows = Math.max(...columns.map((c) => (c ? c.length : 0)));
  const width = PAD * 2 + columns.length * W + (columns.length - 1) * GX;
  const height = PAD * 2 + rows * H + (rows - 1) * GY;
  const pos = new Map();
  columns.forEach((col, x) => {
    if (!col) return;
    const top = PAD + ((rows - col.length) * (H + GY)) / 2;
    col.forEach((f, y) => pos.set(f.id, { x: PAD + x * (W + GX), y: top + y * (H + GY) }));
  });
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "fragment graph" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#7a8595" }));
  defs.append(marker);
  root.append(defs);
  for (const e of g.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    const grp = svg("g", { class: "edge", "data-from": e.from, "data-to": e.to });
    const mx = (x1 + x2) / 2;
    grp.append(svg("path", { d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
    grp.append(svg("text", { x: mx, y: (y1 + y2) / 2 - 6, "text-anchor": "middle", class: "edge-rate" }, fmtNum(e.rows_per_sec) + " rows/s · " + e.dist));
    root.append(grp);
  }
  for (const f of g.fragments) {
    const p = pos.get(f.id);
    const grp = svg("g", { class: "fragment", "data-fragment-id": f.id, transform: `translate(${p.x},${p.y})` });
    grp.append(svg("rect", { width: W, height: H, rx: 6 }));
    grp.append(svg("text", { x: 8, y: 18, class: "kind" }, "#" + f.id + " " + f.kind));
    grp.append(svg("text", { x: 8, y: 36, class: "parallelism" }, "parallelism " + f.parallelism));
    grp.append(svg("text", { x: 8, y: 54, class: "rates" }, fmtNum(f.rows_out_per_sec) + " rows/s out · busy " + Math.round(f.busy_share * 100) + "%"));
    root.append(grp);
  }
  box.replaceChildren(root);
}

async function refreshGraph() {
  if (state.job === null) return;
  try {
    renderGraph(await getJSON("/api/fragments?job=" + state.job));
  } catch (err) {
    // The job may have been dropped since the list was drawn.
    document.getElementById("graph").replaceChildren(el("p", { class: "muted" }, "No running job " + state.job + "."));
  }
}

// ---- charts ----

// drawChart draws lines (name -> [[t, v]...]) over the window ending at now.
function drawChart(canvas, lines, now, windowMS) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  const L = 52, R = 8, T = 10, B = 34;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  let ymax = 0;
  const names = Object.keys(lines).sort();
  canvas.dataset.lines = String(names.length); // for tests: how many series it drew
  for (const n of names) for (const [, v] of lines[n]) ymax = Math.max(ymax, v);
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  const x = (t) => L + ((t - (now - windowMS)) / windowMS) * (w - L - R);
  const y = (v) => h - B - (v / ymax) * (h - T - B);
  ctx.strokeStyle = "#eceff2";
  ctx.fillStyle = "#7a8595";
  ctx.textAlign = "right";
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4, yy = y(v);
    ctx.beginPath(); ctx.moveTo(L, yy); ctx.lineTo(w - R, yy); ctx.stroke();
    ctx.fillText(fmtNum(v), L - 4, yy + 4);
  }
  ctx.textAlign = "center";
  const step = [15e3, 30e3, 60e3, 120e3].find((st) => windowMS / st <= 6) || 120e3;
  for (let ago = 0; ago <= windowMS; ago += step) {
    const label = ago === 0 ? "now" : ago < 60e3 ? "-" + ago / 1e3 + "s" : "-" + ago / 60e3 + "m";
    ctx.fillText(label, Math.max(x(now - ago), L + 10), h - B + 14);
  }
  if (names.length === 0) {
    ctx.fillText("no data", (L + w - R) / 2, (T + h - B) / 2);
    return;
  }
  let lx = L;
  names.forEach((n, i) => {
    const color = PALETTE[i % PALETTE.length];
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let started = false;
    for (const [t, v] of lines[n]) {
      if (t < now - windowMS) continue;
      if (!started) { ctx.moveTo(x(t), y(v)); started = true; } else ctx.lineTo(x(t), y(v));
    }
    ctx.stroke();
    ctx.fillStyle = color;
    ctx.textAlign = "left";
    ctx.fillRect(lx, h - 12, 10, 3);
    ctx.fillText(n, lx + 14, h - 7);
    lx += 24 + ctx.measureText(n).width;
  });
}

function collect(points, field) {
  const lines = {};
  for (const p of points) {
    for (const [name, v] of Object.entries(p[field] || {})) (lines[name] = lines[name] || []).push([p.t, v]);
  }
  return lines;
}

function renderSeries(s) {
  const pts = s.points;
  const now = pts.length ? pts[pts.length - 1].t : Date.now();
  // The window grows with the data kept, from one minute to ten.
  const span = pts.length ? now - pts[0].t : 0;
  const windowMS = Math.min(10 * 60e3, Math.max(60e3, Math.ceil(span / 60e3) * 60e3));
  const barrier = { avg: [], max: [] };
  for (const p of pts) {
    if (p.barrier_avg_ms !== undefined) barrier.avg.push([p.t, p.barrier_avg_ms]);
    if (p.barrier_max_ms !== undefined) barrier.max.push([p.t, p.barrier_max_ms]);
  }
  drawChart(document.getElementById("chart-barrier"), barrier.avg.length ? barrier : {}, now, windowMS);
  drawChart(document.getElementById("chart-throughput"), collect(pts, "throughput"), now, windowMS);
  drawChart(document.getElementById("chart-source-lag"), collect(pts, "source_lag"), now, windowMS);
  drawChart(document.getElementById("chart-source-lag-bytes"), collect(pts, "source_lag_bytes"), now, windowMS);
  drawChart(document.getElementById("chart-sink-lag"), collect(pts, "sink_lag"), now, windowMS);
  const st = document.getElementById("status");
  st.textContent = s.committed_epoch_ms ? "committed epoch at " + new Date(s.committed_epoch_ms).toLocaleTimeString() : "no epoch committed yet";
}

// ---- events ----

function renderEvents(events) {
  const body = document.querySelector("#events tbody");
  body.replaceChildren();
  document.getElementById("events-empty").hidden = events.length > 0;
  for (const e of events) {
    const tr = el("tr");
    tr.append(el("td", {}, new Date(e.time).toLocaleTimeString()), el("td", {}, e.type), el("td", {}, e.object),
      el("td", { class: "num" }, e.actor), el("td", { class: "msg" }, e.message));
    body.append(tr);
  }
}

// ---- polling ----

let tick = 0;
async function refresh() {
  try {
    renderJobs(await getJSON("/api/jobs"));
    await refreshGraph();
    renderSeries(await getJSON("/api/series"));
    if (tick % 2 === 0) renderEvents(await getJSON("/api/events"));
  } catch (err) {
    document.getElementById("status").textContent = "server unreachable: " + err.message;
  }
  tick++;
  document.body.dataset.refreshed = String(tick);
}

refresh();
setInterval(refresh, 1000);
