"""Options shared by the whole suite.

``pytest --full`` runs the full-size variants: the fuzzers with their thousands of cases, the kill
tests at every seeded moment. Without it each runs a small, fixed share that fits CI's ten minutes.
"""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run the full-size variants of the fuzz and kill tests")


@pytest.fixture
def full(request: pytest.FixtureRequest) -> bool:
    """Whether the full-size variants were asked for."""
    return bool(request.config.getoption("--full"))
