"""Screenshots of c3's three pictures in headless Chromium (Debian's).

    python scripts/pictures_shots.py html REPORT.html OUT.png
    python scripts/pictures_shots.py netron URL OUT.png NODE_TEXT
    python scripts/pictures_shots.py model-explorer URL OUT.png

`netron` opens the served model, clicks the first graph node whose label is
NODE_TEXT and waits for the properties panel, so the shot shows the node's
metadata. `model-explorer` opens the served model with its node data and
waits for the graph to draw. Run by scripts/pictures.sh, which starts the
servers; Playwright drives the system's Chromium (it downloads no browser).
"""

import sys
import time

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
# Without these Chromium waits on services a closed network never answers.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def html(page, path, out):
    page.goto(f"file://{path}")
    page.wait_for_selector("#table-js table")
    page.screenshot(path=out, full_page=False)


def netron(page, url, out, node_text):
    page.goto(url)
    # A first visit asks to accept its (here unreachable) usage reporting.
    accept = page.get_by_text("Accept", exact=True)
    accept.wait_for(timeout=30000)
    accept.click()
    page.wait_for_selector("svg g.node", timeout=60000)
    time.sleep(1.0)
    nodes = page.locator("g.node", has_text=node_text)
    nodes.first.click()
    page.wait_for_selector("text=metadata", timeout=15000)
    time.sleep(1.0)
    page.screenshot(path=out)


def model_explorer(page, url, out):
    page.goto(url)
    # The graph is drawn on a WebGL canvas once the model and data load.
    page.wait_for_selector("canvas", timeout=120000)
    time.sleep(8.0)
    # Open the graph's one layer so its nodes show their colours: the
    # toolbar's "expand all layers" button.
    page.mouse.click(380, 75)
    page.mouse.move(700, 600)
    time.sleep(4.0)
    page.screenshot(path=out)


def main():
    kind, target, out = sys.argv[1:4]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        if kind == "html":
            html(page, target, out)
        elif kind == "netron":
            netron(page, target, out, sys.argv[4])
        elif kind == "model-explorer":
            model_explorer(page, target, out)
        else:
            sys.exit(f"unknown kind {kind}")
        browser.close()


if __name__ == "__main__":
    main()
