"""The HTTP app over fake engines, as the adapter tests here use it."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from protocols.http.app import create_app
from tests.fakes import FakeEngines, FakeService, fake_config, fake_engines


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[FakeEngines]:
    engines = fake_engines(fake_config(tmp_path))
    yield engines
    engines.close()


@pytest.fixture
def client(fakes: FakeEngines) -> TestClient:
    return TestClient(create_app(FakeService(fakes.engines.config, fakes.engines)))
