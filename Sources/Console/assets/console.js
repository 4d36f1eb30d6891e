// The Bouncer admin console: a few pages over the JSON admin API. No dependencies, no inline script (CSP).
// The session is an HttpOnly cookie; the CSRF token lives only in this module's memory.
import { lineChart, barChart } from "./charts.js";

let csrf = null;
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOutButton = document.getElementById("sign-out");
const signOutEverywhereButton = document.getElementById("sign-out-everywhere");
const PAGE = 10;

/** An element: h("button", {class: "primary", onclick: f}, "Save"). Text is always text, never HTML. */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  const response = await fetch(path, { method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) {
    if (response.status === 401 && json && json.code === "CONSOLE_SESSION_INVALID" && location.hash !== "#/signin") {
      csrf = null;
      location.hash = "#/signin";
    }
    throw new ApiError(response.status, json);
  }
  return json;
}

/** Shows an API error: the message and suggestion on top, each detail next to its field (`data-field`). */
function showError(where, error, form) {
  const body = error instanceof ApiError ? error.body : { error: String(error) };
  if (form) form.querySelectorAll(".field-error").forEach((n) => n.remove());
  const unplaced = [];
  for (const d of body.details || []) {
    const slot = form && d.path && d.path.length ? form.querySelector(`[data-field="${CSS.escape(d.path[0])}"]`) : null;
    if (slot) slot.append(h("div", { class: "field-error", role: "alert" }, d.message,
      body.suggestion ? h("div", { class: "suggestion" }, body.suggestion) : null));
    else unplaced.push(d);
  }
  const box = h("div", { class: "alert", role: "alert", "data-code": body.code || "" },
    h("strong", {}, body.error || "Request failed"), body.code ? h("span", { class: "muted" }, ` (${body.code})`) : null,
    body.suggestion ? h("div", { class: "suggestion" }, body.suggestion) : null,
    unplaced.length ? h("ul", {}, unplaced.map((d) => h("li", {}, `${(d.path || []).join(".") || "body"}: ${d.message}`))) : null,
    body.request_id ? h("div", { class: "muted" }, `request id ${body.request_id}`) : null);
  where.replaceChildren(box);
}

/**
 * The submit handler of a form that sends: no navigation, its submit button disabled while `send(form)` runs, a
 * failure shown in `errors` (details next to the form's fields). The button is enabled again after a failure, and
 * after a success unless `redraws` (the page then replaces the form).
 */
function onSubmit(errors, send, redraws = false) {
  return async (e) => {
    e.preventDefault();
    const form = e.target;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await send(form);
      if (!redraws) button.disabled = false;
    } catch (error) { showError(errors, error, form); button.disabled = false; }
  };
}

function field(name, label, input, help) {
  return h("div", { "data-field": name }, h("label", { for: input.id || undefined }, label), input,
    help ? h("div", { class: "suggestion" }, help) : null);
}

function copyButton(text, label = "Copy") {
  return h("button", { type: "button", class: "copy", "data-copy": text, onclick: async (e) => {
    try { await navigator.clipboard.writeText(text); e.target.textContent = "Copied"; }
    catch { e.target.textContent = "Select and copy"; }
    setTimeout(() => { e.target.textContent = label; }, 1500);
  } }, label);
}

function loading(text = "Loading") { return h("p", { class: "loading" }, text); }

/** A paginated table: rows rendered PAGE at a time with Previous/Next. */
function pagedTable(headers, rows, renderRow, id) {
  let page = 0;
  const wrap = h("div", { id });
  const draw = () => {
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    const slice = rows.slice(page * PAGE, page * PAGE + PAGE);
    wrap.replaceChildren(...[
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) =>
        typeof x === "string" ? h("th", { scope: "col" }, x) : h("th", { scope: "col", class: x.class }, x.text)))),
      h("tbody", {}, slice.length ? slice.map(renderRow) : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "Nothing yet."))))),
      rows.length > PAGE ? h("div", { class: "pager" },
        h("button", { type: "button", disabled: page === 0, onclick: () => { page--; draw(); } }, "Previous"),
        h("span", { class: "muted" }, `Page ${page + 1} of ${pages} (${rows.length})`),
        h("button", { type: "button", disabled: page >= pages - 1, onclick: () => { page++; draw(); } }, "Next")) : null,
    ].filter(Boolean));
  };
  draw();
  return wrap;
}

function setNav(projectId, current) {
  const links = [["Projects", "#/projects"]];
  if (projectId) {
    for (const [name, slug] of [["Dashboard", "dashboard"], ["Settings", ""], ["Products", "products"],
      ["Customers", "customers"], ["Notifications", "notifications"], ["Webhooks", "webhooks"],
      ["App Store", "app-store"]]) {
      links.push([name, `#/projects/${projectId}${slug ? "/" + slug : ""}`]);
    }
  }
  nav.replaceChildren(...links.map(([name, href]) => h("a", { href, "aria-current": href === current ? "page" : undefined }, name)));
}

// ---- Sign-in -----------------------------------------------------------------------------------------------

function signInPage() {
  nav.replaceChildren();
  signOutButton.hidden = true;
  signOutEverywhereButton.hidden = true;
  const errors = h("div");
  const input = h("input", { id: "token", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { class: "card", id: "sign-in-form", onsubmit: onSubmit(errors, async () => {
    const session = await api("POST", "/v1/admin/session", { token: input.value });
    csrf = session.csrf_token;
    input.value = "";
    location.hash = "#/projects";
  }) }, field("token", "Admin token", input, "The server's BOUNCER_ADMIN_TOKEN. It is sent once; the session is a cookie."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Sign in")));
  main.replaceChildren(h("h1", {}, "Sign in"), errors, form);
  input.focus();
}

signOutButton.addEventListener("click", async () => {
  try { await api("DELETE", "/v1/admin/session"); } catch { /* signed out either way */ }
  csrf = null;
  location.hash = "#/signin";
});

// Ends every session (a lost laptop, a shared screen): other browsers get CONSOLE_SESSION_INVALID on their next call.
signOutEverywhereButton.addEventListener("click", async () => {
  try { await api("DELETE", "/v1/admin/sessions"); } catch { /* this session ends either way: sign in again */ }
  csrf = null;
  location.hash = "#/signin";
});

// ---- Projects ----------------------------------------------------------------------------------------------

function projectFields(p = {}) {
  const envs = p.environments || ["Production", "Sandbox"];
  return [
    field("name", "Name", h("input", { id: "project-name", name: "name", value: p.name || "" })),
    field("bundle_id", "Bundle id", h("input", { id: "project-bundle-id", name: "bundle_id", value: p.bundle_id || "", placeholder: "com.example.app" })),
    field("app_apple_id", "App Apple id", h("input", { id: "project-app-apple-id", name: "app_apple_id", inputmode: "numeric",
      value: p.app_apple_id ?? "" }), "Required for Production; empty for none."),
    h("div", { "data-field": "environments" }, h("label", {}, "Environments"),
      ["Production", "Sandbox"].map((env) => h("label", { class: "inline" },
        h("input", { type: "checkbox", name: "environments", value: env, checked: envs.includes(env) }), env))),
    field("transfer_policy", "Transfer policy", h("select", { id: "project-transfer-policy", name: "transfer_policy" },
      ["transfer", "share", "block"].map((v) => h("option", { value: v, selected: (p.transfer_policy || "transfer") === v }, v)))),
    h("div", { "data-field": "allow_xcode" }, h("label", { class: "inline" },
      h("input", { type: "checkbox", name: "allow_xcode", checked: !!p.allow_xcode }), "Accept Xcode-signed transactions (development)")),
  ];
}

function readProjectForm(form) {
  const body = { name: form.name.value, bundle_id: form.bundle_id.value, transfer_policy: form.transfer_policy.value,
    allow_xcode: form.allow_xcode.checked,
    environments: [...form.querySelectorAll("input[name=environments]:checked")].map((x) => x.value) };
  const appleId = form.app_apple_id.value.trim();
  body.app_apple_id = appleId === "" ? null : (/^\d+$/.test(appleId) ? Number(appleId) : appleId);
  return body;
}

async function projectsPage() {
  setNav(null, "#/projects");
  main.replaceChildren(h("h1", {}, "Projects"), loading());
  const errors = h("div");
  let list;
  try { list = (await api("GET", "/v1/admin/projects")).projects; }
  catch (error) { showError(errors, error); main.replaceChildren(h("h1", {}, "Projects"), errors); return; }
  const created = h("div");
  const form = h("form", { class: "card", id: "create-project-form", onsubmit: onSubmit(errors, async () => {
    const p = await api("POST", "/v1/admin/projects", readProjectForm(form));
    errors.replaceChildren();
    form.querySelectorAll(".field-error").forEach((n) => n.remove());
    created.replaceChildren(h("div", { class: "alert ok", role: "status", id: "created-project" },
      h("strong", {}, `Created ${p.name}. `), "Copy the secret key now: it is shown only once.",
      h("div", { class: "secret" }, h("code", { id: "new-secret-key" }, p.secret_key), " ", copyButton(p.secret_key)),
      h("div", {}, h("a", { href: `#/projects/${p.id}`, id: "open-created-project" }, "Open the project"))));
    list.push(p);
    table.replaceWith(table = renderList());
  }) }, h("h2", {}, "New project"), projectFields(), h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Create project")));
  const renderList = () => pagedTable(["Name", "Bundle id", { text: "Id", class: "hide-narrow" }, "Public key"], list, (p) =>
    h("tr", { "data-project-id": p.id }, h("td", {}, h("a", { href: `#/projects/${p.id}/dashboard` }, p.name)),
      h("td", {}, h("code", {}, p.bundle_id)), h("td", { class: "hide-narrow" }, h("code", {}, p.id)),
      h("td", {}, h("code", {}, p.public_key), " ", copyButton(p.public_key))), "project-list");
  let table = renderList();
  main.replaceChildren(h("h1", {}, "Projects"), table, errors, created, form);
}

async function loadProject(id) {
  return api("GET", `/v1/admin/projects/${encodeURIComponent(id)}`);
}

async function settingsPage(id) {
  setNav(id, `#/projects/${id}`);
  main.replaceChildren(h("h1", {}, "Settings"), loading());
  let p;
  try { p = await loadProject(id); } catch (error) { const e = h("div"); showError(e, error); main.replaceChildren(e); return; }
  const errors = h("div");
  const saved = h("div");
  const form = h("form", { class: "card", id: "edit-project-form", onsubmit: async (e) => {
    e.preventDefault();
    try {
      p = await api("PATCH", `/v1/admin/projects/${id}`, readProjectForm(form));
      errors.replaceChildren();
      saved.replaceChildren(h("div", { class: "alert ok", role: "status" }, "Saved."));
    } catch (error) { saved.replaceChildren(); showError(errors, error, form); }
  } }, projectFields(p), h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Save")));

  const keys = h("div", { class: "card", id: "keys" });
  const drawKeys = (project, newSecret) => keys.replaceChildren(...[h("h2", {}, "Keys"),
    h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Public key"), h("th", {}, "Created"), h("th", {}, "Expires"), h("th", {}, ""))),
      h("tbody", {}, project.public_keys.map((k) => h("tr", {}, h("td", {}, h("code", { class: "public-key" }, k.key)),
        h("td", {}, k.created_at), h("td", {}, k.expires_at || "—"), h("td", {}, copyButton(k.key))))))),
    h("p", {}, "Secret keys (stored hashed): ", project.secret_keys.map((k) => h("span", { class: "badge" },
      `…${k.last4}${k.expires_at ? " until " + k.expires_at : ""}`))),
    newSecret ? h("div", { class: "secret", id: "rotated-secret" }, "New secret key (shown once): ", h("code", {}, newSecret), " ", copyButton(newSecret)) : null,
    rotateForm].filter(Boolean));
  const rotateErrors = h("div");
  const rotateForm = h("form", { id: "rotate-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = {};
    if (rotateForm.key.value) body.key = rotateForm.key.value;
    if (rotateForm.grace_seconds.value !== "") body.grace_seconds = Number(rotateForm.grace_seconds.value);
    try {
      const rotated = await api("POST", `/v1/admin/projects/${id}/rotate-keys`, body);
      rotateErrors.replaceChildren(h("div", { class: "alert ok", role: "status", id: "rotated" }, "Rotated."));
      drawKeys(rotated, rotated.secret_key);
    } catch (error) { showError(rotateErrors, error, rotateForm); }
  } }, h("h2", {}, "Rotate"),
    field("key", "Which key", h("select", { id: "rotate-key", name: "key" }, h("option", { value: "" }, "both"),
      h("option", { value: "public" }, "public"), h("option", { value: "secret" }, "secret"))),
    field("grace_seconds", "Grace (seconds) the old key keeps working", h("input", { id: "rotate-grace", name: "grace_seconds", type: "number", min: 0 }),
      "Empty: 30 days for the public key, 24 h for the secret key; 0 retires the old key at once."),
    rotateErrors, h("div", { class: "row" }, h("button", { type: "submit", class: "primary", id: "rotate-button" }, "Rotate keys")));
  drawKeys(p);

  const deleteErrors = h("div");
  const confirmInput = h("input", { id: "delete-confirm", autocomplete: "off" });
  const deleteButton = h("button", { type: "submit", class: "danger", disabled: true }, "Delete project");
  confirmInput.addEventListener("input", () => { deleteButton.disabled = confirmInput.value !== p.name; });
  const deleteForm = h("form", { class: "card", id: "delete-form", onsubmit: async (e) => {
    e.preventDefault();
    if (confirmInput.value !== p.name) return;
    try { await api("DELETE", `/v1/admin/projects/${id}`); location.hash = "#/projects"; }
    catch (error) { showError(deleteErrors, error); }
  } }, h("h2", {}, "Delete"), h("p", {}, "Deletes the project and all its purchases. Type the project's name to confirm: ", h("code", {}, p.name)),
    field("confirm", "Project name", confirmInput), deleteErrors, h("div", { class: "row" }, deleteButton));
  main.replaceChildren(h("h1", {}, p.name), errors, saved, form, keys, deleteForm);
}

// ---- Products ----------------------------------------------------------------------------------------------

async function productsPage(id) {
  setNav(id, `#/projects/${id}/products`);
  main.replaceChildren(h("h1", {}, "Products"), loading());
  const errors = h("div");
  let products;
  try { products = (await api("GET", `/v1/admin/projects/${id}/products`)).products; }
  catch (error) { showError(errors, error); main.replaceChildren(h("h1", {}, "Products"), errors); return; }
  const rowFor = (prod) => {
    const ents = h("input", { name: "entitlements", value: (prod.entitlements || []).join(", "), "aria-label": `Entitlements of ${prod.product_id}` });
    const slot = h("td", { "data-field": "entitlements" }, ents);
    const tr = h("tr", { "data-product-id": prod.product_id }, h("td", {}, h("code", {}, prod.product_id)), slot,
      h("td", {}, h("button", { type: "button", onclick: async () => {
        try {
          await api("PUT", `/v1/admin/projects/${id}/products/${encodeURIComponent(prod.product_id)}`, { entitlements: splitList(ents.value) });
          slot.querySelectorAll(".field-error").forEach((n) => n.remove());
          errors.replaceChildren(h("div", { class: "alert ok", role: "status" }, `Saved ${prod.product_id}.`));
        } catch (error) { showError(errors, error, tr); }
      } }, "Save"), " ", h("button", { type: "button", class: "danger", onclick: async () => {
        try {
          await api("DELETE", `/v1/admin/projects/${id}/products/${encodeURIComponent(prod.product_id)}`);
          products = products.filter((x) => x !== prod);
          redraw();
        } catch (error) { showError(errors, error); }
      } }, "Delete")));
    return tr;
  };
  const tableBox = h("div");
  const redraw = () => tableBox.replaceChildren(pagedTable(["Product id", "Entitlements (comma-separated)", ""], products, rowFor, "product-table"));
  redraw();
  const add = h("form", { class: "card", id: "add-product-form", onsubmit: async (e) => {
    e.preventDefault();
    const productId = add.product_id.value.trim();
    try {
      const saved = await api("PUT", `/v1/admin/projects/${id}/products/${encodeURIComponent(productId)}`, { entitlements: splitList(add.entitlements.value) });
      products = products.filter((x) => x.product_id !== saved.product_id).concat([saved]);
      add.reset();
      add.querySelectorAll(".field-error").forEach((n) => n.remove());
      errors.replaceChildren(h("div", { class: "alert ok", role: "status", id: "product-saved" }, `Mapped ${saved.product_id}.`));
      redraw();
    } catch (error) { showError(errors, error, add); }
  } }, h("h2", {}, "Map a product"),
    field("product_id", "App Store product id", h("input", { id: "product-id", name: "product_id", placeholder: "com.example.pro.monthly" })),
    field("entitlements", "Entitlements", h("input", { id: "product-entitlements", name: "entitlements", placeholder: "pro" }), "Comma-separated, e.g. pro, no_ads"),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Save mapping")));
  main.replaceChildren(h("h1", {}, "Products"), errors, tableBox, add);
}

const splitList = (text) => text.split(",").map((s) => s.trim()).filter((s) => s.length);

// ---- Customers ---------------------------------------------------------------------------------------------

const userPath = (id, user) => `/v1/admin/projects/${id}/users/${encodeURIComponent(user)}`;

/** A datetime-local value as an ISO instant; unparsable text is sent as typed so the API explains it. */
function instant(value) {
  if (!value.trim()) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

async function customersPage(id, query) {
  setNav(id, `#/projects/${id}/customers`);
  const result = h("div", { id: "customer-result" });
  const input = h("input", { id: "customer-user-id", name: "user_id", value: query.get("user") || "" });
  const form = h("form", { class: "card", role: "search", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/projects/${id}/customers?user=${encodeURIComponent(input.value.trim())}`;
  } }, field("user_id", "User id", input, "The app's user id (appAccountToken or the id your backend posts)."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Find")));
  const txInput = h("input", { id: "customer-transaction-id", name: "transaction_id", inputmode: "numeric",
    value: query.get("transaction") || "" });
  const txForm = h("form", { class: "card", role: "search", id: "transaction-search-form", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/projects/${id}/customers?transaction=${encodeURIComponent(txInput.value.trim())}`;
  } }, field("transaction_id", "Or a transaction id", txInput,
    "Any transaction id Bouncer recorded (a purchase, a renewal, a restore): finds the users holding its purchase."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Find by transaction")));
  main.replaceChildren(h("h1", {}, "Customers"), form, txForm, result);
  const transaction = query.get("transaction");
  if (transaction) {
    result.replaceChildren(loading());
    let x;
    try {
      x = await api("GET", `/v1/admin/projects/${id}/transactions/${encodeURIComponent(transaction)}`);
    } catch (error) { showError(result, error, txForm); return; }
    result.replaceChildren(h("div", { class: "card", id: "transaction-result" },
      h("h2", {}, "Transaction ", h("code", {}, x.transaction_id)),
      h("p", {}, "Product: ", h("code", { id: "transaction-product" }, x.product_id), " · ", x.environment, " · from ", x.source),
      h("p", {}, "Purchase (original transaction): ",
        h("a", { href: `#/projects/${id}/notifications?otid=${encodeURIComponent(x.original_transaction_id)}`, title: "Its notifications" },
          h("code", {}, x.original_transaction_id))),
      x.user_ids.length
        ? h("ul", { id: "transaction-holders" }, x.user_ids.map((u) => h("li", {},
          h("a", { href: `#/projects/${id}/customers?user=${encodeURIComponent(u)}`, "data-user-id": u }, u))))
        : h("p", { id: "transaction-holders", class: "muted" }, "No user holds this purchase now (never bound, moved away or erased).")));
    return;
  }
  const user = query.get("user");
  if (!user) return;
  result.replaceChildren(loading());
  let p;
  try { p = await loadProject(id); } catch (error) { showError(result, error); return; }
  if (p.require_secret_key_for_reads) {
    result.replaceChildren(h("div", { class: "alert" }, "This project requires its secret key for reads; the console holds no secret key."));
    return;
  }
  const notice = h("div", { id: "customer-notice" });
  const draw = async () => {
    let s, t;
    try {
      [s, t] = await Promise.all([
        api("GET", `/v1/subscriptions/${encodeURIComponent(p.public_key)}/${encodeURIComponent(user)}`),
        api("GET", `${userPath(id, user)}/timeline`)]);
    } catch (error) { showError(result, error); return; }
    const subs = s.subscriptions || [];
    const grants = s.grants || [];
    result.replaceChildren(notice,
      h("div", { class: "card" }, h("h2", {}, `User ${s.user_id}`),
        h("p", {}, "Status: ", h("span", { class: `badge ${s.status}`, id: "customer-status" }, s.status)),
        h("p", {}, "Entitlements now: ", h("span", { id: "customer-entitlements" }, (s.entitlements || []).join(", ") || "none")),
        h("ul", { id: "customer-reasons" }, (t.entitlements || []).map((e) => h("li", { "data-entitlement": e.id },
          h("span", { class: `badge ${e.active ? "active" : "expired"}` }, e.id), " ", e.reason)))),
      h("h2", {}, "Purchases"),
      pagedTable(["Product", "Status", "Until", "Entitlements", { text: "Original transaction", class: "hide-narrow" }], subs, (x) =>
        h("tr", {}, h("td", {}, h("code", {}, x.product_id)), h("td", {}, h("span", { class: `badge ${x.status}` }, x.status),
          x.in_grace_period ? " grace" : "", x.in_billing_retry ? " billing retry" : "", x.revocation_date ? ` refunded ${x.revocation_date}` : ""),
        h("td", {}, x.current_period_end || "—"), h("td", {}, (x.entitlements || []).join(", ")),
        h("td", { class: "hide-narrow" }, h("a", { href: `#/projects/${id}/notifications?otid=${encodeURIComponent(x.original_transaction_id)}`,
          title: "Its notifications" }, h("code", {}, x.original_transaction_id)))), "customer-purchases"),
      h("h2", {}, "Grants"),
      pagedTable(["Entitlement", "Until", "Since", ""], grants, (g) =>
        h("tr", { "data-grant-id": g.id }, h("td", {}, h("code", {}, g.entitlement)), h("td", {}, g.expires_at || "no end"),
          h("td", {}, g.created_at), h("td", {}, h("button", { type: "button", class: "danger", onclick: async (e) => {
            e.target.disabled = true;
            try {
              await api("DELETE", `${userPath(id, user)}/grants/${encodeURIComponent(g.id)}`);
              notice.replaceChildren(h("div", { class: "alert ok", role: "status" }, `Removed the grant of ${g.entitlement}.`));
              await draw();
            } catch (error) { showError(notice, error); e.target.disabled = false; }
          } }, "Remove"))), "customer-grants"),
      grantForm(),
      h("h2", {}, "Timeline"),
      pagedTable(["When", "Event", { text: "Transaction", class: "hide-narrow" }, "What happened"], t.events || [], (ev) =>
        h("tr", { "data-type": ev.type }, h("td", {}, ev.at), h("td", {}, h("span", { class: "badge" }, ev.type), h("div", { class: "muted" }, ev.source)),
          h("td", { class: "hide-narrow" }, ev.transaction_id ? h("code", {}, ev.transaction_id) : "—"),
          h("td", {}, ev.summary, ev.effect ? h("div", { class: "muted" }, ev.effect) : null)), "customer-timeline"),
      dataCard());
  };
  const grantForm = () => {
    const errors = h("div");
    const add = h("form", { class: "card", id: "add-grant-form", onsubmit: onSubmit(errors, async () => {
      const g = await api("POST", `${userPath(id, user)}/grants`, { entitlement: add.entitlement.value.trim(),
        reason: add.reason.value.trim(), expires_at: instant(add.expires_at.value) });
      notice.replaceChildren(h("div", { class: "alert ok", role: "status", id: "grant-added" }, `Granted ${g.entitlement}.`));
      await draw();
    }, true) }, h("h3", {}, "Grant an entitlement"), errors,
      field("entitlement", "Entitlement", h("input", { id: "grant-entitlement", name: "entitlement", placeholder: "pro" })),
      field("expires_at", "Expires at (your local time)", h("input", { id: "grant-expires-at", name: "expires_at", type: "datetime-local" }),
        "Empty for no end."),
      field("reason", "Reason", h("input", { id: "grant-reason", name: "reason", placeholder: "support ticket 42" }),
        "For people; never shown to the app."),
      h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Grant")));
    return add;
  };
  const dataCard = () => {
    const out = h("div", { id: "customer-data-result" });
    const confirmInput = h("input", { id: "erase-confirm", name: "confirm", autocomplete: "off" });
    const erase = h("form", { id: "erase-form", onsubmit: async (e) => {
      e.preventDefault();
      if (confirmInput.value !== user) {
        showError(out, new ApiError(400, { error: "The confirmation does not match", suggestion: `Type the user id ${user} exactly.`,
          details: [{ path: ["confirm"], message: "Does not match the user id" }] }), erase);
        return;
      }
      try {
        const r = await api("DELETE", userPath(id, user));
        out.replaceChildren(h("div", { class: "alert ok", role: "status", id: "erased" }, `Erased ${r.user_id}: `,
          `${r.bindings_deleted} bindings deleted, ${r.grants_anonymised} grants and ${r.ownership_events_anonymised} ownership moves anonymised, `,
          `${r.events_dropped} pending webhook events dropped.`));
      } catch (error) { showError(out, error); }
    } }, field("confirm", `Type ${user} to erase`, confirmInput, "Erasure cannot be undone; purchases stay, unbound, for accounting."),
    h("div", { class: "row" }, h("button", { type: "submit", class: "danger", id: "erase-button" }, "Erase user")));
    return h("div", { class: "card" }, h("h2", {}, "Data"),
      h("div", { class: "row" }, h("button", { type: "button", id: "export-button", onclick: async (e) => {
        e.target.disabled = true;
        try {
          const data = await api("GET", `${userPath(id, user)}/export`);
          const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
          const a = h("a", { href: url, download: `bouncer-user-${user.replace(/[^A-Za-z0-9._-]/g, "_")}.json` });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 10000);
          out.replaceChildren(h("div", { class: "alert ok", role: "status", id: "exported" }, "Export downloaded."));
        } catch (error) { showError(out, error); }
        finally { e.target.disabled = false; }
      } }, "Export (JSON)")), erase, out);
  };
  await draw();
}

// ---- Notifications -----------------------------------------------------------------------------------------

async function notificationsPage(id, query) {
  setNav(id, `#/projects/${id}/notifications`);
  const result = h("div");
  const filter = h("input", { id: "notification-filter", name: "original_transaction_id", value: query.get("otid") || "" });
  const form = h("form", { class: "card", role: "search", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/projects/${id}/notifications${filter.value.trim() ? "?otid=" + encodeURIComponent(filter.value.trim()) : ""}`;
  } }, field("original_transaction_id", "Original transaction id (optional)", filter), h("div", { class: "row" }, h("button", { type: "submit" }, "Filter")));
  main.replaceChildren(h("h1", {}, "Notifications"), form, result);
  let limit = 100;
  const draw = async () => {
    result.replaceChildren(loading());
    const params = new URLSearchParams({ limit: String(limit) });
    if (query.get("otid")) params.set("original_transaction_id", query.get("otid"));
    try {
      const list = (await api("GET", `/v1/admin/projects/${id}/notifications?${params}`)).notifications;
      result.replaceChildren(...[pagedTable(["Received", "Type", "Environment", { text: "Original transaction", class: "hide-narrow" }], list, (n) =>
        h("tr", {}, h("td", {}, n.received_at), h("td", {}, n.type, n.subtype ? ` / ${n.subtype}` : ""), h("td", {}, n.environment || "—"),
          h("td", { class: "hide-narrow" }, h("code", {}, n.original_transaction_id || "—"))), "notification-list"),
        list.length >= limit && limit < 1000 ? h("button", { type: "button", onclick: () => { limit = Math.min(1000, limit * 2); draw(); } }, "Load older") : null].filter(Boolean));
    } catch (error) { showError(result, error); }
  };
  draw();
}

// ---- Webhooks ----------------------------------------------------------------------------------------------

const WEBHOOK_EVENTS = ["entitlement.granted", "entitlement.revoked", "subscription.started", "subscription.renewed",
  "subscription.renewal_failed", "subscription.grace_period_started", "subscription.expired",
  "subscription.auto_renew_changed", "transaction.refunded", "purchase.transferred"];

/** The signing secret, shown once (create or rotate). */
function secretBox(secret) {
  return h("div", { class: "secret", id: "webhook-secret-box", role: "status" },
    h("strong", {}, "Signing secret (shown once; store it now): "), h("code", { id: "webhook-secret" }, secret), " ", copyButton(secret));
}

async function webhooksPage(id, query) {
  setNav(id, `#/projects/${id}/webhooks`);
  const base = `/v1/admin/projects/${id}/webhook`;
  const notice = h("div", { id: "webhook-notice" });
  const config = h("div", {}, loading());
  const deliveries = h("div", { id: "webhook-deliveries" });
  main.replaceChildren(h("h1", {}, "Webhooks"), notice, config, deliveries);
  let hook = null;
  try { hook = await api("GET", base); }
  catch (error) { if (!(error.status === 404 && error.body.code === "WEBHOOK_NOT_CONFIGURED")) { showError(config, error); return; } }

  const drawConfig = () => {
    const errors = h("div");
    const listed = hook ? WEBHOOK_EVENTS.filter((ev) => hook.events.includes(ev)) : [];
    const chosen = listed.length === WEBHOOK_EVENTS.length ? [] : listed;
    const form = h("form", { class: "card", id: "webhook-form", onsubmit: onSubmit(errors, async () => {
      const events = [...form.querySelectorAll("input[name=events]:checked")].map((x) => x.value);
      const saved = await api("PUT", base, { url: form.url.value.trim(), events: events.length ? events : null });
      const created = !hook;
      hook = saved;
      drawConfig();
      notice.replaceChildren(h("div", { class: "alert ok", role: "status", id: "webhook-saved" }, created ? "Webhook created." : "Webhook saved."),
        saved.secret ? secretBox(saved.secret) : null);
      if (created) drawDeliveries();
    }, true) }, h("h2", {}, hook ? "Configuration" : "Configure a webhook"), errors,
      field("url", "URL", h("input", { id: "webhook-url", name: "url", value: hook ? hook.url : "", placeholder: "https://api.example.com/bouncer" }),
        "Signed POSTs of events go here (https, public address)."),
      h("fieldset", { "data-field": "events", class: "events" }, h("legend", {}, "Events (none checked: all)"),
        WEBHOOK_EVENTS.map((ev) => h("label", { class: "inline" },
          h("input", { type: "checkbox", name: "events", value: ev, checked: chosen.includes(ev) }), h("code", {}, ev)))),
      h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, hook ? "Save" : "Create webhook")));
    const actions = hook ? h("div", { class: "card", id: "webhook-actions" },
      h("p", {}, "Sends to ", h("code", { id: "webhook-current-url" }, hook.url), ". Events: ", hook.events.join(", ")),
      hook.previous_secret_expires_at ? h("p", { class: "muted" }, `The previous secret also signs until ${hook.previous_secret_expires_at}.`) : null,
      h("div", { class: "row" },
        h("button", { type: "button", id: "webhook-test", onclick: async (e) => {
          e.target.disabled = true;
          try {
            const r = await api("POST", `${base}/test`, {});
            notice.replaceChildren(h("div", { class: "alert ok", role: "status", id: "webhook-test-queued" }, `Queued ping ${r.event_id}.`));
            drawDeliveries();
          } catch (error) { showError(notice, error); }
          finally { e.target.disabled = false; }
        } }, "Send test event"),
        h("button", { type: "button", id: "webhook-rotate", onclick: async (e) => {
          e.target.disabled = true;
          try {
            hook = await api("POST", `${base}/rotate-secret`, {});
            drawConfig();
            notice.replaceChildren(h("div", { class: "alert ok", role: "status" }, "Secret rotated; the previous one signs too for 24 hours."),
              secretBox(hook.secret));
          } catch (error) { showError(notice, error); e.target.disabled = false; }
        } }, "Rotate secret"),
        h("button", { type: "button", class: "danger", id: "webhook-delete", onclick: async (e) => {
          if (e.target.dataset.armed !== "1") { e.target.dataset.armed = "1"; e.target.textContent = "Click again to remove"; return; }
          try {
            await api("DELETE", base);
            hook = null;
            drawConfig();
            deliveries.replaceChildren();
            notice.replaceChildren(h("div", { class: "alert ok", role: "status" }, "Webhook removed, with its undelivered events and log."));
          } catch (error) { showError(notice, error); }
        } }, "Remove webhook"))) : null;
    config.replaceChildren(...[actions, form].filter(Boolean));
  };

  let limit = 50;
  const status = ["pending", "delivered", "failed"].includes(query.get("status")) ? query.get("status") : "";
  const drawDeliveries = async () => {
    const filter = h("select", { id: "delivery-status", "aria-label": "Delivery status", onchange: (e) => {
      location.hash = `#/projects/${id}/webhooks${e.target.value ? "?status=" + e.target.value : ""}`;
    } }, ["", "pending", "delivered", "failed"].map((v) => h("option", { value: v, selected: v === status }, v || "All statuses")));
    const head = [h("h2", {}, "Deliveries"), h("div", { class: "row" }, filter,
      h("button", { type: "button", id: "deliveries-refresh", onclick: () => drawDeliveries() }, "Refresh"))];
    const body = h("div", {}, loading());
    deliveries.replaceChildren(...head, body);
    const params = new URLSearchParams({ limit: String(limit) });
    if (status) params.set("status", status);
    let list;
    try { list = (await api("GET", `${base}/deliveries?${params}`)).deliveries; }
    catch (error) { showError(body, error); return; }
    const last = (d) => d.attempts.length ? d.attempts[d.attempts.length - 1] : null;
    body.replaceChildren(...[pagedTable(["Created", "Event", "Status", { text: "Attempts", class: "hide-narrow" }, ""], list, (d) => {
      const a = last(d);
      return h("tr", { "data-event-id": d.event_id, "data-status": d.status },
        h("td", {}, d.created_at), h("td", {}, h("code", {}, d.type), d.user_id ? h("div", {}, h("a", { href: `#/projects/${id}/customers?user=${encodeURIComponent(d.user_id)}` }, d.user_id)) : null),
        h("td", {}, h("span", { class: `badge ${d.status === "delivered" ? "active" : d.status === "failed" ? "expired" : ""}` }, d.status),
          d.next_attempt_at ? h("div", { class: "muted" }, `next ${d.next_attempt_at}`) : null),
        h("td", { class: "hide-narrow" }, `${d.attempts.length}`, a ? h("div", { class: "muted" },
          `${a.status_code ?? "no answer"}${a.error ? " · " + a.error : ""} · ${a.duration_ms} ms`) : null),
        h("td", {}, h("button", { type: "button", class: "retry", onclick: async (e) => {
          e.target.disabled = true;
          try {
            await api("POST", `${base}/deliveries/${encodeURIComponent(d.event_id)}/retry`, {});
            notice.replaceChildren(h("div", { class: "alert ok", role: "status", id: "webhook-retried" }, `Queued ${d.event_id} again.`));
            drawDeliveries();
          } catch (error) { showError(notice, error); e.target.disabled = false; }
        } }, "Retry")));
    }, "delivery-list"),
    list.length >= limit && limit < 200 ? h("button", { type: "button", onclick: () => { limit = Math.min(200, limit * 2); drawDeliveries(); } }, "Load older") : null]
      .filter(Boolean));
  };
  drawConfig();
  if (hook) drawDeliveries();
}

// ---- App Store connection ----------------------------------------------------------------------------------

async function appStorePage(id) {
  setNav(id, `#/projects/${id}/app-store`);
  const status = h("div", {}, loading());
  const errors = h("div");
  const form = h("form", { class: "card", id: "credentials-form", onsubmit: async (e) => {
    e.preventDefault();
    try {
      const c = await api("PUT", `/v1/admin/projects/${id}/app-store-credentials`,
        { issuer_id: form.issuer_id.value.trim(), key_id: form.key_id.value.trim(), private_key: form.private_key.value });
      form.private_key.value = "";
      errors.replaceChildren(h("div", { class: "alert ok", role: "status" }, "Stored (the private key is sealed; it is never shown again)."));
      drawStatus(c);
    } catch (error) { showError(errors, error, form); }
  } }, h("h2", {}, "App Store Server API key"),
    field("issuer_id", "Issuer id", h("input", { id: "issuer-id", name: "issuer_id" })),
    field("key_id", "Key id", h("input", { id: "key-id", name: "key_id" })),
    field("private_key", "Private key (.p8)", h("textarea", { id: "private-key", name: "private_key", spellcheck: "false" })),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Save credentials")));
  const testResult = h("div", { id: "test-notification-result" });
  const test = h("div", { class: "card" }, h("h2", {}, "Test notification"),
    h("p", {}, "Asks Apple to send a TEST notification to this project's webhook, then waits for it."),
    h("button", { type: "button", id: "test-notification", onclick: async (e) => {
      e.target.disabled = true;
      testResult.replaceChildren(loading("Asking Apple"));
      try {
        const started = await api("POST", `/v1/admin/projects/${id}/app-store/test-notification`, {});
        for (let i = 0; i < 10; i++) {
          const r = await api("GET", `/v1/admin/projects/${id}/app-store/test-notification/${encodeURIComponent(started.token)}`);
          const attempts = (r.apple_send_attempts || []).map((a) => `${a.attempt_date}: ${a.result}`).join("; ");
          testResult.replaceChildren(h("div", { class: r.received ? "alert ok" : "alert", role: "status" },
            r.received ? `Received at ${r.received_at}.` : "Not received yet.", attempts ? h("div", { class: "muted" }, `Apple: ${attempts}`) : null));
          if (r.received) break;
          await new Promise((ok) => setTimeout(ok, 2000));
        }
      } catch (error) { showError(testResult, error); }
      finally { e.target.disabled = false; }
    } }, "Send test notification"), testResult);
  const drawStatus = (c) => status.replaceChildren(c
    ? h("div", { class: "card" }, h("p", {}, "Connected: issuer ", h("code", {}, c.issuer_id), ", key ", h("code", {}, c.key_id)),
      h("button", { type: "button", class: "danger", onclick: async () => {
        try { await api("DELETE", `/v1/admin/projects/${id}/app-store-credentials`); drawStatus(null); } catch (error) { showError(errors, error); }
      } }, "Remove credentials"))
    : h("p", { class: "muted" }, "No App Store credentials stored."));
  main.replaceChildren(h("h1", {}, "App Store connection"), status, errors, form, test);
  try { drawStatus(await api("GET", `/v1/admin/projects/${id}/app-store-credentials`)); }
  catch (error) { if (error.status === 404) drawStatus(null); else showError(status, error); }
}

// ---- Dashboard ---------------------------------------------------------------------------------------------

const milli = (v) => (v / 1000).toLocaleString(undefined, { maximumFractionDigits: 2 });
const money = (amounts) => Object.keys(amounts).length
  ? Object.entries(amounts).map(([c, v]) => `${milli(v)} ${c}`).join(" · ") : "—";

async function dashboardPage(id, query) {
  setNav(id, `#/projects/${id}/dashboard`);
  const days = ["7", "30", "90"].includes(query.get("days")) ? Number(query.get("days")) : 30;
  const env = query.get("env") || "";
  const go = (d, e) => { location.hash = `#/projects/${id}/dashboard?days=${d}${e ? "&env=" + e : ""}`; };
  const controls = h("div", { class: "row segmented", role: "group", "aria-label": "Range" },
    [7, 30, 90].map((d) => h("button", { type: "button", "aria-pressed": String(d === days), "data-days": d, onclick: () => go(d, env) }, `${d} days`)),
    h("select", { id: "dashboard-env", "aria-label": "Environment", onchange: (e) => go(days, e.target.value) },
      ["", "Production", "Sandbox"].map((v) => h("option", { value: v, selected: v === env }, v || "All environments"))));
  const body = h("div", {}, loading());
  main.replaceChildren(h("h1", {}, "Dashboard"), controls, body);
  const to = new Date();
  const from = new Date(to.getTime() - (days - 1) * 86400000);
  const params = new URLSearchParams({ from: from.toISOString().slice(0, 10), to: to.toISOString().slice(0, 10), interval: "day" });
  if (env) params.set("environment", env);
  let o;
  try { o = await api("GET", `/v1/admin/projects/${id}/metrics/overview?${params}`); }
  catch (error) { showError(body, error); return; }
  const t = o.totals;
  const stat = (key, label, value) => h("div", { class: "stat" }, h("div", { class: "v", "data-metric": key }, value), h("div", { class: "k" }, label));
  const labels = o.days.map((d) => d.date);
  const series = (name, key) => ({ name, values: o.days.map((d) => d[key]) });
  const currency = Object.keys(o.totals.revenue).sort((a, b) => o.totals.revenue[b] - o.totals.revenue[a])[0];
  body.replaceChildren(
    h("div", { class: "stats", id: "dashboard-stats", "data-from": o.from, "data-to": o.to },
      stat("active_subscriptions", "Active subscriptions", t.active_subscriptions),
      stat("active_entitlements", "Active entitlements", t.active_entitlements),
      stat("new_purchases", "New purchases", t.new_purchases),
      stat("renewals", "Renewals", t.renewals),
      stat("refunds", "Refunds", t.refunds),
      stat("expirations", "Expirations", t.expirations),
      stat("trial_conversions", "Trial conversions", t.trial_conversions),
      stat("revenue", "Revenue", money(t.revenue)),
      stat("mrr", "MRR (estimate)", money(o.mrr))),
    h("div", { class: "charts" },
      lineChart("Active over time", labels, [series("Subscriptions", "active_subscriptions"), series("Entitlements", "active_entitlements")]),
      barChart("Purchases per day", labels, [series("New", "new_purchases"), series("Renewals", "renewals")]),
      barChart("Churn per day", labels, [series("Refunds", "refunds"), series("Expirations", "expirations")]),
      barChart("Trial conversions per day", labels, [series("Conversions", "trial_conversions")]),
      currency ? barChart(`Revenue per day (${currency})`, labels, [{ name: currency, values: o.days.map((d) => (d.revenue[currency] || 0) / 1000) }]) : null));
}

// ---- Router ------------------------------------------------------------------------------------------------

async function route() {
  const [path, search] = (location.hash.slice(1) || "/projects").split("?");
  const query = new URLSearchParams(search || "");
  if (path === "/signin") return signInPage();
  if (!csrf) {
    try { csrf = (await api("GET", "/v1/admin/session")).csrf_token; }
    catch { location.hash = "#/signin"; if (path === "/signin") signInPage(); return; }
  }
  signOutButton.hidden = false;
  signOutEverywhereButton.hidden = false;
  const parts = path.split("/").filter(Boolean);
  if (parts[0] !== "projects" || parts.length === 1) return projectsPage();
  const id = decodeURIComponent(parts[1]);
  const page = { dashboard: dashboardPage, products: productsPage, customers: customersPage,
    notifications: notificationsPage, webhooks: webhooksPage, "app-store": appStorePage }[parts[2]];
  if (page) return page(id, query);
  return settingsPage(id);
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });
route();
