// launchgap's interactive view: per-core timelines and running/waiting step
// plots drawn on canvases from arrays embedded in the page (gzip, base64).
// Wheel zooms the time axis around the pointer, drag pans, double-click
// resets; every panel shares one time range. Slices narrower than a pixel
// compete for it and the longest is drawn, so nothing visible is dropped.
"use strict";

const META = JSON.parse(document.getElementById("lg-meta").textContent);
const LEFT = 70, RIGHT = 12, TOP = 22, BOTTOM = 26;
const MARK_COLOURS = {irq: "#d62728", migrate: "#7f7f7f", launch: "#2ca02c", sync: "#9467bd"};
let view = {lo: META.span[0], hi: META.span[1]};
const panels = [];

async function inflate(b64) {
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).arrayBuffer();
}

function arrays(buffer, layout) {
  const out = {};
  for (const [name, type, offset, length] of layout) {
    out[name] = new globalThis[type](buffer, offset, length);
  }
  return out;
}

function lowerBound(arr, value, lo, hi) {  // first index in [lo, hi) with arr[i] > value
  while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] > value) hi = mid; else lo = mid + 1; }
  return lo;
}

function niceStep(span, target) {
  const raw = span / target, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

function drawAxis(ctx, width, height) {
  const step = niceStep(view.hi - view.lo, Math.max(2, (width - LEFT - RIGHT) / 110));
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  ctx.fillStyle = "#333"; ctx.strokeStyle = "#ddd"; ctx.font = "11px sans-serif"; ctx.textAlign = "center";
  for (let t = Math.ceil(view.lo / step) * step; t <= view.hi; t += step) {
    const x = LEFT + (t - view.lo) / (view.hi - view.lo) * (width - LEFT - RIGHT);
    ctx.beginPath(); ctx.moveTo(x, TOP); ctx.lineTo(x, height - BOTTOM); ctx.stroke();
    ctx.fillText(t.toFixed(Math.min(digits, 9)) + " s", x, height - 8);
  }
}

class CoresPanel {
  constructor(spec, data) {
    this.spec = spec; this.d = data; this.rows = spec.cpus.length;
    this.rowStart = spec.row_offsets;
    this.hidden = new Set();
  }
  height() { return TOP + BOTTOM + Math.max(60, Math.min(900, this.rows * 12)); }
  draw(ctx, width, height) {
    const d = this.d, spec = this.spec, plotW = width - LEFT - RIGHT, plotH = height - TOP - BOTTOM;
    const rowH = plotH / this.rows, bar = Math.max(1, rowH * 0.7);
    const scale = plotW / (view.hi - view.lo), lo = view.lo, hi = view.hi;
    let drawn = 0;
    for (let r = 0; r < this.rows; r++) {
      const y = TOP + plotH - (r + 1) * rowH + (rowH - bar) / 2;
      const end = this.rowStart[r + 1];
      let i = lowerBound(d.end, lo, this.rowStart[r], end);
      let pend = -1, px0 = 0, px1 = 0, bestPx = -1, best = -1, bestLen = -1;
      const narrow = [];
      for (; i < end && d.start[i] < hi; i++) {
        const x0 = LEFT + (Math.max(d.start[i], lo) - lo) * scale, x1 = LEFT + (Math.min(d.end[i], hi) - lo) * scale;
        const task = d.task[i];
        if (x1 - x0 < 1) {
          const px = Math.floor(x0), len = d.end[i] - d.start[i];
          if (px !== bestPx) { if (best >= 0) narrow.push(bestPx, best); bestPx = px; best = -1; bestLen = -1; }
          if (len > bestLen) { best = task; bestLen = len; }
          continue;
        }
        if (pend === task && x0 - px1 < 1) { px1 = x1; continue; }
        if (pend >= 0) { ctx.fillStyle = spec.tasks[pend].color; ctx.fillRect(px0, y, px1 - px0, bar); drawn++; }
        pend = task; px0 = x0; px1 = x1;
      }
      if (pend >= 0) { ctx.fillStyle = spec.tasks[pend].color; ctx.fillRect(px0, y, px1 - px0, bar); drawn++; }
      if (best >= 0) narrow.push(bestPx, best);
      for (let k = 0; k < narrow.length; k += 2) {
        ctx.fillStyle = spec.tasks[narrow[k + 1]].color; ctx.fillRect(narrow[k], y, 1, bar); drawn++;
      }
    }
    // marks: one per kind, row and pixel
    const seen = new Set();
    for (let i = lowerBound(d.mark_t, lo - 1e-12, 0, d.mark_t.length); i < d.mark_t.length && d.mark_t[i] < hi; i++) {
      const kind = spec.mark_kinds[d.mark_kind[i]];
      if (this.hidden.has(kind)) continue;
      const x = Math.floor(LEFT + (d.mark_t[i] - lo) * scale), r = d.mark_row[i];
      const key = (x * 4096 + r) * 8 + d.mark_kind[i];
      if (seen.has(key)) continue;
      seen.add(key);
      ctx.fillStyle = MARK_COLOURS[kind] || "#000";
      ctx.fillRect(x, TOP + plotH - (r + 1) * rowH, 1, Math.max(2, rowH * 0.25));
    }
    ctx.fillStyle = "#333"; ctx.font = "10px sans-serif"; ctx.textAlign = "right";
    const every = Math.max(1, Math.ceil(12 / rowH));
    for (let r = 0; r < this.rows; r += every) ctx.fillText("CPU " + spec.cpus[r], LEFT - 4, TOP + plotH - r * rowH - rowH / 3);
    return drawn;
  }
  describe(x, y, width, height) {
    const plotW = width - LEFT - RIGHT, plotH = height - TOP - BOTTOM, rowH = plotH / this.rows;
    const r = Math.floor((TOP + plotH - y) / rowH), t = view.lo + (x - LEFT) / plotW * (view.hi - view.lo);
    if (r < 0 || r >= this.rows) return "";
    const d = this.d, i = lowerBound(d.end, t, this.rowStart[r], this.rowStart[r + 1]);
    if (i >= this.rowStart[r + 1] || d.start[i] > t) return `CPU ${this.spec.cpus[r]}: idle at ${t.toFixed(6)} s`;
    const task = this.spec.tasks[d.task[i]];
    const when = `${d.start[i].toFixed(6)}-${d.end[i].toFixed(6)} s (${((d.end[i] - d.start[i]) * 1e6).toFixed(1)} us)`;
    // a stretch with no task: who ran there is unknown (a switch was not recorded)
    if (task.tid === null) return `CPU ${this.spec.cpus[r]}: ${task.comm}, ${when}`;
    return `CPU ${this.spec.cpus[r]}: ${task.comm} (pid ${task.pid}, tid ${task.tid}) ran ${when}`;
  }
}

class StepsPanel {
  constructor(spec, data) { this.spec = spec; this.d = data; }
  height() { return 320; }
  draw(ctx, width, height) {
    const d = this.d, plotW = width - LEFT - RIGHT, plotH = height - TOP - BOTTOM;
    const top = Math.max(this.spec.n_cpus + 1, this.spec.max_runnable);
    const sx = (t) => LEFT + (t - view.lo) / (view.hi - view.lo) * plotW, sy = (n) => TOP + plotH - n / top * plotH;
    ctx.fillStyle = "rgba(255,165,0,0.35)";
    for (let i = 0; i < d.fail_start.length; i++) {
      if (d.fail_end[i] < view.lo || d.fail_start[i] > view.hi) continue;
      const x0 = sx(Math.max(d.fail_start[i], view.lo)), x1 = sx(Math.min(d.fail_end[i], view.hi));
      ctx.fillRect(x0, TOP, Math.max(1, x1 - x0), plotH);
    }
    for (const [series, colour] of [[d.runnable, "#d62728"], [d.running, "#2ca02c"]]) {
      // per pixel column the highest count: overloads are peaks
      ctx.strokeStyle = colour; ctx.lineWidth = 1.2; ctx.beginPath();
      let i = Math.max(0, lowerBound(d.t, view.lo, 0, d.t.length) - 1), px = -1, peak = 0, first = true;
      for (; i < d.t.length && d.t[i] <= view.hi; i++) {
        const x = Math.floor(Math.max(LEFT, sx(d.t[i])));
        if (x !== px) {
          if (px >= 0) { if (first) { ctx.moveTo(px, sy(peak)); first = false; } else ctx.lineTo(px, sy(peak)); ctx.lineTo(x, sy(peak)); }
          px = x; peak = series[i];
        } else peak = Math.max(peak, series[i]);
      }
      if (px >= 0) { if (first) ctx.moveTo(px, sy(peak)); else ctx.lineTo(px, sy(peak)); ctx.lineTo(LEFT + plotW, sy(peak)); }
      ctx.stroke();
    }
    ctx.setLineDash([4, 4]); ctx.strokeStyle = "#000"; ctx.beginPath();
    ctx.moveTo(LEFT, sy(this.spec.n_cpus)); ctx.lineTo(LEFT + plotW, sy(this.spec.n_cpus)); ctx.stroke(); ctx.setLineDash([]);
    ctx.fillStyle = "#333"; ctx.font = "10px sans-serif"; ctx.textAlign = "right";
    for (let n = 0; n <= top; n += Math.max(1, Math.ceil(top / 8))) ctx.fillText(String(n), LEFT - 4, sy(n) + 3);
    return d.t.length;
  }
  describe(x, y, width) {
    const t = view.lo + (x - LEFT) / (width - LEFT - RIGHT) * (view.hi - view.lo);
    const i = lowerBound(this.d.t, t, 0, this.d.t.length) - 1;
    if (i < 0) return "";
    return `${t.toFixed(6)} s: ${this.d.running[i]} running, ${this.d.runnable[i]} runnable`;
  }
}

function redraw() {
  let total = 0;
  for (const p of panels) {
    const canvas = p.canvas, ratio = window.devicePixelRatio || 1, width = canvas.clientWidth, height = p.height();
    canvas.width = width * ratio; canvas.height = height * ratio; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    drawAxis(ctx, width, height);
    ctx.save(); ctx.beginPath(); ctx.rect(LEFT - 60, 0, width, height); ctx.clip();
    total += p.draw(ctx, width, height);
    ctx.restore();
  }
  document.getElementById("lg-range").textContent =
    `${view.lo.toFixed(6)} s to ${view.hi.toFixed(6)} s`;
  document.body.dataset.drawn = String(total);
}

function attach(p) {
  const canvas = p.canvas, tip = document.getElementById("lg-tip");
  const timeAt = (x) => view.lo + (x - LEFT) / (canvas.clientWidth - LEFT - RIGHT) * (view.hi - view.lo);
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const t = timeAt(e.offsetX), f = e.deltaY > 0 ? 1.25 : 0.8;
    view = {lo: t - (t - view.lo) * f, hi: t + (view.hi - t) * f};
    redraw();
  }, {passive: false});
  let dragX = null;
  canvas.addEventListener("mousedown", (e) => { dragX = e.offsetX; });
  window.addEventListener("mouseup", () => { dragX = null; });
  canvas.addEventListener("mousemove", (e) => {
    if (dragX !== null) {
      const dt = timeAt(dragX) - timeAt(e.offsetX);
      view = {lo: view.lo + dt, hi: view.hi + dt}; dragX = e.offsetX; redraw();
    }
    tip.textContent = p.describe(e.offsetX, e.offsetY, canvas.clientWidth, p.height());
  });
  canvas.addEventListener("dblclick", () => { view = {lo: META.span[0], hi: META.span[1]}; redraw(); });
}

async function main() {
  const buffer = await inflate(document.getElementById("lg-data").textContent.trim());
  const legend = document.getElementById("lg-legend");
  for (const [label, colour] of META.legend || []) {
    const item = document.createElement("span"), swatch = document.createElement("i");
    swatch.style.background = colour; item.append(swatch, label); legend.append(item);
  }
  const root = document.getElementById("lg-panels");
  for (const spec of META.panels) {
    const title = document.createElement("div"); title.className = "lg-title"; title.textContent = spec.title;
    const canvas = document.createElement("canvas"); canvas.className = "lg-canvas";
    root.append(title, canvas);
    const data = arrays(buffer, spec.layout);
    const p = spec.kind === "cores" ? new CoresPanel(spec, data) : new StepsPanel(spec, data);
    p.canvas = canvas; panels.push(p); attach(p);
    if (spec.kind === "cores") {
      for (const kind of spec.mark_kinds) {
        const label = document.createElement("label");
        const box = document.createElement("input"); box.type = "checkbox"; box.checked = true;
        box.addEventListener("change", () => { box.checked ? p.hidden.delete(kind) : p.hidden.add(kind); redraw(); });
        label.append(box, " " + kind + " marks ");
        label.style.color = MARK_COLOURS[kind];
        title.append(label);
      }
    }
  }
  window.addEventListener("resize", redraw);
  redraw();
  document.body.dataset.ready = "yes";
}

main().catch((err) => { document.body.dataset.error = String(err); document.getElementById("lg-tip").textContent = String(err); });
