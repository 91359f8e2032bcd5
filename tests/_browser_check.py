"""Open a page in headless Chromium and report what a reader's browser would do with it: console
errors and exceptions, network requests, the rendered size of every image, a full-page screenshot.

Talks the DevTools protocol over --remote-debugging-pipe (file descriptors 3 and 4, JSON messages
ending in NUL), so it needs the chromium binary and nothing else.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
IMAGES_JS = """JSON.stringify(Array.from(document.querySelectorAll('img')).map(i => {
  const r = i.getBoundingClientRect();
  return {alt: i.alt, width: r.width, height: r.height, natural: i.naturalWidth, complete: i.complete};
}))"""


def find_browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


@dataclass
class PageCheck:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for, the page itself aside
    images: list[dict] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # alert/confirm/prompt opened: a script ran
    screenshot: Path | None = None
    height: int = 0


class _Pipe:
    def __init__(self, process: subprocess.Popen, send_fd: int, receive_fd: int):
        self.process, self.send_fd, self.receive_fd = process, send_fd, receive_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the browser")
            chunk = os.read(self.receive_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.send_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event


def _start(browser: str, profile: str) -> _Pipe:
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def wire():  # the child's fd 3 reads commands, fd 4 writes replies
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 100)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 100)
        os.dup2(high_r, 3)
        os.dup2(high_w, 4)

    process = subprocess.Popen(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--metrics-recording-only", "--hide-scrollbars", f"--user-data-dir={profile}",
         "--remote-debugging-pipe", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=wire, close_fds=False,  # the pipes themselves are close-on-exec; fds 3 and 4 are not
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    return _Pipe(process, to_browser_w, from_browser_r)


class LivePage:
    """A page loaded in headless Chromium that a test drives: evaluate JavaScript, press Tab, read what
    the browser reported so far (console errors, requests, dialogs)."""

    def __init__(self, pipe: _Pipe, session: str, url: str):
        self.pipe, self.session, self.url = pipe, session, url

    def evaluate(self, expression: str):
        reply = self.pipe.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                               session=self.session)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression[:80]}: {reply['exceptionDetails'].get('text')}")
        return reply["result"].get("value")

    def press_tab(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.pipe.call("Input.dispatchKeyEvent", {"type": kind, "key": "Tab", "code": "Tab",
                                                      "windowsVirtualKeyCode": 9}, session=self.session)

    def report(self) -> PageCheck:
        return _summarise(self.pipe.events, self.url, [], None, 0)


@contextlib.contextmanager
def live_page(page: Path, width: int = 1280, fragment: str = "", browser: str | None = None):
    """`page` loaded from its file URL (plus `fragment`) at `width` CSS pixels, for a test to drive."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError("no chromium binary on PATH")
    url = page.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        pipe = _start(browser, profile)
        try:
            target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                pipe.call(f"{domain}.enable", session=session)
            pipe.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=session)
            pipe.events.clear()
            pipe.call("Page.navigate", {"url": url + fragment}, session=session)
            pipe.wait_for("Page.loadEventFired")
            yield LivePage(pipe, session, url)
        finally:
            _close(pipe)


def _close(pipe: _Pipe) -> None:
    try:
        pipe.call("Browser.close", timeout=10)
    except Exception:  # the browser may already be gone
        pass
    try:
        pipe.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pipe.process.kill()
    os.close(pipe.send_fd)
    os.close(pipe.receive_fd)


def check_page(page: Path, screenshot: Path, width: int = 1280, browser: str | None = None,
               fragment: str = "") -> PageCheck:
    """Load `page` from its file URL (plus `fragment`, e.g. "#anchor") at `width` CSS pixels and write a
    full-page PNG to `screenshot`."""
    with live_page(page, width, fragment, browser) as live:
        images = json.loads(live.evaluate(IMAGES_JS))
        height = int(live.pipe.call("Page.getLayoutMetrics", session=live.session)["cssContentSize"]["height"])
        live.pipe.call("Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=live.session)
        shot = live.pipe.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                              session=live.session)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        return _summarise(live.pipe.events, live.url, images, screenshot, height)


def _summarise(events: list[dict], url: str, images: list[dict], screenshot: Path, height: int) -> PageCheck:
    check = PageCheck(images=images, screenshot=screenshot, height=height)
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            check.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            check.console_errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            check.console_errors.append(params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            requested = params["request"]["url"]
            if requested != url and not requested.startswith("data:"):
                check.requests.append(requested)
        elif method == "Page.javascriptDialogOpening":
            check.dialogs.append(params.get("message", ""))
    return check
