// Inline SVG charts built with DOM calls (the CSP allows no inline script and no chart library).
const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#2d5bd7", "#e0862b", "#1f9d6b", "#c2410c"];
const W = 480, H = 200, PAD = { l: 44, r: 8, t: 10, b: 24 };

function el(name, attrs = {}, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten, at least 4 (so small counts get whole-number ticks).
function niceMax(value) {
  if (!(value > 4)) return 4;
  const p = Math.pow(10, Math.floor(Math.log10(value)));
  for (const m of [1, 2, 5, 10]) if (m * p >= value) return m * p;
  return 10 * p;
}

function frame(labels, max, title, format) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  svg.append(el("title", {}, title));
  const ih = H - PAD.t - PAD.b;
  for (let i = 0; i <= 4; i++) {
    const y = PAD.t + ih - (ih * i) / 4;
    svg.append(el("line", { x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, stroke: "#e3e7ef" }));
    svg.append(el("text", { x: PAD.l - 6, y: y + 4, "text-anchor": "end", "font-size": 10, fill: "#5b6475" },
      format((max * i) / 4)));
  }
  const step = Math.max(1, Math.ceil(labels.length / 6));
  const iw = W - PAD.l - PAD.r;
  labels.forEach((label, i) => {
    if (i % step !== 0 && i !== labels.length - 1) return;
    const x = PAD.l + (labels.length === 1 ? iw / 2 : (iw * (i + 0.5)) / labels.length);
    svg.append(el("text", { x, y: H - 6, "text-anchor": "middle", "font-size": 10, fill: "#5b6475" }, label.slice(5)));
  });
  return svg;
}

const plain = (v) => (Math.abs(v) >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v * 10) / 10));

/** A line chart: `series` is [{name, values}] over `labels` (dates). */
export function lineChart(title, labels, series, format = plain) {
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const svg = frame(labels, max, title, format);
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  series.forEach((s, k) => {
    const points = s.values.map((v, i) => {
      const x = PAD.l + (labels.length === 1 ? iw / 2 : (iw * (i + 0.5)) / labels.length);
      return `${x.toFixed(1)},${(PAD.t + ih - (ih * v) / max).toFixed(1)}`;
    });
    svg.append(el("polyline", { points: points.join(" "), fill: "none", stroke: COLORS[k % 4], "stroke-width": 2 }));
  });
  return wrap(title, svg, series);
}

/** A grouped bar chart: `series` is [{name, values}] over `labels`. */
export function barChart(title, labels, series, format = plain) {
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const svg = frame(labels, max, title, format);
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  const slot = iw / Math.max(1, labels.length);
  const bw = Math.max(1, (slot * 0.8) / series.length);
  series.forEach((s, k) => {
    s.values.forEach((v, i) => {
      const h = (ih * v) / max;
      const bar = el("rect", { x: (PAD.l + slot * i + slot * 0.1 + bw * k).toFixed(1), y: (PAD.t + ih - h).toFixed(1),
        width: bw.toFixed(1), height: Math.max(0, h).toFixed(1), fill: COLORS[k % 4] });
      bar.append(el("title", {}, `${labels[i]} ${s.name}: ${format(v)}`));
      svg.append(bar);
    });
  });
  return wrap(title, svg, series);
}

function wrap(title, svg, series) {
  const box = document.createElement("div");
  box.className = "card chart";
  const h = document.createElement("h3");
  h.textContent = title;
  const legend = document.createElement("div");
  legend.className = "legend";
  series.forEach((s, k) => {
    const item = document.createElement("span");
    const sw = document.createElement("span");
    sw.className = `swatch s${k % 4}`;
    item.append(sw, document.createTextNode(s.name));
    legend.append(item);
  });
  box.append(h, svg, legend);
  return box;
}
