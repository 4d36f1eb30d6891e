// Issue 26 in the console: the dashboard's charts (GET …/charts/:chart) and the customer list (GET …/customers).
// DOM calls only (the CSP allows no inline script). Every number shown is the API's, formatted exactly: money from
// integer milli-units (no floating point), ratios from the API's decimal text.
import { lineChart, barChart } from "./charts.js";

const SVG = "http://www.w3.org/2000/svg";

/**
 * The dashboard's charts, in order. `link`: the customers behind a point — "new" (first seen in the point's interval,
 * each bar and table row links there) or a status (the customers with that status now, linked from the chart's title);
 * none for the cohort charts, whose cohorts (first payment) are not a filter of the customer list. `kind: "cohort"` is
 * `subscription_retention`'s table of cohorts × months since (`cohortCard`); `realized_ltv` is bars of net per customer
 * by cohort (`plot: 1`), its customers and net in the table.
 */
export const CHARTS = [
  { chart: "mrr", title: "MRR", kind: "line", series: [["MRR", "mrr_milli"], ["Subscriptions", "subscriptions"]], plot: 1, link: "active" },
  { chart: "mrr_movement", title: "MRR movement", kind: "bar", link: "new",
    series: [["New", "new_milli"], ["Expansion", "expansion_milli"], ["Contraction", "contraction_milli"],
      ["Churned", "churned_milli"], ["Reactivation", "reactivation_milli"]] },
  { chart: "revenue", title: "Revenue", kind: "bar", link: "new",
    series: [["Gross", "gross_milli"], ["Proceeds", "proceeds_milli"], ["Refunds", "refunds_milli"], ["Net", "net_milli"]] },
  { chart: "active_subscriptions", title: "Active subscriptions", kind: "line", series: [["Active", "active_subscriptions"]], link: "active" },
  { chart: "active_trials", title: "Active trials", kind: "line", series: [["Trials", "active_trials"]], link: "active" },
  { chart: "trial_conversion", title: "Trial conversion", kind: "bar", series: [["Trials", "trials"], ["Conversions", "conversions"]],
    ratio: ["Conversion rate", "conversion_rate"], link: "new" },
  { chart: "churn", title: "Churn", kind: "bar", series: [["Active at start", "active_at_start"], ["Churned", "churned"]],
    ratio: ["Churn rate", "churn_rate"], link: "expired" },
  { chart: "refund_rate", title: "Refund rate", kind: "bar", series: [["Transactions", "transactions"], ["Refunded", "refunded"]],
    ratio: ["Refund rate", "refund_rate"], link: "revoked" },
  { chart: "subscription_retention", title: "Subscription retention", kind: "cohort" },
  { chart: "realized_ltv", title: "Realized LTV", kind: "bar", plot: 1,
    series: [["Net per customer", "net_per_customer_milli"], ["Customers", "customers"], ["Net", "net_milli"]] },
];

/** Months since first payment that `subscription_retention` reports: retention_0 … retention_12. */
export const MONTHS_SINCE = Array.from({ length: 13 }, (_, k) => k);

const isMoney = (measure) => measure.endsWith("_milli");

/** Milli-units as an amount with two decimals, rounded half away from zero in integers: 13986 → "13.99". */
export function amount(milli) {
  const cents = Math.floor((Math.abs(milli) + 5) / 10);
  const whole = Math.floor(cents / 100).toLocaleString("en-US");
  return `${milli < 0 ? "-" : ""}${whole}.${String(cents % 100).padStart(2, "0")}`;
}

/**
 * Decimal text of milli-units (the API's `net_per_customer_milli`, "17227.5000") as an amount with two decimals, rounded
 * half away from zero in integers (of ten-thousandths of a milli-unit): "17227.5000" → "17.23"; "—" for null.
 */
export function decimalAmount(text) {
  if (typeof text !== "string") return "—";
  const negative = text.startsWith("-");
  const [whole, fraction = ""] = text.replace("-", "").split(".");
  const tiny = BigInt(whole) * 10000n + BigInt(fraction.padEnd(4, "0").slice(0, 4));
  const cents = (tiny + 50000n) / 100000n;
  const sign = negative && cents > 0n ? "-" : "";
  return `${sign}${(cents / 100n).toLocaleString("en-US")}.${String(cents % 100n).padStart(2, "0")}`;
}

/** The API's ratio text ("0.3333") as a percentage ("33.33 %"); "—" for null. */
export function percent(ratio) {
  if (typeof ratio !== "string") return "—";
  const [whole, fraction] = ratio.split(".");
  return `${Number(whole) * 100 + Number(fraction.slice(0, 2))}.${fraction.slice(2)} %`;
}

/** A measure's text: money (milli-units as an integer, or as decimal text for a per-customer mean), else the count. */
const show = (measure, value) => (!isMoney(measure) ? String(value)
  : typeof value === "number" ? amount(value) : decimalAmount(value));
/** A value as a `data-value` attribute: the API's JSON value, `null` spelled out. */
const raw = (value) => (value === null ? "null" : value);

/** `YYYY-MM-DD` one day before `day`. */
function dayBefore(day) {
  return new Date(Date.parse(`${day}T00:00:00Z`) - 86400000).toISOString().slice(0, 10);
}

/** The customers page for `filters` (the chart's environment, product and country, and more). */
export function customersHref(projectId, filters) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
  return `#/projects/${encodeURIComponent(projectId)}/customers${q.toString() ? "?" + q : ""}`;
}

/**
 * The charts for `range` (`{from, to, interval, environment, product_id, country}`, each as the API takes it) into
 * `into`, one card per chart, each with its totals, a table of its points and links to the customers behind them.
 */
export async function revenueCharts(ui, projectId, range, into) {
  const { h, api, showError, loading } = ui;
  into.replaceChildren(loading("Loading charts"));
  const params = new URLSearchParams();
  for (const k of ["from", "to", "interval", "environment", "product_id", "country"]) if (range[k]) params.set(k, range[k]);
  let results;
  try {
    results = await Promise.all(CHARTS.map((def) =>
      api("GET", `/v1/admin/projects/${encodeURIComponent(projectId)}/charts/${def.chart}?${params}`)));
  } catch (error) { showError(into, error); return; }
  const filters = { environment: range.environment, product_id: range.product_id, country: range.country };
  const first = results[0];
  into.replaceChildren(
    h("p", { class: "muted", id: "charts-freshness", "data-fresh-as-of": first.fresh_as_of },
      `${first.from} to ${first.to}, by ${first.interval}, in ${first.currency}, proceeds `
        + `${first.proceeds_basis === "after_tax" ? "after the operator's tax rates" : "before tax"}. `
        + `Every change recorded before ${first.fresh_as_of} is counted.`),
    h("div", { class: "charts", id: "revenue-charts" }, CHARTS.map((def, i) =>
      (def.kind === "cohort" ? cohortCard : chartCard)(ui, projectId, def, results[i], filters))));
}

function chartCard(ui, projectId, def, json, filters) {
  const { h } = ui;
  const points = json.points || [];
  const labels = points.map((p) => p.date);
  // The interval of each point as customers' first-seen days: from its date to the day before the next one's.
  const interval = (i) => ({ first_seen_from: points[i].date,
    first_seen_to: i + 1 < points.length ? dayBefore(points[i + 1].date) : json.to });
  const pointHref = (i) => customersHref(projectId, { ...filters, ...interval(i) });
  const plotted = def.series.slice(0, def.plot || def.series.length);
  const series = plotted.map(([name, m]) => ({ name, values: points.map((p) => (isMoney(m) ? Number(p[m]) / 1000 : Number(p[m]))) }));
  const money = def.series.some(([, m]) => isMoney(m));
  const title = money ? `${def.title} (${json.currency})` : def.title;
  const box = (def.kind === "line" ? lineChart : barChart)(title, labels, series);
  box.id = `chart-${def.chart}`;
  box.dataset.chart = def.chart;
  if (def.link === "new") {
    // Bars are drawn series by series, point by point: each links to the customers first seen in its interval.
    box.querySelectorAll("svg rect").forEach((rect, n) => {
      const a = document.createElementNS(SVG, "a");
      a.setAttribute("href", pointHref(n % Math.max(1, points.length)));
      rect.replaceWith(a);
      a.append(rect);
    });
  } else if (def.link) {
    const heading = box.querySelector("h3");
    heading.append(" ", h("a", { href: customersHref(projectId, { ...filters, status: def.link }), class: "customers-link",
      title: `The customers ${def.link} now` }, `Customers ${def.link} now`));
  }
  const measures = def.ratio ? [...def.series, def.ratio] : def.series;
  const text = (m, value) => (def.ratio && m === def.ratio[1] ? percent(value) : show(m, value));
  const cell = (p, m) => h("td", { "data-measure": m, "data-value": raw(p[m]) }, text(m, p[m]));
  const totals = json.totals || {};
  const unconverted = Object.entries(totals.unconverted || {});
  // Amounts without a rate, apart: per currency, each of its measures (money, and the customers it came from).
  const apart = (values, currency) => Object.entries(values).flatMap(([m, v], i) => [i ? ", " : null,
    h("span", { "data-measure": m, "data-value": raw(v) }, `${measureName(def, m)} ${show(m, v)}${isMoney(m) ? ` ${currency}` : ""}`)]);
  const pointsApart = points.some((p) => Object.keys(p.unconverted || {}).length);
  box.append(
    h("dl", { class: "totals" }, measures.flatMap(([name, m]) => [h("dt", {}, name),
      h("dd", { "data-measure": m, "data-value": raw(totals[m]) }, text(m, totals[m]))])),
    unconverted.length ? h("p", { class: "muted unconverted" }, "Without an exchange rate (not in the figures above): ",
      unconverted.map(([currency, values]) => h("span", { "data-currency": currency }, apart(values, currency)))) : null,
    h("details", {}, h("summary", {}, "Points"),
      ui.dataTable(["Date", ...measures.map(([name]) => name), ...(pointsApart ? ["Without a rate"] : []),
        ...(def.link === "new" ? ["Customers"] : [])],
      points.map((p, i) => h("tr", { "data-date": p.date }, h("td", {}, p.date), measures.map(([, m]) => cell(p, m)),
        pointsApart ? h("td", { class: "unconverted" }, Object.entries(p.unconverted || {}).map(([currency, values]) =>
          h("div", { "data-currency": currency }, apart(values, currency)))) : null,
        def.link === "new" ? h("td", {}, h("a", { href: pointHref(i) }, "First seen then")) : null)))));
  return box;
}

/** A measure's name in `def`'s series ("Net per customer"), or the API's own for one the chart does not plot. */
function measureName(def, m) {
  const found = def.series.find(([, key]) => key === m);
  return found ? found[0] : m;
}

/**
 * `subscription_retention` as a cohort table: a row per cohort (the interval of first payment) with its subscribers,
 * a column per month since first payment (0 … 12), each cell the API's `retention_k` as a percentage shaded by its
 * tenth (`heat-0` … `heat-10`), "—" where no subscriber of the cohort has reached that month yet; the pooled totals
 * last. Every cell carries the API's values (`data-value`, `data-reached`, `data-retained`).
 */
function cohortCard(ui, projectId, def, json) {
  const { h } = ui;
  const cells = (row) => MONTHS_SINCE.map((k) => {
    const ratio = row[`retention_${k}`];
    const [whole, fraction] = typeof ratio === "string" ? ratio.split(".") : [];
    return h("td", { class: ratio === null ? "heat none" : `heat heat-${Number(whole) * 10 + Number(fraction[0])}`,
      "data-measure": `retention_${k}`, "data-value": raw(ratio), "data-reached": row[`reached_${k}`],
      "data-retained": row[`retained_${k}`], title: `${row[`retained_${k}`]} of ${row[`reached_${k}`]} in month ${k}` },
    percent(ratio));
  });
  const row = (label, values, attrs) => h("tr", attrs, h("th", { scope: "row" }, label),
    h("td", { "data-measure": "subscribers", "data-value": values.subscribers }, String(values.subscribers)), cells(values));
  const box = h("div", { class: "card chart cohort", id: `chart-${def.chart}`, "data-chart": def.chart },
    h("h3", {}, def.title),
    h("p", { class: "muted" }, "Share of each cohort (by first payment) still paying k months later; — where no one has reached that month yet."),
    ui.dataTable(["Cohort", "Subscribers", ...MONTHS_SINCE.map((k) => `M${k}`)],
      [...(json.points || []).map((p) => row(p.date, p, { "data-date": p.date })),
        row("All", json.totals || {}, { "data-total": "" })]));
  return box;
}

const SORTS = [["-first_seen", "First seen, newest first"], ["first_seen", "First seen, oldest first"],
  ["-last_purchase", "Last purchase, newest first"], ["last_purchase", "Last purchase, oldest first"],
  ["-net", "Net, highest first"], ["net", "Net, lowest first"]];
const LIST_KEYS = ["status", "product_id", "country", "environment", "first_seen_from", "first_seen_to", "min_net", "sort"];
export const PAGE_SIZE = 25;

/**
 * The customer list with its filters into `into`: the query comes from the page's hash (`query`, a URLSearchParams),
 * so a chart's link opens it with the filters set; pages follow `next_cursor` (kept in the hash, with the cursors of
 * the pages before it for Previous).
 */
export async function customerList(ui, projectId, query, into) {
  const { h, api, showError, loading, field } = ui;
  const value = (k) => query.get(k) || "";
  const go = (params) => { location.hash = customersHref(projectId, params); };
  const current = Object.fromEntries(LIST_KEYS.map((k) => [k, value(k)]));
  const select = (id, name, options) => h("select", { id, name }, options.map(([v, label]) =>
    h("option", { value: v, selected: v === value(name) }, label)));
  const input = (id, name, attrs = {}) => h("input", { id, name, value: value(name), ...attrs });
  const form = h("form", { class: "card", id: "customer-filters", role: "search", onsubmit: (e) => {
    e.preventDefault();
    const params = {};
    for (const k of LIST_KEYS) params[k] = (form.elements[k].value || "").trim();
    if (params.sort === "-first_seen") params.sort = "";
    go(params);
  } }, h("h2", {}, "All customers"),
  h("div", { class: "filters" },
    field("status", "Status", select("filter-status", "status", [["", "Any"], ["active", "Active"], ["expired", "Expired"], ["revoked", "Revoked"]])),
    field("environment", "Environment", select("filter-environment", "environment",
      [["", "All"], ["Production", "Production"], ["Sandbox", "Sandbox"], ["Xcode", "Xcode"], ["LocalTesting", "LocalTesting"]])),
    field("product_id", "Product", input("filter-product", "product_id", { placeholder: "com.example.pro.monthly" })),
    field("country", "Storefront", input("filter-country", "country", { placeholder: "USA", maxlength: 3 })),
    field("first_seen_from", "First seen from", input("filter-first-seen-from", "first_seen_from", { type: "date" })),
    field("first_seen_to", "First seen to", input("filter-first-seen-to", "first_seen_to", { type: "date" })),
    field("min_net", "Net at least (milli-units)", input("filter-min-net", "min_net", { inputmode: "numeric", placeholder: "5000" })),
    field("sort", "Sort", select("filter-sort", "sort", SORTS.map(([v, label]) => [v === "-first_seen" ? "" : v, label])))),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Filter"),
    h("a", { href: customersHref(projectId, {}), id: "clear-filters" }, "Clear")));
  const list = h("div", { id: "customer-list" }, loading());
  into.replaceChildren(form, list);
  const params = new URLSearchParams();
  for (const k of LIST_KEYS) if (current[k]) params.set(k, current[k]);
  params.set("limit", String(PAGE_SIZE));
  if (value("cursor")) params.set("cursor", value("cursor"));
  let page;
  try { page = await api("GET", `/v1/admin/projects/${encodeURIComponent(projectId)}/customers?${params}`); }
  catch (error) { showError(list, error, form); return; }
  // Previous pages: the cursors that led here, oldest first, kept in the hash as `back` (comma-separated).
  const back = value("back") ? value("back").split(",") : [];
  const pageAt = (cursor, trail) => customersHref(projectId, { ...current, cursor, back: trail.join(",") });
  const rows = page.customers.map((c) => h("tr", { "data-user-id": c.user_id },
    h("td", {}, h("a", { href: customersHref(projectId, { user: c.user_id }) }, c.user_id)),
    h("td", {}, h("span", { class: `badge ${c.status}`, "data-status": c.status }, c.status)),
    h("td", { "data-entitlements": c.entitlements.join(",") }, c.entitlements.join(", ") || "—"),
    h("td", { "data-first-seen": c.first_seen }, c.first_seen),
    h("td", { class: "hide-narrow", "data-last-purchase": c.last_purchase || "" }, c.last_purchase || "—"),
    h("td", { "data-net": c.net_milli }, `${amount(c.net_milli)} ${page.currency}`,
      Object.entries(c.unconverted).map(([currency, v]) => h("div", { class: "muted", "data-unconverted": currency, "data-value": v },
        `+ ${amount(v)} ${currency} without a rate`)))));
  list.replaceChildren(
    ui.dataTable(["User", "Status", "Entitlements", "First seen", { text: "Last purchase", class: "hide-narrow" }, `Net (${page.currency})`],
      rows, "No customer matches.", "customer-list-table"),
    h("div", { class: "pager" },
      h("a", { id: "customers-previous", hidden: !value("cursor"),
        href: value("cursor") ? pageAt(back[back.length - 1] || "", back.slice(0, -1)) : undefined }, "Previous"),
      h("span", { class: "muted", id: "customers-page" }, `Page ${back.length + (value("cursor") ? 2 : 1)}`),
      h("a", { id: "customers-next", hidden: !page.next_cursor,
        href: page.next_cursor ? pageAt(page.next_cursor, value("cursor") ? [...back, value("cursor")] : back) : undefined }, "Next")));
}
