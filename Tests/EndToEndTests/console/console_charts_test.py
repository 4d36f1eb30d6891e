#!/usr/bin/env python3
"""Drives the dashboard's charts and the customer list in headless Chromium (Selenium), as a viewer.

Run by ConsoleChartsE2ETests (Swift), which passes in the environment: BOUNCER_URL, PROJECT_ID, EMAIL and PASSWORD (a
member with revenue.read and customers.read), FROM and TO (the range the scenario's charts cover), SCREENSHOT_DIR.
The cohort charts are also checked for a range ending today, where the scenario's customers of the last minutes are a
cohort whose later months have not begun yet.
The API's JSON is read with the same session (fetch from the page), so the page and the numbers it is compared with
come from one principal. Prints one "STEP ..." line per checked step; exits 0 only when every check held. Exit 3 means
Chromium/Selenium are missing.
"""
import os
import sys
import datetime
import time
import urllib.parse

from headless import EC, By, Select, WebDriverWait, check, chrome, step, wait_for

URL = os.environ["BOUNCER_URL"].rstrip("/")
PROJECT = os.environ["PROJECT_ID"]
EMAIL = os.environ["EMAIL"]
PASSWORD = os.environ["PASSWORD"]
FROM = os.environ["FROM"]
TO = os.environ["TO"]
SHOTS = os.environ.get("SCREENSHOT_DIR", ".build/console-screenshots")
os.makedirs(SHOTS, exist_ok=True)
CHARTS = ["mrr", "mrr_movement", "revenue", "active_subscriptions", "active_trials", "trial_conversion", "churn",
          "refund_rate", "realized_ltv"]
MONTHS_SINCE = range(13)
RATIOS = {"trial_conversion": "conversion_rate", "churn": "churn_rate", "refund_rate": "refund_rate"}

driver = chrome()
wait = WebDriverWait(driver, 20)


def visible(css):
    return wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))


def present(css):
    return wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def api(path):
    """GET path with the page's session cookie: the JSON, or an AssertionError naming the status."""
    result = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(arguments[0], { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(async (r) => done({ status: r.status, body: await r.json() }))
          .catch((e) => done({ status: 0, body: String(e) }));
    """, path)
    check(result["status"] == 200, f"GET {path}: {result}")
    return result["body"]


def amount(milli):
    """The console's money text: milli-units to two decimals, half away from zero, in integers."""
    cents = (abs(milli) + 5) // 10
    return f"{'-' if milli < 0 else ''}{cents // 100:,}.{cents % 100:02d}"


def percent(ratio):
    if ratio is None:
        return "—"
    whole, fraction = ratio.split(".")
    return f"{int(whole) * 100 + int(fraction[:2])}.{fraction[2:]} %"


def decimal_amount(text):
    """Decimal milli-units ("17227.5000") to two decimals, half away from zero, in integers; "—" for null."""
    if text is None:
        return "—"
    whole, _, fraction = text.lstrip("-").partition(".")
    cents = (int(whole) * 10000 + int((fraction + "0000")[:4]) + 50000) // 100000
    return f"{'-' if text.startswith('-') and cents else ''}{cents // 100:,}.{cents % 100:02d}"


def shown(measure, value, ratio=None):
    if measure == ratio:
        return percent(value)
    if not measure.endswith("_milli"):
        return str(value)
    return amount(value) if isinstance(value, int) else decimal_amount(value)


def check_apart(chart, where, element, currency, values):
    """The amounts without a rate, shown apart: each measure's API value and its text."""
    spans = {s.get_attribute("data-measure"): s for s in element.find_elements(By.CSS_SELECTOR, "span[data-measure]")}
    check(sorted(spans) == sorted(values), f"{chart} {where} {currency}: measures {sorted(spans)}")
    for m, v in values.items():
        check(spans[m].get_attribute("data-value") == attr(v), f"{chart} {where} {currency} {m}")
        text = spans[m].get_attribute("textContent")
        check(text.endswith(f" {shown(m, v)} {currency}" if m.endswith("_milli") else f" {v}"),
              f"{chart} {where} {currency} {m} text: {text}")


def cohort_cells(row):
    return {c.get_attribute("data-measure"): c for c in row.find_elements(By.CSS_SELECTOR, "td[data-measure]")}


def check_retention(json):
    """Every cell of the retention table equals the API's point (or totals): its values, text and shade."""
    card = present("#chart-subscription_retention")
    rows = card.find_elements(By.CSS_SELECTOR, "tr[data-date]")
    check([r.get_attribute("data-date") for r in rows] == [p["date"] for p in json["points"]], "retention: cohorts")
    for row, point in list(zip(rows, json["points"])) + [(card.find_element(By.CSS_SELECTOR, "tr[data-total]"),
                                                          json["totals"])]:
        where = f"retention {point.get('date', 'total')}"
        cells = cohort_cells(row)
        check(sorted(cells) == sorted(["subscribers"] + [f"retention_{k}" for k in MONTHS_SINCE]), f"{where}: columns")
        check(cells["subscribers"].get_attribute("data-value") == str(point["subscribers"]), f"{where}: subscribers")
        check(cells["subscribers"].get_attribute("textContent") == str(point["subscribers"]), f"{where}: subscribers")
        for k in MONTHS_SINCE:
            cell, ratio = cells[f"retention_{k}"], point[f"retention_{k}"]
            check(cell.get_attribute("data-value") == attr(ratio), f"{where} month {k}: {cell.get_attribute('data-value')}")
            check(cell.get_attribute("data-reached") == str(point[f"reached_{k}"]), f"{where} month {k} reached")
            check(cell.get_attribute("data-retained") == str(point[f"retained_{k}"]), f"{where} month {k} retained")
            check(cell.get_attribute("textContent") == percent(ratio), f"{where} month {k}: {cell.text}")
            shade = "none" if ratio is None else f"heat-{int(ratio.split('.')[0]) * 10 + int(ratio.split('.')[1][0])}"
            check(shade in cell.get_attribute("class").split(), f"{where} month {k} shade: {cell.get_attribute('class')}")
    return card


def texts(card, date):
    row = card.find_element(By.CSS_SELECTOR, f"tr[data-date='{date}']")
    return [row.find_element(By.CSS_SELECTOR, f"td[data-measure='retention_{k}']").get_attribute("textContent")
            for k in MONTHS_SINCE]


def check_chart(chart, json):
    """Every point, total and amount without a rate of a chart card equals the API's JSON."""
    card = present(f"#chart-{chart}")
    ratio = RATIOS.get(chart)
    rows = card.find_elements(By.CSS_SELECTOR, "tr[data-date]")
    check([r.get_attribute("data-date") for r in rows] == [p["date"] for p in json["points"]],
          f"{chart}: the points' dates")
    for row, point in zip(rows, json["points"]):
        for cell in row.find_elements(By.CSS_SELECTOR, "td[data-measure]"):
            m = cell.get_attribute("data-measure")
            check(cell.get_attribute("data-value") == attr(point[m]), f"{chart} {point['date']} {m}: "
                  f"{cell.get_attribute('data-value')} != {point[m]}")
            check(cell.get_attribute("textContent") == shown(m, point[m], ratio),
                  f"{chart} {point['date']} {m} text: {cell.get_attribute('textContent')}")
        apart = row.find_elements(By.CSS_SELECTOR, "td.unconverted [data-currency]")
        check(sorted(a.get_attribute("data-currency") for a in apart) == sorted(point.get("unconverted", {})),
              f"{chart} {point['date']}: the currencies without a rate")
        for a in apart:
            currency = a.get_attribute("data-currency")
            check_apart(chart, point["date"], a, currency, point["unconverted"][currency])
    totals = card.find_elements(By.CSS_SELECTOR, "dd[data-measure]")
    check(len(totals) == len([k for k in json["totals"] if k != "unconverted"]), f"{chart}: every total shown")
    for dd in totals:
        m = dd.get_attribute("data-measure")
        check(dd.get_attribute("data-value") == attr(json["totals"][m]), f"{chart} total {m}")
        check(dd.text == shown(m, json["totals"][m], ratio), f"{chart} total {m} text: {dd.text}")
    for currency, values in json["totals"].get("unconverted", {}).items():
        check_apart(chart, "total", card.find_element(By.CSS_SELECTOR, f"p.unconverted [data-currency='{currency}']"),
                    currency, values)
    return card


def dashboard(params):
    """Opens the dashboard with `params` (the page's hash query) once the charts of that range are drawn; the API's
    query for the same range and filters."""
    old = driver.find_elements(By.ID, "revenue-charts")
    driver.get(f"{URL}/admin/#/projects/{PROJECT}/dashboard?{urllib.parse.urlencode(params)}")
    if old:
        wait.until(EC.staleness_of(old[0]))
    visible("#revenue-charts")
    api_params = {"from": params["from"], "to": params["to"], "interval": params["interval"],
                  "environment": params["env"]}
    if params.get("product"):
        api_params["product_id"] = params["product"]
    return urllib.parse.urlencode(api_params)


def attr(value):
    return "null" if value is None else str(value)


def customer_rows():
    return [(r.get_attribute("data-user-id"),
             r.find_element(By.CSS_SELECTOR, "[data-status]").get_attribute("data-status"),
             r.find_element(By.CSS_SELECTOR, "[data-net]").get_attribute("data-net"),
             r.find_element(By.CSS_SELECTOR, "[data-entitlements]").get_attribute("data-entitlements"))
            for r in driver.find_elements(By.CSS_SELECTOR, "#customer-list-table tr[data-user-id]")]


def api_rows(page):
    return [(c["user_id"], c["status"], str(c["net_milli"]), ",".join(c["entitlements"])) for c in page["customers"]]


def list_loaded():
    present("#customer-list-table")
    time.sleep(0.2)


try:
    driver.get(f"{URL}/admin/#/signin")
    visible("#member-email").send_keys(EMAIL)
    driver.find_element(By.ID, "member-password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "#member-sign-in-form button[type=submit]").click()
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '#whoami[data-role="viewer"]'), "viewer signed in")
    # The projects page the sign-in opens, drawn (a later hash change while it loads would be drawn over).
    wait_for(lambda: PROJECT in driver.find_element(By.TAG_NAME, "main").text, "the projects page")
    step("viewer signed in")

    query = dashboard({"from": FROM, "to": TO, "env": "Sandbox", "interval": "month"})
    for chart in CHARTS:
        check_chart(chart, api(f"/v1/admin/projects/{PROJECT}/charts/{chart}?{query}"))
    revenue = api(f"/v1/admin/projects/{PROJECT}/charts/revenue?{query}")
    check(revenue["points"][1]["net_milli"] != 0 and revenue["totals"]["unconverted"], "the scenario has money to show")
    driver.save_screenshot(os.path.join(SHOTS, "17-revenue-charts.png"))
    step("every chart's points and totals equal the API's")

    # The cohorts (by first payment): January's alice, bob and carol; February's none; March's erin (GBP, no rate).
    card = check_retention(api(f"/v1/admin/projects/{PROJECT}/charts/subscription_retention?{query}"))
    check(texts(card, "2025-01-01") == ["100.00 %", "100.00 %", "66.67 %"] + ["33.33 %"] * 10, "January's retention")
    check(texts(card, "2025-02-01") == ["—"] * 13, "February: no cohort")
    check(texts(card, "2025-03-01") == ["100.00 %"] + ["0.00 %"] * 12, "March's retention")
    ltv = present("#chart-realized_ltv")
    check(len(ltv.find_elements(By.CSS_SELECTOR, "svg rect")) == 3, "a bar per cohort")
    per_customer = [c.get_attribute("textContent")
                    for c in ltv.find_elements(By.CSS_SELECTOR, "td[data-measure='net_per_customer_milli']")]
    # January: alice 3 × 6993 − 6993 refunded = 13986, bob 2 × 3493 EUR × 1.1 = 7684, carol 6993 + 41993 = 48986:
    # 70656 for 3 (23552.0000), and for 4 with erin, whose GBP has no rate (17664.0000).
    check(per_customer == ["23.55", "—", "0.00"], f"net per customer: {per_customer}")
    check(ltv.find_element(By.CSS_SELECTOR, "dd[data-measure='net_per_customer_milli']").text == "17.66", "LTV total")
    gbp = ltv.find_element(By.CSS_SELECTOR, "tr[data-date='2025-03-01'] td.unconverted [data-currency='GBP']")
    check(gbp.get_attribute("textContent") == "Customers 1, Net 2.79 GBP, Net per customer 2.79 GBP", f"apart: {gbp.text}")
    driver.execute_script("arguments[0].scrollIntoView()", card)
    driver.save_screenshot(os.path.join(SHOTS, "17-cohort-charts.png"))
    driver.set_window_size(390, 844)
    width = driver.execute_script("return document.documentElement.scrollWidth")
    check(width <= 400, f"the cohort table scrolls in its card at phone width, not the page: {width}")
    driver.set_window_size(1280, 900)
    step("every retention cell and LTV value equals the API's")

    # The filters apply: under the yearly product, carol's plan is a February cohort.
    query = dashboard({"from": FROM, "to": TO, "env": "Sandbox", "interval": "month", "product": "com.e2e.pro.yearly"})
    card = check_retention(api(f"/v1/admin/projects/{PROJECT}/charts/subscription_retention?{query}"))
    check(texts(card, "2025-02-01") == ["100.00 %"] * 12 + ["0.00 %"], "the yearly plan's retention")
    check_chart("realized_ltv", api(f"/v1/admin/projects/{PROJECT}/charts/realized_ltv?{query}"))
    # A range ending today: the 27 customers of the last minutes are a cohort whose month 1 has not begun.
    today = datetime.datetime.now(datetime.timezone.utc).date()
    recent = {"from": (today - datetime.timedelta(days=59)).isoformat(), "to": today.isoformat(), "env": "Sandbox",
              "interval": "month"}
    query = dashboard(recent)
    retention = api(f"/v1/admin/projects/{PROJECT}/charts/subscription_retention?{query}")
    card = check_retention(retention)
    check(sum(p["subscribers"] for p in retention["points"]) == 27, f"the recent cohorts: {retention['points']}")
    last = retention["points"][-1]["date"]
    check(texts(card, last)[0] == "100.00 %" and texts(card, last)[1:] == ["—"] * 12, f"this month: {texts(card, last)}")
    ltv = api(f"/v1/admin/projects/{PROJECT}/charts/realized_ltv?{query}")
    check_chart("realized_ltv", ltv)
    check(ltv["totals"]["customers"] == 27, f"the recent customers: {ltv['totals']}")
    step("the cohort charts follow the range and the filters")

    query = dashboard({"from": FROM, "to": TO, "env": "Sandbox", "interval": "month"})

    mrr_link = driver.find_element(By.CSS_SELECTOR, "#chart-mrr h3 a.customers-link").get_attribute("href")
    check(mrr_link.endswith(f"#/projects/{PROJECT}/customers?environment=Sandbox&status=active"), f"MRR's customers: {mrr_link}")
    bar = driver.find_element(By.CSS_SELECTOR, "#chart-revenue svg a")
    href = bar.get_dom_attribute("href")
    expected = f"#/projects/{PROJECT}/customers?environment=Sandbox&first_seen_from={FROM}&first_seen_to=2025-01-31"
    check(href.endswith(expected), f"the first bar's customers: {href}")
    bar.find_element(By.CSS_SELECTOR, "rect").click()
    wait_for(lambda: driver.current_url.endswith(expected), f"the bar opened its customers: {driver.current_url}")
    list_loaded()
    january = api(f"/v1/admin/projects/{PROJECT}/customers?environment=Sandbox&first_seen_from={FROM}"
                  f"&first_seen_to=2025-01-31&limit=25")
    check(customer_rows() == api_rows(january), f"January's customers: {customer_rows()} != {api_rows(january)}")
    check([r[0] for r in customer_rows()] == ["carol", "bob", "alice"], f"first seen in January: {customer_rows()}")
    check(driver.find_element(By.ID, "filter-first-seen-from").get_attribute("value") == FROM, "the filter is set")
    step("a revenue bar opens the customers first seen in its month")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/customers?sort=-net")
    wait_for(lambda: len(customer_rows()) == 25, "a full first page")
    page = api(f"/v1/admin/projects/{PROJECT}/customers?sort=-net&limit=25")
    check(customer_rows() == api_rows(page), f"the list: {customer_rows()} != {api_rows(page)}")
    step("the list equals the API's")

    Select(driver.find_element(By.ID, "filter-status")).select_by_value("revoked")
    driver.find_element(By.CSS_SELECTOR, "#customer-filters button[type=submit]").click()
    wait_for(lambda: "status=revoked" in driver.current_url, "the filter is in the URL")
    wait_for(lambda: len(customer_rows()) < 25, "the filtered list")
    revoked = api(f"/v1/admin/projects/{PROJECT}/customers?status=revoked&sort=-net&limit=25")
    check(customer_rows() == api_rows(revoked) and [r[0] for r in customer_rows()] == ["alice"],
          f"revoked: {customer_rows()}")
    step("a status filter from the form")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/customers?sort=first_seen")
    wait_for(lambda: len(customer_rows()) == 25, "page 1")
    walked = [r[0] for r in customer_rows()]
    first_page = list(walked)
    driver.find_element(By.ID, "customers-next").click()
    wait_for(lambda: driver.find_element(By.ID, "customers-page").text == "Page 2", "page 2")
    wait_for(lambda: customer_rows() and customer_rows()[0][0] not in first_page, "page 2's rows")
    walked += [r[0] for r in customer_rows()]
    check(not driver.find_elements(By.CSS_SELECTOR, "#customers-next:not([hidden])"), "two pages in all")
    everyone, cursor = [], None
    while True:
        chunk = api(f"/v1/admin/projects/{PROJECT}/customers?sort=first_seen&limit=25"
                    + (f"&cursor={cursor}" if cursor else ""))
        everyone += [c["user_id"] for c in chunk["customers"]]
        cursor = chunk["next_cursor"]
        if not cursor:
            break
    check(walked == everyone and len(everyone) == 31, f"walked {walked} != {everyone}")
    driver.find_element(By.ID, "customers-previous").click()
    wait_for(lambda: driver.find_element(By.ID, "customers-page").text == "Page 1", "back on page 1")
    wait_for(lambda: [r[0] for r in customer_rows()] == first_page, "page 1's rows again")
    step("pages walked forward and back")

    violations = [e for e in driver.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    check(not violations, f"no CSP violations: {violations}")
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script errors: {errors}")
    step("no CSP violations")
except Exception as error:  # noqa: BLE001 - report any failure with the page state
    print(f"FAILED {error}")
    try:
        driver.save_screenshot(os.path.join(SHOTS, "17-revenue-failed.png"))
        print(driver.current_url)
        print(driver.find_element(By.TAG_NAME, "main").text[:3000])
        print(driver.get_log("browser"))
    except Exception:  # noqa: BLE001
        pass
    driver.quit()
    sys.exit(1)
driver.quit()
