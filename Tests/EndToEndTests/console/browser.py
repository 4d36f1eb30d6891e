"""What the console's browser tests share: STEP lines, checks, and headless Chromium under Selenium.

Importing it exits 3 when Selenium, Chromium or chromedriver is missing (the Swift tests turn that into a skip, or a
failure in CI).
"""
import os
import sys

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By  # noqa: F401 - re-exported for the scripts
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


def find_binary(*names):
    for name in names:
        for directory in os.environ.get("PATH", "").split(":") + ["/usr/bin", "/usr/lib/chromium"]:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def start_chromium(prefs=None):
    """A headless Chromium (1280x900, its console log kept), with `prefs` (e.g. the download folder)."""
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
    if prefs:
        options.add_experimental_option("prefs", prefs)
    return webdriver.Chrome(service=Service(driver_path), options=options)
