"""convy's pytest plugin: the module pytest loads, through the entry point group ``pytest11``, in
every session of an environment where convy is installed.

It declares its options and does nothing more unless ``--convy`` is given: no scenario is read,
no item collected, and convy's own modules are not even imported (``convy.cli`` alone costs
pytest some 0.1 s to start). With ``--convy``, ``pytest_items.ScenarioTests`` collects the
project's scenarios as items and plays them as ``convy run`` does.

pytest finds a plugin's hooks as the functions of its module, so these two hooks are module
functions; each hands on at once.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("convy", "convy: a convy project's scenarios as tests")
    group.addoption(
        "--convy",
        action="store_true",
        default=False,
        help="collect the convy project's scenarios as tests (an item per agent and scenario) and play them",
    )
    group.addoption(
        "--convy-project",
        metavar="PATH",
        default=None,
        help="the convy project's folder (default: the rootdir)",
    )
    group.addoption(
        "--convy-agent",
        metavar="NAME",
        action="append",
        default=[],
        help="play this agent of agents/ (repeat for more; default: every agent)",
    )
    group.addoption(
        "--convy-attempts",
        metavar="N|auto",
        type=attempts,
        default=None,
        help="attempts per scenario, or auto: spent where the pass rate is still uncertain (default: [tool.convy] attempts)",
    )
    group.addoption(
        "--convy-trust",
        metavar="CONFIDENCE",
        type=float,
        default=None,
        help="the judge's confidence a claim needs to count (default: [tool.convy] trust)",
    )
    # The budget, as `convy run`'s --max-cost, --max-tokens and --max-minutes: each agent's run
    # starts no attempt once it is spent.
    group.addoption(
        "--convy-max-cost",
        metavar="USD",
        type=float,
        default=None,
        help="stop starting attempts once an agent's run has cost this much, in US dollars (default: [tool.convy] max_cost, else none)",
    )
    group.addoption(
        "--convy-max-tokens",
        metavar="N",
        type=int,
        default=None,
        help="stop starting attempts once an agent's run has taken this many tokens (default: [tool.convy] max_tokens, else none)",
    )
    group.addoption(
        "--convy-max-minutes",
        metavar="M",
        type=float,
        default=None,
        help="stop starting attempts after this many minutes of an agent's play (default: [tool.convy] max_minutes, else none)",
    )


def attempts(text: str) -> int | str:
    """``--convy-attempts`` as ``convy run``'s ``--attempts`` reads it: a whole number, or any other
    text (``auto``) kept for the settings, which refuse what is neither."""
    try:
        return int(text.strip())
    except ValueError:
        return text.strip()


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("convy"):
        return
    from convy.cli.pytest_items import ScenarioTests

    ScenarioTests(config).configured()
