"""Property-based fuzz of the HTTP API from the daemon's own OpenAPI schema.

Schemathesis generates requests for every documented operation, valid ones and
invalid ones, and runs them in-process against the app built over fake engines. A 5xx,
a status the schema does not list, a content type other than the documented one or a
body that does not match the documented schema fails the test. It runs with no API
key configured, and with one configured and sent (the schema is then fetched with it).

The operations are driven from here rather than with ``schema.parametrize()``: its
fixture-based form relies on pytest internals that pytest 9 removed.

This file runs in an interpreter of its own (``test_openapi_fuzz.py`` starts it):
importing schemathesis patches Hypothesis process-wide, and in a long test session
its caches answered for apps of earlier tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis.checks import (
    CheckFunction,
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.schemas import OpenApiSchema

from daemon.config import Config
from daemon.ops.inflight import InFlight
from daemon.ops.metrics import Metrics, ServiceSnapshot
from daemon.runtime.context import Core
from daemon.runtime.engines import Engines
from daemon.runtime.services import Services
from daemon.voices.training import Training
from protocols.http.app import create_app
from tests.fakes import FakeEngines, fake_config, fake_engines

API_KEY = "fuzz-key-0123456789"
MAX_EXAMPLES = 8
"""Generated requests per operation, auth mode and generation mode: enough to reach the
validation branches, few enough that the whole file stays well under a minute."""
DEADLINE_MS = 2000
"""One request over fake engines takes milliseconds; a slow one means something hangs."""
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=DEADLINE_MS,
    # Generated bodies (WAV uploads) are large and slow to build: not a test problem.
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same requests on every run: a failure reproduces
    database=None,
    # Shrinking a failure can take minutes; the unshrunk request reproduces it as well.
    phases=[Phase.explicit, Phase.generate],
)
NOT_READY_HERE = {"POST /api/rtc/asr", "POST /v1/realtime/calls"}
"""Operations that answer 503 ``not-ready`` in-process: WebRTC media needs the daemon's
own event loop and UDP ports, so the app here has no WebRTC manager. Their status, content
type and body are still checked."""


def _details(exc: BaseException) -> str:
    """Every finding in ``exc`` with its request, as schemathesis words it."""
    if isinstance(exc, BaseExceptionGroup):
        return "\n".join(_details(inner) for inner in exc.exceptions)
    return str(exc)


class Service:
    """The running service as the HTTP app sees it, over fake engines, with training jobs
    and metrics (so that ``/metrics`` is fuzzed too)."""

    def __init__(self, config: Config, engines: Engines) -> None:
        self.config = config
        core = Core(engines)
        self.loaded = True
        self.services = Services(lambda: core)
        self.training = Training(config)
        self.inflight = InFlight()
        self.metrics = Metrics(lambda: ServiceSnapshot("ready", ("loading", "ready"), None))

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Always ready."""
        return True, {"status": "ok"}


def _has_negatable_input(operation: dict[str, Any]) -> bool:
    """True when the operation takes a body or a query or header parameter.

    Invalid path parameters would not form a URL, so schemathesis discards every one it
    draws: an operation with only those spends seconds finding nothing to send.
    """
    parameters = operation.get("parameters", [])
    return "requestBody" in operation or any(p.get("in") != "path" for p in parameters)


@pytest.fixture(params=["no-key", "key"])
def api_key(request: pytest.FixtureRequest) -> str:
    """The configured API key: none, or one the fuzzer then sends."""
    return API_KEY if request.param == "key" else ""


@pytest.fixture
def fakes(tmp_path: Path, api_key: str) -> Iterator[FakeEngines]:
    engines = fake_engines(fake_config(tmp_path, f'auth:\n  api_key: "{api_key}"\n'))
    yield engines
    engines.close()


@pytest.fixture
def api_schema(fakes: FakeEngines, api_key: str) -> OpenApiSchema:
    """The schema as the app serves it, bound to that app."""
    app = create_app(Service(fakes.engines.config, fakes.engines))
    headers = {"X-API-Key": api_key} if api_key else {}
    return schemathesis.openapi.from_asgi("/openapi.json", app, headers=headers)


def _fuzz(strategy: SearchStrategy[schemathesis.Case], headers: dict[str, str], label: str) -> None:
    """Send the requests ``strategy`` generates; raise on the first that breaks a check."""
    excluded: list[CheckFunction] = [not_a_server_error] if label in NOT_READY_HERE else []

    @FUZZ_SETTINGS
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        response = case.call(headers=headers)
        if excluded:
            assert response.status_code != 500, response.text
        case.validate_response(response, checks=CHECKS, excluded_checks=excluded)

    run()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_answers_as_documented(
    api_schema: OpenApiSchema, api_key: str, mode: GenerationMode
) -> None:
    headers = {"X-API-Key": api_key} if api_key else {}
    failures: list[str] = []
    operations = []
    for result in api_schema.get_all_operations():
        assert isinstance(result, Ok), result  # every operation is valid OpenAPI
        operations.append(result.ok())
    assert len(operations) > 20  # the whole API is documented, not an empty schema
    for operation in operations:
        if mode == GenerationMode.NEGATIVE and not _has_negatable_input(operation.definition.raw):
            continue
        try:
            _fuzz(operation.as_strategy(generation_mode=mode), headers, operation.label)
        except Unsatisfiable:
            # Nothing invalid to generate for the parameters it has: nothing to test.
            pass
        # Schemathesis reports its findings as a BaseExceptionGroup; every operation is
        # fuzzed and all of them reported.
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.label}: {exc!r}\n{_details(exc)}")
    assert not failures, "\n\n".join(failures)
