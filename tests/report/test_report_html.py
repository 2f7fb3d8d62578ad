"""report.html and the history page in a real browser (headless Chromium, tests/helpers/browser.py): nothing
fetched but file: and data:, no console or page error, the table's rows as results.csv has them, a header's
click sorting its column, filtering, every figure drawn at a non-zero size, each history point's environment on
hover; and the checks themselves shown to catch a page that reaches out or throws."""

from __future__ import annotations

import csv
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import helpers.browser
from helpers.browser import start_browser
from helpers.history import drawn_series
from helpers.records import regime_results
from trtbench.analysis.change_points import Step
from trtbench.core.record import Record
from trtbench.core.stats import Interval
from trtbench.pipeline.sections import report_sections
from trtbench.report.blocks import Heading, Paragraph, code
from trtbench.history.series import Series
from trtbench.report.writer import ReportHead, write_history_page, write_report

VALUES = ("speedup", "speedup_low", "speedup_high")


@pytest.fixture(scope="module")
def browser():
    browser = start_browser()
    yield browser
    browser.driver.quit()


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A report of three variants timed by 3 processes over two regimes, one failed and one skipped row."""
    results = regime_results()
    case = results.records[0].case
    results.add(Record(case=replace(case, variant="compiled"), environment="e", status="failed",
                       reason="build compiled fp32: RuntimeError: no inductor here"))
    results.add(Record(case=replace(case, variant="trt"), environment="e", status="skipped",
                       reason="trt needs a CUDA device"))
    out = tmp_path_factory.mktemp("run")
    head = ReportHead([Heading(1, "trtbench: browser test"), Paragraph(("Model(s) ", code("m"), "."))])
    write_report(out, results, head, report_sections(results, None))
    return out


def table_rows(browser) -> list[list[str]]:
    """The table's visible rows, each its cells' text, in the order shown."""
    return browser.run("return Array.from(document.querySelectorAll('#speedup-table tbody tr'))"
                       ".filter(tr => !tr.hidden).map(tr => Array.from(tr.cells).map(td => td.textContent))")


def headers(browser) -> list[str]:
    return browser.run("return Array.from(document.querySelectorAll('#speedup-table th')).map(th => th.textContent)")


def test_the_run_report_is_offline_and_its_rows_are_results_csv(browser, run_folder, tmp_path):
    problems = browser.open(run_folder / "report.html")
    assert problems.clean, problems
    assert browser.run("return document.querySelector('h1').textContent") == "trtbench: browser test"
    with open(run_folder / "results.csv", newline="") as f:
        expected = list(csv.DictReader(f))
    data = browser.run("return JSON.parse(document.getElementById('table-data').textContent)")
    shown, columns = table_rows(browser), headers(browser)
    assert len(shown) == len(data["rows"]) == len(expected) == 5
    assert not [v for row in data["rows"] for v in row["values"].values() if isinstance(v, (list, dict))], \
        "results.csv's fields, no raw rounds"
    speedup = next(i for i, name in enumerate(columns) if name.startswith("speedup ["))
    variant, reason, regimes = columns.index("variant"), columns.index("reason"), columns.index("regimes")
    for cells, row, want in zip(shown, data["rows"], expected):
        assert cells[variant].removesuffix(" *") == want["variant"] and row["status"] == want["status"]
        for field in VALUES:
            assert (str(row["values"][field]) if want[field] else "") == (want[field] if want[field] else ""), field
        if want["speedup"]:
            low, value, high = (float(want[f]) for f in ("speedup_low", "speedup", "speedup_high"))
            assert cells[speedup] == f"{value:.2f}x [{low:.2f}-{high:.2f}]"
        else:
            assert cells[speedup] == ""
        assert cells[reason] == want["reason"]
    by_variant = {cells[variant].removesuffix(" *"): cells for cells in shown}
    scripted = by_variant["scripted"][regimes]
    assert scripted.startswith("rounds 0-") and scripted.endswith("(regime-dependent)")
    assert by_variant["eager"][regimes] == "2 regimes" and by_variant["trt"][regimes] == ""
    assert "no inductor here" in by_variant["compiled"][reason]
    assert browser.driver.save_screenshot(str(tmp_path / "report.png")) and (tmp_path / "report.png").stat().st_size


def test_the_answer_is_on_top_above_the_table_in_the_page_and_in_report_md(browser, run_folder):
    problems = browser.open(run_folder / "report.html")
    assert problems.clean, problems
    answer = browser.run("return document.getElementById('answer').textContent")
    assert "m opt (4x3x8x8, 2 thread(s)): traced wins: " in " ".join(answer.split())
    assert "the speed of scripted, the runner-up" in " ".join(answer.split())
    first = browser.run("return document.querySelector('h2').textContent")
    tops = browser.run("const top = e => e.getBoundingClientRect().top; return [top(document.getElementById("
                       "'answer')), top(document.getElementById('speedup-table')), "
                       "top(Array.from(document.querySelectorAll('h2')).find(h => h.textContent == 'Environments'))]")
    assert first == "The answer" and tops[0] < tops[2] < tops[1], tops
    markdown = (run_folder / "report.md").read_text()
    assert markdown.index("## The answer") < markdown.index("## Speedup") and \
        [line for line in markdown.splitlines() if line.startswith("## ")][0] == "## The answer"
    assert "- m opt (4x3x8x8, 2 thread(s)): **traced** wins: " in markdown


def speedups(browser, column: int) -> list[float]:
    return [float(cells[column].split("x")[0]) for cells in table_rows(browser) if cells[column]]


def test_clicking_a_header_sorts_by_it_and_the_filter_keeps_matching_rows(browser, run_folder):
    from selenium.webdriver.common.keys import Keys

    browser.open(run_folder / "report.html")
    columns = headers(browser)
    speedup = next(i for i, name in enumerate(columns) if name.startswith("speedup ["))
    ranked = speedups(browser, speedup)
    assert ranked == sorted(ranked, reverse=True), "ranked by median: the fastest first"
    header = browser.driver.find_elements("css selector", "#speedup-table th")[speedup]
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert speedups(browser, speedup) == sorted(ranked) != ranked
    assert [cells[speedup] for cells in table_rows(browser)][-3:] == ["", "", ""], "rows without one sort last"
    header.click()
    assert header.get_attribute("aria-sort") == "descending" and speedups(browser, speedup) == ranked
    browser.driver.find_elements("css selector", "#speedup-table th")[0].click()
    assert [cells[0] for cells in table_rows(browser)] == ["1", "2", "3", "4", "5"], "# restores the ranking"
    header.send_keys(Keys.ENTER)
    assert header.get_attribute("aria-sort") == "ascending" and speedups(browser, speedup) == sorted(ranked)
    box = browser.driver.find_element("id", "filter")
    box.send_keys("SKIPPED cuda")
    assert [cells[columns.index("variant")] for cells in table_rows(browser)] == ["trt"]
    assert browser.driver.find_element("id", "shown").text == "1 of 5 shown"
    problems = browser.problems()
    assert problems.clean, problems


def test_every_figure_is_drawn_at_a_non_zero_size(browser, run_folder):
    browser.open(run_folder / "report.html")
    figures = browser.run("return Array.from(document.querySelectorAll('figure img')).map(img => "
                          "[img.dataset.path, img.complete, img.naturalWidth, img.getBoundingClientRect().width, "
                          "img.getBoundingClientRect().height, img.src.slice(0, 22)])")
    saved = sorted(str(path.relative_to(run_folder)) for path in (run_folder / "plots").glob("*.png"))
    assert sorted(f[0] for f in figures) == saved and len(saved) >= 2
    for path, complete, natural, width, height, source in figures:
        assert complete and natural > 0 and width > 0 and height > 0, path
        assert source == "data:image/png;base64,"


def history_series() -> list[Series]:
    """A 10 ms series that steps to 11.5 ms at its fifth run, as onnxruntime changed, and a flat one."""
    def around(value):
        return Interval(value, value * 0.98, value * 1.02)
    step = Step(4, Interval(10.0, 9.9, 10.1), Interval(11.5, 11.4, 11.6), ("onnxruntime 1.22.0 -> 1.23.0",))
    stepped = drawn_series("ort", [around(10.0 if i < 4 else 11.5) for i in range(7)], (step,), lambda i: {
        "torch": "2.14.1", "onnxruntime": "1.22.0" if i < 4 else "1.23.0"})
    flat = drawn_series("eager", [around(5.0 + 0.01 * (i % 2)) for i in range(5)],
                        versions=lambda i: {"torch": "2.14.1", "onnxruntime": "1.22.0"})
    return [stepped, flat]


def test_the_history_page_charts_each_series_with_steps_and_environments_on_hover(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    page = write_history_page(tmp_path / "history.html", history_series())
    problems = browser.open(page)
    assert problems.clean, problems
    charts = browser.run("return Array.from(document.querySelectorAll('section.series .chart')).map(chart => "
                         "[chart.querySelector('img').getBoundingClientRect().width, "
                         "chart.querySelector('img').getBoundingClientRect().height, "
                         "chart.querySelectorAll('.spot.pt').length, chart.querySelectorAll('.spot.step').length, "
                         "chart.querySelector('img').naturalWidth, chart.querySelector('img').src.slice(0, 22)])")
    assert [c[2:4] for c in charts] == [[7, 1], [5, 0]] and all(c[0] > 0 and c[1] > 0 and c[4] > 0 for c in charts)
    assert {c[5] for c in charts} == {"data:image/png;base64,"}
    heights = browser.run("return Array.from(document.querySelectorAll('section.series')[0]"
                          ".querySelectorAll('.spot.pt')).map(spot => spot.getBoundingClientRect().top)")
    assert len(set(heights[:4])) == 1 and len(set(heights[4:])) == 1 and heights[4] < heights[0], "11.5 above 10"
    lefts = browser.run("return Array.from(document.querySelectorAll('section.series')[0].querySelectorAll('.spot'))"
                        ".map(spot => spot.getBoundingClientRect().left)")
    assert lefts[:7] == sorted(lefts[:7]) and lefts[3] < lefts[7] < lefts[4], "the step between runs 3 and 4"
    points = browser.driver.find_elements("css selector", "section.series .spot.pt")
    ActionChains(browser.driver).move_to_element(points[5]).perform()
    tip = browser.driver.find_element("id", "tip")
    assert tip.is_displayed() and "run-5" in tip.text and "onnxruntime 1.23.0" in tip.text
    assert "11.5 [11.27, 11.73] ms" in tip.text
    ActionChains(browser.driver).move_to_element(
        browser.driver.find_element("css selector", "section.series .spot.step")).perform()
    assert "step at run run-4 (+15.0%)" in tip.text and "onnxruntime 1.22.0 -> 1.23.0" in tip.text
    assert "before 10 [9.9, 10.1] ms" in tip.text
    browser.driver.find_element("id", "filter").send_keys("eager")
    assert [s.is_displayed() for s in browser.driver.find_elements("css selector", "section.series")] == [False, True]
    assert browser.driver.save_screenshot(str(tmp_path / "history.png"))
    problems = browser.problems()
    assert problems.clean, problems


def test_the_checks_catch_a_page_that_reaches_out_or_throws(browser, run_folder, tmp_path):
    """A page that asks a live local server for an image is caught, and the server never hears of it (blocked);
    a page whose script throws is caught."""
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/x.png"
    page = (run_folder / "report.html").read_text()
    reaching = tmp_path / "reaching.html"
    # no Content-Security-Policy here: the browser's block alone keeps the request from the server
    reaching.write_text(f'<!DOCTYPE html><html><body><img src="{url}"></body></html>')
    try:
        assert browser.open(reaching).requests == [url]
    finally:
        server.shutdown()
        server.server_close()
    assert asked == [], "the request was blocked"
    throwing = tmp_path / "throwing.html"
    throwing.write_text(page.replace('"use strict";', '"use strict"; null.boom;', 1))
    assert any("TypeError" in error for error in browser.open(throwing).errors)


def test_a_missing_browser_fails_under_ci_and_is_skipped_elsewhere(monkeypatch):
    monkeypatch.setattr(helpers.browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium chromium-driver"):
        start_browser()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no /nonexistent/chromium .*apt-get install -y chromium"):
        start_browser()
