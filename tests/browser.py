"""A headless Chromium for tests (Debian's `chromium` and `chromium-driver`, driven
by selenium): one session per test module, console errors collected."""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts"      # ignored by git: screenshots to look at
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1300,1000")


def _find(*names: str) -> str | None:
    for n in names:
        path = shutil.which(n)
        if path:
            return path
    return None


def chromium() -> Iterator[object]:
    """Yield a selenium Chrome driver; skip (with the reason) when it cannot run here."""
    browser = _find("chromium", "chromium-browser")
    driver = _find("chromedriver")
    if browser is None or driver is None:
        pytest.skip("chromium and chromium-driver are not installed (CI installs them: "
                    "apt-get install -y chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[test]')")
    profile = tempfile.mkdtemp(prefix="ibwire-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(drv: object, name: str) -> Path:
    """The whole page as a PNG under tests/artifacts/ (DevTools full-page capture)."""
    ARTIFACTS.mkdir(exist_ok=True)
    height = drv.execute_script("return document.documentElement.scrollHeight")
    shot = drv.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": 1300, "height": height, "scale": 1}})
    path = ARTIFACTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"screenshot: {path}")
    return path
