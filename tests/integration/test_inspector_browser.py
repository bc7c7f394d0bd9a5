"""The web inspector in a real headless browser (Debian's Chromium through its ChromeDriver, driven by Selenium):
a 4-round repair trajectory with one route per planned round and the counterexample marked, a checkpoint forked
into a new thread, a run stepped to its end, a bench run beside its gold route, markup in a request shown as text.

Screenshots go to the test's folder; with CLOUDBRAIN_SCREENSHOTS=DIR they are written there too (docs/ holds the
ones the README links)."""

from __future__ import annotations

import contextlib
import copy
import io
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from cli.main import main
from graph.checkpoint import sqlite_checkpointer
from graph.runner import run_task
from graph.settings import RunSettings
from inspector.app import create_app
from tests.support.graph_fixtures import answer, scripted_context
from tests.support.ir_fixtures import NFZ_FORGOTTEN_IR, SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer, StubReply
from tools.world import World

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
FOUR_ROUNDS = "four-rounds"
MARKUP = "Deliver from hospital_A to hospital_B <script>alert('x')</script>"
PAGE_LOAD_LIMIT_MS = 1000


def _four_round_thread(world: World, saver) -> None:
    """Two rounds refused at validate (an unknown destination), one that flies through nfz_temp_1 (R1), one repaired."""
    unknown = copy.deepcopy(NFZ_FORGOTTEN_IR)
    unknown["entities"]["destination"] = "accident_site_99"
    replies = [
        answer(unknown),
        answer(unknown),
        answer(NFZ_FORGOTTEN_IR),
        StubReply(content='{"repair": "avoid:nfz_temp_1"}'),
    ]
    with OpenAIStubServer(*replies) as server:
        context = scripted_context(server, max_repairs=3, without=frozenset({"memory"}))
        out = run_task(world, SEED_INSTRUCTION, context=context, thread_id=FOUR_ROUNDS, checkpointer=saver)
    assert out.status == "execute" and out.rounds == 3


def _bench_results(folder: Path) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["bench", "generate", "--split", "dev_mini", "--limit", "3", "--seed", "5", "--out", str(folder)]) == 0
        )
        args = ["bench", "run", "--split", "dev_mini", "--data", str(folder), "--method", "cloudbrain_full"]
        args += ["--model", "rules", "--limit", "3", "--workers", "1", "--quiet", "--out", str(folder / "results")]
        assert main(args) == 0
    return folder / "results"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, downtown: World) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("inspector")
    saver = sqlite_checkpointer(folder / "runs.sqlite")
    _four_round_thread(downtown, saver)
    app = create_app(
        saver,
        settings=RunSettings(model="rules", without={"memory"}),
        world=downtown,
        results=_bench_results(folder / "bench"),
        store_name="test store",
    )
    yield from serve(app)


def serve(app) -> Iterator[str]:
    """The app served on a free local port in a thread, for a module fixture to `yield from`: its base URL, then the
    server stopped."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the inspector did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    assert Path(CHROMEDRIVER).exists(), "ChromeDriver missing: `make test` installs Debian's chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1600",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def _follow(browser: webdriver.Chrome, element) -> None:
    """Click a link or button and wait until the next page has replaced this one and finished loading (a flag set
    on this page's window is gone on the next)."""
    browser.execute_script("window.leftBehind = true;")
    element.click()

    def arrived(driver: webdriver.Chrome) -> bool:
        try:
            return driver.execute_script("return window.leftBehind !== true && document.readyState === 'complete';")
        except WebDriverException:  # the old document is being torn down
            return False

    WebDriverWait(browser, 30).until(arrived)


def _screenshot(driver: webdriver.Chrome, tmp_path: Path, name: str) -> None:
    driver.save_screenshot(str(tmp_path / name))
    if target := os.environ.get("CLOUDBRAIN_SCREENSHOTS"):
        shutil.copy(tmp_path / name, Path(target) / name)


def test_a_four_round_thread_shows_each_planned_route_and_the_counterexample(site, browser, tmp_path):
    browser.get(site + "/")
    _follow(browser, browser.find_element(By.LINK_TEXT, FOUR_ROUNDS))
    load_ms = browser.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime;"
    )
    print(f"\n4-round thread page: loaded in {load_ms:.0f} ms")
    assert 0 < load_ms < PAGE_LOAD_LIMIT_MS
    assert len(browser.find_elements(By.CSS_SELECTOR, "li.round")) == 4
    routes = {g.get_attribute("data-label") for g in browser.find_elements(By.CSS_SELECTOR, "svg.world-map g.route")}
    assert routes == {"round 2", "round 3", "decision"}  # rounds 0 and 1 ended at validate, before any route
    [marker] = browser.find_elements(By.CSS_SELECTOR, "svg.world-map g.counterexample")
    assert marker.get_attribute("data-rule") == "R1" and marker.get_attribute("data-entity") == "nfz_temp_1"
    assert browser.find_elements(By.CSS_SELECTOR, "svg.altitude-profile g.counterexample")
    _screenshot(browser, tmp_path, "inspector-thread.png")
    _follow(browser, browser.find_element(By.ID, "recheck"))
    assert browser.find_element(By.ID, "recheck-result").text == "valid: the certificate re-checks"


def test_a_checkpoint_forks_into_a_new_thread_that_runs_to_its_end(site, browser):
    browser.get(f"{site}/thread/{FOUR_ROUNDS}/checkpoints")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.checkpoint-row")
    written_by = [row.find_elements(By.TAG_NAME, "td")[2].text for row in rows]
    validated = [row for row, node in zip(rows, written_by) if node == "validate"]
    _follow(
        browser, validated[2].find_element(By.TAG_NAME, "a")
    )  # round 2: the IR that forgot nfz_temp_1, just validated
    assert '"ir": {' in browser.find_element(By.ID, "state").text
    before = {row.get_attribute("data-thread") for row in _thread_rows(browser, site)}
    browser.back()
    browser.find_element(By.ID, "edits").send_keys('ir.entities.avoid_zones=["nfz_temp_1", "school_zone_2"]')
    _follow(browser, browser.find_element(By.ID, "fork"))
    new_thread = browser.current_url.rsplit("/", 1)[1]
    # the edited IR keeps out of the zone round 2 flew through: the fork executes without a repair of its own
    assert new_thread not in before and browser.find_element(By.ID, "status").text == "execute"
    assert new_thread in {row.get_attribute("data-thread") for row in _thread_rows(browser, site)}


def _thread_rows(browser: webdriver.Chrome, site: str) -> list:
    browser.get(site + "/")
    return browser.find_elements(By.CSS_SELECTOR, "tr.thread-row")


def test_a_run_is_stepped_node_by_node_to_its_end_and_markup_stays_text(site, browser):
    browser.get(site + "/step")
    browser.find_element(By.ID, "instruction").send_keys(MARKUP)
    browser.find_element(By.ID, "model").send_keys("rules")
    _follow(browser, browser.find_element(By.ID, "start"))
    assert browser.find_element(By.ID, "next-node").text == "paused before retrieve"
    _follow(browser, browser.find_element(By.ID, "next"))
    assert browser.find_element(By.ID, "next-node").text == "paused before generate_ir"
    _follow(browser, browser.find_element(By.ID, "continue"))
    assert browser.find_element(By.ID, "finished").text.startswith("run finished:")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 (the script never ran)
    cells = [row.find_element(By.CSS_SELECTOR, "td.instruction").text for row in _thread_rows(browser, site)]
    assert MARKUP in cells
    assert not browser.execute_script("return [...document.scripts].some(s => s.text.includes(\"alert('x')\"))")


def test_a_bench_run_opens_with_its_route_beside_the_gold_route(site, browser, tmp_path):
    """Every executed run draws the method's route(s) beside the gold's; a fleet sample's (dev_mini-00000 at seed 5)
    each member's, labelled by sub-task and role."""
    browser.get(site + "/bench?status=execute")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.bench-row")
    assert rows and all(row.find_element(By.CSS_SELECTOR, "td.status").text == "execute" for row in rows)
    links = [row.find_element(By.TAG_NAME, "a").get_attribute("href") for row in rows]
    drawn = {}
    for link in links:
        browser.get(link)
        labels = [
            g.get_attribute("data-label") for g in browser.find_elements(By.CSS_SELECTOR, "svg.world-map g.route")
        ]
        drawn[link] = labels
        ours = [label for label in labels if label.startswith("cloudbrain_full")]
        gold = [label for label in labels if label.startswith("gold")]
        assert ours and gold and len(ours) + len(gold) == len(labels), labels
    teams = [labels for labels in drawn.values() if len(labels) > 2]
    assert teams and all(
        label.split()[0] in ("cloudbrain_full", "gold") and len(label.split()) == 3 for label in teams[0]
    )
    _screenshot(browser, tmp_path, "inspector-bench-run.png")


def test_a_bad_id_is_a_404_page_with_a_message(site, browser):
    browser.get(site + "/thread/no-such-thread")
    assert "no thread 'no-such-thread'" in browser.find_element(By.ID, "error-message").text
