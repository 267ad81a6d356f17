"""What the browser tests' scripts share (web_inbox.py, web_push.py): failing with a reason,
and the file handshake with the Swift test that runs them."""

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
