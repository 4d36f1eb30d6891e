"""Headless Chromium (Selenium) for the console's browser tests: the one place that finds the browser and starts it.

A missing Selenium, Chromium or chromedriver exits with status 3, which the Swift tests turn into a skip (or a
failure in CI, which installs them).
"""
import os
import sys
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By  # noqa: F401 (re-exported for the scripts)
    from selenium.webdriver.support import expected_conditions as EC  # noqa: F401
    from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: F401
except ImportError as error:
    print(f"MISSING selenium: {error}")
    sys.exit(3)


def step(text):
    print(f"STEP {text}", flush=True)


def check(condition, text):
    if not condition:
        raise AssertionError(text)


def wait_for(condition, text, seconds=20):
    """The first truthy value of condition(), polled; an exception (an element gone while the page redraws) is "not
    yet". AssertionError(text) after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # noqa: BLE001
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(text)


def find_binary(*names):
    for name in names:
        for directory in os.environ.get("PATH", "").split(":") + ["/usr/bin", "/usr/lib/chromium"]:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def chrome(downloads=None):
    """A headless Chromium with its browser log kept; downloads (if given) land in that directory unasked."""
    chromium = find_binary("chromium", "chromium-browser", "google-chrome")
    driver_path = find_binary("chromedriver")
    if not chromium or not driver_path:
        print(f"MISSING browser: chromium={chromium} chromedriver={driver_path}")
        sys.exit(3)
    options = Options()
    options.binary_location = chromium
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900",
                "--disable-extensions", "--no-first-run"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if downloads:
        options.add_experimental_option("prefs", {"download.default_directory": os.path.abspath(downloads),
                                                  "download.prompt_for_download": False})
    return webdriver.Chrome(service=Service(driver_path), options=options)
