"""What the browser tests' scripts share (web_inbox.py, web_phone.py, web_push.py): failing with
a reason, the file handshake with the Swift test that runs them, and axe-core's check."""

import os
import pathlib
import sys
import time


def fail(why):
    print(f"FAILED: {why}", flush=True)
    sys.stdout.flush()
    os._exit(1)


def expect(condition, why):
    if not condition:
        fail(why)


def wait_for_file(workdir: pathlib.Path, name, seconds=60):
    """The text of WORKDIR/NAME once the Swift test has written it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        path = workdir / name
        if path.exists():
            return path.read_text().strip()
        time.sleep(0.02)
    fail(f"the test never wrote {name}")


def accessible(page, where):
    """No serious or critical axe-core violation on the page as it is (axe-playwright-python)."""
    from axe_playwright_python.sync_playwright import Axe  # here: web_push.py needs no axe

    found = [v for v in Axe().run(page).response["violations"] if v["impact"] in ("serious", "critical")]
    expect(not found, f"axe on {where}: " + "; ".join(f"{v['impact']} {v['id']}: {[n['target'] for n in v['nodes']][:3]}" for v in found))
