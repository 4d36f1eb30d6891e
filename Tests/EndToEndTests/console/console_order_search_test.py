#!/usr/bin/env python3
"""Drives the console's customer search with an App Store order id in headless Chromium (Selenium).

Run by ConsoleOrderSearchE2ETests (Swift), which starts a server wired to the fake Apple and passes, in the
environment: BOUNCER_URL, ADMIN_TOKEN, PROJECT_ID, ORDER_ID, USER_ID (who holds the order's first purchase),
TRANSACTION_IDS (the order's, comma-separated, in Apple's order), SCREENSHOT_DIR. Prints one "STEP ..." line per
checked step; exits 0 only when every check held. Exit 3 means Chromium/Selenium are missing.
"""
import os
import sys

from headless import EC, By, WebDriverWait, check, chrome, step

URL = os.environ["BOUNCER_URL"].rstrip("/")
TOKEN = os.environ["ADMIN_TOKEN"]
PROJECT = os.environ["PROJECT_ID"]
ORDER = os.environ["ORDER_ID"]
USER = os.environ["USER_ID"]
TRANSACTIONS = os.environ["TRANSACTION_IDS"].split(",")
SHOTS = os.environ.get("SCREENSHOT_DIR", ".build/console-screenshots")
os.makedirs(SHOTS, exist_ok=True)


driver = chrome()
wait = WebDriverWait(driver, 20)


def visible(css):
    return wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))


def search(text):
    box = visible("#customer-transaction-id")
    box.clear()
    box.send_keys(text)
    driver.find_element(By.CSS_SELECTOR, "#transaction-search-form button[type=submit]").click()


try:
    driver.get(f"{URL}/admin/")
    visible("#token").send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    step("signed in")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/customers")
    search(ORDER)
    visible("#order-result")
    check(driver.current_url.endswith(f"#/projects/{PROJECT}/customers?order={ORDER}"),
          f"an order id searches orders: {driver.current_url}")
    check(driver.find_element(By.ID, "order-status").text == "valid", "the order is valid")
    rows = [r.get_attribute("data-transaction-id")
            for r in driver.find_elements(By.CSS_SELECTOR, "#order-transactions tr[data-transaction-id]")]
    check(rows == TRANSACTIONS, f"the order's transactions in Apple's order: {rows} != {TRANSACTIONS}")
    holders = [a.get_attribute("data-user-id") for a in driver.find_elements(By.CSS_SELECTOR, "#order-holders a")]
    check(holders == [USER], f"the order's users: {holders}")
    driver.save_screenshot(os.path.join(SHOTS, "16-order-search.png"))
    step("order id found: transactions and users")

    driver.find_element(By.CSS_SELECTOR, f"#order-holders a[data-user-id='{USER}']").click()
    status = visible("#customer-status")
    check(status.text == "active", f"the holder's customer page: {status.text}")
    step("order holder opens the customer")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/customers")
    search(TRANSACTIONS[0])
    visible("#transaction-result")
    check(driver.current_url.endswith(f"?transaction={TRANSACTIONS[0]}"), f"digits search transactions: {driver.current_url}")
    step("a transaction id still searches transactions")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/customers")
    search("NOSUCHORDER1")
    wait.until(lambda d: d.current_url.endswith("?order=NOSUCHORDER1"))
    check(visible("#order-status").text == "invalid", "an order Apple does not know is invalid")
    check(not driver.find_elements(By.CSS_SELECTOR, "#order-transactions tr[data-transaction-id]"), "with no transactions")
    step("unknown order is invalid, with nothing listed")

    violations = [e for e in driver.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    check(not violations, f"no CSP violations: {violations}")
    step("no CSP violations")
except Exception as error:  # noqa: BLE001 - report any failure with the page state
    print(f"FAILED {error}")
    try:
        driver.save_screenshot(os.path.join(SHOTS, "16-order-search-failed.png"))
        print(driver.find_element(By.TAG_NAME, "main").text[:2000])
    except Exception:  # noqa: BLE001
        pass
    driver.quit()
    sys.exit(1)
driver.quit()
