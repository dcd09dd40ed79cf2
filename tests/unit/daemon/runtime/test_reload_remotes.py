"""A reload that replaces remote engines (ASR models, voices, the LLM) closes the old
ones' HTTP clients and health checks, and nothing the new engines still use."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from daemon.config import RemoteTtsConfig
from daemon.engines.asr.remote import RemoteAsr
from daemon.engines.llm.remote import RemoteLlm
from daemon.engines.remote import EndpointSet, RemoteFailure
from daemon.engines.tts.remote import MixedTts, RemoteTts
from daemon.runtime.reload import retire
from daemon.runtime.remote import close_remotes
from tests.fakes import FakeEngines, FakeTts, fake_config, fake_engines

URL = "http://gpu.lan/v1"


def endpoints(kind: str, name: str) -> EndpointSet:
    s = EndpointSet(kind, name, [URL], retry_s=0.05)
    s.probe = lambda url: False  # never comes back: its health check runs until closed
    return s


def voices(name: str) -> RemoteTts:
    config = RemoteTtsConfig(name=name, base_url=URL, voices=["af_bella"], prefix=f"{name}-")
    return RemoteTts(config, endpoints("tts", name))


def health_checks() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"health {URL}"]


def engines(tmp_path: Path, name: str) -> FakeEngines:
    return fake_engines(fake_config(tmp_path / name), tts=False, chat=False)


async def test_retire_closes_the_replaced_remote_engines_only(tmp_path: Path) -> None:
    old, new = engines(tmp_path, "old"), engines(tmp_path, "new")
    kept = RemoteAsr("kept", endpoints("asr", "kept"), "m")
    gone = RemoteAsr("gone", endpoints("asr", "gone"), "m")
    old_voices, new_voices = voices("old"), voices("new")
    old_llm = RemoteLlm(endpoints("llm", "llm"), "m")
    old.engines.asr.update(kept=kept, gone=gone)
    new.engines.asr["kept"] = kept
    old.engines.attach_tts(MixedTts(FakeTts(), [old_voices]), None)
    new.engines.attach_tts(MixedTts(FakeTts(), [new_voices]), None)
    old.engines.attach_llm(old_llm)
    # Endpoints that failed: each has a health check thread probing it.
    for s in (gone.endpoints, old_voices.endpoints, kept.endpoints):
        ep = s.acquire(None, set(), allow_down=True)
        assert ep is not None
        s.release(ep, RemoteFailure("connect", "refused"))
    assert len(health_checks()) == 3
    try:
        assert await retire(old.engines, new.engines, lambda: True, 1)
        assert gone._client.is_closed and gone.endpoints._closed.is_set()
        assert old_voices._client.is_closed and old_voices.endpoints._closed.is_set()
        assert old_llm._client.is_closed
        # What the new engines use stays open.
        assert not kept._client.is_closed and not kept.endpoints._closed.is_set()
        assert not new_voices._client.is_closed
        deadline = time.monotonic() + 5
        while len(health_checks()) > 1:  # the replaced ones' checks end; the kept one runs
            assert time.monotonic() < deadline, health_checks()
            time.sleep(0.02)
    finally:
        assert await close_remotes([kept, new.engines.tts and new.engines.tts.engine]) == 2
        old.close()
        new.close()
    assert kept._client.is_closed and new_voices._client.is_closed


async def test_close_remotes_skips_local_engines_and_none() -> None:
    local = FakeTts()
    group = voices("box")
    assert await close_remotes([None, local, MixedTts(local, [group])]) == 1
    assert group._client.is_closed
    assert isinstance(group._client, httpx.AsyncClient)
