"""The web inbox in a real headless Chromium (driven by WebInboxTests.swift).

Usage: web_inbox.py URL WORKDIR HOSTILE_TITLE
Handshake with the Swift test through files in WORKDIR: this script writes `signed-in` (then
waits for `dismissed-elsewhere`, which names the id a notty device dismissed) and `read-here`
(the id it read with the r key). Prints one JSON object of figures on its last line; exits 1
with the reason on any failure.
"""

import json
import pathlib
import sys
import time

from browser_support import accessible, expect, fail, wait_for_file
from playwright.sync_api import sync_playwright

url, workdir, hostile = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
figures = {}

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    # The page and its policy: only the service's own files, no inline script.
    answer = page.goto(url + "/")
    csp = answer.headers.get("content-security-policy", "")
    expect("default-src 'self'" in csp and "unsafe-inline" not in csp and "script-src 'self'" in csp, f"CSP: {csp}")

    # Signing in with a wrong password says so; then signing in.
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "wrong")
    page.fill("input[name=device]", "work laptop browser")
    page.click("button[type=submit]")
    page.wait_for_selector(".signin .error:has-text('wrong user name or password')", timeout=10_000)
    page.fill("input[name=password]", "s3cret-pw")
    started = time.monotonic()
    page.click("button[type=submit]")
    page.wait_for_selector(".list .row", timeout=10_000)
    figures["sign-in answer → first list (ms)"] = round((time.monotonic() - started) * 1000, 1)
    page.wait_for_selector(".tab[data-view=unread]:has-text('Unread 3')", timeout=10_000)
    cookie = next(c for c in context.cookies() if c["name"] == "notty_session")
    expect(cookie["httpOnly"] and cookie["sameSite"] == "Strict", f"cookie flags: {cookie}")
    expect(page.evaluate("document.cookie") == "", "the session cookie is readable from script")

    # A title that looks like markup stays text: no element made, no script run.
    row = page.locator(".row .title", has_text="onerror")
    expect(row.count() == 1 and row.first.text_content() == hostile, f"the hostile title: {row.all_text_contents()}")
    expect(page.locator(".list img, .list script").count() == 0, "markup from the network became elements")

    # A change with the cookie from another site is refused; from this page it works.
    api = context.request
    first_id = page.locator(".row").first.get_attribute("data-id")
    crossed = api.patch(f"{url}/v1/me/notifications/{first_id}", data=json.dumps({"readState": "Read"}),
                        headers={"Origin": "http://evil.example", "Content-Type": "application/json"})
    expect(crossed.status == 403, f"a cross-site change answered {crossed.status}")
    expect(api.get(f"{url}/v1/me/notifications/{first_id}").json()["readState"] == "Unread", "the cross-site change was applied")

    # Keys: d dismisses the selected (newest) one; u undoes it.
    page.locator("body").press("d")
    page.wait_for_selector(".tab[data-view=dismissed]:has-text('Dismissed 1')", timeout=10_000)
    expect(api.get(f"{url}/v1/me/notifications/{first_id}").json()["userActionState"] == "Dismissed", "d did not dismiss")
    page.locator("body").press("u")
    page.wait_for_selector(".tab[data-view=dismissed]:has-text('Dismissed 0')", timeout=10_000)

    # Live from another device: the Swift test dismisses one with notty; it leaves this list, and
    # the row focused here (by Tab) keeps the focus though the list is drawn again.
    kept = page.locator(".row").last
    kept_id = kept.get_attribute("data-id")
    kept.locator("button").focus()
    (workdir / "signed-in").write_text("yes")
    gone = wait_for_file(workdir, "dismissed-elsewhere")
    started = time.monotonic()
    page.wait_for_selector(f".row[data-id='{gone}']", state="detached", timeout=10_000)
    figures["a notty device's dismiss → gone from the browser's list (ms, from the end of notty dismiss)"] = round(
        (time.monotonic() - started) * 1000, 1)
    expect(page.evaluate("document.activeElement.closest('.row')?.dataset.id") == kept_id, "the focused row lost the focus when the list was drawn again")
    page.locator(".row").last.locator("button").blur()

    # Live to other devices: j then r reads the second row here.
    page.locator("body").press("j")
    read_id = page.locator(".row[aria-current=true]").get_attribute("data-id")
    page.locator("body").press("r")
    page.wait_for_selector(".tab[data-view=read]:has-text('Read 1')", timeout=10_000)
    (workdir / "read-here").write_text(read_id)

    # Views by number keys; Enter opens the detail.
    page.locator("body").press("2")
    page.wait_for_selector(".tab[data-view=read][aria-pressed=true]", timeout=10_000)
    page.wait_for_selector(f".row[data-id='{read_id}']", timeout=10_000)
    page.locator("body").press("Enter")
    page.wait_for_selector(".detail h2", timeout=10_000)
    # axe-core on the list beside an open notification at a laptop's width: nothing serious.
    accessible(page, "the list beside an open notification")

    # Search: / then text asks the service, which searches the whole view (not only the rows
    # loaded here); no match says so; Escape leaves the field, emptied the whole view is back.
    page.locator("body").press("6")
    page.wait_for_selector(".tab[data-view=all][aria-pressed=true]", timeout=10_000)
    with page.expect_request(lambda request: "search=DB-primary" in request.url, timeout=10_000):
        page.locator("body").press("/")
        page.keyboard.type("DB-primary")
    page.wait_for_function(
        "() => { const rows = document.querySelectorAll('.list .row');"
        " return rows.length === 1 && rows[0].textContent.includes('Disk usage 91%'); }",
        timeout=10_000,
    )
    page.locator(".search").fill("no such thing")
    page.wait_for_selector(".list .empty:has-text('matches')", timeout=10_000)
    # The query language (PROTOCOL.md §17): a field it does not know is the service's words.
    page.locator(".search").fill("colour:red")
    page.wait_for_selector(".status:has-text('no field colour:')", timeout=10_000)
    page.locator(".search").fill("")
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.querySelectorAll('.list .row').length >= 3", timeout=10_000)

    # A saved view made on a notty device is a tab after All with its count; 7 opens it (All
    # with its search), 6 goes back to All.
    page.wait_for_selector(".tab.saved[data-saved=disks]:has-text('disks 1')", timeout=10_000)
    page.locator("body").press("7")
    page.wait_for_selector(".tab.saved[data-saved=disks][aria-pressed=true]", timeout=10_000)
    page.wait_for_function(
        "() => { const rows = document.querySelectorAll('.list .row');"
        " return rows.length === 1 && rows[0].textContent.includes('Disk usage 91%'); }",
        timeout=10_000,
    )
    page.locator("body").press("6")
    page.wait_for_selector(".tab[data-view=all][aria-pressed=true]", timeout=10_000)

    # Offline: a change made here is kept in the browser (IndexedDB) and sent once the service
    # can be reached again, also by a page opened after this one was closed; applied once.
    page.locator("body").press("1")
    page.wait_for_selector(".tab[data-view=unread][aria-pressed=true]", timeout=10_000)
    page.wait_for_selector(".list .row", timeout=10_000)
    offline_id = page.locator(".list .row").first.get_attribute("data-id")
    context.set_offline(True)
    page.locator("body").press("d")
    page.wait_for_selector(".status:has-text('1 change waiting for the network')", timeout=10_000)
    expect(api.get(f"{url}/v1/me/notifications/{offline_id}").json()["userActionState"] != "Dismissed", "sent while offline?")
    page.close()
    context.set_offline(False)
    page = context.new_page()
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "/")
    # The inbox is up (its list may already be empty: the dismissed one was Unread's last).
    page.wait_for_selector(".tabs .tab", timeout=10_000)
    deadline = time.monotonic() + 10
    while api.get(f"{url}/v1/me/notifications/{offline_id}").json()["userActionState"] != "Dismissed" and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    expect(api.get(f"{url}/v1/me/notifications/{offline_id}").json()["userActionState"] == "Dismissed",
           "the change made offline never reached the service")
    page.wait_for_selector(".status:not(:has-text('waiting'))", timeout=10_000)

    # A phone: 360 pixels wide, nothing scrolls sideways.
    page.set_viewport_size({"width": 360, "height": 740})
    page.locator("body").press("1")
    page.wait_for_timeout(200)
    width = page.evaluate("document.documentElement.scrollWidth")
    expect(width <= 360, f"the page is {width} px wide at 360")

    expect(not dialogs, f"a dialog opened: {dialogs}")
    expect(not errors, f"errors in the page: {errors}")
    browser.close()

print(json.dumps(figures), flush=True)
