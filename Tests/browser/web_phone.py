"""The demo's web inbox on a phone, in a real headless Chromium (driven by WebPhoneTests.swift).

Usage: web_phone.py LINK WORKDIR
LINK is what `notty demo --web` handed $BROWSER (`http://127.0.0.1:PORT/#signin=TOKEN`). Checks,
in order: the app's pure modules (Tests/browser/model_test.js, in the page); axe-core on the
sign-in page; the one-time link at 390 × 844 with touch (signed in once, the second use refused);
the phone layout (every view on screen, targets ≥ 44 px, no key hints); axe on the list and a
notification's detail; a tap opens, Back returns, a swipe dismisses; offline: the list opens from
the service worker's cache after a reload and after the browser is started again, a change made
offline waits in IndexedDB and reaches the service once it is back. Prints one JSON object of
figures on its last line; exits 1 with the reason on any failure.
"""

import json
import pathlib
import sys
import time

from browser_support import accessible, expect, fail
from playwright.sync_api import sync_playwright

link, workdir = sys.argv[1], pathlib.Path(sys.argv[2])
base = link.split("#")[0].rstrip("/")
figures = {}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}


def watch(page, errors):
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append("console: " + message.text) if message.type == "error" and "Failed to load" not in message.text and "ERR_INTERNET_DISCONNECTED" not in message.text else None)
    page.on("dialog", lambda dialog: dialog.accept())


def count(page, view):
    text = page.locator(f".tab[data-view={view}]").text_content()
    return int(text.split()[-1]) if text.split()[-1].isdigit() else None


def swipe(page, locator, dx):
    """A finger's swipe across the element, as touch events (Chromium makes pointer events of them)."""
    box = locator.bounding_box()
    x, y = box["x"] + box["width"] * (0.8 if dx < 0 else 0.2), box["y"] + box["height"] / 2
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x + dx * step / 10, "y": y + 2}]})
    # The finger rests before it lifts: no fling for Chromium to stop with the next tap.
    for _ in range(3):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x + dx, "y": y + 2}], "timestamp": time.time() + 0.2})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def service_has(context, notification_id):
    answer = context.request.get(f"{base}/v1/me/notifications/{notification_id}")
    expect(answer.status == 200, f"GET the notification answered {answer.status}")
    return answer.json()


errors = []
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])

    # The pure modules, imported in a page of the service as the app imports them; and the
    # sign-in page, which that page is, checked by axe.
    desk = browser.new_context(viewport={"width": 1200, "height": 800})
    page = desk.new_page()
    watch(page, errors)
    page.goto(base + "/")
    page.wait_for_selector("input[name=username]", timeout=10_000)
    results = page.evaluate((pathlib.Path(__file__).parent / "model_test.js").read_text())
    expect(results["checks"] > 40 and not results["failures"], f"model_test.js: {results}")
    figures["pure module checks"] = results["checks"]
    accessible(page, "the sign-in page")
    desk.close()

    # The one-time link on a phone: signed in, the token gone from the address.
    profile = workdir / "profile"
    phone = playwright.chromium.launch_persistent_context(str(profile), executable_path="/usr/bin/chromium", args=["--no-sandbox"], **PHONE)
    page = phone.pages[0] if phone.pages else phone.new_page()
    watch(page, errors)
    started = time.monotonic()
    page.goto(link)
    page.wait_for_selector(".list .row", timeout=10_000)
    figures["one-time link → first list (ms)"] = round((time.monotonic() - started) * 1000, 1)
    expect("signin" not in page.url, f"the link's token stays in the address: {page.url}")
    page.wait_for_selector(".tab[data-view=all]:not(:has-text('…'))", timeout=10_000)

    # A second use of the link (another browser) is refused with words.
    other = browser.new_context(**PHONE)
    second = other.new_page()
    second.goto(link)
    second.wait_for_selector(".signin .error:has-text('used already')", timeout=10_000)
    other.close()

    # Touch first: every view on screen, every target at least 44 × 44, nothing sideways, no key hints.
    expect(page.evaluate("document.documentElement.classList.contains('touch')"), "a phone is not taken for touch")
    outside = page.evaluate(
        """() => [...document.querySelectorAll('.tab')].filter((tab) => { const r = tab.getBoundingClientRect();
           return r.left < 0 || r.right > innerWidth || r.width === 0; }).map((tab) => tab.textContent)""")
    expect(not outside, f"views off screen: {outside}")
    small = page.evaluate(
        """() => [...document.querySelectorAll('button, input, a')].filter((e) => e.offsetParent).map((e) => {
           const r = e.getBoundingClientRect(); return [e.textContent.trim().slice(0, 30) || e.getAttribute('aria-label'), r.width, r.height]; })
           .filter(([, w, h]) => w < 44 || h < 44)""")
    expect(not small, f"touch targets under 44 px: {small}")
    width = page.evaluate("document.documentElement.scrollWidth")
    expect(width <= 390, f"the page is {width} px wide at 390")
    body = page.locator("body").inner_text()
    expect("? for keys" not in body and "Enter opens" not in body and "(/)" not in page.locator(".search").get_attribute("placeholder"),
           "key hints on a touch screen")
    snippets = page.locator(".list .row .snippet").count()
    expect(snippets > 0, "rows show no more than a title")
    accessible(page, "the list")

    # A tap opens a notification: the whole screen, its buttons, Back.
    first = page.locator(".list .row").first
    first_id = first.get_attribute("data-id")
    first.locator("button").tap()
    page.wait_for_selector(".detail h2", timeout=10_000)
    expect(not page.locator(".list").is_visible(), "the list stays beside the open notification on a phone")
    page.wait_for_selector(".detail button[data-do=dismiss]", timeout=10_000)
    accessible(page, "a notification's detail")
    page.locator(".detail .back").tap()
    page.wait_for_selector(".list .row", timeout=10_000)
    # Read, it has left Unread (counted by its row, not the tab: the demo's heartbeat may arrive meanwhile).
    page.wait_for_selector(f".row[data-id='{first_id}']", state="detached", timeout=10_000)
    expect(service_has(phone, first_id)["readState"] == "Read", "opening it did not read it")

    # A swipe left dismisses.
    target = page.locator(".list .row").first
    target_id = target.get_attribute("data-id")
    dismissed = count(page, "dismissed")
    swipe(page, target, -260)
    page.wait_for_selector(f".row[data-id='{target_id}']", state="detached", timeout=10_000)
    page.wait_for_function(f"() => document.querySelector('.tab[data-view=dismissed]').textContent.endsWith(' {dismissed + 1}')", timeout=10_000)
    expect(service_has(phone, target_id)["userActionState"] == "Dismissed", "the swipe did not dismiss")
    expect(page.locator(".detail h2").count() == 0, "the swipe opened the notification")

    # Offline: the service worker controls the page and holds the list.
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=10_000)
    kept = "async () => Boolean(await caches.match('/v1/me/notifications?view=unread')) && Boolean(await caches.match('/v1/me'))"
    deadline = time.monotonic() + 10
    while not page.evaluate(kept) and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    expect(page.evaluate(kept), "the service worker never kept the list and the user for offline")
    phone.set_offline(True)
    gone = page.locator(".list .row").first
    gone_id = gone.get_attribute("data-id")
    gone.locator("button").tap()
    page.wait_for_selector(".detail button[data-do=dismiss]", timeout=10_000)
    page.locator(".detail button[data-do=dismiss]").tap()
    page.wait_for_selector(".status:has-text('2 changes waiting for the network')", timeout=10_000)
    page.locator(".detail .back").tap()

    # Opened again with no network, after a reload and after the browser is started again: the
    # list from the cache, the changes made offline still made on it and counted as waiting.
    def opened_offline(page, open_it, what):
        started = time.monotonic()
        open_it()
        try:
            page.wait_for_selector(".list .row", timeout=10_000)
        except Exception:
            fail(f"{what}: no list: {page.content()[:2000]} {errors}")
        figures[f"{what} → list shown (ms)"] = round((time.monotonic() - started) * 1000, 1)
        page.wait_for_selector(".status:has-text('2 changes waiting')", timeout=10_000)
        page.wait_for_selector(".status:has-text('offline')", timeout=10_000)
        expect(page.locator(f".row[data-id='{gone_id}']").count() == 0, f"{what}: the change made offline is not shown")

    opened_offline(page, page.reload, "offline reload")
    phone.close()
    phone = playwright.chromium.launch_persistent_context(
        str(profile), executable_path="/usr/bin/chromium", args=["--no-sandbox"], offline=True, **PHONE)
    page = phone.pages[0] if phone.pages else phone.new_page()
    watch(page, errors)
    opened_offline(page, lambda: page.goto(base + "/"), "browser started again offline")

    # Back online: sent once, and the status line says nothing waits.
    phone.set_offline(False)
    page.wait_for_selector(".status:has-text('live')", timeout=30_000)
    page.wait_for_selector(".status:not(:has-text('waiting'))", timeout=30_000)
    state = service_has(phone, gone_id)
    expect(state["userActionState"] == "Dismissed" and state["readState"] == "Read", f"the offline changes never arrived: {state}")
    phone.close()
    expect(not errors, f"errors in the page: {errors}")
    browser.close()

print(json.dumps(figures), flush=True)
