"""Benchmark of drawing a message's Markdown in the pages (``Convy.markdown`` in pages/base.js).

Each text is drawn in headless Chromium (``/usr/bin/chromium``, driven by Playwright) on a page
that holds only base.js, and timed in the page with ``performance.now()``: the best of
``--repeat`` drawings (default 3). Both are timed until the page is laid out. Baseline: the same
text put in a ``<p>`` as one text node, the least any drawing of it costs. The texts are the ones that used to be slow or cut: a
megabyte of one mark character, and thousands of code spans; then a megabyte of ordinary prose
with a little Markdown in it. ``shown`` counts the characters drawn: every one but the marks.

    .venv/bin/python bench/markdown.py
    .venv/bin/python bench/markdown.py --repeat 5
    .venv/bin/python bench/markdown.py --base /tmp/old-base.js   # another version of base.js
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
BASE = Path(__file__).resolve().parents[1] / "src" / "convy" / "pages" / "base.js"
MEGA = 1_000_000
TEXTS = {
    '1 MB of "["': "'['.repeat(%d)" % MEGA,
    '1 MB of "*"': "'*'.repeat(%d)" % MEGA,
    '1 MB of "x`"': "'x`'.repeat(%d)" % (MEGA // 2),
    "20,000 code spans": "Array.from({length: 20000}, (_, i) => '`c' + i + '`').join(' ')",
    "1 MB of prose": "Array.from({length: 20000}, (_, i) => 'Some **bold** words, a `span` and *more* text ' + i).join('\\n').slice(0, %d)" % MEGA,
}
TIMED = """([make, repeat]) => {
  const text = (0, eval)(make);
  let drawn = Infinity, plain = Infinity, length = 0;
  for (let i = 0; i < repeat; i++) {
    let started = performance.now();
    const box = Convy.markdown(text);
    document.body.replaceChildren(box);
    void document.body.offsetHeight;  // laid out, as a reader would see it
    length = box.textContent.length;
    drawn = Math.min(drawn, performance.now() - started);
    started = performance.now();
    const p = document.createElement("p");
    p.appendChild(document.createTextNode(text));
    document.body.replaceChildren(p);
    void document.body.offsetHeight;
    plain = Math.min(plain, performance.now() - started);
  }
  return [text.length, length, drawn, plain];
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", type=Path, default=BASE, help="the base.js to time (e.g. an older one, to compare)")
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    print(f"MARKDOWN: Convy.markdown in headless Chromium, best of {options.repeat}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  {'text':<22}{'chars':>11}{'shown':>11}{'drawn':>11}{'baseline':>11}{'ratio':>9}")
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        page_file = Path(folder) / "markdown.html"
        page_file.write_text(f"<!doctype html><meta charset=utf-8><body><script>{options.base.read_text(encoding='utf-8')}</script>", encoding="utf-8")
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(600_000)
            page.goto(page_file.as_uri())
            for name, make in TEXTS.items():
                chars, shown, drawn, plain = page.evaluate(TIMED, [make, options.repeat])
                print(f"  {name:<22}{chars:>11,}{shown:>11,}{drawn:>9.1f}ms{plain:>9.1f}ms{drawn / max(plain, 0.01):>8.1f}x")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
