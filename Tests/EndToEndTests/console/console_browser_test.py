#!/usr/bin/env python3
"""Drives the Bouncer console in headless Chromium (Selenium), against a live `bouncer serve`.

Run by ConsoleE2ETests (Swift), which starts the server and passes, in the environment:
BOUNCER_URL, ADMIN_TOKEN, BUNDLE_ID, PRODUCT_ID, USER_ID, SIGNED_TRANSACTION (a TestPKI-signed JWS of that
bundle and product), SCREENSHOT_DIR. Prints one "STEP ..." line per checked step and a final "RESULT {json}" with
the measurements; exits 0 only when every check held. Exit 3 means Chromium/Selenium are missing.
"""
import base64
import gzip
import hashlib
import hmac
import http.server as httpserver
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

from headless import EC, By, Select, WebDriverWait, check, chrome, step, wait_for

URL = os.environ["BOUNCER_URL"].rstrip("/")
TOKEN = os.environ["ADMIN_TOKEN"]
BUNDLE = os.environ["BUNDLE_ID"]
PRODUCT = os.environ["PRODUCT_ID"]
USER = os.environ["USER_ID"]
JWS = os.environ["SIGNED_TRANSACTION"]
SHOTS = os.environ.get("SCREENSHOT_DIR", ".build/console-screenshots")
os.makedirs(SHOTS, exist_ok=True)


def http(method, path, body=None, bearer=True, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(URL + path, data=data, method=method)
    if bearer:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


DOWNLOADS = os.path.join(SHOTS, "downloads")
os.makedirs(DOWNLOADS, exist_ok=True)
for name in os.listdir(DOWNLOADS):
    os.remove(os.path.join(DOWNLOADS, name))
driver = chrome(downloads=DOWNLOADS)
wait = WebDriverWait(driver, 20)
results = {}


class Receiver(httpserver.BaseHTTPRequestHandler):
    """The webhook's receiving end: records every POST and answers 200."""
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Receiver.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = httpserver.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=receiver.serve_forever, daemon=True).start()


ROLES = ["owner", "admin", "developer", "viewer", "support"]
PASSWORD = "console browser password 1"


def api_json(method, path, body=None, bearer=True):
    status, _, raw = http(method, path, body, bearer=bearer)
    check(200 <= status < 300, f"{method} {path}: {status} {raw[:300]!r}")
    return json.loads(raw) if raw else None


def totp_code(secret_base32):
    """RFC 6238: HMAC-SHA1, 6 digits, 30-second steps."""
    key = base64.b32decode(secret_base32 + "=" * (-len(secret_base32) % 8))
    digest = hmac.new(key, int(time.time() // 30).to_bytes(8, "big"), hashlib.sha1).digest()
    offset = digest[-1] & 15
    return f"{(int.from_bytes(digest[offset:offset + 4], 'big') & 0x7fffffff) % 1000000:06d}"


def nav_links():
    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#nav a")]


def shot(name):
    driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))


def go(fragment):
    driver.get(f"{URL}/admin/#{fragment}")


def visible(css):
    return wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))


def text_of(css):
    return driver.find_element(By.CSS_SELECTOR, css).text


try:
    # Sign-in page, with the navigation timing of a cold load.
    driver.get(f"{URL}/admin/")
    visible("#token")
    timing = driver.execute_script("""
        const n = performance.getEntriesByType('navigation')[0];
        const fcp = performance.getEntriesByName('first-contentful-paint')[0];
        return {dom_content_loaded_ms: n.domContentLoadedEventEnd, load_ms: n.loadEventEnd,
                first_contentful_paint_ms: fcp ? fcp.startTime : null,
                resources: performance.getEntriesByType('resource').map(r => [r.name, r.transferSize, r.encodedBodySize])};
    """)
    results["timing"] = timing
    check(driver.current_url.endswith("#/signin"), f"an unauthenticated console lands on sign-in, not {driver.current_url}")
    shot("01-sign-in")
    step("sign-in page")

    # A wrong token: the API's message and suggestion are shown.
    driver.find_element(By.ID, "token").send_keys("not-the-token-000000")
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    alert = visible(".alert[data-code='AUTH_INVALID_ADMIN_TOKEN']")
    check("BOUNCER_ADMIN_TOKEN" in alert.text, f"the suggestion is shown: {alert.text!r}")
    step("wrong token refused with its suggestion")

    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    cookies = {c["name"]: c for c in driver.get_cookies()}
    session = cookies.get("bouncer_session")
    check(session is not None, f"session cookie set: {list(cookies)}")
    check(session.get("httpOnly") is True, "the session cookie is HttpOnly")
    check(session.get("sameSite") == "Strict", f"the session cookie is SameSite=Strict: {session.get('sameSite')}")
    check("expiry" in session, "the session cookie expires")
    storage = driver.execute_script("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie")
    check(TOKEN not in storage and "cs_" not in storage, "neither the admin token nor the session is readable by script")
    step("signed in: HttpOnly SameSite=Strict cookie, nothing in storage")

    # Create a project; first without a name, to see the field's validation message.
    driver.find_element(By.ID, "project-bundle-id").send_keys(BUNDLE)
    driver.find_element(By.CSS_SELECTOR, "#create-project-form button[type=submit]").click()
    error = visible("#create-project-form [data-field='name'] .field-error")
    status, _, body = http("POST", "/v1/admin/projects", {"name": "", "bundle_id": BUNDLE, "transfer_policy": "transfer",
                                                        "allow_xcode": False, "app_apple_id": None,
                                                        "environments": ["Production", "Sandbox"]})
    expected = json.loads(body)
    check(status == 400 and expected["details"][0]["path"] == ["name"], f"the API refuses it too: {status} {body!r}")
    check(error.text.startswith(expected["details"][0]["message"]), f"name: {error.text!r} vs {expected['details']}")
    check(error.find_element(By.CSS_SELECTOR, ".suggestion").text.strip() != "", "a suggestion is next to the field")
    step("validation message and suggestion next to the field")
    driver.find_element(By.ID, "project-name").send_keys("Console E2E")
    driver.find_element(By.CSS_SELECTOR, "#create-project-form button[type=submit]").click()
    visible("#created-project")
    secret = text_of("#new-secret-key")
    check(secret.startswith("sk_"), f"secret key shown once: {secret[:3]}")
    project_id = driver.find_element(By.ID, "open-created-project").get_attribute("href").rsplit("/", 1)[-1]
    check(driver.find_elements(By.CSS_SELECTOR, f"#project-list tr[data-project-id='{project_id}']"),
          "the new project is listed")
    shot("02-projects")
    step(f"project created {project_id}")

    # Map the product.
    go(f"/projects/{project_id}/products")
    visible("#add-product-form")
    driver.find_element(By.ID, "product-id").send_keys(PRODUCT)
    driver.find_element(By.ID, "product-entitlements").send_keys("pro")
    driver.find_element(By.CSS_SELECTOR, "#add-product-form button[type=submit]").click()
    visible("#product-saved")
    row = visible(f"#product-table tr[data-product-id='{PRODUCT}'] input")
    check(row.get_attribute("value") == "pro", f"mapping row shows pro: {row.get_attribute('value')!r}")
    shot("03-products")
    step("product mapped")

    # The settings page shows the public key; post the signed transaction through the public API with it.
    go(f"/projects/{project_id}")
    public_key = visible("#keys .public-key").text
    status, _, body = http("POST", f"/v1/receipts/{public_key}",
                           {"signed_transaction_info": JWS, "user_id": USER}, bearer=False)
    check(status == 201, f"receipt accepted: {status} {body[:300]!r}")
    step("receipt posted through the API")

    # Find the customer and see the entitlement.
    go(f"/projects/{project_id}/customers")
    visible("#customer-user-id").send_keys(USER)
    driver.find_element(By.CSS_SELECTOR, "form[role=search] button[type=submit]").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "customer-entitlements"), "pro"))
    check(text_of("#customer-status") == "active", f"status: {text_of('#customer-status')!r}")
    check(PRODUCT in text_of("#customer-purchases"), "the purchase is listed")
    shot("04-customer")
    step("customer found with entitlement pro")

    # Search by the posted transaction's id (issue 16): the purchase is shown and links to its holder's page.
    jws_payload = JWS.split(".")[1]
    TRANSACTION_ID = json.loads(base64.urlsafe_b64decode(jws_payload + "=" * (-len(jws_payload) % 4)))["transactionId"]
    go(f"/projects/{project_id}/customers")
    visible("#customer-transaction-id").send_keys(str(TRANSACTION_ID))
    driver.find_element(By.CSS_SELECTOR, "#transaction-search-form button[type=submit]").click()
    holder = visible(f"#transaction-holders a[data-user-id='{USER}']")
    check(PRODUCT in text_of("#transaction-product"), f"the purchase's product: {text_of('#transaction-product')!r}")
    shot("04a-transaction-search")
    holder.click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "customer-entitlements"), "pro"))
    check(f"user={USER}" in driver.current_url, f"landed on the customer: {driver.current_url!r}")
    step("customer found by transaction id")

    # The timeline explains the purchase; grant "vip" by hand and see it in the entitlements, grants and timeline.
    wait.until(EC.text_to_be_present_in_element((By.ID, "customer-reasons"), "Granted by transaction"))
    check("purchase" in text_of("#customer-timeline"), f"the purchase is in the timeline: {text_of('#customer-timeline')!r}")
    driver.find_element(By.ID, "grant-entitlement").send_keys("vip")
    driver.find_element(By.CSS_SELECTOR, "#add-grant-form button[type=submit]").click()
    reason = visible("#add-grant-form [data-field='reason'] .field-error")
    check(reason.find_element(By.CSS_SELECTOR, ".suggestion").text.strip() != "", "the API's suggestion is next to the reason")
    driver.find_element(By.ID, "grant-reason").send_keys("support ticket 42")
    driver.find_element(By.CSS_SELECTOR, "#add-grant-form button[type=submit]").click()
    visible("#grant-added")
    wait.until(EC.text_to_be_present_in_element((By.ID, "customer-entitlements"), "vip"))
    check(text_of("#customer-entitlements") == "pro, vip" or text_of("#customer-entitlements") == "vip, pro",
          f"entitlements: {text_of('#customer-entitlements')!r}")
    grant_rows = driver.find_elements(By.CSS_SELECTOR, "#customer-grants tr[data-grant-id]")
    check(len(grant_rows) == 1 and "vip" in grant_rows[0].text, f"the grant is listed: {[r.text for r in grant_rows]}")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}/users/{USER}/timeline")
    timeline = json.loads(body)
    check(status == 200 and any(e["type"] == "grant" for e in timeline["events"]), f"timeline API has the grant: {body[:300]!r}")
    vip = [e for e in timeline["entitlements"] if e["id"] == "vip"][0]
    check("support ticket 42" in vip["reason"], f"vip reason: {vip}")
    check(vip["reason"] in text_of("#customer-reasons"), f"the page shows the API's sentence: {text_of('#customer-reasons')!r}")
    check(driver.find_elements(By.CSS_SELECTOR, "#customer-timeline tr[data-type='grant']"), "the grant is in the timeline")
    shot("04b-customer-grant")
    step("grant added: entitlements, grants and timeline")

    # Export downloads the API's JSON.
    driver.find_element(By.ID, "export-button").click()
    visible("#exported")
    exported = wait_for(lambda: [n for n in os.listdir(DOWNLOADS) if n.endswith(".json")], "the export is downloaded")
    with open(os.path.join(DOWNLOADS, exported[0])) as f:
        data = json.load(f)
    check(data["user_id"] == USER and [g["entitlement"] for g in data["grants"]] == ["vip"], f"export: {list(data)}")
    step("export downloaded")

    # Remove the grant: vip is gone from the entitlements, the timeline says so.
    grant_rows[0].find_element(By.CSS_SELECTOR, "button.danger").click()
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#customer-grants tr[data-grant-id]"))
    check(text_of("#customer-entitlements") == "pro", f"entitlements after removal: {text_of('#customer-entitlements')!r}")
    check(driver.find_elements(By.CSS_SELECTOR, "#customer-timeline tr[data-type='grant_removed']"), "removal in the timeline")
    step("grant removed")

    # Rotate the public key with a grace: both keys are listed, the old one with an expiry.
    go(f"/projects/{project_id}")
    visible("#rotate-form")
    Select(driver.find_element(By.ID, "rotate-key")).select_by_value("public")
    driver.find_element(By.ID, "rotate-grace").send_keys("3600")
    driver.find_element(By.ID, "rotate-button").click()
    visible("#rotated")
    keys = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#keys .public-key")]
    check(len(keys) == 2 and keys[1] == public_key and keys[0] != public_key, f"new key first, old kept: {keys}")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}")
    check(status == 200 and [k["key"] for k in json.loads(body)["public_keys"]] == keys, "the page shows the API's keys")
    shot("05-settings-keys")
    step("public key rotated with grace")

    # Notifications and App Store pages render (no data needed).
    go(f"/projects/{project_id}/notifications")
    visible("#notification-list")
    shot("06-notifications")
    go(f"/projects/{project_id}/app-store")
    visible("#credentials-form")
    shot("07-app-store")
    step("notifications and App Store pages")

    # Webhooks: configure to the local receiver, the secret shown once, a test event delivered and signed, retry.
    go(f"/projects/{project_id}/webhooks")
    visible("#webhook-form")
    hook_url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    driver.find_element(By.ID, "webhook-url").send_keys(hook_url)
    driver.find_element(By.CSS_SELECTOR, "#webhook-form button[type=submit]").click()
    visible("#webhook-saved")
    secret = text_of("#webhook-secret")
    check(secret.startswith("whsec_") and len(secret) == 70, f"secret shown once: {secret[:6]}")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}/webhook")
    check(status == 200 and json.loads(body)["url"] == hook_url and "secret" not in json.loads(body), f"webhook: {body!r}")
    driver.find_element(By.ID, "webhook-test").click()
    queued = visible("#webhook-test-queued").text
    event_id = queued.split()[-1].rstrip(".")
    path, headers, raw = wait_for(lambda: next((r for r in Receiver.received if event_id.encode() in r[2]), None),
                                  f"the receiver gets {event_id}")
    mac = hmac.new(secret.encode(), headers["bouncer-timestamp"].encode() + b"." + raw, hashlib.sha256).hexdigest()
    check(headers["bouncer-signature"] == f"v1={mac}", f"signed with the shown secret: {headers.get('bouncer-signature')}")

    def delivered_row():
        driver.find_element(By.ID, "deliveries-refresh").click()
        rows = driver.find_elements(By.CSS_SELECTOR, f"#delivery-list tr[data-event-id='{event_id}'][data-status='delivered']")
        return rows[0] if rows else None
    wait_for(delivered_row, "the ping shows as delivered")
    Select(visible("#delivery-status")).select_by_value("failed")
    wait.until(lambda d: "status=failed" in d.current_url)
    visible("#delivery-list")
    check(not driver.find_elements(By.CSS_SELECTOR, "#delivery-list tr[data-event-id]"), "no failed deliveries")
    Select(visible("#delivery-status")).select_by_value("delivered")
    wait.until(lambda d: "status=delivered" in d.current_url)
    row = visible(f"#delivery-list tr[data-event-id='{event_id}']")
    count = len(Receiver.received)
    row.find_element(By.CSS_SELECTOR, "button.retry").click()
    visible("#webhook-retried")
    wait_for(lambda: len([r for r in Receiver.received if event_id.encode() in r[2]]) >= 2, "the retry is delivered again")
    check(len(Receiver.received) >= count + 1, "one more delivery")
    shot("10-webhooks")
    driver.set_window_size(390, 844)
    width = driver.execute_script("return document.documentElement.scrollWidth")
    check(width <= 400, f"webhooks: no horizontal scrolling at phone width: {width}")
    shot("10b-webhooks-phone")
    go(f"/projects/{project_id}/customers?user={USER}")
    visible("#customer-timeline")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    check(width <= 400, f"customer: no horizontal scrolling at phone width: {width}")
    shot("04c-customer-phone")
    driver.set_window_size(1280, 900)
    go(f"/projects/{project_id}/webhooks")
    visible("#webhook-rotate")
    driver.find_element(By.ID, "webhook-rotate").click()
    rotated = visible("#webhook-secret").text
    check(rotated.startswith("whsec_") and rotated != secret, "a new secret is shown on rotation")
    step("webhook configured, test delivered and signed, retried, secret rotated")

    # Erase a second user (a grant through the API) with the typed confirmation.
    other = USER + "_erase"
    status, _, body = http("POST", f"/v1/admin/projects/{project_id}/users/{other}/grants",
                           {"entitlement": "vip", "reason": "to erase"})
    check(status == 201, f"grant for {other}: {status} {body!r}")
    go(f"/projects/{project_id}/customers?user={other}")
    wait.until(EC.text_to_be_present_in_element((By.ID, "customer-entitlements"), "vip"))
    driver.find_element(By.ID, "erase-confirm").send_keys("wrong")
    driver.find_element(By.ID, "erase-button").click()
    visible("#erase-form [data-field='confirm'] .field-error")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}/users/{other}/timeline")
    check(json.loads(body)["entitlements"] != [], "nothing erased on a wrong confirmation")
    driver.find_element(By.ID, "erase-confirm").clear()
    driver.find_element(By.ID, "erase-confirm").send_keys(other)
    driver.find_element(By.ID, "erase-button").click()
    visible("#erased")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}/users/{other}/timeline")
    check(status == 200 and json.loads(body) == {"user_id": other, "entitlements": [], "events": []}, f"erased: {body!r}")
    shot("11-customer-erased")
    step("user erased after typed confirmation")

    # Dashboard: the numbers equal the overview API's for the same days.
    go(f"/projects/{project_id}/dashboard?days=7&env=all")
    stats = visible("#dashboard-stats")
    day_from, day_to = stats.get_attribute("data-from"), stats.get_attribute("data-to")
    status, _, body = http("GET", f"/v1/admin/projects/{project_id}/metrics/overview?from={day_from}&to={day_to}&interval=day&environment=all")
    check(status == 200, f"overview: {status} {body[:300]!r}")
    overview = json.loads(body)
    shown = {e.get_attribute("data-metric"): e.text for e in driver.find_elements(By.CSS_SELECTOR, "[data-metric]")}
    for key in ["active_subscriptions", "active_entitlements", "new_purchases", "renewals", "refunds", "expirations",
                "trial_conversions"]:
        check(shown[key] == str(overview["totals"][key]), f"{key}: page {shown[key]!r} vs API {overview['totals'][key]}")
    check(overview["totals"]["new_purchases"] == 1 and overview["totals"]["active_subscriptions"] == 1,
          f"the receipt counts: {overview['totals']}")
    check(overview["totals"]["revenue"] == {"USD": 9990} and "9.99 USD" in shown["revenue"],
          f"revenue: page {shown['revenue']!r} vs API {overview['totals']['revenue']}")
    check(len(driver.find_elements(By.CSS_SELECTOR, ".chart svg")) >= 4, "charts drawn")
    results["dashboard"] = shown
    shot("08-dashboard")
    driver.set_window_size(390, 844)
    driver.refresh()
    visible("#dashboard-stats")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    check(width <= 400, f"no horizontal scrolling at phone width: {width}")
    shot("09-dashboard-phone")
    driver.set_window_size(1280, 900)
    step("dashboard numbers equal the API's")

    # Keyboard: Tab from the page start reaches the nav links.
    go(f"/projects/{project_id}/dashboard")
    visible("#dashboard-stats")
    driver.find_element(By.TAG_NAME, "body").send_keys("\t")
    focused = driver.execute_script("return document.activeElement && document.activeElement.textContent")
    check(focused, "Tab moves focus to a control")

    # CSP: no violation was logged.
    logs = [entry for entry in driver.get_log("browser") if "Content Security Policy" in entry.get("message", "")]
    check(not logs, f"no CSP violations: {logs}")
    step("no CSP violations")

    # Sign out: the cookie is gone and the API refuses it.
    driver.find_element(By.ID, "sign-out").click()
    visible("#token")
    check(all(c["name"] != "bouncer_session" for c in driver.get_cookies()), "cookie cleared")
    step("signed out")

    # Sign out everywhere: a second session (another browser; here the API) ends together with this one.
    field = visible("#token")
    field.send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    status, headers, _ = http("POST", "/v1/admin/session", {"token": TOKEN}, bearer=False)
    check(status == 201, f"second sign-in: {status}")
    other = {"Cookie": headers["Set-Cookie"].split(";")[0]}
    status, _, _ = http("GET", "/v1/admin/projects", bearer=False, headers=other)
    check(status == 200, f"the second session works: {status}")
    driver.find_element(By.ID, "sign-out-everywhere").click()
    visible("#token")
    check(all(c["name"] != "bouncer_session" for c in driver.get_cookies()), "cookie cleared")
    status, _, body = http("GET", "/v1/admin/projects", bearer=False, headers=other)
    check(status == 401 and json.loads(body)["code"] == "CONSOLE_SESSION_INVALID",
          f"the other session ended: {status} {body[:200]!r}")
    step("signed out everywhere")

    # Accounts, members and roles (issue 24). The operator sees the Accounts page and creates an account there.
    stamp = str(int(time.time() * 1000))
    field = visible("#token")
    field.send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    check("Accounts" in nav_links(), f"the operator's navigation: {nav_links()}")
    go("/accounts")
    visible("#account-name").send_keys(f"Roles {stamp}")
    driver.find_element(By.CSS_SELECTOR, "#create-account-form button[type=submit]").click()
    visible("#account-created")
    account = next(a for a in api_json("GET", "/v1/admin/accounts")["accounts"] if a["name"] == f"Roles {stamp}")
    row = visible(f'tr[data-account-id="{account["id"]}"]')
    row.find_element(By.LINK_TEXT, "Usage").click()
    visible("#usage-stats")
    visible("#quotas-form")
    check(Select(driver.find_element(By.ID, "account-picker")).first_selected_option.get_attribute("value") == account["id"],
          "the picker shows the chosen account")
    shot("12-operator-usage")
    step("operator: accounts page, account created, usage with quotas")

    # One member per role, invited and accepted through the API; a project in the account, one outside it.
    project = api_json("POST", "/v1/admin/projects", {"name": "Roles app", "bundle_id": f"{BUNDLE}.roles",
                                                      "account_id": account["id"]})
    members = {}
    for role in ROLES:
        invited = api_json("POST", f"/v1/admin/accounts/{account['id']}/members",
                           {"email": f"{role}.{stamp}@example.com", "role": role})
        api_json("POST", "/v1/admin/invites/accept", {"invite_token": invited["invite_token"], "password": PASSWORD}, bearer=False)
        members[role] = invited

    def member_sign_in(email, role, totp_secret=None):
        go("/signin")
        visible("#member-email").send_keys(email)
        driver.find_element(By.ID, "member-password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "#member-sign-in-form button[type=submit]").click()
        if totp_secret:
            visible("#member-totp").send_keys(totp_code(totp_secret))
            driver.find_element(By.CSS_SELECTOR, "#member-sign-in-form button[type=submit]").click()
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f'#whoami[data-role="{role}"]'), f"{role} signed in")
        visible("[data-project-id]")
        ids = [r.get_attribute("data-project-id") for r in driver.find_elements(By.CSS_SELECTOR, "[data-project-id]")]
        check(ids == [project["id"]], f"{role} sees only the account's project: {ids}")

    seen = {}
    for role in ROLES:
        member_sign_in(members[role]["email"], role)
        check(bool(driver.find_elements(By.ID, "create-project-form")) == (role in ("owner", "admin", "developer")),
              f"{role}: the new-project form")
        driver.find_element(By.CSS_SELECTOR, f'[data-project-id="{project["id"]}"] a').click()
        wait_for(lambda: "/projects/" in driver.current_url, f"{role} opened the project")
        time.sleep(0.3)
        links = nav_links()
        seen[role] = links
        check("Accounts" not in links, f"{role} sees no Accounts page: {links}")
        if role == "support":
            check(links[:2] == ["Projects", "Customers"] and not {"Settings", "Products", "Dashboard", "Members", "API keys",
                                                                    "Usage", "Audit log"} & set(links), f"support: customers only: {links}")
            visible("#customer-user-id")
            go(f"/projects/{project['id']}/customers?user=nobody_{stamp}")
            visible("#add-grant-form")
            check(not driver.find_elements(By.ID, "erase-form"), "support cannot erase")
        if role == "viewer":
            check({"Dashboard", "Settings", "Audit log", "Usage"} <= set(links) and not {"Members", "API keys"} & set(links),
                  f"viewer's navigation: {links}")
            go(f"/projects/{project['id']}")
            visible("#edit-project-form")
            check(not driver.find_elements(By.CSS_SELECTOR, "#edit-project-form button[type=submit], #rotate-form, #delete-form"),
                  "viewer: no write buttons in settings")
            go(f"/projects/{project['id']}/products")
            visible("#product-table")
            check(not driver.find_elements(By.ID, "add-product-form"), "viewer: no product mapping")
            shot("13-viewer-products")
        if role == "developer":
            check("Dashboard" not in links and "Members" not in links and "API keys" in links, f"developer's navigation: {links}")
            go(f"/accounts/{account['id']}/usage")
            visible("#usage-stats")
            check(not driver.find_elements(By.CSS_SELECTOR, '[data-usage="tracked_revenue"]'), "developer: no revenue")
            check(not driver.find_elements(By.ID, "quotas-form"), "developer: no quotas form")
            go(f"/accounts/{account['id']}/members")
            alert = visible(".alert[data-code]")
            check(alert.get_attribute("data-code") == "PERMISSION_DENIED", "the server refuses the members page too")
        if role in ("owner", "admin"):
            check({"Dashboard", "Members", "API keys", "Usage", "Audit log"} <= set(links), f"{role}'s navigation: {links}")
    results["navigation"] = seen
    step("each role sees what it may do: owner, admin, developer, viewer, support")

    # The owner invites a member, turns TOTP on for them, creates an API key and revokes it, through the UI.
    member_sign_in(members["owner"]["email"], "owner")
    def create_with_role(page, form, name_field, name, role_field, role, secret):
        """Opens the account page, fills the form's name and role, submits, and answers the secret it shows once."""
        go(f"/accounts/{account['id']}/{page}")
        visible(name_field).send_keys(name)
        Select(driver.find_element(By.CSS_SELECTOR, role_field)).select_by_value(role)
        driver.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()
        return visible(secret).text

    invite_token = create_with_role("members", "#invite-form", "#invite-email", f"new.{stamp}@example.com",
                                    "#invite-role", "viewer", "#invite-token")
    check(invite_token.startswith("iv_"), f"invite token shown once: {invite_token!r}")
    api_json("POST", "/v1/admin/invites/accept", {"invite_token": invite_token, "password": PASSWORD}, bearer=False)
    go(f"/accounts/{account['id']}/members?again")
    row = visible(f'tr[data-email="new.{stamp}@example.com"]')
    row.find_element(By.CSS_SELECTOR, "button.enable-totp").click()
    uri = visible("#otpauth-uri").text
    check(uri.startswith("otpauth://totp/"), f"otpauth URI shown once: {uri!r}")
    totp_secret = uri.split("secret=")[1].split("&")[0]
    key = create_with_role("api-keys", "#create-api-key-form", "#api-key-name", f"CI {stamp}", "#api-key-role", "developer",
                           "#new-api-key")
    check(key.startswith("bk_"), f"API key shown once: {key[:6]!r}")
    status, _, _ = http("GET", "/v1/admin/projects", bearer=False, headers={"Authorization": f"Bearer {key}"})
    check(status == 200, f"the new key works: {status}")
    go(f"/accounts/{account['id']}/api-keys?used")
    row = visible(f'tr[data-name="CI {stamp}"]')
    check(row.find_element(By.CSS_SELECTOR, ".last-used").text != "never", "last_used_at shown")
    shot("14-api-keys")
    button = row.find_element(By.CSS_SELECTOR, "button.revoke-key")
    button.click()
    button.click()
    visible("#api-key-revoked")
    status, _, _ = http("GET", "/v1/admin/projects", bearer=False, headers={"Authorization": f"Bearer {key}"})
    check(status == 401, f"the revoked key fails: {status}")
    step("owner invited a member, enabled TOTP, created and revoked an API key")

    go("/audit")
    visible("#audit-list")
    actions = [r.get_attribute("data-action") for r in driver.find_elements(By.CSS_SELECTOR, "#audit-list tr[data-action]")]
    for action in ["member.invite", "member.enable_totp", "api_key.create", "api_key.revoke"]:
        check(action in actions, f"the audit page lists {action}: {actions}")
    visible("#audit-action").send_keys("api_key.revoke")
    driver.find_element(By.CSS_SELECTOR, "#audit-filter-form button[type=submit]").click()
    wait_for(lambda: "action=api_key.revoke" in driver.current_url, "filtered")
    wait_for(lambda: [r.get_attribute("data-action") for r in driver.find_elements(By.CSS_SELECTOR, "#audit-list tr[data-action]")]
             == ["api_key.revoke"], "only the revocation after filtering")
    csv_href = driver.find_element(By.ID, "audit-csv").get_attribute("href")
    check("format=csv" in csv_href and "action=api_key.revoke" in csv_href, f"CSV link keeps the filter: {csv_href}")
    shot("15-audit")
    step("audit page lists the changes, filters, links the CSV")

    # The new member has TOTP on: the sign-in form asks for the code.
    member_sign_in(f"new.{stamp}@example.com", "viewer", totp_secret=totp_secret)
    step("member signed in with TOTP")
    driver.find_element(By.ID, "sign-out").click()
    visible("#token")

    # The operator renames the account, sees why it cannot be deleted while it owns a project (the error with its
    # suggestion), and deletes it once the project is gone (the other tests of this server expect one account).
    visible("#token").send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    go("/accounts")
    row = visible(f'tr[data-account-id="{account["id"]}"]')
    name = row.find_element(By.NAME, "name")
    name.clear()
    name.send_keys(f"Renamed {stamp}")
    row.find_element(By.CSS_SELECTOR, "button.rename").click()
    visible("#account-renamed")
    check(api_json("GET", f"/v1/admin/accounts/{account['id']}")["name"] == f"Renamed {stamp}", "renamed")
    button = row.find_element(By.CSS_SELECTOR, "button.delete-account")
    button.click()
    button.click()
    alert = visible("#accounts-notice .alert[data-code]")
    check(alert.get_attribute("data-code") == "ACCOUNT_HAS_PROJECTS" and alert.find_elements(By.CSS_SELECTOR, ".suggestion"),
          f"the refusal with its suggestion: {alert.text!r}")
    api_json("DELETE", f"/v1/admin/projects/{project['id']}")
    wait_for(lambda: button.is_enabled(), "the button is usable again")
    button.click()
    visible("#account-deleted")
    check(all(a["id"] != account["id"] for a in api_json("GET", "/v1/admin/accounts")["accounts"]), "account deleted")
    step("operator renamed the account, saw why it could not be deleted, deleted it")
    driver.find_element(By.ID, "sign-out").click()
    visible("#token")
    logs = [entry for entry in driver.get_log("browser") if "Content Security Policy" in entry.get("message", "")]
    check(not logs, f"no CSP violations on the account pages: {logs}")

    # Page weight: every console asset, raw and gzip -9.
    weight = {"raw": 0, "gzip": 0, "files": {}}
    for name in ["index.html", "console.css", "console.js", "charts.js", "favicon.svg"]:
        status, headers, body = http("GET", f"/admin/{name}", bearer=False)
        check(status == 200, f"{name}: {status}")
        packed = len(gzip.compress(body, 9))
        weight["raw"] += len(body)
        weight["gzip"] += packed
        weight["files"][name] = [len(body), packed]
    results["page_weight"] = weight
    print("RESULT " + json.dumps(results), flush=True)
except Exception as error:  # report, screenshot, fail
    print(f"FAILED {type(error).__name__}: {error}", flush=True)
    try:
        shot("failure")
        print("BROWSER LOG " + json.dumps(driver.get_log("browser"))[:4000])
    except Exception:
        pass
    driver.quit()
    sys.exit(1)
driver.quit()
receiver.shutdown()
