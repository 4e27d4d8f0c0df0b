"""Options shared by the whole suite.

``pytest --full`` runs the full-size variants: the fuzzers with their thousands of cases, the kill
tests at every seeded moment. Without it each runs a small, fixed share that fits CI's ten minutes.

Hypothesis is told not to time anything: no deadline for a case, and no health check of how fast
its data are drawn (``too_slow`` fails a test on a loaded machine and passes it on an idle one).
A test's own settings add to these.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The real two-node Ray cluster of tests/raycluster.py (its docstring says how to use it).
from raycluster import ray_cluster, ray_driver  # noqa: F401

settings.register_profile("convy", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("convy")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run the full-size variants of the fuzz and kill tests")


@pytest.fixture(scope="session", autouse=True)
def greens_tested() -> Iterator[None]:
    """A property over the session's runs (issue 24): every `convy run`, `resume` or `rejudge` that
    exited 0 through the shared ``fakeproject.Command`` judged at least one attempt and met its
    project's pass rule, read back from its run.json and attempts.jsonl as `convy report` reads them."""
    yield
    from fakeproject import GREEN

    from convy.project import Project
    from convy.report import Summary

    wrong = []
    for folder, asked in GREEN:
        if not (folder / "run.json").exists():  # removed by its test since
            continue
        summary = Summary(Project(folder.parents[2]).read(folder.name))
        verdict = summary.verdict()
        if not verdict.held():
            wrong.append(f"convy {asked} exited 0, but {folder}: {verdict.verdict()}")
    assert not wrong, "\n".join(wrong)


@pytest.fixture
def full(request: pytest.FixtureRequest) -> bool:
    """Whether the full-size variants were asked for."""
    return bool(request.config.getoption("--full"))


@pytest.fixture
def echo_project(tmp_path: Path) -> Path:
    """A project with one agent (an `Echo`) and one sound scenario: the smallest that plays."""
    folder = tmp_path / "project"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "a.py").write_text("from convy.fakes import Echo\n\nagent = Echo()\n", encoding="utf-8")
    (folder / "scenarios").mkdir()
    (folder / "scenarios" / "hello.yaml").write_text("script: [hello]\njudge:\n  - check: {said: hello}\n", encoding="utf-8")
    return folder
