"""A real run's report.html in headless Chromium: its screenshot for the docs (docs/report-html.png), what the
file weighs (its figures, its table's JSON, the rest) and what writing it costs once the report's sections exist.

    python benchmarks/report_screenshot.py                                  # a small run (SMALL below), ~10 min
    python benchmarks/report_screenshot.py --config configs/resnet34.yaml   # make run's config
    python benchmarks/report_screenshot.py --reuse results/resnet34         # a run folder already written

Needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver) and selenium.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

SMALL = """\
# make run's config (configs/resnet34.yaml), smaller: resnet18, batch 1 and 4, eight variants, 5 s per point
name: resnet18_small
model: {source: torchvision, name: resnet18}
inputs:
  - {name: input, dtype: float32, min_shape: [1, 3, 224, 224], opt_shape: [4, 3, 224, 224], max_shape: [4, 3, 224, 224]}
device: auto
precisions: [fp32]
variants: [eager, traced, scripted, exported, ort, openvino, trt, ort_cuda]
benchmark: {mode: adaptive, warmup: 1, warmup_s: 0.5, budget_s: 5, shapes: [min, opt]}
output: {save_artifacts: false, cold_start: false}
"""


def run(config: Path, out: Path) -> None:
    command = [sys.executable, "-m", "trtbench", "run", "--config", str(config), "--output", str(out), "--quiet"]
    subprocess.run(command, check=False, cwd=REPO)
    if not (out / "report.html").is_file():
        sys.exit(f"no report.html in {out}: the run failed")


def weigh(out: Path) -> None:
    """The file's weight by part, and the time to make it from the report's sections (as the writer does)."""
    from trtbench.pipeline.sections import report_sections
    from trtbench.report.run_page import PageFigure, run_page
    from trtbench.report.blocks import Heading
    from trtbench.report.writer import ReportHead, png_files
    from trtbench.results.resultset import ResultSet

    page = (out / "report.html").read_text()
    figures = sum(len(base64.b64encode(p.read_bytes())) for p in (out / "plots").glob("*.png"))
    table = len(page.split('id="table-data">', 1)[1].split("</script>", 1)[0])
    rows = len(ResultSet.load(out).records)
    print(f"report.html: {len(page) / 1024:.0f} KiB: figures {figures / 1024:.0f} KiB (base64), table JSON "
          f"{table / 1024:.0f} KiB ({rows} rows), the rest {(len(page) - figures - table) / 1024:.0f} KiB")
    results = ResultSet.load(out)
    sections = report_sections(results, None)
    plots = [plot for section in sections for plot in section.plots]
    pngs = png_files(plots)
    start = time.perf_counter()
    page_figures = [PageFigure(p.caption, str(p.path), pngs[p.path]) for p in plots]
    run_page(ReportHead([Heading(1, "trtbench")]), results, page_figures)
    print(f"making report.html from the sections: {(time.perf_counter() - start) * 1e3:.0f} ms "
          f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)")


def screenshot(out: Path, target: Path) -> None:
    from helpers.browser import start_browser

    browser = start_browser()
    try:
        problems = browser.open(out / "report.html")
        if not problems.clean:
            sys.exit(f"report.html did something wrong: {problems}")
        browser.driver.set_window_size(1400, 1900)
        browser.driver.save_screenshot(str(target))
        print(f"screenshot: {target}")
    finally:
        browser.driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, help="the run's config (default: SMALL, written to the folder)")
    parser.add_argument("--reuse", type=Path, help="a run folder already written: no run")
    parser.add_argument("--out", type=Path, default=Path("results/report_screenshot"))
    parser.add_argument("--screenshot", type=Path, default=REPO / "docs" / "report-html.png")
    args = parser.parse_args()
    out = args.reuse or args.out
    if not args.reuse:
        config = args.config
        if config is None:
            out.mkdir(parents=True, exist_ok=True)
            config = out / "small.yaml"
            config.write_text(SMALL)
        run(config, out)
    weigh(out)
    screenshot(out, args.screenshot)


if __name__ == "__main__":
    main()
