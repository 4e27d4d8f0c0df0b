"""Options shared by the whole suite.

``pytest --full`` runs the full-size variants: the fuzzers with their thousands of cases, the kill
tests at every seeded moment, Ray's own behaviour, and a third Ray node held back while it unpacks.
Without it each runs a small, fixed share that fits CI's ten minutes.

Hypothesis is told not to time anything: no deadline for a case, and no health check of how fast
its data are drawn (``too_slow`` fails a test on a loaded machine and passes it on an idle one).
A test's own settings add to these.
"""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# LiteLLM's proxy of tests/support/litellmproxy.py, registered here alone so that it starts once a session.
from support.litellmproxy import proxy  # noqa: F401

# The real two-node Ray cluster of tests/support/raycluster.py (its docstring says how to use it).
from support.raycluster import ray_cluster, ray_driver  # noqa: F401

settings.register_profile("convy", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("convy")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run the full-size variants of the fuzz and kill tests")


# `make test` plays the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`). A worker takes
# a whole group at a time: a test file is a group, so a module's fixture (a browser, a built report)
# is made once; the tests on the session's Ray cluster are one group, and those on LiteLLM's proxy
# another, so that each of those starts in one worker only, not in both.
SHARED = {"ray_cluster": "ray", "ray_driver": "ray", "proxy": "proxy"}

try:  # pytest 9.2's structured node id; an older pytest has none, and xdist names the groups itself
    from _pytest.nodeid import NodeId
except ImportError:
    NodeId = None  # type: ignore[assignment, misc]

# The suite's wall is its slower worker's. xdist hands out groups in the order it holds them, the
# next to whichever worker is almost done; by default that order is by how many tests a group
# holds, most first, so a group of few tests that take long came last, and one worker played it
# while the other had nothing left. These groups, the longest measured (December 2026, a whole run
# on two loaded cores: about twice CI's seconds), go first instead, longest first; the rest follow
# most tests first, as xdist would order them.
LONGEST = (
    "tests/audits/test_audit_adaptive.py",
    "tests/e2e/test_benches.py",
    "ray",  # the session's Ray cluster: its start, and the distributed runs on it
    "tests/e2e/test_ci_workflow.py",
    "tests/audits/test_audit_spread.py",
    "proxy",  # LiteLLM's proxy: its start, and runs of the template on it
    "tests/browser/test_browser.py",
    "tests/audits/test_audit_rejudge_labels.py",
    "tests/e2e/test_ci_output.py",
    "tests/e2e/test_budgets.py",
)


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "dist", None) == "loadgroup":  # xdist's controller: the order is the collection's
        config.option.loadscopereorder = False


# The workers collect (their ``dist`` is "no", their ``loadgroup`` true); xdist's controller learns
# each test's group from the ``@group`` at the end of its node id. xdist 3.8 writes that suffix into
# ``item._nodeid``, which pytest 9.2 no longer reads (pytest-xdist issue 1386), so every test was a
# group of its own: the Ray cluster, the proxy and each file's browser started in both workers. The
# suffix is written here into the node id pytest 9.2 reads; on an older pytest xdist writes it.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {}
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((SHARED[name] for name in SHARED if name in names), item.nodeid.split("::")[0])
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item] = group
    if not getattr(config.option, "loadgroup", False):
        return
    sizes = Counter(groups.values())
    first = {group: place for place, group in enumerate(LONGEST)}
    items.sort(key=lambda item: (first.get(groups[item], len(first)), -sizes[groups[item]]))
    for item in items:
        if NodeId is not None and hasattr(item, "_id") and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{groups[item]}")


@pytest.fixture(scope="session", autouse=True)
def greens_tested() -> Iterator[None]:
    """A property over the session's runs (issue 24): every `convy run`, `resume` or `rejudge` that
    exited 0 through the shared ``fakeproject.Command``, and every `pytest --convy` session of
    pytester's that ended with success, judged at least one attempt and met its project's pass
    rule, read back from run.json and attempts.jsonl as `convy report` reads them."""
    from support.fakeproject import GREEN, Greens, kept

    # `pytest --convy` runs of the suite (pytester's, in this process) are watched the same way:
    # a session that ended with success must have played runs that held.
    runpytest = pytest.Pytester.runpytest

    def watched(self: pytest.Pytester, *arguments: Any, **options: Any) -> pytest.RunResult:
        before = kept(self.path)
        result = runpytest(self, *arguments, **options)
        if "--convy" in arguments and result.ret == 0:
            asked = "pytest " + " ".join(map(str, arguments))
            GREEN.extend((folder, asked) for folder, when in kept(self.path).items() if before.get(folder) != when)
        return result

    pytest.Pytester.runpytest = watched  # type: ignore[method-assign]
    yield
    pytest.Pytester.runpytest = runpytest  # type: ignore[method-assign]
    wrong = Greens(tuple(GREEN)).wrong()
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
