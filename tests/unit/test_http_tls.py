"""TLS: a JsonAgent behind a server that requires a client certificate, through a real bench.

With the right CA and client certificate the attempt plays; without the certificate, with a CA
that does not know the server, or with a file missing or unusable, the attempt fails with a reason
that says what is wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from support.standin import TLS, StandIn, TLSFiles

from convy.bench import Bench
from convy.fakes import MemoryJournal
from convy.http import JsonEndpoint, Tls
from convy.httpagents import JsonAgent
from convy.judge import Failed, Models
from convy.outcome import Outcome
from convy.plan import Plan
from convy.problems import HttpFailure
from convy.records import Limits
from convy.scenario import Scenario

SECRET = "tls-header-secret"


@pytest.fixture(scope="module")
def tls() -> TLS:
    return TLS(client_cert_required=True)


@pytest.fixture(scope="module")
def files(tls: TLS, tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    return tls.write(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    """The files of another CA, which knows neither the server nor its clients."""
    return TLS().write(tmp_path_factory.mktemp("stranger"))


@pytest.fixture
def server(tls: TLS) -> Iterator[StandIn]:
    with StandIn(tls=tls) as server:
        yield server


def played(url: str, tls: Tls) -> Outcome:
    agent = JsonAgent(JsonEndpoint(url + "/agent", {"x-secret": SECRET}, tls=tls), reply="output.text")
    scenario = msgspec.convert({"id": "tls", "script": ["one", "two"], "judge": [{"check": {"said": "."}}]}, Scenario)
    journal = MemoryJournal()
    asyncio.run(Bench(agent, Models(), Limits(agent_patience=5)).run(Plan((scenario,)), journal))
    (outcome,) = journal.outcomes
    assert SECRET not in msgspec.json.encode(outcome).decode()
    return outcome


def failure(outcome: Outcome) -> str:
    assert outcome.stop == "agent_failed"
    assert isinstance(outcome.result, Failed)
    assert outcome.transcript.turns == ()
    return outcome.result.reason


def test_the_client_certificate_opens_the_door(server: StandIn, files: TLSFiles) -> None:
    """With the CA and the client certificate and key, the attempt plays and the server knows the client."""
    outcome = played(server.url, Tls(str(files.ca), str(files.cert), str(files.key)))
    assert (outcome.stop, outcome.status(1.0)) == ("finished", "passed")
    assert [turn.answer.text for turn in outcome.transcript.turns] == ["You said: one", "You said: two"]
    assert [record.client_cert for record in server.received] == ["client@convy.test"] * 2
    assert server.connections == 1


def test_a_certificate_file_holding_its_key_serves_alone(server: StandIn, files: TLSFiles) -> None:
    """A certificate file that holds its key too needs no key file."""
    outcome = played(server.url, Tls(str(files.ca), str(files.cert_and_key)))
    assert outcome.status(1.0) == "passed"


def test_without_the_client_certificate_the_attempt_fails(server: StandIn, files: TLSFiles) -> None:
    """Without a client certificate the server breaks off; the attempt fails, the reason hinting at the certificate."""
    reason = failure(played(server.url, Tls(ca=str(files.ca))))
    assert reason.startswith(f"HttpFailure: POST {server.url}/agent: the connection broke")
    assert "client certificate" in reason
    assert all("PEER_DID_NOT_RETURN_A_CERTIFICATE" in error for error in server.tls_errors_seen())
    assert server.received == []


def test_a_client_certificate_of_another_ca_fails_the_attempt(server: StandIn, files: TLSFiles, stranger: TLSFiles) -> None:
    """A client certificate the server does not trust fails the attempt like a missing one."""
    reason = failure(played(server.url, Tls(str(files.ca), str(stranger.cert), str(stranger.key))))
    assert "client certificate" in reason
    assert server.received == []


def test_a_wrong_ca_fails_the_attempt_naming_the_verification(server: StandIn, files: TLSFiles, stranger: TLSFiles) -> None:
    """A CA that does not know the server's certificate fails the attempt: could not connect, certificate verify failed."""
    reason = failure(played(server.url, Tls(str(stranger.ca), str(files.cert), str(files.key))))
    assert reason.startswith(f"HttpFailure: POST {server.url}/agent: could not connect (ConnectError: ")
    assert "CERTIFICATE_VERIFY_FAILED" in reason
    assert server.received == []


@pytest.mark.parametrize("missing", ["ca", "cert", "key"])
def test_a_missing_file_is_named(missing: str, server: StandIn, files: TLSFiles, tmp_path: Path) -> None:
    """A TLS file that is not there fails the attempt naming which file and where, before anything is sent."""
    given = {"ca": str(files.ca), "cert": str(files.cert), "key": str(files.key), missing: str(tmp_path / "gone.pem")}
    reason = failure(played(server.url, Tls(**given)))
    assert reason == f"HttpFailure: TLS {missing} file not found: {tmp_path / 'gone.pem'}"
    assert server.connections == 0


def test_a_file_that_is_not_a_certificate_is_named(server: StandIn, files: TLSFiles) -> None:
    """A CA file that holds no certificate fails the attempt naming the file, not with a raw SSL error."""
    reason = failure(played(server.url, Tls(str(files.key), str(files.cert), str(files.key))))
    assert reason.startswith(f"HttpFailure: TLS ca file cannot be used: {files.key}: ")
    assert server.connections == 0


def test_a_plain_http_endpoint_loads_no_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client for an ``http://`` endpoint with no TLS settings never makes a TLS connection: the
    system's trust, some 30 ms to load (far more on a busy machine), is not loaded for it; the
    context it gets trusts nothing, so a handshake, were one made, would fail rather than pass
    unverified. An ``https://`` endpoint gets the system's trust."""
    import ssl

    import httpx2

    loaded: list[bool] = []
    making = httpx2.create_ssl_context

    def counted(*arguments: object, **keywords: object) -> ssl.SSLContext:
        loaded.append(True)
        return making(*arguments, **keywords)

    monkeypatch.setattr(httpx2, "create_ssl_context", counted)
    Tls.context.cache_clear()

    async def opened(url: str) -> ssl.SSLContext:
        connection = JsonEndpoint(url).opened(1)
        context = connection.client._transport._pool._ssl_context  # the context the client was given
        await connection.client.aclose()
        return context

    plain = asyncio.run(opened("http://127.0.0.1:9/agent"))
    assert loaded == []
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert plain.get_ca_certs() == [] and plain.cert_store_stats()["x509_ca"] == 0
    secure = asyncio.run(opened("https://127.0.0.1:9/agent"))
    assert loaded == [True]
    assert secure is Tls().context()
    Tls.context.cache_clear()


def test_tls_settings_on_a_plain_http_endpoint_are_still_read(tmp_path: Path) -> None:
    """A CA named for an ``http://`` endpoint is read as for any other (a file missing is named),
    not passed over because the endpoint makes no TLS connection."""
    gone = tmp_path / "gone.pem"
    endpoint = JsonEndpoint("http://127.0.0.1:9/agent", tls=Tls(ca=str(gone)))
    with pytest.raises(HttpFailure, match=f"TLS ca file not found: {gone}"):
        endpoint.opened(1)
