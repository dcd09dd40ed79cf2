"""Where no llama.cpp build runs on the CPU, the engines load without the local LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import parse_config
from daemon.engines.cpu import LlamaChoice
from daemon.engines.hardware import HardwareReport, plan
from daemon.runtime import loading
from daemon.runtime.engines import Engines

REASON = "the local LLM is off: this CPU lacks sse4_2, which every llama.cpp build here needs"


def test_no_llama_build_leaves_the_llm_off_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading, "select_llama", lambda: LlamaChoice(None, REASON))
    config = parse_config(f"state_dir: {tmp_path}\n", "test-config.yaml")
    placements = {p.name: p for p in plan(loading.engine_requests(config), HardwareReport())}
    engines = Engines(config)
    try:
        assert loading._load_llm(engines, config, placements["llm"]) is None
        (status,) = engines.status
        assert (status.name, status.device, status.reasons) == ("llm", "off", [REASON])
        assert engines.describe()[0]["reasons"] == [REASON]  # /healthz, hearth check --json
        assert engines.llm is None and engines.chat is None
    finally:
        engines.close()
