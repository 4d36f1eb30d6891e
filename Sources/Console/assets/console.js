// The Bouncer admin console: a few pages over the JSON admin API. No dependencies, no inline script (CSP).
// The session is an HttpOnly cookie; the CSRF token lives only in this module's memory.
import { lineChart, barChart } from "./charts.js";
import { revenueCharts, customerList } from "./revenue.js";

let csrf = null;
/** Who is signed in: `GET /v1/admin/session`'s `{kind, account_id?, role?, email?, permissions}`. */
let me = null;
/** The account whose members, keys and usage the operator looks at (a member's is always their own). */
let chosenAccount = null;
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOutButton = document.getElementById("sign-out");
const signOutEverywhereButton = document.getElementById("sign-out-everywhere");
const PAGE = 10;

/** Whether the signed-in session may do `permission` (the server refuses it anyway). */
const can = (permission) => !!me && me.permissions.includes(permission);

/**
 * An element: h("button", {class: "primary", onclick: f}, "Save"). Text is always text, never HTML.
 * `needs: "products.write"` leaves the element out (an empty comment in its place) unless the session may do that.
 */
function h(tag, attrs = {}, ...children) {
  if (attrs.needs && !can(attrs.needs)) return document.createComment(`needs ${attrs.needs}`);
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false || k === "needs") continue;
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
      me = null;
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

/** A destructive button: the first click arms it ("Click again to …"), the second runs `act`; a failure shows in `errors`. */
function dangerButton(attrs, label, errors, act) {
  return h("button", { type: "button", class: "danger", ...attrs, onclick: async (e) => {
    const button = e.currentTarget;
    if (button.dataset.armed !== "1") { button.dataset.armed = "1"; button.textContent = `Click again to ${label.toLowerCase()}`; return; }
    button.disabled = true;
    try { await act(); } catch (error) { showError(errors, error); button.disabled = false; }
  } }, label);
}

/** An `alert ok` status line. */
const done = (text, id) => h("div", { class: "alert ok", role: "status", id }, text);

function loading(text = "Loading") { return h("p", { class: "loading" }, text); }

/** A table of `rows` (already rendered `tr`s) under `headers` (a string, or `{text, class}`); "empty" when none. */
function dataTable(headers, rows, empty = "Nothing yet.", id = undefined) {
  return h("div", { class: "table-wrap", id }, h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) =>
    typeof x === "string" ? h("th", { scope: "col" }, x) : h("th", { scope: "col", class: x.class }, x.text)))),
  h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, empty)))));
}

/** A paginated table: rows rendered PAGE at a time with Previous/Next. */
function pagedTable(headers, rows, renderRow, id) {
  let page = 0;
  const wrap = h("div", { id });
  const draw = () => {
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    const slice = rows.slice(page * PAGE, page * PAGE + PAGE);
    wrap.replaceChildren(...[
      dataTable(headers, slice.map(renderRow)),
      rows.length > PAGE ? h("div", { class: "pager" },
        h("button", { type: "button", disabled: page === 0, onclick: () => { page--; draw(); } }, "Previous"),
        h("span", { class: "muted" }, `Page ${page + 1} of ${pages} (${rows.length})`),
        h("button", { type: "button", disabled: page >= pages - 1, onclick: () => { page++; draw(); } }, "Next")) : null,
    ].filter(Boolean));
  };
  draw();
  return wrap;
}

/** A role that may neither change projects nor read revenue (support) works on customers only. */
const customersOnly = () => !can("projects.write") && !can("revenue.read");

/** A project's first page for this session: its dashboard, or its customers for a customers-only role. */
function projectHome(projectId) {
  const slug = can("revenue.read") ? "dashboard" : customersOnly() ? "customers" : "";
  return `#/projects/${encodeURIComponent(projectId)}${slug ? "/" + slug : ""}`;
}

/** The account pages' links: the member's account, or the one the operator chose. */
function accountLinks() {
  const account = me && me.account_id ? me.account_id : chosenAccount;
  const links = [];
  if (can("accounts.manage")) links.push(["Accounts", "#/accounts", "accounts.manage"]);
  if (account) {
    for (const [name, slug, permission] of [["Members", "members", "members.manage"], ["API keys", "api-keys", "api_keys.manage"],
      ["Usage", "usage", "usage.read"]]) links.push([name, `#/accounts/${account}/${slug}`, permission]);
  }
  links.push(["Audit log", "#/audit", "audit.read"]);
  return links;
}

function setNav(projectId, current) {
  const links = [["Projects", "#/projects", "projects.read"]];
  if (projectId) {
    const settings = customersOnly() ? null : "projects.read";
    for (const [name, slug, permission] of [["Dashboard", "dashboard", "revenue.read"], ["Settings", "", settings],
      ["Products", "products", settings], ["Customers", "customers", "customers.read"], ["Notifications", "notifications", settings],
      ["Webhooks", "webhooks", settings], ["App Store", "app-store", settings], ["Retention", "retention", settings]]) {
      links.push([name, `#/projects/${projectId}${slug ? "/" + slug : ""}`, permission]);
    }
  }
  links.push(...accountLinks());
  nav.replaceChildren(...links.filter(([, , permission]) => permission && can(permission)).map(([name, href]) =>
    h("a", { href, "aria-current": href === current ? "page" : undefined }, name)));
  const who = me && me.kind === "member" ? `${me.email || "member"} (${me.role})` : "operator";
  nav.append(h("span", { class: "whoami muted", id: "whoami", "data-kind": me ? me.kind : "", "data-role": me && me.role ? me.role : "" }, who));
}

// ---- Sign-in -----------------------------------------------------------------------------------------------

function signInPage() {
  nav.replaceChildren();
  signOutButton.hidden = true;
  signOutEverywhereButton.hidden = true;
  me = null;
  const signedIn = () => { me = null; location.hash = "#/projects"; };
  const errors = h("div");
  const input = h("input", { id: "token", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { class: "card", id: "sign-in-form", onsubmit: onSubmit(errors, async () => {
    const session = await api("POST", "/v1/admin/session", { token: input.value });
    csrf = session.csrf_token;
    input.value = "";
    signedIn();
  }) }, h("h2", {}, "Operator"), field("token", "Admin token", input, "The server's BOUNCER_ADMIN_TOKEN. It is sent once; the session is a cookie."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Sign in")));
  // A member: email and password; the TOTP field appears when the server answers AUTH_TOTP_REQUIRED.
  const memberErrors = h("div");
  const totp = field("totp", "TOTP code", h("input", { id: "member-totp", name: "totp", inputmode: "numeric", autocomplete: "one-time-code" }),
    "The 6-digit code of your authenticator app.");
  totp.hidden = true;
  const member = h("form", { class: "card", id: "member-sign-in-form", onsubmit: onSubmit(memberErrors, async () => {
    const body = { email: member.email.value.trim(), password: member.password.value };
    if (!totp.hidden) body.totp = member.totp.value.trim();
    try {
      csrf = (await api("POST", "/v1/admin/session", body)).csrf_token;
    } catch (error) {
      if (error instanceof ApiError && error.body.code === "AUTH_TOTP_REQUIRED") { totp.hidden = false; member.totp.focus(); }
      throw error;
    }
    member.password.value = "";
    signedIn();
  }) }, h("h2", {}, "Member"),
  field("email", "Email", h("input", { id: "member-email", name: "email", type: "email", autocomplete: "username" })),
  field("password", "Password", h("input", { id: "member-password", name: "password", type: "password", autocomplete: "current-password" })),
  totp, memberErrors, h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Sign in as a member")));
  main.replaceChildren(h("h1", {}, "Sign in"), errors, form, member);
  input.focus();
}

signOutButton.addEventListener("click", async () => {
  try { await api("DELETE", "/v1/admin/session"); } catch { /* signed out either way */ }
  csrf = null;
  me = null;
  location.hash = "#/signin";
});

// Ends every session (a lost laptop, a shared screen): other browsers get CONSOLE_SESSION_INVALID on their next call.
signOutEverywhereButton.addEventListener("click", async () => {
  try { await api("DELETE", "/v1/admin/sessions"); } catch { /* this session ends either way: sign in again */ }
  csrf = null;
  me = null;
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
  const form = h("form", { class: "card", id: "create-project-form", needs: "projects.write", onsubmit: onSubmit(errors, async () => {
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
    h("tr", { "data-project-id": p.id }, h("td", {}, h("a", { href: projectHome(p.id) }, p.name)),
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
  } }, projectFields(p), h("div", { class: "row", needs: "projects.write" }, h("button", { class: "primary", type: "submit" }, "Save")));

  const keys = h("div", { class: "card", id: "keys" });
  const drawKeys = (project, newSecret) => keys.replaceChildren(...[h("h2", {}, "Keys"),
    dataTable(["Public key", "Created", "Expires", ""], project.public_keys.map((k) => h("tr", {}, h("td", {}, h("code", { class: "public-key" }, k.key)),
      h("td", {}, k.created_at), h("td", {}, k.expires_at || "—"), h("td", {}, copyButton(k.key))))),
    h("p", {}, "Secret keys (stored hashed): ", project.secret_keys.map((k) => h("span", { class: "badge" },
      `…${k.last4}${k.expires_at ? " until " + k.expires_at : ""}`))),
    newSecret ? h("div", { class: "secret", id: "rotated-secret" }, "New secret key (shown once): ", h("code", {}, newSecret), " ", copyButton(newSecret)) : null,
    rotateForm].filter(Boolean));
  const rotateErrors = h("div");
  const rotateForm = h("form", { id: "rotate-form", needs: "keys.manage", onsubmit: async (e) => {
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
  const deleteForm = h("form", { class: "card", id: "delete-form", needs: "projects.write", onsubmit: async (e) => {
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
      h("td", {}, h("button", { type: "button", needs: "products.write", onclick: async () => {
        try {
          await api("PUT", `/v1/admin/projects/${id}/products/${encodeURIComponent(prod.product_id)}`, { entitlements: splitList(ents.value) });
          slot.querySelectorAll(".field-error").forEach((n) => n.remove());
          errors.replaceChildren(h("div", { class: "alert ok", role: "status" }, `Saved ${prod.product_id}.`));
        } catch (error) { showError(errors, error, tr); }
      } }, "Save"), " ", h("button", { type: "button", class: "danger", needs: "products.write", onclick: async () => {
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
  const add = h("form", { class: "card", id: "add-product-form", needs: "products.write", onsubmit: async (e) => {
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

/** Apple's order ids: letters and digits, at least one letter (transaction ids are all digits), at most 32. */
const isOrderId = (text) => /^[A-Za-z0-9]{1,32}$/.test(text) && /[A-Za-z]/.test(text);

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
  const txInput = h("input", { id: "customer-transaction-id", name: "transaction_id",
    value: query.get("transaction") || query.get("order") || "" });
  const txForm = h("form", { class: "card", role: "search", id: "transaction-search-form", onsubmit: (e) => {
    e.preventDefault();
    const text = txInput.value.trim();
    // Transaction ids are digits; an App Store order id (the customer's emailed receipt) has letters too.
    const kind = isOrderId(text) ? "order" : "transaction";
    location.hash = `#/projects/${id}/customers?${kind}=${encodeURIComponent(text)}`;
  } }, field("transaction_id", "Or a transaction id or an order id", txInput,
    "Any transaction id Bouncer recorded (a purchase, a renewal, a restore), or the order id of the customer's "
      + "emailed App Store receipt (e.g. MK5TTTVWJH, asked of Apple): finds the users holding its purchases."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Find")));
  main.replaceChildren(h("h1", {}, "Customers"), form, txForm, result);
  const order = query.get("order");
  if (order) {
    result.replaceChildren(loading());
    let o;
    try {
      o = await api("GET", `/v1/admin/projects/${id}/orders/${encodeURIComponent(order)}`);
    } catch (error) { showError(result, error, txForm); return; }
    const holders = new Map((o.holders || []).map((x) => [x.original_transaction_id, x.user_ids]));
    const users = [...new Set((o.holders || []).flatMap((x) => x.user_ids))];
    result.replaceChildren(h("div", { class: "card", id: "order-result" },
      h("h2", {}, "Order ", h("code", {}, o.order_id), " ",
        h("span", { class: `badge ${o.status === "valid" ? "active" : "expired"}`, id: "order-status" }, o.status)),
      pagedTable(["Transaction", "Product", "Status", "Purchased", "Users"], o.transactions || [], (x) =>
        h("tr", { "data-transaction-id": x.transaction_id },
          h("td", {}, h("a", { href: `#/projects/${id}/customers?transaction=${encodeURIComponent(x.transaction_id)}` },
            h("code", {}, x.transaction_id))),
          h("td", {}, h("code", {}, x.product_id)), h("td", {}, h("span", { class: `badge ${x.status}` }, x.status)),
          h("td", {}, x.purchase_date || "—"), h("td", {}, (holders.get(x.original_transaction_id) || []).join(", ") || "none")),
        "order-transactions"),
      users.length
        ? h("ul", { id: "order-holders" }, users.map((u) => h("li", {},
          h("a", { href: `#/projects/${id}/customers?user=${encodeURIComponent(u)}`, "data-user-id": u }, u))))
        : h("p", { id: "order-holders", class: "muted" }, "No user here holds these purchases (never posted, moved away or erased).")));
    return;
  }
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
  if (!user) return customerList(ui, id, query, result);
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
          h("td", {}, g.created_at), h("td", {}, h("button", { type: "button", class: "danger", needs: "customers.write", onclick: async (e) => {
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
    const add = h("form", { class: "card", id: "add-grant-form", needs: "customers.write", onsubmit: onSubmit(errors, async () => {
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
    const erase = h("form", { id: "erase-form", needs: "customers.erase", onsubmit: async (e) => {
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
      h("div", { class: "row" }, h("button", { type: "button", id: "export-button", needs: "customers.export", onclick: async (e) => {
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

/** A secret shown once (a signing secret, an invite token, an API key): `id` names its code, `${id}-box` the box. */
function secretBox(secret, label = "Signing secret", id = "webhook-secret") {
  return h("div", { class: "secret", id: `${id}-box`, role: "status" },
    h("strong", {}, `${label} (shown once; store it now): `), h("code", { id }, secret), " ", copyButton(secret));
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
    const form = h("form", { class: "card", id: "webhook-form", needs: "webhooks.manage", onsubmit: onSubmit(errors, async () => {
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
    const actions = hook ? h("div", { class: "card", id: "webhook-actions", needs: "webhooks.manage" },
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
        dangerButton({ id: "webhook-delete" }, "Remove webhook", notice, async () => {
          await api("DELETE", base);
          hook = null;
          drawConfig();
          deliveries.replaceChildren();
          notice.replaceChildren(h("div", { class: "alert ok", role: "status" }, "Webhook removed, with its undelivered events and log."));
        }))) : null;
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
        h("td", {}, h("button", { type: "button", class: "retry", needs: "webhooks.manage", onclick: async (e) => {
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
  const form = h("form", { class: "card", id: "credentials-form", needs: "credentials.manage", onsubmit: async (e) => {
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
  const test = h("div", { class: "card", needs: "credentials.manage" }, h("h2", {}, "Test notification"),
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
      h("button", { type: "button", class: "danger", needs: "credentials.manage", onclick: async () => {
        try { await api("DELETE", `/v1/admin/projects/${id}/app-store-credentials`); drawStatus(null); } catch (error) { showError(errors, error); }
      } }, "Remove credentials"))
    : h("p", { class: "muted" }, "No App Store credentials stored."));
  main.replaceChildren(h("h1", {}, "App Store connection"), status, errors, form, test);
  try { drawStatus(await api("GET", `/v1/admin/projects/${id}/app-store-credentials`)); }
  catch (error) { if (error.status === 404) drawStatus(null); else showError(status, error); }
}

// ---- Retention ---------------------------------------------------------------------------------------------

/** Retention Messaging: the rules (read-only JSON), Apple's messages with their state, a text message upload and
 * the latest decisions. `environment` (Sandbox or Production) picks Apple's environment for the messages. */
async function retentionPage(id, query) {
  setNav(id, `#/projects/${id}/retention`);
  const environment = query.get("environment") === "Production" ? "Production" : "Sandbox";
  const base = `/v1/admin/projects/${id}/retention`;
  const rules = h("div", { class: "card", id: "retention-rules" }, h("h2", {}, "Rules"), loading());
  const messages = h("div", { class: "card", id: "retention-messages" }, h("h2", {}, `Messages at Apple (${environment})`), loading());
  const decisions = h("div", { class: "card", id: "retention-decisions", needs: "customers.read" }, h("h2", {}, "Latest decisions"), loading());
  const errors = h("div");
  const switcher = h("p", {}, h("a", { id: "retention-environment",
    href: `#/projects/${id}/retention?environment=${environment === "Sandbox" ? "Production" : "Sandbox"}` },
    `Show ${environment === "Sandbox" ? "Production" : "Sandbox"}`));
  const form = h("form", { class: "card", id: "retention-upload-form", needs: "projects.write", onsubmit: onSubmit(errors, async (f) => {
    const messageId = crypto.randomUUID();
    await api("PUT", `${base}/messages/${messageId}`, { header: f.header.value, body: f.body.value, environment });
    f.reset();
    errors.replaceChildren(done(`Uploaded message ${messageId}.`, "retention-uploaded"));
    await drawMessages();
  }) }, h("h2", {}, "Upload a text message"),
    field("header", "Header (at most 66 characters)", h("input", { id: "retention-header", name: "header", maxlength: "66" })),
    field("body", "Body (at most 144 characters)", h("textarea", { id: "retention-body", name: "body", maxlength: "144" })),
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Upload to Apple")));
  const drawMessages = async () => {
    try {
      const list = await api("GET", `${base}/messages?environment=${environment}`);
      messages.replaceChildren(h("h2", {}, `Messages at Apple (${environment})`), dataTable(["Message id", "State"],
        list.messages.map((m) => h("tr", { "data-message": m.message_id }, h("td", {}, h("code", {}, m.message_id)),
          h("td", { class: "state" }, m.state))), "No messages.", "retention-message-list"));
    } catch (error) { messages.replaceChildren(h("h2", {}, `Messages at Apple (${environment})`)); showError(messages, error); }
  };
  main.replaceChildren(h("h1", {}, "Retention messaging"), switcher, errors, rules, messages, form, decisions);
  try {
    const r = await api("GET", `${base}/rules`);
    rules.replaceChildren(h("h2", {}, "Rules"), r.rules.length
      ? h("pre", { id: "retention-rules-json" }, JSON.stringify(r.rules, null, 2))
      : h("p", { class: "muted" }, "No rules: every request gets Apple's default message."));
  } catch (error) { showError(rules, error); }
  await drawMessages();
  if (!can("customers.read")) return;
  try {
    const d = await api("GET", `${base}/decisions`);
    decisions.replaceChildren(h("h2", {}, "Latest decisions"), dataTable(["When", "Purchase", "Product", "Action", { text: "Reason", class: "hide-narrow" }],
      d.decisions.map((x) => h("tr", { "data-action": x.action }, h("td", {}, x.decided_at), h("td", {}, x.original_transaction_id),
        h("td", {}, x.product_id), h("td", {}, h("code", {}, x.action)), h("td", { class: "hide-narrow" }, x.reason))),
      "No decisions yet.", "retention-decision-list"));
  } catch (error) { showError(decisions, error); }
}

// ---- Dashboard ---------------------------------------------------------------------------------------------

const milli = (v) => (v / 1000).toLocaleString(undefined, { maximumFractionDigits: 2 });
const money = (amounts) => Object.keys(amounts).length
  ? Object.entries(amounts).map(([c, v]) => `${milli(v)} ${c}`).join(" · ") : "—";

/** What the console's revenue module needs of this one (its helpers, so the pages look and fail alike). */
const ui = { h, api, showError, loading, dataTable, field };

const isDay = (text) => /^\d{4}-\d{2}-\d{2}$/.test(text || "");

async function dashboardPage(id, query) {
  setNav(id, `#/projects/${id}/dashboard`);
  // The range: a preset of days up to today, or from/to (UTC days, inclusive); the charts' interval and filters.
  const custom = isDay(query.get("from")) && isDay(query.get("to"));
  const days = custom ? 0 : ["7", "30", "90", "365"].includes(query.get("days")) ? Number(query.get("days")) : 30;
  const env = query.get("env") || "";
  const interval = ["day", "week", "month"].includes(query.get("interval")) ? query.get("interval") : "day";
  const product = query.get("product") || "";
  const country = query.get("country") || "";
  const state = { days, from: custom ? query.get("from") : "", to: custom ? query.get("to") : "", env, interval, product, country };
  const go = (change) => {
    const next = { ...state, ...change };
    const q = new URLSearchParams();
    if (next.from && next.to) { q.set("from", next.from); q.set("to", next.to); } else q.set("days", String(next.days || 30));
    for (const [k, v] of [["env", next.env], ["interval", next.interval === "day" ? "" : next.interval], ["product", next.product], ["country", next.country]]) {
      if (v) q.set(k, v);
    }
    location.hash = `#/projects/${id}/dashboard?${q}`;
  };
  const today = new Date();
  const to = custom ? query.get("to") : today.toISOString().slice(0, 10);
  const from = custom ? query.get("from") : new Date(today.getTime() - (days - 1) * 86400000).toISOString().slice(0, 10);
  const picker = h("form", { class: "row", id: "range-form", "aria-label": "Range and filters", onsubmit: (e) => {
    e.preventDefault();
    const f = e.target.elements;
    go({ from: f.from.value, to: f.to.value, interval: f.interval.value, product: f.product.value.trim(),
      country: f.country.value.trim().toUpperCase() });
  } },
  h("label", { class: "inline" }, "From", h("input", { type: "date", name: "from", id: "range-from", value: from })),
  h("label", { class: "inline" }, "To", h("input", { type: "date", name: "to", id: "range-to", value: to })),
  h("label", { class: "inline" }, "By", h("select", { name: "interval", id: "range-interval" },
    ["day", "week", "month"].map((v) => h("option", { value: v, selected: v === interval }, v)))),
  h("label", { class: "inline" }, "Product", h("input", { name: "product", id: "range-product", value: product, placeholder: "all" })),
  h("label", { class: "inline" }, "Storefront", h("input", { name: "country", id: "range-country", value: country, placeholder: "all", maxlength: 3, size: 4 })),
  h("button", { type: "submit", class: "primary" }, "Apply"));
  const controls = h("div", { class: "row segmented", role: "group", "aria-label": "Range" },
    [7, 30, 90, 365].map((d) => h("button", { type: "button", "aria-pressed": String(d === days), "data-days": d,
      onclick: () => go({ days: d, from: "", to: "" }) }, `${d} days`)),
    h("select", { id: "dashboard-env", "aria-label": "Environment", onchange: (e) => go({ env: e.target.value }) },
      ["", "Sandbox", "all"].map((v) => h("option", { value: v, selected: v === env },
        v === "" ? "Production" : v === "all" ? "All environments" : v))));
  const body = h("div", {}, loading());
  const charts = h("div", { id: "revenue-section" });
  main.replaceChildren(h("h1", {}, "Dashboard"), controls, picker, body, h("h2", {}, "Revenue and subscriptions"), charts);
  revenueCharts(ui, id, { from, to, interval, environment: env === "all" ? "" : env || "Production", product_id: product, country }, charts);
  const params = new URLSearchParams({ from, to, interval: "day" });
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

// ---- Accounts (the operator) -------------------------------------------------------------------------------

const ROLES = ["owner", "admin", "developer", "viewer", "support"];
const roleSelect = (attrs, selected = "developer") =>
  h("select", attrs, ROLES.map((r) => h("option", { value: r, selected: r === selected }, r)));
const accountPath = (account) => `/v1/admin/accounts/${encodeURIComponent(account)}`;

/** An account page's heading; for the operator, with a picker of the account to look at. */
async function accountHeading(title, account, slug) {
  if (!can("accounts.manage")) return [h("h1", {}, title)];
  let accounts = [];
  try { accounts = (await api("GET", "/v1/admin/accounts")).accounts; } catch { /* the page shows its own error */ }
  return [h("h1", {}, title), h("div", { class: "row" }, h("label", { class: "inline", for: "account-picker" }, "Account"),
    h("select", { id: "account-picker", onchange: (e) => { location.hash = `#/accounts/${e.target.value}/${slug}`; } },
      accounts.map((a) => h("option", { value: a.id, selected: a.id === account }, a.name))))];
}

async function accountsPage() {
  setNav(null, "#/accounts");
  main.replaceChildren(h("h1", {}, "Accounts"), loading());
  const errors = h("div", { id: "accounts-notice" });
  let list;
  try { list = (await api("GET", "/v1/admin/accounts")).accounts; }
  catch (error) { showError(errors, error); main.replaceChildren(h("h1", {}, "Accounts"), errors); return; }
  const table = h("div");
  const draw = () => table.replaceChildren(pagedTable(["Name", { text: "Id", class: "hide-narrow" }, "Created", ""], list, (a) => {
    const name = h("input", { name: "name", value: a.name, "aria-label": `Name of ${a.name}` });
    return h("tr", { "data-account-id": a.id }, h("td", { "data-field": "name" }, name),
      h("td", { class: "hide-narrow" }, h("code", {}, a.id)), h("td", {}, a.created_at),
      h("td", {}, h("a", { href: `#/accounts/${a.id}/members` }, "Members"), " · ", h("a", { href: `#/accounts/${a.id}/api-keys` }, "API keys"),
        " · ", h("a", { href: `#/accounts/${a.id}/usage` }, "Usage"), " ",
        h("button", { type: "button", class: "rename", onclick: async () => {
          try {
            Object.assign(a, await api("PATCH", accountPath(a.id), { name: name.value }));
            errors.replaceChildren(done(`Renamed to ${a.name}.`, "account-renamed"));
          } catch (error) { showError(errors, error); }
        } }, "Rename"), " ",
        dangerButton({ class: "danger delete-account" }, "Delete", errors, async () => {
          await api("DELETE", accountPath(a.id));
          list = list.filter((x) => x !== a);
          errors.replaceChildren(done(`Deleted ${a.name}.`, "account-deleted"));
          draw();
        })));
  }, "account-list"));
  draw();
  const form = h("form", { class: "card", id: "create-account-form", onsubmit: onSubmit(errors, async () => {
    const a = await api("POST", "/v1/admin/accounts", { name: form.name.value.trim() });
    list.push(a);
    form.reset();
    errors.replaceChildren(done(`Created ${a.name}.`, "account-created"));
    draw();
  }) }, h("h2", {}, "New account"), field("name", "Name", h("input", { id: "account-name", name: "name" })),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Create account")));
  main.replaceChildren(h("h1", {}, "Accounts"), errors, table, form);
}

// ---- Members -----------------------------------------------------------------------------------------------

async function membersPage(account) {
  setNav(null, `#/accounts/${account}/members`);
  main.replaceChildren(h("h1", {}, "Members"), loading());
  const heading = await accountHeading("Members", account, "members");
  const notice = h("div", { id: "members-notice" });
  const base = `${accountPath(account)}/members`;
  let list;
  try { list = (await api("GET", base)).members; }
  catch (error) { showError(notice, error); main.replaceChildren(...heading, notice); return; }
  const table = h("div");
  const draw = () => table.replaceChildren(pagedTable(["Email", "Role", "Status", "TOTP", ""], list, (m) => {
    const role = roleSelect({ name: "role", "aria-label": `Role of ${m.email}` }, m.role);
    return h("tr", { "data-member-id": m.id, "data-email": m.email }, h("td", {}, m.email),
      h("td", { "data-field": "role" }, role, " ", h("button", { type: "button", class: "change-role", onclick: async () => {
        try {
          Object.assign(m, await api("PATCH", `${base}/${m.id}`, { role: role.value }));
          notice.replaceChildren(done(`${m.email} is now ${m.role}.`, "member-role-changed"));
        } catch (error) { showError(notice, error); }
      } }, "Change")),
      h("td", {}, h("span", { class: `badge ${m.status === "active" ? "active" : ""}` }, m.status)),
      h("td", {}, m.totp_enabled ? "on" : h("button", { type: "button", class: "enable-totp", onclick: async () => {
        try {
          const r = await api("POST", `${base}/${m.id}/totp`, {});
          m.totp_enabled = true;
          draw();
          notice.replaceChildren(done(`TOTP is on for ${m.email}; add this URI to their authenticator app.`),
            secretBox(r.otpauth_uri, "otpauth URI", "otpauth-uri"));
        } catch (error) { showError(notice, error); }
      } }, "Enable TOTP")),
      h("td", {}, dangerButton({ class: "danger remove-member" }, "Remove", notice, async () => {
        await api("DELETE", `${base}/${m.id}`);
        list = list.filter((x) => x !== m);
        notice.replaceChildren(done(`Removed ${m.email}.`, "member-removed"));
        draw();
      })));
  }, "member-list"));
  draw();
  const errors = h("div");
  const form = h("form", { class: "card", id: "invite-form", onsubmit: onSubmit(errors, async () => {
    const m = await api("POST", base, { email: form.email.value.trim(), role: form.role.value });
    list.push(m);
    form.reset();
    draw();
    notice.replaceChildren(done(`Invited ${m.email} as ${m.role}; the invite works once, until ${m.invite_expires_at}.`, "member-invited"),
      secretBox(m.invite_token, "Invite token", "invite-token"));
  }) }, h("h2", {}, "Invite a member"), errors,
  field("email", "Email", h("input", { id: "invite-email", name: "email", type: "email" })),
  field("role", "Role", roleSelect({ id: "invite-role", name: "role" }), "No one gives a role above their own."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Invite")));
  main.replaceChildren(...heading, notice, table, form);
}

// ---- API keys ----------------------------------------------------------------------------------------------

async function apiKeysPage(account) {
  setNav(null, `#/accounts/${account}/api-keys`);
  main.replaceChildren(h("h1", {}, "API keys"), loading());
  const heading = await accountHeading("API keys", account, "api-keys");
  const notice = h("div", { id: "api-keys-notice" });
  const base = `${accountPath(account)}/api-keys`;
  let list;
  try { list = (await api("GET", base)).api_keys; }
  catch (error) { showError(notice, error); main.replaceChildren(...heading, notice); return; }
  const table = h("div");
  const draw = () => table.replaceChildren(pagedTable(["Name", "Role", "Key", { text: "Projects", class: "hide-narrow" }, "Expires",
    "Last used", ""], list, (k) => h("tr", { "data-key-id": k.id, "data-name": k.name }, h("td", {}, k.name), h("td", {}, k.role),
    h("td", {}, h("code", {}, `bk_…${k.last4}`)), h("td", { class: "hide-narrow" }, k.project_ids ? k.project_ids.join(", ") : "all"),
    h("td", {}, k.expires_at || "never"), h("td", { class: "last-used" }, k.last_used_at || "never"),
    h("td", {}, dangerButton({ class: "danger revoke-key" }, "Revoke", notice, async () => {
      await api("DELETE", `${base}/${k.id}`);
      list = list.filter((x) => x !== k);
      notice.replaceChildren(done(`Revoked ${k.name}.`, "api-key-revoked"));
      draw();
    }))), "api-key-list"));
  draw();
  const errors = h("div");
  const form = h("form", { class: "card", id: "create-api-key-form", onsubmit: onSubmit(errors, async () => {
    const body = { name: form.name.value.trim(), role: form.role.value };
    const projects = splitList(form.project_ids.value);
    if (projects.length) body.project_ids = projects;
    const expires = instant(form.expires_at.value);
    if (expires) body.expires_at = expires;
    const k = await api("POST", base, body);
    list.push(k);
    form.reset();
    draw();
    notice.replaceChildren(done(`Created ${k.name}.`, "api-key-created"), secretBox(k.key, "API key", "new-api-key"));
  }) }, h("h2", {}, "New API key"), errors,
  field("name", "Name", h("input", { id: "api-key-name", name: "name", placeholder: "CI deploys" })),
  field("role", "Role", roleSelect({ id: "api-key-role", name: "role" }), "A key may not do more than you."),
  field("project_ids", "Project ids (comma-separated)", h("input", { id: "api-key-projects", name: "project_ids" }), "Empty: every project of the account."),
  field("expires_at", "Expires at (your local time)", h("input", { id: "api-key-expires-at", name: "expires_at", type: "datetime-local" }), "Empty: no end."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Create key")));
  main.replaceChildren(...heading, notice, table, form);
}

// ---- Usage -------------------------------------------------------------------------------------------------

async function usagePage(account, query) {
  setNav(null, `#/accounts/${account}/usage`);
  main.replaceChildren(h("h1", {}, "Usage"), loading());
  const heading = await accountHeading("Usage", account, "usage");
  const month = /^\d{4}-\d{2}$/.test(query.get("month") || "") ? query.get("month") : new Date().toISOString().slice(0, 7);
  const picker = h("form", { class: "row", id: "usage-month-form", onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/accounts/${account}/usage?month=${encodeURIComponent(picker.month.value.trim())}`;
  } }, h("label", { class: "inline", for: "usage-month" }, "Month (UTC)"),
  h("input", { id: "usage-month", name: "month", value: month, placeholder: "YYYY-MM", size: 8 }), h("button", { type: "submit" }, "Show"));
  const body = h("div", {}, loading());
  main.replaceChildren(...heading, picker, body);
  let u;
  try { u = await api("GET", `${accountPath(account)}/usage?month=${encodeURIComponent(month)}`); }
  catch (error) { showError(body, error); return; }
  const stat = (key, label, value) => h("div", { class: "stat" }, h("div", { class: "v", "data-usage": key }, value), h("div", { class: "k" }, label));
  body.replaceChildren(h("div", { class: "stats", id: "usage-stats", "data-month": u.month },
    stat("receipts_verified", "Receipts verified", u.receipts_verified),
    stat("notifications_processed", "Notifications processed", u.notifications_processed),
    stat("app_store_api_calls", "App Store API calls", u.app_store_api_calls),
    stat("webhooks_delivered", "Webhooks delivered", u.webhooks_delivered),
    can("revenue.read") ? stat("tracked_revenue", "Tracked revenue", money(u.tracked_revenue)) : null),
  can("accounts.manage") ? await quotasCard(account) : null);
}

/** The operator's quotas form (`GET/PUT …/quotas`); empty fields mean no limit. */
async function quotasCard(account) {
  const path = `${accountPath(account)}/quotas`;
  const errors = h("div");
  let q;
  try { q = await api("GET", path); } catch (error) { showError(errors, error); return errors; }
  const limit = (text) => (text.trim() === "" ? null : /^\d+$/.test(text.trim()) ? Number(text.trim()) : text);
  const form = h("form", { class: "card", id: "quotas-form", onsubmit: onSubmit(errors, async () => {
    await api("PUT", path, { receipts_per_month: limit(form.receipts_per_month.value), requests_per_second: limit(form.requests_per_second.value) });
    errors.replaceChildren(done("Quotas saved.", "quotas-saved"));
  }) }, h("h2", {}, "Quotas"), errors,
  field("receipts_per_month", "Receipts per month", h("input", { id: "quota-receipts", name: "receipts_per_month", value: q.receipts_per_month ?? "" }), "Empty: no limit."),
  field("requests_per_second", "Requests per second", h("input", { id: "quota-rps", name: "requests_per_second", value: q.requests_per_second ?? "" }), "Empty: no limit."),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Save quotas")));
  return form;
}

// ---- Audit log ---------------------------------------------------------------------------------------------

const AUDIT_FILTERS = [["project_id", "Project id"], ["actor", "Actor (operator, member, api_key or a label)"], ["action", "Action (e.g. member.invite)"]];

async function auditPage(query) {
  setNav(null, "#/audit");
  const params = new URLSearchParams();
  for (const name of ["account_id", "project_id", "actor", "action", "from", "to", "cursor"]) if (query.get(name)) params.set(name, query.get(name));
  const go = (p) => { location.hash = `#/audit${p.toString() ? "?" + p : ""}`; };
  const localTime = (iso) => (iso && !Number.isNaN(new Date(iso).getTime()) ? new Date(new Date(iso).getTime() - new Date(iso).getTimezoneOffset() * 60000).toISOString().slice(0, 16) : "");
  const form = h("form", { class: "card", id: "audit-filter-form", role: "search", onsubmit: (e) => {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const input of form.querySelectorAll("input")) {
      const value = input.type === "datetime-local" ? instant(input.value) : input.value.trim();
      if (value) next.set(input.name, value);
    }
    go(next);
  } }, can("accounts.manage") ? field("account_id", "Account id", h("input", { id: "audit-account_id", name: "account_id", value: params.get("account_id") || "" })) : null,
  AUDIT_FILTERS.map(([name, label]) => field(name, label, h("input", { id: `audit-${name}`, name, value: params.get(name) || "" }))),
  field("from", "From (your local time)", h("input", { id: "audit-from", name: "from", type: "datetime-local", value: localTime(params.get("from")) })),
  field("to", "To (your local time)", h("input", { id: "audit-to", name: "to", type: "datetime-local", value: localTime(params.get("to")) })),
  h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Filter")));
  const body = h("div", {}, loading());
  const csv = new URLSearchParams(params);
  csv.delete("cursor");
  csv.set("format", "csv");
  main.replaceChildren(h("h1", {}, "Audit log"), form,
    h("p", {}, h("a", { href: `/v1/admin/audit-log?${csv}`, download: "audit-log.csv", id: "audit-csv" }, "Download CSV"), " (this filter, newest first)"), body);
  params.set("limit", "50");
  let page;
  try { page = await api("GET", `/v1/admin/audit-log?${params}`); } catch (error) { showError(body, error, form); return; }
  params.delete("limit");
  const changes = (c) => Object.entries(c || {}).map(([k, [before, after]]) => `${k}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`).join("; ");
  const pager = h("div", { class: "pager" },
    params.get("cursor") ? h("button", { type: "button", id: "audit-first", onclick: () => { params.delete("cursor"); go(params); } }, "Newest") : null,
    page.next_cursor ? h("button", { type: "button", id: "audit-next", onclick: () => { params.set("cursor", page.next_cursor); go(params); } }, "Next page") : null);
  body.replaceChildren(dataTable(["When", "Actor", "Action", "Target", { text: "Changes", class: "hide-narrow" }],
    page.entries.map((e) => h("tr", { "data-action": e.action, "data-actor": e.actor.label },
      h("td", {}, e.at), h("td", {}, e.actor.label), h("td", {}, h("code", {}, e.action)), h("td", {}, e.target || "—"),
      h("td", { class: "hide-narrow" }, changes(e.changes)))), "No entries.", "audit-list"), pager);
}

// ---- Router ------------------------------------------------------------------------------------------------

async function route() {
  const [path, search] = (location.hash.slice(1) || "/projects").split("?");
  const query = new URLSearchParams(search || "");
  if (path === "/signin") return signInPage();
  if (!me) {
    try { me = await api("GET", "/v1/admin/session"); csrf = me.csrf_token; }
    catch { location.hash = "#/signin"; if (path === "/signin") signInPage(); return; }
  }
  signOutButton.hidden = false;
  signOutEverywhereButton.hidden = !can("sessions.manage");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "accounts") {
    if (parts.length === 1) return accountsPage();
    chosenAccount = decodeURIComponent(parts[1]);
    const accountPage = { members: membersPage, "api-keys": apiKeysPage, usage: usagePage }[parts[2]];
    return (accountPage || membersPage)(chosenAccount, query);
  }
  if (parts[0] === "audit") return auditPage(query);
  if (parts[0] !== "projects" || parts.length === 1) return projectsPage();
  const id = decodeURIComponent(parts[1]);
  const page = { dashboard: dashboardPage, products: productsPage, customers: customersPage,
    notifications: notificationsPage, webhooks: webhooksPage, "app-store": appStorePage, retention: retentionPage }[parts[2]];
  if (page) return page(id, query);
  return settingsPage(id);
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });
route();
