"""Headless Chromium from Debian's ``chromium`` and ``chromium-driver`` packages, driven by Selenium through an
explicit driver path (so Selenium never looks online for one), for tests of the offline HTML pages: every request
that is not ``file:`` or ``data:`` is blocked (Chrome DevTools' ``Network.setBlockedURLs``) and recorded (the
performance log), and the browser's console log is read for errors. Where the browser is missing, a test fails
under ``CI=true`` and is skipped elsewhere, naming the install line."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = "apt-get update && apt-get install -y chromium chromium-driver (and pip install selenium: the test extra)"
# every scheme a page could reach the network or another origin by; file: and data: stay allowed
BLOCKED = ["http:*", "https:*", "ws:*", "wss:*", "ftp:*", "blob:*", "chrome-extension:*", "filesystem:*"]
ALLOWED_SCHEMES = ("file:", "data:")


def missing_browser(reason: str) -> None:
    """Fail under CI (where make test installs the browser: scripts/system_packages.sh), skip elsewhere, naming the
    install line."""
    message = f"{reason}: {INSTALL}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class PageProblems:
    """What a loaded page did wrong: requests to anything but file: and data:, and console or page errors."""

    requests: list[str]
    errors: list[str]

    @property
    def clean(self) -> bool:
        return not self.requests and not self.errors


class Browser:
    """A headless Chromium that opens local files with the network blocked."""

    def __init__(self, driver):
        self.driver = driver

    def open(self, path: Path) -> PageProblems:
        """Load ``path`` from file:// and return what it did wrong (every log read up to now is cleared)."""
        self.driver.get_log("browser")
        self.driver.get_log("performance")
        self.driver.get(path.resolve().as_uri())
        return self.problems()

    def problems(self) -> PageProblems:
        """The requests and errors since the last read of the logs."""
        requests = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                url = message["params"]["request"]["url"]
                if not url.startswith(ALLOWED_SCHEMES):
                    requests.append(url)
        errors = [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        return PageProblems(requests, errors)

    def run(self, script: str, *args):
        return self.driver.execute_script(script, *args)


def start_browser() -> Browser:
    """The browser, or the test skipped (failed under CI) where it or Selenium is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing_browser("selenium is not installed")
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        missing_browser(f"no {CHROMIUM} or {CHROMEDRIVER}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-default-apps"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": BLOCKED})
    return Browser(driver)
