"""The Prefect UI, driven in headless Chromium (Debian's chromium + chromedriver, Selenium):
open a deployment's run form, change parameters in it, submit, and see the run complete with
its results in DuckDB. CI installs chromium (.ci/run); elsewhere the test says what is missing.
"""

import json
import shutil
import time

import pytest

from storage.store import Store
from tasks.hardware import profile_name
from tests.service_client import api, wait_for_run

# One service for the whole run: under pytest-xdist these tests share one worker.
pytestmark = pytest.mark.xdist_group("service")

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
DEPLOYMENT = f"collect-{profile_name('local-1t')}"  # this machine's 1-thread profile's pool


@pytest.fixture
def browser():
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium "
                    "chromium-driver; .ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    # headless as root, and quiet: no background connections on a closed network
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(60)
    try:
        yield driver
    finally:
        driver.quit()


def field_with_value(driver, tag: str, value: str):
    """The form field (input/textarea) currently showing `value`."""
    for element in driver.find_elements("tag name", tag):
        if element.get_attribute("value") == value:
            return element
    raise AssertionError(f"no <{tag}> showing {value!r} in the run form")


def replace_text(element, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(text)


def new_run(api_url: str, deployment_id: str, known: set[str], wait_s: float):
    """The first flow run of the deployment not in `known`, waiting up to `wait_s`."""
    until = time.monotonic() + wait_s
    while True:
        _, runs = api(api_url, "POST", "/flow_runs/filter",
                      {"flow_runs": {"deployment_id": {"any_": [deployment_id]}}})
        run = next((r for r in runs if r["id"] not in known), None)
        if run is not None or time.monotonic() > until:
            return run
        time.sleep(0.5)


def submit_and_find_run(driver, submit, api_url: str, deployment_id: str, known: set[str]):
    """Click Submit and return the flow run it created.

    On a loaded 2-vCPU CI machine the Prefect server's SQLite stalls for up to 60 s ("database
    is locked", its busy timeout), and the create request can fail with the form left on the
    page under Prefect's error dialogs. A user would close them and press Submit again, and so
    does this, once, when the form is still up after two minutes with no run; a form that never
    creates a run still fails, with the page's text (its error toast) in the message.
    """
    from selenium.common.exceptions import ElementClickInterceptedException

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", submit)
    submit.click()
    run = new_run(api_url, deployment_id, known, wait_s=120)
    if run is None and driver.current_url.rstrip("/").endswith("/run"):
        print("the form is still up 120 s after Submit with no run; page text: "
              + page_text(driver))
        # The failed create leaves Prefect's "Oops. Something went wrong." dialogs over the
        # form (they intercepted the second click in CI): close them first, as a user would.
        driver.execute_script(
            "document.querySelectorAll('button, a, [role=button]').forEach(b => "
            "{ if (b.innerText && b.innerText.trim() === 'Close') b.click(); });")
        time.sleep(1)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", submit)
        try:
            submit.click()
        except ElementClickInterceptedException:  # a dialog that did not close: its button
            driver.execute_script("arguments[0].click();", submit)
        run = new_run(api_url, deployment_id, known, wait_s=180)
    assert run is not None, ("submitting the form created no flow run; at "
                             f"{driver.current_url}: {page_text(driver)}")
    return run


def page_text(driver) -> str:
    """The end of the page's visible text, where Prefect's error toasts show."""
    return driver.find_element("tag name", "body").text[-800:].replace("\n", " | ")


@pytest.mark.slow
def test_a_run_triggered_from_the_ui_form_with_changed_parameters_completes(service, browser):
    _, deployment = api(service["api"], "GET", f"/deployments/name/collect/{DEPLOYMENT}")
    defaults = deployment["parameters"]
    assert defaults["networks"] == ["resnet18", "mobilenet_v2"]
    assert defaults["candidates_per_task"] == 8
    _, before = api(service["api"], "POST", "/flow_runs/filter",
                    {"flow_runs": {"deployment_id": {"any_": [deployment["id"]]}}})

    browser.get(f"{service['ui']}/deployments/deployment/{deployment['id']}/run")
    submit = browser.find_element("css selector", "button[type=submit]")  # the form is up
    # the form shows the descriptions from the flow's docstring
    assert "distinct candidates per task" in browser.page_source
    replace_text(field_with_value(browser, "textarea", "resnet18"), "matmul")
    replace_text(field_with_value(browser, "textarea", "mobilenet_v2"), "dense_bias_relu")
    replace_text(field_with_value(browser, "input", "8"), "2")
    clicked = time.monotonic()
    run = submit_and_find_run(browser, submit, service["api"], deployment["id"],
                              known={r["id"] for r in before})
    assert run["parameters"]["networks"] == ["matmul", "dense_bias_relu"]
    assert run["parameters"]["candidates_per_task"] == 2
    done = wait_for_run(service["api"], run["id"])
    took = time.monotonic() - clicked
    assert done["state"]["type"] == "COMPLETED", done["state"]
    print(f"UI-triggered run: started {done['start_time']}, ended {done['end_time']}, "
          f"{took:.0f} s from click to completed")
    with Store(service["db"], read_only=True) as store:  # the deployment's default store
        (params,) = store.query("SELECT parameters_json FROM runs WHERE run_id = ? AND "
                                "status = 'completed'", [run["id"]])[0]
        assert json.loads(params)["candidates_per_task"] == 2
        assert store.scalar("SELECT count(DISTINCT task_name) FROM v_candidate_measurements "
                            "WHERE flow_run_id = ?", [run["id"]]) >= 2
