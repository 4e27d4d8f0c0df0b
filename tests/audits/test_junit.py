"""JUnit XML from the real ``convy`` command, checked by a real schema validator and a real JUnit
reader.

The schema is Apache Ant's JUnit schema, the strictest one published, which the package
``sphinx-test-reports`` ships (a dev dependency, pinned to a version that has it): it is read from
the installed package at test time, never copied here, and given the one thing convy writes that
Ant's lacks and the schemas of Jenkins (the xunit plugin's ``junit-10.xsd``) and JUnit 5 (its
``jenkins-junit.xsd``) have: a case's ``<skipped message="…">`` and the suite's ``skipped`` count. The document is read back with
``junitparser``, as a CI tool would read it.

The project made here has four scenarios: one that passes, one whose checks fail, one whose agent
raises (with a key, control characters and far too much text in its error) and one its judge
cannot decide.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import msgspec
import pytest
from junitparser import Error, Failure, JUnitXml
from lxml import etree
from support.fakeproject import MODELS, Command, FakeProject

SECRET = "sk-canary-7f3a9c2e41d8b6a05e"

AGENT = '''\
import os
from decimal import Decimal

from convy.agent import Answer, Cost, Usage
from convy.fakes import FakeAgent


def answer(text):
    if "crash" in text:
        raise RuntimeError(f"bot exploded \\x1b[31mred\\x07 key={os.environ['BOT_API_KEY']} \\ufffe" + "x" * 5000)
    if "refund" in text:
        return "I guarantee a refund today, promise"
    return Answer("hello " + text, Usage(input=7, output=3, cost=Cost(Decimal("0.0125"), "provider")))


agent = FakeAgent(answer)
'''

SCENARIOS = {
    "greet.yaml": "script: [hi]\njudge:\n  - check: {said: hello}\n",
    "refund.yaml": (
        "script: [refund please]\njudge:\n  - The bot is polite.\n"
        + "".join(f"  - check: {{not_said: '{word}'}}\n" for word in ("guarantee", "refund", "today", "promise", "I", "a", "re"))
    ),
    "crash.yaml": "script: [crash now]\njudge:\n  - check: {said: hello}\n",
    "unjudged.yaml": "script: [hi]\njudge:\n  - An unjudgeable claim.\n",
}


XS = "http://www.w3.org/2001/XMLSchema"


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    """Apache Ant's JUnit schema, as the installed ``sphinx-test-reports`` ships it, with Jenkins'
    ``<skipped>`` in a case (beside ``<error>`` and ``<failure>``, one of them at most) and the
    suite's ``skipped`` count: strict everywhere else."""
    path = importlib.metadata.distribution("sphinx-test-reports").locate_file("sphinxcontrib/test_reports/schemas/JUnit.xsd")
    document = etree.parse(str(path))
    (choice,) = document.xpath("//xs:element[@name='testcase']/xs:complexType/xs:choice", namespaces={"xs": XS})
    skipped = etree.SubElement(choice, f"{{{XS}}}element", name="skipped")
    content = etree.SubElement(etree.SubElement(skipped, f"{{{XS}}}complexType"), f"{{{XS}}}simpleContent")
    extension = etree.SubElement(content, f"{{{XS}}}extension", base="pre-string")
    etree.SubElement(extension, f"{{{XS}}}attribute", name="message", type="xs:string")
    (suite,) = document.xpath("//xs:complexType[@name='testsuite']", namespaces={"xs": XS})
    etree.SubElement(suite, f"{{{XS}}}attribute", name="skipped", type="xs:int")
    return etree.XMLSchema(document)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return FakeProject(AGENT, MODELS, SCENARIOS, 2).written(tmp_path / "project")


def convy(where: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``convy -C project …`` run from ``where``, with the agent's key in the environment."""
    return Command(where, SECRET).ran(*arguments)


def run_id(project: Path) -> str:
    (folder,) = (project / "results" / "bot").iterdir()
    return folder.name


def properties(suite: etree._Element) -> dict[str, str]:
    return {one.get("name"): one.get("value") for one in suite.iter("property")}


def test_a_run_writes_junit_that_the_ant_schema_accepts(tmp_path: Path, project: Path, schema: etree.XMLSchema) -> None:
    """`convy run --junit FILE` writes FILE where the command was run, valid against Apache Ant's JUnit schema."""
    done = convy(tmp_path, "-C", "project", "run", "--junit", "junit.xml")
    assert done.returncode == 1, done.stderr  # an agent failed and an attempt was not judged
    assert "Traceback" not in done.stderr
    written = tmp_path / "junit.xml"
    assert f"junit: {written}" in done.stdout
    assert not (project / "junit.xml").exists()
    document = etree.parse(str(written))
    assert schema.validate(document), schema.error_log


def test_a_junit_reader_finds_each_scenario_with_its_outcome(tmp_path: Path, project: Path) -> None:
    """junitparser reads a suite for the agent and a case per scenario: a failure naming the failed checks with their evidence, errors for the agent and the judge."""
    assert convy(tmp_path, "-C", "project", "run", "--junit", "junit.xml").returncode == 1
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("bot", 4, 1, 2)
    cases = {case.name: case for case in suite}
    assert sorted(cases) == ["crash", "greet", "refund", "unjudged"]
    assert {case.classname for case in cases.values()} == {"bot"}
    assert cases["greet"].is_passed

    (failure,) = cases["refund"].result
    assert isinstance(failure, Failure)
    assert failure.type == "claim"
    assert failure.message.startswith(
        "0 of 2 judged attempts passed (0%, 95% interval 0%–66%), pass^2 0.00; "
        "0 of 2 passed, where every judged attempt must pass; failed: "
    )
    assert "'never said /guarantee/' held 0 of 2: #1: agent said 'guarantee' in turn 1" in failure.message
    assert failure.message.endswith("; and 5 more claims")
    assert "- never said /today/ (held 0 of 2 decided)\n    #1: agent said 'today' in turn 1\n    #2:" in failure.text
    assert "and 2 more claims" in failure.text  # seven failed, five named
    assert "The bot is polite" not in failure.text  # it held

    (error,) = cases["crash"].result
    assert isinstance(error, Error)
    assert error.type == "agent_failed"
    assert error.message.startswith("0 of 2 judged attempts passed (0%, 95% interval 0%–66%), pass^2 0.00; the agent failed in 2: agent_failed: ")
    assert "bot exploded" in error.message
    assert "- #1: agent_failed: " in error.text and "- #2: agent_failed: " in error.text

    (unjudged,) = cases["unjudged"].result
    assert isinstance(unjudged, Error)
    assert unjudged.type == "not_judged"
    assert unjudged.message == "none of 2 attempts judged: judge: the judge fake-judge failed: ValueError: the judge broke down"
    assert "not judged:\n- #1: judge: the judge fake-judge failed: ValueError: the judge broke down\n- #2: " in unjudged.text


def test_outside_text_is_bounded_written_out_and_keeps_secrets_hidden(tmp_path: Path, project: Path) -> None:
    """An agent's error reaches the file cut to its bound, its control characters and U+FFFE written out, its key hidden as the run kept it."""
    assert convy(tmp_path, "-C", "project", "run", "--junit", "junit.xml").returncode == 1
    data = (tmp_path / "junit.xml").read_bytes()
    assert SECRET.encode() not in data
    assert SECRET[:8].encode() not in data
    text = data.decode("utf-8")
    assert "\x1b" not in text and "\x07" not in text and "\ufffe" not in text
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    crash = next(case for case in suite if case.name == "crash")
    (error,) = crash.result
    assert "bot exploded \\x1b[31mred\\x07 key=" in error.message
    assert "more characters)" in error.message and len(error.message) < 600
    assert "\\ufffe" in error.text
    assert "more characters)" in error.text and len(error.text) < 3000


def test_a_claim_is_on_one_line_and_no_reason_starts_a_line_of_its_own(tmp_path: Path, project: Path) -> None:
    """A claim of a scenario file holding a line break and a forged passing line is written on one line in the failure's text (``\\n`` written out); a reason quoting it keeps its line break but indents what follows under its entry, so no line of the text starts as convy's own."""
    forged = "✓ greet #1  1 turn, 0.0 s · 1 claim held"
    (project / "scenarios" / "greet.yaml").write_text(f'script: [hi]\njudge:\n  - check: {{said: "zzz\\e\\n{forged}"}}\n', encoding="utf-8")
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "greet", "--junit", "junit.xml").returncode == 3
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    (failure,) = next(case for case in suite if case.name == "greet").result
    assert isinstance(failure, Failure)
    assert "- said /zzz\\x1b\\n✓ greet #1" in failure.text
    assert "\n      ✓ greet #1" in failure.text  # the reason's line break, indented under it
    assert not [line for line in failure.text.splitlines() if line.startswith("✓")], failure.text
    assert "\x1b" not in failure.text


def test_a_scenario_named_with_a_control_character_is_written_out(
    tmp_path: Path, project: Path, schema: etree.XMLSchema
) -> None:
    """A scenario file whose name holds a control character gives a valid document, the character written out."""
    (project / "scenarios" / "odd\x01name.yaml").write_text(SCENARIOS["greet.yaml"], encoding="utf-8")
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "odd*", "--junit", "junit.xml").returncode == 0
    document = etree.parse(str(tmp_path / "junit.xml"))
    assert schema.validate(document), schema.error_log
    assert [case.get("name") for case in document.iter("testcase")] == ["odd\\x01name"]


def test_the_numbers_are_the_reports(tmp_path: Path, project: Path) -> None:
    """The suite's pass rate, tokens and cost are those the report keeps in summary.json; its time is the run's."""
    assert convy(tmp_path, "-C", "project", "run", "--junit", "junit.xml").returncode == 1
    folder = project / "results" / "bot" / run_id(project)
    totals = msgspec.json.decode((folder / "summary.json").read_bytes())["totals"]
    (suite,) = etree.parse(str(tmp_path / "junit.xml")).getroot()
    found = properties(suite)
    assert float(found["convy.pass_rate"]) == pytest.approx(totals["rate"]["estimate"], abs=5e-5)
    assert float(found["convy.pass_rate.low"]) == pytest.approx(totals["rate"]["low"], abs=5e-5)
    assert float(found["convy.pass_rate.high"]) == pytest.approx(totals["rate"]["high"], abs=5e-5)
    assert (found["convy.passed"], found["convy.judged"]) == (str(totals["passed"]), str(totals["judged"]))
    assert found["convy.attempts.kept"] == str(totals["attempts"]) == "8"
    assert found["convy.tokens"] == str(totals["tokens"])
    assert found["convy.cost_complete"] == ("true" if totals["cost"]["complete"] else "false")
    assert found["convy.not_judged"] == "2"
    assert found["convy.failed_by_agent"] == "2"
    assert found["convy.pass^k.k"] == "2"
    assert found["convy.scenario.refund.result"] == "0 of 2 judged attempts passed (0%, 95% interval 0%–66%), pass^2 0.00"
    assert found["convy.cost_usd"] == totals["cost"]["amount"]
    assert (found["convy.cost_complete"], found["convy.cost_unpriced_requests"]) == ("false", "2")  # the refund scenario's two answers
    greet = [found[f"convy.scenario.greet.{name}"] for name in ("tokens", "cost_usd", "cost_complete")]
    assert greet == ["20", "0.0250", "true"]
    assert float(found["convy.scenario.greet.seconds"]) == float(suite.find("testcase[@name='greet']").get("time"))
    run = msgspec.json.decode((folder / "run.json").read_bytes())["status"]
    assert suite.get("timestamp") == run["started"][:19]


def test_report_writes_the_same_document_for_a_finished_run(tmp_path: Path, project: Path) -> None:
    """`convy report RUN --junit FILE` writes the document `convy run --junit` wrote for that run."""
    assert convy(tmp_path, "-C", "project", "run", "--junit", "played.xml").returncode == 1
    done = convy(tmp_path, "-C", "project", "report", run_id(project), "--junit", "again.xml")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again.xml").read_bytes() == (tmp_path / "played.xml").read_bytes()


def test_a_scenario_with_no_attempt_kept_is_an_error(tmp_path: Path, project: Path, schema: etree.XMLSchema) -> None:
    """A scenario whose attempts are not in the run folder (a run stopped early) is an error of type not_played."""
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "greet", "refund").returncode == 3  # refund fails
    attempts = project / "results" / "bot" / run_id(project) / "attempts.jsonl"
    lines = attempts.read_bytes().splitlines(keepends=True)
    attempts.write_bytes(b"".join(line for line in lines if b'"scenario":"greet"' in line))
    assert convy(tmp_path, "-C", "project", "report", run_id(project), "--junit", "junit.xml").returncode == 0
    document = etree.parse(str(tmp_path / "junit.xml"))
    assert schema.validate(document), schema.error_log
    (suite,) = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    assert (suite.tests, suite.failures, suite.errors) == (2, 0, 1)
    (refund,) = [case for case in suite if case.name == "refund"]
    (error,) = refund.result
    assert (error.type, error.message) == ("not_played", "no attempt of it was kept (the run is finished)")


def test_report_writes_a_suite_per_run_named(tmp_path: Path, project: Path, schema: etree.XMLSchema) -> None:
    """Two runs named give one file with a suite each, in the order named, numbered from 0."""
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "greet").returncode == 0
    first = run_id(project)
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "refund").returncode == 3  # its checks fail
    (second,) = {folder.name for folder in (project / "results" / "bot").iterdir()} - {first}
    assert convy(tmp_path, "-C", "project", "report", second, first, "--junit", "both.xml").returncode == 0
    document = etree.parse(str(tmp_path / "both.xml"))
    assert schema.validate(document), schema.error_log
    suites = document.getroot().findall("testsuite")
    assert [(suite.get("id"), properties(suite)["convy.run"]) for suite in suites] == [("0", second), ("1", first)]
    assert [[case.get("name") for case in suite.iter("testcase")] for suite in suites] == [["refund"], ["greet"]]


def test_report_without_a_run_named_refuses_junit(tmp_path: Path, project: Path) -> None:
    """`convy report --junit FILE` with no run named is a configuration error in one line, and writes nothing."""
    assert convy(tmp_path, "-C", "project", "run", "--scenarios", "greet").returncode == 0
    done = convy(tmp_path, "-C", "project", "report", "--junit", "junit.xml")
    assert done.returncode == 2
    assert done.stderr == "convy: --junit writes the runs named: convy report RUN… --junit FILE\n"
    assert not (tmp_path / "junit.xml").exists()


def test_a_junit_file_that_cannot_be_written_is_one_line(tmp_path: Path, project: Path) -> None:
    """A JUnit file whose folder cannot be made is one line and exit 1 after a run (the run kept), exit 2 from report."""
    unnameable = "n" * 300 + ".xml"  # a name no file system takes
    done = convy(tmp_path, "-C", "project", "run", "--scenarios", "greet", "--junit", unnameable)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"convy: {tmp_path / unnameable}: cannot be written: ")
    assert f"the runs are kept: convy report {run_id(project)} --junit FILE" in done.stderr  # the run's own id
    assert (project / "results" / "bot" / run_id(project) / "report.html").exists()
    done = convy(tmp_path, "-C", "project", "report", run_id(project), "--junit", unnameable)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "cannot be written" in done.stderr
    assert not list(tmp_path.glob("**/nnnn*"))


def test_absent_agents_are_valid_skipped_suites(tmp_path: Path, project: Path, schema: etree.XMLSchema) -> None:
    """An agent skipped as absent is a suite of its own with one skipped case saying why, beside the
    runs played; with every agent absent, a `nothing tested` error too. Both valid against the schema."""
    (project / "agents" / "off.py").write_text('from convy import Absent\n\nagent = Absent("set OFF_URL")\n', encoding="utf-8")
    convy(tmp_path, "-C", "project", "run", "--scenarios", "greet", "--junit", "mixed.xml")
    mixed = etree.parse(str(tmp_path / "mixed.xml"))
    assert schema.validate(mixed), schema.error_log
    (off,) = mixed.xpath("//testsuite[@name='off']")
    assert (off.get("tests"), off.get("skipped"), off.get("errors")) == ("1", "1", "0")
    assert off.xpath("testcase/skipped/@message") == ["skipped agent off: set OFF_URL"]
    (project / "agents" / "bot.py").unlink()
    done = convy(tmp_path, "-C", "project", "run", "--junit", "none.xml")
    assert done.returncode == 7, done.stdout + done.stderr
    none = etree.parse(str(tmp_path / "none.xml"))
    assert schema.validate(none), schema.error_log
    assert none.xpath("//testcase/error/@type") == ["nothing_tested"]
