"""Where the tests' files are, for tests in any folder below tests/."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
ASSETS = TESTS / "assets"
