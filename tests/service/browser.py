"""Headless Chromium for the browser tests: Debian's ``chromium`` and ``chromium-driver``
(installed by ``tools/install-browser.sh``, which the README's test command runs), driven by
Selenium. A missing browser is an error naming that script, never a skip."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1500,1100", "--force-device-scale-factor=1")


@contextmanager
def chromium() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        raise RuntimeError("chromium and chromedriver are needed: run tools/install-browser.sh "
                           "(the README's test command does)")
    with tempfile.TemporaryDirectory(prefix="hlo-layout-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def wait_for(driver: Any, script: str, timeout: float = 60.0) -> Any:
    """Poll ``script`` (JavaScript returning a value) until it is truthy; return the value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(script))
