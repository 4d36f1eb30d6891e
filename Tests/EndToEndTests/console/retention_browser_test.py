#!/usr/bin/env python3
"""Drives the console's Retention page in headless Chromium (Selenium), against a live `bouncer serve` wired to the
fake Apple.

Run by RetentionAdminE2ETests.testRetentionPageInHeadlessChromium (Swift), which passes in the environment:
BOUNCER_URL, ADMIN_TOKEN, PROJECT_ID, MESSAGE_ID (a message already at Apple), ORIGINAL_TRANSACTION_ID (of a
recorded decision), SCREENSHOT_DIR. Prints one "STEP ..." line per checked step and "UPLOADED <id>" for the message
it uploaded; exits 0 only when every check held, 3 when Chromium/Selenium are missing.
"""
import os
import sys

from headless import EC, By, WebDriverWait, check, chrome, step

URL = os.environ["BOUNCER_URL"].rstrip("/")
TOKEN = os.environ["ADMIN_TOKEN"]
PROJECT = os.environ["PROJECT_ID"]
MESSAGE = os.environ["MESSAGE_ID"]
PURCHASE = os.environ["ORIGINAL_TRANSACTION_ID"]
SHOTS = os.environ.get("SCREENSHOT_DIR", ".build/console-screenshots")
os.makedirs(SHOTS, exist_ok=True)


driver = chrome()
wait = WebDriverWait(driver, 20)


def visible(css):
    return wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))


try:
    driver.get(f"{URL}/admin/")
    visible("#token").send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    visible("#create-project-form")
    step("signed in")

    driver.get(f"{URL}/admin/#/projects/{PROJECT}/retention")
    rules = visible("#retention-rules-json")
    check('"name": "everyone"' in rules.text, f"the rules are shown as JSON: {rules.text!r}")
    links = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#nav a")]
    check("Retention" in links, f"the project's navigation links the page: {links}")
    step("rules shown")

    row = visible(f"#retention-message-list tr[data-message='{MESSAGE}']")
    check(row.find_element(By.CSS_SELECTOR, ".state").text == "APPROVED", f"the message's state: {row.text!r}")
    step("messages listed with their state")

    decision = visible("#retention-decision-list tr[data-action='message']")
    check(PURCHASE in decision.text and "Rule 1" in decision.text, f"the decision and its reason: {decision.text!r}")
    step("latest decisions listed")

    driver.find_element(By.ID, "retention-header").send_keys("Stay with us")
    driver.find_element(By.ID, "retention-body").send_keys("Half price for 3 months")
    driver.find_element(By.CSS_SELECTOR, "#retention-upload-form button[type=submit]").click()
    uploaded = visible("#retention-uploaded").text
    uploaded_id = uploaded.removeprefix("Uploaded message ").removesuffix(".")
    print(f"UPLOADED {uploaded_id}", flush=True)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#retention-message-list tr[data-message='{uploaded_id}']"))
    step("text message uploaded and listed")

    # A header past Apple's bound (the form's maxlength removed) is refused before Apple is asked, and shown.
    driver.execute_script("document.getElementById('retention-header').removeAttribute('maxlength')")
    driver.find_element(By.ID, "retention-header").send_keys("h" * 67)
    driver.find_element(By.ID, "retention-body").send_keys("Body")
    driver.find_element(By.CSS_SELECTOR, "#retention-upload-form button[type=submit]").click()
    visible(".alert[data-code='VALIDATION_ERROR']")
    step("a refused upload shows the error")

    driver.save_screenshot(os.path.join(SHOTS, "16-retention.png"))
    logs = [entry for entry in driver.get_log("browser") if "Content Security Policy" in entry.get("message", "")]
    check(not logs, f"no CSP violations: {logs}")
    step("no CSP violations")
except Exception as error:  # report, screenshot, fail
    print(f"FAILED {type(error).__name__}: {error}")
    try:
        driver.save_screenshot(os.path.join(SHOTS, "retention-failure.png"))
        print("BROWSER LOG " + str(driver.get_log("browser"))[:4000])
    except Exception:
        pass
    driver.quit()
    sys.exit(1)
driver.quit()
