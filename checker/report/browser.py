"""Headless Chromium, for the report's browser test and its screenshot: load a page from a file,
dump the DOM after scripts ran, take a screenshot. Every call uses a fresh profile folder and
flags that keep the browser off the network."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


def find() -> str | None:
    """The path of a Chromium-family browser, or None."""
    for n in NAMES:
        p = shutil.which(n)
        if p:
            return p
    return None


def _run(page: Path, extra: list[str], timeout: float) -> subprocess.CompletedProcess:
    exe = find()
    if exe is None:
        raise RuntimeError("no Chromium found (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="ptxmc-chromium-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra,
               Path(page).resolve().as_uri()]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def dump_dom(page: Path, timeout: float = 120.0) -> tuple[str, str]:
    """(the DOM after load as HTML, the browser's log)."""
    p = _run(page, ["--dump-dom", "--virtual-time-budget=5000"], timeout)
    return p.stdout, p.stderr


def screenshot(page: Path, out: Path, size: str = "1280,1600", timeout: float = 120.0) -> str:
    """Save a PNG of the page's top `size` pixels to `out`; returns the browser's log."""
    p = _run(page, [f"--screenshot={Path(out).resolve()}", f"--window-size={size}",
                    "--virtual-time-budget=5000"], timeout)
    if not Path(out).exists():
        raise RuntimeError(f"Chromium wrote no screenshot (exit {p.returncode}): {p.stderr[-500:]}")
    return p.stderr
