"""Dead services through the real command: a participant whose service refuses its first requests
for good stops the run at once, with the fix (issue 25, item 6).

Each test makes a project with ``convy init`` and points its ``.env`` at the stand-in, which here
answers as a real gateway does: only under ``/v1``, only the three model names it knows, only with
the key. A wrong key, a URL without ``/v1``, an unknown model, an agent server that is not up, a
gateway that is down: ``convy run`` exits 2 with one line per participant that never answered —
who, what its service said, the likely fix — keeps no run (or a resumed run gains nothing), and
sends no more than a few requests, not the whole plan. A service that fails once and then answers
is alive, and the run plays on. Nothing here measures time.
"""

# ruff: noqa: F811 - made and roles are test_services_cli's fixtures, taken as arguments here

from __future__ import annotations

import http.server
import re
import socket
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.standin import StandIn, Status
from test_services_cli import KEY, Made, Roles, made, outcomes, roles  # noqa: F401 - made and roles are fixtures used here

from convy.judge import NoVerdict
from convy.vital import Pulse

MODELS = frozenset({"user-model", "judge-model", "agent-model"})
# The most requests a dead run may send: each of the three participants sends one request at a
# time until it has answered once (busy.Places), so at most Pulse.MOST each, and one more each
# that was already on its way when the run stopped. The plans below would send dozens.
MOST = 3 * (Pulse.MOST + 1)


@pytest.fixture
def gateway(roles: Roles) -> Iterator[StandIn]:
    """A gateway as real ones are: the key, the /v1 prefix and the model names it knows."""
    with StandIn(reply=roles, api_key=KEY, prefix="/v1", models=MODELS) as server:
        yield server
        assert server.errors == []


def dotenv(made: Made, url: str, key: str = KEY, **models: str) -> None:
    names = {"USER_MODEL": "user-model", "JUDGE_MODEL": "judge-model", "AGENT_MODEL": "agent-model", **models}
    (made.folder / ".env").write_text(
        f"GATEWAY_URL={url}\nGATEWAY_KEY={key}\n" + "".join(f"{name}={value}\n" for name, value in names.items())
    )


def runs(made: Made, agent: str) -> list[Path]:
    return sorted(path.parent for path in (made.folder / "results").glob(f"{agent}/*/run.json"))


def unused_port() -> int:
    """A port nothing listens on: bound to find it free, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stopped_saying(ran: object, *lines: str) -> str:
    """The command exited 2 and its errors hold each line whole; its errors, for more checks."""
    code, errors = ran.returncode, ran.stderr  # type: ignore[attr-defined]
    assert code == 2, ran.stdout + errors  # type: ignore[attr-defined]
    for line in lines:
        assert re.search(line, errors, re.MULTILINE), (line, errors)
    assert "Traceback" not in errors
    return errors


def test_a_wrong_key_stops_the_run_naming_the_key_variable(made: Made, gateway: StandIn) -> None:
    """GATEWAY_KEY refused (401): the agent on the gateway and the user's model never answer; the run stops,
    exit 2, naming GATEWAY_KEY in .env (never its value), and no run is kept."""
    dotenv(made, gateway.url + "/v1", key="sk-wrong-key-0815")

    ran = made.ran("run", "assistant", "-k", "3")

    url = re.escape(f"{gateway.url}/v1/chat/completions")
    # Both share the gateway: whichever meets its third 401 first stops the run, and each is said.
    errors = stopped_saying(
        ran,
        rf"^convy: the (agent assistant|simulated user's model user-model) answered 401 Unauthorized at {url} "
        r"\(3 requests, none answered\): the key was refused: check GATEWAY_KEY in \.env$",
        r"^convy: run \S+ stopped before playing on and is not kept; the \d+ attempts? (it|they) refused (is|are) not "
        r"recorded; once that is mended, run again$",
    )
    participants = [line for line in errors.splitlines() if line.startswith("convy: the ")]
    assert participants and all(line.endswith("the key was refused: check GATEWAY_KEY in .env") for line in participants)
    assert "sk-wrong" not in ran.stdout + errors
    assert runs(made, "assistant") == []
    assert 3 <= len(gateway.received) <= MOST, "24 attempts were planned"
    assert all(request.status == 401 for request in gateway.received)


def test_a_url_without_v1_stops_the_run_saying_so(made: Made, gateway: StandIn) -> None:
    """GATEWAY_URL without /v1 (404 at /chat/completions): the run stops saying the URL has no /v1, with the
    URL it likely means and the variable that holds it."""
    dotenv(made, gateway.url)

    ran = made.ran("run", "shop", "--scenarios", "orders/impatient", "refunds/upset-customer", "-k", "3")

    stopped_saying(
        ran,
        rf"^convy: the simulated user's model user-model answered 404 Not Found at {re.escape(gateway.url)}/chat/completions "
        rf"\(3 requests, none answered\): the URL has no /v1: is it {re.escape(gateway.url)}/v1\? \(GATEWAY_URL in \.env\)$",
    )
    assert runs(made, "shop") == []
    assert 3 <= len(gateway.received) <= MOST
    assert {request.path for request in gateway.received} == {"/chat/completions"}


@pytest.mark.parametrize("status", [404, 400], ids=["404 as OpenAI", "400 as LiteLLM"])
def test_an_unknown_model_stops_the_run_naming_the_model_variable(made: Made, roles: Roles, status: int) -> None:
    """A misspelt USER_MODEL, refused as OpenAI does (404) or as LiteLLM does (a 400 naming the model): the run
    stops asking whether the model name is right, naming USER_MODEL in .env."""
    with StandIn(reply=roles, api_key=KEY, prefix="/v1", models=MODELS, unknown_model=status) as gateway:
        dotenv(made, gateway.url + "/v1", USER_MODEL="user-modle")

        ran = made.ran("run", "shop", "--scenarios", "orders/impatient", "-k", "3")

        reason = "404 Not Found" if status == 404 else "400 Bad Request"
        stopped_saying(
            ran,
            rf"^convy: the simulated user's model user-modle answered {reason} at {re.escape(gateway.url)}/v1/chat/completions "
            r"\(3 requests, none answered\): is the model name right \(USER_MODEL in \.env\)\?$",
        )
        assert runs(made, "shop") == []
        assert len(gateway.received) == 3, "one request at a time until the model has answered"


def test_an_agent_whose_server_is_not_up_stops_the_run(made: Made, gateway: StandIn) -> None:
    """A JSON agent nothing listens for: the run stops asking whether the agent's server is running at its URL,
    the file that gives it named; the models, which answered, are not blamed."""
    port = unused_port()
    (made.folder / "agents" / "remote.py").write_text(
        "from convy import JsonAgent, JsonEndpoint\n\n"
        f'agent = JsonAgent(JsonEndpoint("http://127.0.0.1:{port}/agent"), reply="output.text", calls="output.tool_calls")\n'
    )
    dotenv(made, gateway.url + "/v1")

    ran = made.ran("run", "remote", "-k", "3")

    errors = stopped_saying(
        ran,
        rf"^convy: the agent remote could not connect to http://127\.0\.0\.1:{port}/agent \(3 requests, none answered\): "
        rf"is the agent's server running at http://127\.0\.0\.1:{port}/agent\? \(given in agents/remote\.py\)$",
    )
    assert "model" not in errors.splitlines()[0]
    assert len(errors.splitlines()) == 2, errors
    assert runs(made, "remote") == []
    assert len(gateway.received) <= MOST, "the user's model answered as the agent failed"


def test_a_gateway_that_is_down_stops_the_run(made: Made) -> None:
    """Nothing at GATEWAY_URL: the models cannot connect; the run stops asking whether the server is running
    there, naming GATEWAY_URL in .env."""
    port = unused_port()
    dotenv(made, f"http://127.0.0.1:{port}/v1")

    ran = made.ran("run", "shop", "--scenarios", "orders/impatient", "refunds/upset-customer", "-k", "3")

    stopped_saying(
        ran,
        rf"^convy: the simulated user's model user-model could not connect to http://127\.0\.0\.1:{port}/v1/chat/completions "
        rf"\(3 requests, none answered\): is the server at http://127\.0\.0\.1:{port}/v1 running, and is that its address\? "
        r"\(GATEWAY_URL in \.env\)$",
    )
    assert runs(made, "shop") == []


def test_a_refused_key_keeps_what_was_played_and_resume_plays_the_rest_after_the_fix(made: Made, gateway: StandIn) -> None:
    """The models' key refused: the scenarios that need no model were played and are kept, none of the attempts
    the models failed; resumed while the key is still wrong the run gains nothing; once mended, ``convy resume``
    plays the rest and the run is whole, every attempt judged."""
    dotenv(made, gateway.url + "/v1", key="sk-wrong-key-0815")

    ran = made.ran("run", "shop", "-k", "2")

    errors = stopped_saying(
        ran,
        r"^convy: the (simulated user's|judge's) model \S+ answered 401 Unauthorized at .*: the key was refused: "
        r"check GATEWAY_KEY in \.env$",
        r"^convy: run \S+ stopped before playing on and keeps \d+ of 18 attempts; .*once that is mended: convy resume \S+$",
    )
    (folder,) = runs(made, "shop")
    kept = outcomes(folder)
    assert 0 < len(kept) < 18
    assert not any(isinstance(outcome.result, NoVerdict) for outcome in kept), "no attempt a model failed is kept"
    run_id = folder.name
    assert f"convy resume {run_id}" in errors
    sent = len(gateway.received)
    assert sent <= MOST

    again = made.ran("resume", run_id)
    stopped_saying(again, r"^convy: the (simulated user's|judge's) model \S+ answered 401 Unauthorized")
    assert outcomes(folder) == kept, "a resumed run gains none of the attempts the refused models failed"
    assert len(gateway.received) - sent <= MOST

    dotenv(made, gateway.url + "/v1")
    mended = made.ran("resume", run_id)
    assert mended.returncode in (0, 3), mended.stdout + mended.stderr
    whole = outcomes(folder)
    assert len(whole) == 18
    assert not any(isinstance(outcome.result, NoVerdict) for outcome in whole)


def test_a_misspelt_judge_model_keeps_no_run_even_with_attempts_played(made: Made, gateway: StandIn) -> None:
    """A misspelt JUDGE_MODEL: a run keeps its models' names and resume holds it to them, so the run, though it
    played the scenarios that need no judge, is not kept: it names a model that does not exist."""
    dotenv(made, gateway.url + "/v1", JUDGE_MODEL="judge-modle")

    ran = made.ran("run", "shop", "-k", "2")

    stopped_saying(
        ran,
        r"^convy: the judge's model judge-modle answered 404 Not Found at .*: is the model name right "
        r"\(JUDGE_MODEL in \.env\)\?$",
        r"^convy: run \S+ stopped before playing on and is not kept \(a run keeps its models' names: it could not be "
        r"resumed with another\)",
    )
    assert "✓" in ran.stdout, "the scenarios decided by checks alone were played"
    assert runs(made, "shop") == []


def test_a_service_that_fails_once_then_answers_plays_on_and_says_the_same_cause_everywhere(
    made: Made, gateway: StandIn, tmp_path: Path
) -> None:
    """One 401 and then answers: the user's model is alive, the run plays every attempt, and the attempt that
    met the 401 is an ordinary attempt not judged — a service's failure on its line, in the totals, in JUnit
    and in the Markdown summary alike."""
    dotenv(made, gateway.url + "/v1")
    gateway.faults(Status(401))  # the first request: the user's model's, as only it speaks first

    ran = made.ran(
        "run", "shop", "--scenarios", "orders/impatient", "-k", "3", "--junit", str(tmp_path / "junit.xml"),
        "--summary", str(tmp_path / "summary.md"),
    )

    assert ran.returncode not in (0, 2), ran.stdout + ran.stderr  # one attempt not judged: exit 5
    assert "stopped" not in ran.stderr
    (folder,) = runs(made, "shop")
    kept = outcomes(folder)
    assert len(kept) == 3
    failed = [outcome for outcome in kept if isinstance(outcome.result, NoVerdict)]
    assert len(failed) == 1 and failed[0].result.service
    assert re.search(
        r"^\? orders/impatient #\d  0 turns, \d+\.\d s · not judged, a service failed the simulated user's model: "
        r"model user-model failed: HttpFailure: POST \S+: 401 Unauthorized",
        ran.stdout,
        re.MULTILINE,
    ), ran.stdout
    assert "by cause: agent 0, user 0, judge 0, service 1 (100%), tool 0" in ran.stdout
    junit = ElementTree.parse(tmp_path / "junit.xml").getroot()
    said = " ".join((element.text or "") + " " + element.get("message", "") for element in junit.iter())
    assert "service (simulated user's model): model user-model failed" in said
    assert "user: model user-model" not in said
    summary = (tmp_path / "summary.md").read_text()
    assert "service failed a model" in summary
    assert "simulated user failed" not in summary


def test_smoke_asks_each_model_once_and_names_the_fix(made: Made, gateway: StandIn) -> None:
    """``--smoke`` asks the simulated user's model and the judge's one short question each: ✓ for the one that
    answers, ✗ with what the service said and the fix for the one that does not; exit 1."""
    dotenv(made, gateway.url + "/v1", JUDGE_MODEL="judge-modle")

    ran = made.ran("run", "shop", "--smoke")

    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "✓ shop: connection works" in ran.stdout
    assert re.search(r"^✓ the simulated user's model user-model: answers \(\d+\.\d\d s\): OK$", ran.stdout, re.MULTILINE)
    assert re.search(
        rf"^✗ the judge's model judge-modle answered 404 Not Found at {re.escape(gateway.url)}/v1/chat/completions: "
        r"is the model name right \(JUDGE_MODEL in \.env\)\?$",
        ran.stderr,
        re.MULTILINE,
    ), ran.stderr
    assert len(gateway.received) == 2
    assert not (made.folder / "results").exists()


def played_once(made: Made, gateway: StandIn) -> Path:
    """A run of shop's scenario that a judge decides, played with everything right: its folder."""
    dotenv(made, gateway.url + "/v1")
    ran = made.ran("run", "shop", "--scenarios", "orders/impatient", "-k", "2")
    assert ran.returncode in (0, 3), ran.stdout + ran.stderr
    (folder,) = runs(made, "shop")
    return folder


def test_rejudge_with_a_refused_key_stops_at_once_naming_the_key_and_keeps_no_run(made: Made, gateway: StandIn) -> None:
    """``convy rejudge`` with the judge's key now wrong: no attempt is recorded "not judged"; the command stops
    after a few requests with the fix, as a played run does, and the re-judged run is not kept."""
    source = played_once(made, gateway)
    dotenv(made, gateway.url + "/v1", key="sk-wrong-key-0815")
    sent = len(gateway.received)

    ran = made.ran("rejudge", source.name)

    stopped_saying(
        ran,
        r"^convy: the judge's model judge-model answered 401 Unauthorized at .*: the key was refused: "
        r"check GATEWAY_KEY in \.env$",
        r"^convy: run \S+ stopped before playing on and is not kept",
    )
    assert "not judged" not in ran.stdout
    assert runs(made, "shop") == [source], "the re-judged run joins no history"
    assert len(gateway.received) - sent <= Pulse.MOST + 1


@pytest.mark.parametrize("how", ["project", "--judge"])
def test_rejudge_with_an_unknown_judge_model_stops_naming_where_it_was_given(made: Made, gateway: StandIn, how: str) -> None:
    """A judge model the gateway does not know, from ``.env`` or from ``--judge``: the fix names that place."""
    source = played_once(made, gateway)
    if how == "project":
        dotenv(made, gateway.url + "/v1", JUDGE_MODEL="judge-modle")
        ran = made.ran("rejudge", source.name)
        fix = r"\(JUDGE_MODEL in \.env\)"
    else:
        ran = made.ran("rejudge", source.name, "--judge", "judge-modle")
        fix = r"\(--judge judge-modle\)"

    stopped_saying(ran, rf"^convy: the judge's model judge-modle answered 404 Not Found at .*: is the model name right {fix}\?$")
    assert runs(made, "shop") == [source]


def test_rejudge_with_a_gateway_that_is_down_stops(made: Made, gateway: StandIn) -> None:
    """The gateway gone since the run: re-judging says it cannot connect, and where the address is set."""
    source = played_once(made, gateway)
    dotenv(made, f"http://127.0.0.1:{unused_port()}/v1")

    ran = made.ran("rejudge", source.name)

    stopped_saying(
        ran,
        r"^convy: the judge's model judge-model could not connect to \S+ \(\d requests?, none answered\): is the server "
        r"at \S+ running, and is "
        r"that its address\? \(GATEWAY_URL in \.env\)$",
    )
    assert runs(made, "shop") == [source]


def test_a_spread_run_with_a_refused_key_stops_every_worker_and_keeps_no_run(made: Made, gateway: StandIn) -> None:
    """``--workers 2``: the workers tell the driver what each request came to, and the driver stops the whole
    run — not one worker — with the same words as a run in one process; nothing misleading is kept."""
    pytest.importorskip("ray")
    dotenv(made, gateway.url + "/v1", key="sk-wrong-key-0815")

    ran = made.ran("run", "shop", "--workers", "2", "--scenarios", "orders/*", "-k", "3")

    stopped_saying(
        ran,
        r"^convy: the (simulated user's|judge's) model \S+ answered 401 Unauthorized at .*: the key was refused: "
        r"check GATEWAY_KEY in \.env$",
        r"^convy: run \S+ stopped before playing on",
    )
    for folder in runs(made, "shop"):  # a run that kept the attempts no model was needed for, and only those
        assert not any(isinstance(outcome.result, NoVerdict) for outcome in outcomes(folder))
    assert len(gateway.received) <= 2 * MOST, "each worker stops sending once the service is dead"


@pytest.fixture
def files_server(tmp_path: Path) -> Iterator[str]:
    """A static file server, as ``python -m http.server`` starts one: it answers GET and refuses POST (501)."""
    folder = tmp_path / "www"
    folder.mkdir()
    (folder / "index.html").write_text("<p>hello</p>\n")

    class Files(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *arguments: object, **options: object) -> None:
            super().__init__(*arguments, directory=str(folder), **options)  # type: ignore[arg-type]

        def log_message(self, format: str, *arguments: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def remote(made: Made, url: str) -> None:
    (made.folder / "agents" / "remote.py").write_text(
        "from convy import JsonAgent, JsonEndpoint\n\n"
        f'agent = JsonAgent(JsonEndpoint("{url}"), reply="output.text", calls="output.tool_calls")\n'
    )


def test_an_agent_url_where_a_file_server_stands_stops_the_run(made: Made, gateway: StandIn, files_server: str) -> None:
    """The agent's port taken by a static file server (501 to a POST; 405 from others): no retry can mend it, so
    the run stops and says that something answers there, but not the agent's endpoint."""
    remote(made, f"http://{files_server}/chat")
    dotenv(made, gateway.url + "/v1")

    ran = made.ran("run", "remote", "-k", "3")

    stopped_saying(
        ran,
        rf"^convy: the agent remote answered 501 Not Implemented at http://{files_server}/chat \(3 requests, none answered\): "
        r"something answers there, but not the agent's endpoint \(it takes no POST: a static file server\?\): is the "
        r"agent's server running, and is the URL right\? \(given in agents/remote\.py\)$",
    )
    assert runs(made, "remote") == []


def test_an_https_url_to_a_plain_http_server_stops_the_run(made: Made, gateway: StandIn, files_server: str) -> None:
    """``https://`` for a server that speaks plain HTTP: the handshake can never succeed; the run stops with the
    ``http://`` URL to try."""
    remote(made, f"https://{files_server}/chat")
    dotenv(made, gateway.url + "/v1")

    ran = made.ran("run", "remote", "-k", "3")

    stopped_saying(
        ran,
        rf"^convy: the agent remote answered in plain HTTP, not TLS, at https://{files_server}/chat \(3 requests, none "
        rf"answered\): the server there speaks plain HTTP: is its URL http://{files_server}/chat\? "
        r"\(given in agents/remote\.py\)$",
    )
    assert runs(made, "remote") == []


def test_a_gateway_url_where_a_file_server_stands_stops_the_run(made: Made, files_server: str) -> None:
    """``GATEWAY_URL`` pointing at a static file server: the models' requests are refused with 501; the run stops
    naming the variable."""
    dotenv(made, f"http://{files_server}/v1")

    ran = made.ran("run", "shop", "--scenarios", "orders/impatient", "-k", "3")

    stopped_saying(
        ran,
        r"^convy: the simulated user's model user-model answered 501 Not Implemented at .*: something answers there, but "
        r"not a Chat Completions service \(it takes no POST\): is that the service's base URL\? \(GATEWAY_URL in \.env\)$",
    )
    assert runs(made, "shop") == []


def test_a_chat_agent_takes_a_base_url_as_every_other_client_does(made: Made, gateway: StandIn) -> None:
    """``ChatAgent`` given a base URL ending in ``/v1`` posts to ``/v1/chat/completions``, as a model's base
    URL does (issue 26: it used to post to the URL as given, and get 404)."""
    (made.folder / "agents" / "chat.py").write_text(
        "from convy import ChatAgent\n\n"
        f'agent = ChatAgent("{gateway.url}/v1", model="agent-model", key="{KEY}", extra={{"tools": []}})\n'
    )
    dotenv(made, gateway.url + "/v1")

    ran = made.ran("run", "chat", "-k", "1")

    assert "answered 404" not in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    assert KEY not in ran.stdout + ran.stderr
    posted = {request.path for request in gateway.received if request.json and request.json.get("model") == "agent-model"}
    assert posted == {"/v1/chat/completions"}


def test_a_spread_runs_driver_adds_up_what_its_workers_heard() -> None:
    """The driver's vitals are told each worker's news: refusals from two workers add up to a dead participant;
    one that answers in one worker is alive for the run, and the other worker, told so, sends to it again."""
    from convy.problems import HttpFailure
    from convy.vital import Vitals

    refused = HttpFailure("POST http://127.0.0.1:9/v1/chat/completions: 401 Unauthorized", 401, True, "http://127.0.0.1:9/v1")
    driver, first, second = Vitals(), Vitals(), Vitals()
    for worker, times in ((first, 2), (second, 1)):
        pulse = worker.pulse("judge", "judge-model")
        with worker.noting() as noted:
            for _ in range(times):
                pulse.refused(refused)
        held, answered = driver.told(worker.news(noted))
        assert answered == () and {one.who for one in held} == {"judge"}
        assert not worker.pulse("judge", "judge-model").dead(), "no worker alone reached three"
    stop = driver.stopped()
    assert stop is not None and stop.unanswered[0].refused == 3

    driver, first, second = Vitals(), Vitals(), Vitals()
    for _ in range(Pulse.MOST):
        second.pulse("user", "user-model").refused(refused)
    assert second.pulse("user", "user-model").dead()
    driver.told(second.news(set()))
    first.pulse("user", "user-model").heard()
    _, answered = driver.told(first.news(set()))
    assert answered == (("user", "user-model"),) and driver.stopped() is None
    second.answered_elsewhere(*answered[0])
    assert not second.pulse("user", "user-model").dead()
    assert second.news(set()).beats == (), "what it was told is not told back"
