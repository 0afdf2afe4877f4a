"""The page tests' browser: Debian's chromium and chromium-driver through selenium, one a worker
(conftest.py takes the fixtures; the page tests run on one worker, in the xdist group "page", and
a start and its first page cost what four more pages do), and what the tests do in it: open a
page file, wait, click a box, read texts, check that the page made no request and logged no error.

Every page file opens from one path: V8 keeps the scripts it compiled for the next load of the
same source at the same URL and line, so plotly.js (most of a load's CPU) is compiled once for
the worker, not once a page.  Where chromium, chromedriver or selenium is missing, the browser
tests skip.
"""

import os
import shutil
import signal
import tempfile
import time

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
WINDOW = (1400, 1200)  # each test's window, width and height


# ------------------------------------------------------------------ in a browser

class _Chromium:
    """The worker's one chromium, started again where it died or hung: a crashed browser (or
    renderer: "tab crashed") would fail every later page test of the worker, not the one it
    crashed in, and a hung one made each later test wait out selenium's two minutes (a CI run
    spent an hour so)."""

    ANSWER = 60  # seconds any one command may take, a page's load under a busy suite included
    ALIVE = 15   # seconds "return 1" may take before the browser is taken for hung

    def __init__(self):
        self.where = tempfile.mkdtemp(prefix="smem-chromium-")
        self.driver = None

    def live(self):
        if self.driver is not None:
            config = self.driver.command_executor.client_config
            config.timeout = self.ALIVE
            try:
                self.driver.execute_script("return 1")
                return self.driver
            except Exception:  # (dead: a WebDriverException; hung: urllib3's ReadTimeoutError)
                self.kill()
            finally:
                config.timeout = self.ANSWER
        self.driver = _started(os.path.join(self.where, "profile"))
        self.driver.command_executor.client_config.timeout = self.ANSWER
        self.driver.set_page_load_timeout(self.ANSWER)
        self.driver.set_script_timeout(self.ANSWER)
        self.driver.smem_page_file = os.path.join(self.where, "page.html")  # where _open_file shows every page
        return self.driver

    def kill(self):
        """Kill chromedriver and every chromium it started, without asking either (a hung browser
        would not answer): chromedriver leads its own process group, and a chromium process that
        left it still names the profile on its command line."""
        driver, self.driver = self.driver, None
        if driver is None:
            return
        process = driver.service.process
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()
        profile = os.fsencode(self.where)
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if profile in f.read():
                        os.kill(int(name), signal.SIGKILL)
            except (OSError, ValueError):
                continue

    def quit(self):
        driver = self.driver
        if driver is not None:
            driver.command_executor.client_config.timeout = self.ALIVE
            try:
                driver.quit()
                self.driver = None
            except Exception:  # (a browser that died or hung: its driver may be gone too)
                self.kill()


def _started(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    shutil.rmtree(profile, ignore_errors=True)  # (a dead one's profile is locked)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=%d,%d" % WINDOW, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER, popen_kw={"start_new_session": True})
    return webdriver.Chrome(service=service, options=options)


@pytest.fixture(scope="session")
def _chromium():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromium-driver are not installed")
    pytest.importorskip("selenium.webdriver", reason="smem[test]: selenium not installed")
    chromium = _Chromium()
    try:
        yield chromium
    finally:
        chromium.quit()
        shutil.rmtree(chromium.where, ignore_errors=True)


@pytest.fixture
def browser(_chromium):
    """The worker's chromium, alive."""
    return _chromium.live()


@pytest.fixture(autouse=True)
def _blank_when_done(request):
    """A browser test leaves the browser on a blank page: nothing of its page (the served page's
    refreshes, a chart's timers) runs on while the module's other tests do."""
    yield
    if "browser" in request.fixturenames:
        try:
            chromium = request.getfixturevalue("_chromium")
        except pytest.skip.Exception:  # no chromium: the test was skipped
            return
        if chromium.driver is not None:
            config = chromium.driver.command_executor.client_config
            config.timeout = chromium.ALIVE
            try:
                chromium.driver.get("about:blank")
                chromium.driver.set_window_size(*WINDOW)  # (where a failed test left it narrower)
            except Exception:  # (it died or hung: the next test starts another)
                chromium.kill()
            else:
                config.timeout = chromium.ANSWER


def _open(browser, url):
    if browser.current_url != "about:blank":  # (where _blank_when_done leaves it)
        browser.get("about:blank")
    browser.get_log("browser")  # what came before is not this page's
    # a file opens with the network off; smem serve's page (127.0.0.1) needs it on
    browser.set_network_conditions(offline=url.startswith("file:"), latency=0, download_throughput=-1,
                                   upload_throughput=-1)
    browser.get(url)
    for _ in range(300):
        if browser.execute_script("return document.body && document.body.getAttribute('data-ready')"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the page did not start: {browser.get_log('browser')}")


def _open_file(browser, path):
    """Open the page file ``path`` from the module's one page path, where it is copied first
    (see the module's docstring)."""
    shutil.copyfile(path, browser.smem_page_file)
    _open(browser, "file://" + browser.smem_page_file)


def _no_requests_and_no_errors(browser):
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    messages = [entry["message"] for entry in browser.get_log("browser")]
    assert not messages, messages


def _wait(browser, script, timeout=20):
    for _ in range(int(timeout / 0.05)):
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"never true: {script}; the browser's log: {browser.get_log('browser')}")


def _click_box(browser, label):
    """Click the hierarchy's box whose label starts ``label`` (its text element, as a person would)."""
    from selenium.webdriver.common.action_chains import ActionChains
    text = browser.execute_script("""return [...document.querySelectorAll('#chart g.slice')]
        .map((box) => box.querySelector('text.slicetext')).find((t) => t && t.textContent.startsWith(arguments[0]))""",
                                  label)
    if text is None:
        pytest.fail(f"no box labelled {label!r}")
    ActionChains(browser).move_to_element(text).click().perform()


def _texts(browser, selector):
    """The text shown in each element ``selector`` finds (one round trip, not one an element)."""
    return browser.execute_script("return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)",
                                  selector)
