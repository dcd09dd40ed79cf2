"""Every library patch still fits the installed library, and still does its job.

A failure here after a library upgrade means: read the new upstream code of the
patched attribute, adapt the patch, then widen its ``versions``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

import aioice
import pytest
import uvicorn
from aiortc import RTCRtpReceiver, RTCRtpSender
from aiortc.rtp import RtcpByePacket, RtcpRrPacket, RtcpSenderInfo, RtcpSrPacket
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from protocols import patches
from protocols.patches import Patch
from protocols.patches import aiortc as aiortc_patch
from protocols.patches import uvicorn as uvicorn_patch
from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports

TIMEOUT_S = 10
ALL = patches.all_patches()


@pytest.mark.parametrize("patch", ALL, ids=lambda p: p.target)
def test_the_patched_attribute_is_the_one_written_for(patch: Patch) -> None:
    patch.check()  # it exists, takes the same parameters, and is (not) a coroutine function


@pytest.mark.parametrize("patch", ALL, ids=lambda p: p.target)
def test_the_installed_version_is_one_the_patch_was_checked_against(patch: Patch) -> None:
    low, high = patch.versions
    assert patch.version_supported(), (
        f"{patch.library} {patch.installed()} is outside {low} to below {high}: "
        f"re-check {patch.target}, then widen the range"
    )


def test_every_patch_applies_at_start_up() -> None:
    assert all(patches.verify_all().values())


def test_a_changed_or_missing_attribute_is_refused_with_a_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = "aiortc.rtcrtpreceiver:RTCRtpReceiver._handle_rtcp_packet"
    changed = Patch("aiortc", target, ("self", "packet", "extra"), True, ("1.0", "99"), "lost")
    missing = Patch(
        "aiortc", "aiortc.rtcrtpreceiver:RTCRtpReceiver._gone", (), True, ("1", "9"), ""
    )
    sync = Patch("aiortc", target, ("self", "packet"), False, ("1.0", "99"), "lost")
    with caplog.at_level(logging.ERROR, logger="protocols.patches"):
        assert not patches.usable(changed)
        assert not patches.usable(missing)
        assert not patches.usable(sync)
    text = caplog.text
    assert "now takes (self, packet)" in text and "is missing" in text
    assert "no longer a plain function" in text
    assert "Not patching aiortc" in text and "lost" in text


def test_an_untested_version_is_named_in_a_warning_and_the_patch_applies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = "aiortc.rtcrtpreceiver:RTCRtpReceiver._handle_rtcp_packet"
    old = Patch("aiortc", target, ("self", "packet"), True, ("0.1", "0.2"), "")
    with caplog.at_level(logging.WARNING, logger="protocols.patches"):
        assert patches.usable(old)
    installed = old.installed()
    assert f"aiortc {installed} is not a version the patch of {target}" in caplog.text


# ---------------------------------------------------------------- aiortc


class FakeDtlsTransport:
    """What an RTP sender or receiver needs of its DTLS transport to send RTCP."""

    state = "new"
    _stats_id = "transport"

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def _send_rtp(self, data: bytes) -> None:
        self.sent.append(data)


def sender_report() -> RtcpSrPacket:
    info = RtcpSenderInfo(ntp_timestamp=0, rtp_timestamp=0, packet_count=0, octet_count=0)
    return RtcpSrPacket(ssrc=1, sender_info=info)


async def test_a_real_sender_and_receiver_pace_reports_but_never_bye() -> None:
    for make, wrap in (
        (lambda t: RTCRtpSender("audio", t), lambda p: [p]),
        (lambda t: RTCRtpReceiver("audio", t), lambda p: p),
    ):
        transport = FakeDtlsTransport()
        endpoint = make(transport)
        pace_reports(endpoint, interval_s=3600)
        async with asyncio.timeout(TIMEOUT_S):
            await endpoint._send_rtcp(wrap(RtcpRrPacket(ssrc=1)))
            await endpoint._send_rtcp(wrap(RtcpRrPacket(ssrc=1)))  # too soon: dropped
            await endpoint._send_rtcp(wrap(RtcpByePacket(sources=[1])))
        assert len(transport.sent) == 2
        assert transport.sent[1] == bytes(RtcpByePacket(sources=[1]))


async def test_a_real_receiver_ignores_bye_which_upstream_still_treats_as_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    receiver = RTCRtpReceiver("audio", FakeDtlsTransport())
    stops: list[int] = []
    # What the patch exists for: upstream stops the track's decoder on BYE.
    monkeypatch.setattr(receiver, "_RTCRtpReceiver__stop_decoder", lambda: stops.append(1))
    async with asyncio.timeout(TIMEOUT_S):
        await receiver._handle_rtcp_packet(RtcpByePacket(sources=[1]))
        assert stops == [1], "aiortc no longer ends the track on BYE: is the patch needed?"
        assert aiortc_patch.ignore_bye(receiver, "s1")
        await receiver._handle_rtcp_packet(RtcpByePacket(sources=[1]))
        await receiver._handle_rtcp_packet(sender_report())  # other packets still handled
    assert stops == [1]


# ---------------------------------------------------------------- aioice


async def test_candidates_bind_in_the_port_range_on_the_policy_address() -> None:
    ice.install(asyncio.get_running_loop())
    policy = ice.IcePolicy(41700, 41749, ("127.0.0.1",))
    connection = aioice.Connection(ice_controlling=True, components=1)
    try:
        with ice.applied(policy):
            async with asyncio.timeout(TIMEOUT_S):
                await connection.gather_candidates()
        hosts = [c for c in connection.local_candidates if c.type == "host"]
        assert hosts and all(c.host == "127.0.0.1" for c in hosts)
        assert all(41700 <= c.port <= 41749 for c in hosts)
    finally:
        async with asyncio.timeout(TIMEOUT_S):
            await connection.close()


async def test_outside_a_policy_binds_are_left_alone() -> None:
    loop = asyncio.get_running_loop()
    ice.install(loop)
    async with asyncio.timeout(TIMEOUT_S):
        transport, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
        )
    try:
        assert transport.get_extra_info("sockname")[1] != 0
    finally:
        transport.close()


# ---------------------------------------------------------------- uvicorn


class FakeTransport(asyncio.Transport):
    """A connection's transport that keeps what is written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.eof = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def serve_one(protocol_class: type[HttpToolsProtocol], *reads: bytes) -> tuple[Any, bytes]:
    """Feed ``reads`` to a fresh connection; the scope the app saw (or None) and the reply."""
    seen: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.set_result(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False)
    config.load()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = FakeTransport()
    protocol.connection_made(transport)
    for data in reads:
        protocol.data_received(data)
    scope = None
    if not (transport.closed or transport.eof):  # else refused: answered, and sending ended
        async with asyncio.timeout(TIMEOUT_S):
            scope = await seen
            while b"ok" not in transport.written:
                await asyncio.sleep(0.01)
    protocol.connection_lost(None)
    return scope, bytes(transport.written)


WILLOW_TTS = b"GET /api/tts?text=Turn on the light. HTTP/1.1\r\nHost: hearth\r\n\r\n"


async def test_a_willow_request_line_is_refused_upstream_and_repaired_by_the_patch() -> None:
    scope, reply = await serve_one(HttpToolsProtocol, WILLOW_TTS)
    assert scope is None and reply.startswith(b"HTTP/1.1 400"), "httptools accepts it now"
    half = len(WILLOW_TTS) // 3
    lenient = uvicorn_patch.LenientHttpToolsProtocol
    scope, reply = await serve_one(lenient, WILLOW_TTS[:half], WILLOW_TTS[half:])
    assert scope["path"] == "/api/tts"
    assert scope["query_string"] == b"text=Turn%20on%20the%20light."
    assert reply.startswith(b"HTTP/1.1 200")


BARE_LF = b"GET /api/ping HTTP/1.1\nHost: hearth\n\n"


@pytest.mark.parametrize("split", [5, BARE_LF.index(b"\n") - 3, BARE_LF.index(b"\n")])
async def test_a_request_line_ending_in_a_bare_lf_is_refused_at_once(split: int) -> None:
    scope, reply = await serve_one(HttpToolsProtocol, BARE_LF)
    assert scope is None and reply.startswith(b"HTTP/1.1 400"), "httptools accepts bare LF now"
    lenient = uvicorn_patch.LenientHttpToolsProtocol
    # Before: held until a CRLF that never comes (serve_one then times out).
    scope, reply = await serve_one(lenient, BARE_LF[:split], BARE_LF[split:])
    assert scope is None and reply.startswith(b"HTTP/1.1 400 "), reply
    assert b'"code": "invalid-request"' in reply and b"connection: close" in reply


async def test_a_newline_inside_a_willow_tts_text_is_still_encoded() -> None:
    request = b"GET /api/tts?text=One.\nTwo. HTTP/1.1\r\nHost: hearth\r\n\r\n"
    scope, reply = await serve_one(uvicorn_patch.LenientHttpToolsProtocol, request)
    assert scope["query_string"] == b"text=One.%0ATwo."
    assert reply.startswith(b"HTTP/1.1 200")


def test_the_server_leaves_stop_signals_to_the_service() -> None:
    before = signal.getsignal(signal.SIGTERM)
    server = uvicorn_patch.DaemonServer(uvicorn.Config(lambda: None))
    with server.capture_signals():
        assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("code", ["invalid-request", "body-timeout", "busy", "uri-too-long"])
def test_the_patch_answers_with_the_apps_error_body(code: str) -> None:
    import json

    from protocols.http.errors import error_body
    from protocols.patches.uvicorn import raw_error

    raw = raw_error(400, "Bad Request", code, "what went wrong")
    body = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert body == error_body("/api/willow", code, "what went wrong")
