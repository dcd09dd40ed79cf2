"""WebRTC end to end: an aiortc client streams Piper's speech to a real daemon."""

from __future__ import annotations

import asyncio
import re

import httpx
import numpy as np
import pytest

from daemon.audio.pcm import resample_pcm
from daemon.speech.conversation import SAY_BURST
from tests.daemon import Daemon
from tests.helpers import (
    assert_heard,
    eventually,
    hear,
    silence,
    sounds_like,
    trimmed,
    words,
)
from tests.webrtc_client import RtcClient

pytestmark = pytest.mark.e2e

KITCHEN = "Turn on the kitchen lights."
WEATHER = "What is the weather like tomorrow morning?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    extra = (
        "asr:\n  partials: on\n"
        "llm:\n  temperature: 0.0\n  max_tokens: 40\n"
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 21000\n  port_max: 21199\n"
        "  max_sessions: 4\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("webrtc"), extra).serve()


async def connected(daemon: Daemon) -> RtcClient:
    return await RtcClient(daemon.url).connect()


async def hold_to_talk(
    client: RtcClient, pcm: np.ndarray, also: tuple[str, ...] = (), stop: dict | None = None
) -> None:
    """Say ``pcm`` with the button held, and let go (``stop``, with the options in ``stop``)
    only once the daemon said the speech stopped (its ``vad`` message), and sent a message
    of each kind in ``also``: the release then never races the last words' packets or a
    decode under way, however slowly this machine hears them."""
    since = len(client.received)

    def heard() -> bool:
        return client.got("vad", since, speech=False) and all(client.got(k, since) for k in also)

    await client.speak(pcm, until=heard)
    client.send("stop", **(stop or {}))


async def reply_played(client: RtcClient) -> bytes:
    """The reply's audio, once the daemon has handed all of it to the track (its phase
    leaves "speaking") and the track has played it out, at 16 kHz."""
    while (await client.expect("phase"))["obj"]["phase"] in ("thinking", "speaking"):
        pass
    await client.settled()
    return resample_pcm(bytes(client.reply_pcm), client.reply_rate, 16000)


async def test_push_to_talk_survives_pauses_with_bye(daemon, kitchen, speak):
    client = await connected(daemon)
    try:
        weather = speak(WEATHER)
        takes = [(kitchen, KITCHEN, "kitchen"), (weather, WEATHER, "weather")] * 2
        for round_, (pcm, text, key) in enumerate(takes):
            if round_:
                client.resume()
            client.send("start")
            assert (await client.expect("state"))["obj"]["mode"] == "push-to-talk"
            await hold_to_talk(
                client,
                np.concatenate([silence(0.2), pcm, silence(0.4)]),
                stop={"model": "large", "beam_size": 5, "detect_language": False},
            )
            infer = await client.expect("infer")
            assert_heard(infer["obj"]["text"], text, key)
            # Pause like a browser: no track, then an RTCP BYE; idle for a moment.
            client.pause()
            await client.send_bye()
            await asyncio.sleep(0.5)
        types = [m["type"] for m in client.received]
        assert "vad" in types
        assert any(m["type"] == "log" and "large" in m["message"] for m in client.received)
        client.send("ping")
        await client.expect("pong")
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(f"{daemon.url}/metrics")).text
        assert 'hearth_active_sessions{protocol="webrtc"} 1.0' in metrics
    finally:
        await client.close()


async def test_partials_arrive_while_the_person_speaks(daemon, speak):
    long = "Please turn on the lights in the kitchen and close the blinds in the living room."
    client = await connected(daemon)
    try:
        client.send("start")
        await client.expect("state")
        # A partial decode started while the person spoke may end after the speech (a
        # busy machine): the button is held until one arrived, as well as the end.
        await hold_to_talk(
            client, np.concatenate([silence(0.2), speak(long), silence(0.4)]), ("partial",)
        )
        infer = await client.expect("infer")
        assert_heard(infer["obj"]["text"], long, "kitchen", "living")
        types = [m["type"] for m in client.received]
        assert "partial" in types[: types.index("infer")], types
        partials = [m["obj"]["text"] for m in client.received if m["type"] == "partial"]
        assert all(p.strip() for p in partials)
    finally:
        await client.close()


async def test_hands_free_finds_two_utterances(daemon, kitchen, speak):
    client = await connected(daemon)
    try:
        client.send("listen")
        assert (await client.expect("state"))["obj"]["mode"] == "hands-free"
        # Gaps past vad.max_pause_ms: two turns whatever the turn model answers.
        audio = np.concatenate([silence(0.3), kitchen, silence(1.8), speak(WEATHER), silence(1.8)])
        await client.speak(audio)
        first = await client.expect("infer")
        second = await client.expect("infer")
        assert_heard(first["obj"]["text"], KITCHEN, "kitchen")
        assert_heard(second["obj"]["text"], WEATHER, "weather")
        speech = [m["obj"]["speech"] for m in client.received if m["type"] == "vad"]
        assert speech == [True, False, True, False]
        client.send("mute")
        assert (await client.expect("state"))["obj"]["mode"] == "idle"
    finally:
        await client.close()


async def test_a_pause_mid_sentence_is_one_turn_not_two(daemon, speak):
    # "What is the weather like in ... London today?": 1 s of silence, longer than the
    # fixed 700 ms that cut people off here; the turn model hears that the question goes
    # on. (A head with a comma in it makes Piper pause there, and "I need to buy milk,"
    # is a whole sentence to the model as much as to a listener.)
    client = await connected(daemon)
    try:
        client.send("listen")
        assert (await client.expect("state"))["obj"]["mode"] == "hands-free"
        head = trimmed(speak("What is the weather like in"))
        tail = trimmed(speak("London today?"))
        await client.speak(np.concatenate([silence(0.3), head, silence(1.0), tail, silence(2.0)]))
        infer = await client.expect("infer")
        spoken = "What is the weather like in London today?"
        assert_heard(infer["obj"]["text"], spoken, "weather", "london")
        await asyncio.sleep(0.5)
        assert [m["type"] for m in client.received].count("infer") == 1
        speech = [m["obj"]["speech"] for m in client.received if m["type"] == "vad"]
        assert speech == [True, False]
    finally:
        await client.close()


async def test_the_reply_track_speaks_the_reply_text(daemon, engines, speak):
    client = await connected(daemon)
    try:
        client.send("start", reply=True)
        await client.expect("state")
        await hold_to_talk(
            client, np.concatenate([silence(0.2), speak("Say hello to me."), silence(0.4)])
        )
        infer = await client.expect("infer")
        assert_heard(infer["obj"]["text"], "Say hello to me.", "hello")
        done = await client.expect("reply")
        while not done["obj"].get("done"):
            done = await client.expect("reply")
        reply = done["obj"]["text"]
        assert reply
        audio = await reply_played(client)
        assert len(audio) > 16000  # more than half a second of speech
        heard = hear(engines, audio)
        said, got = set(words(reply)), set(words(heard))
        overlap = len(said & got) / max(1, len(said))
        assert overlap >= 0.6, (reply, heard)
    finally:
        await client.close()


async def test_say_speaks_text_from_elsewhere_and_talking_interrupts_it(daemon, engines, speak):
    """The Home Assistant card's path: its agent's answer is spoken over the reply track."""
    client = await connected(daemon)
    try:
        text = "The kitchen lights are on. Anything else?"
        client.send("say", text=text)
        done = await client.expect("reply")
        assert done["obj"] == {"text": text, "done": True}
        audio = await reply_played(client)
        assert len(audio) > 16000
        heard = hear(engines, audio)
        assert sounds_like(heard, text), heard
        # A long answer, cut short by the person pressing talk again once they heard half
        # a second of it.
        mark = len(client.reply_pcm)
        client.send("say", text="One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten.")
        assert (await client.expect("reply"))["obj"]["done"]  # all of it is queued
        await client.hear_reply(0.5, since=mark)
        client.send("start")
        interrupted = await client.expect("reply")
        assert interrupted["obj"] == {"done": True, "interrupted": True}
        cut = client.heard_at[client.received.index(interrupted)]
        # The new state and the interruption may come in either order: the state is
        # the answer to 'start', the interruption an event of the conversation.
        if not any(m["type"] == "state" for m in client.received):
            await client.expect("state")
        assert [m["obj"]["mode"] for m in client.received if m["type"] == "state"] == [
            "push-to-talk"
        ]
        # Playback stopped: once the track is quiet, what came after the cut is what was
        # already on its way (a loaded machine's lag), far from the seconds left to say.
        await client.settled()
        assert client.heard_s(since=cut) < 1.0, client.heard_s(since=cut)
    finally:
        await client.close()


async def test_say_in_a_loop_is_refused_after_a_burst(daemon):
    client = await connected(daemon)
    try:
        for i in range(SAY_BURST + 2):
            client.send("say", text=f"Number {i}.")
        client.send("ping")
        await client.expect("pong")  # every say was handled

        def errors() -> list[dict]:
            return [m for m in client.received if m["type"] == "error"]

        assert await eventually(lambda: len(errors()) >= 2, 15), client.received
        assert [e["obj"]["code"] for e in errors()] == ["busy", "busy"]
        assert "too many 'say' requests" in errors()[0]["message"]
    finally:
        await client.close()


async def test_bad_messages_get_errors_and_the_session_lives_on(daemon):
    client = await connected(daemon)
    try:
        for raw, code in [
            ("{not json", "invalid-request"),
            ('{"type": "dance"}', "invalid-request"),
            ('["start"]', "invalid-request"),
            ('{"type": "start", "obj": {"beam_size": "five"}}', "invalid-request"),
            ('{"type": "start", "obj": {"model": "large-v9"}}', "unknown-model"),
            ('{"type": "stop"}', "invalid-request"),
            ('{"type": "start", "obj": {"reply": true, "voice": "nobody"}}', "unknown-voice"),
            ("x" * 20000, "invalid-request"),
            ('{"type": "say"}', "invalid-request"),
            ('{"type": "say", "obj": {"text": 5}}', "invalid-request"),
            ('{"type": "say", "obj": {"text": "Hi.", "voice": "nobody"}}', "unknown-voice"),
            ('{"type": "say", "obj": {"text": "' + "a" * 15000 + '"}}', "text-too-long"),
        ]:
            client.send_raw(raw)
            error = await client.expect("error", timeout=10)
            assert error["obj"]["code"] == code, (raw[:40], error)
            assert error["message"]
        client.send("ping")
        await client.expect("pong")
    finally:
        await client.close()


async def test_bad_offers_are_refused_and_the_daemon_serves_on(daemon, kitchen):
    async with httpx.AsyncClient(base_url=daemon.url, timeout=30) as http:
        garbage = await http.post("/api/rtc/asr", json={"sdp": "hello", "type": "offer"})
        assert garbage.status_code == 400, garbage.text
        no_audio = await http.post(
            "/api/rtc/asr",
            json={"sdp": _data_channel_only_offer(), "type": "offer"},
        )
        assert no_audio.status_code == 400
        assert "no audio" in no_audio.text
        wrong_type = await http.post("/api/rtc/asr", json={"sdp": "v=0", "type": "answer"})
        assert wrong_type.status_code == 400
        huge = await http.post("/api/rtc/asr", json={"sdp": "v" * 70000, "type": "offer"})
        assert huge.status_code in (400, 422)
    client = await connected(daemon)
    try:
        client.send("start")
        await client.expect("state")
        await hold_to_talk(client, np.concatenate([kitchen, silence(0.4)]))
        assert_heard((await client.expect("infer"))["obj"]["text"], KITCHEN, "kitchen")
    finally:
        await client.close()


async def test_sessions_over_the_cap_are_refused(daemon):
    await daemon.no_sessions_left("webrtc")  # the tests before this one closed theirs
    clients = [await connected(daemon) for _ in range(4)]
    try:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await RtcClient(daemon.url).connect()
        assert refused.value.response.status_code == 503
        assert "max_sessions" in refused.value.response.text
    finally:
        for client in clients:
            await client.close()
    await daemon.no_sessions_left("webrtc")  # closing peers are noticed
    client = await connected(daemon)
    await client.close()


async def test_media_ports_stay_in_the_configured_range(daemon):
    client = await connected(daemon)
    try:
        sdp = client.pc.remoteDescription.sdp
        ports = [int(p) for p in re.findall(r"a=candidate:\S+ \d+ udp \d+ \S+ (\d+) typ", sdp)]
        assert ports and all(21000 <= p <= 21199 for p in ports), ports
        hosts = re.findall(r"a=candidate:\S+ \d+ udp \d+ (\S+) \d+ typ", sdp)
        assert set(hosts) == {"127.0.0.1"}
    finally:
        await client.close()


def _data_channel_only_offer() -> str:
    async def make() -> str:
        from aiortc import RTCPeerConnection

        pc = RTCPeerConnection()
        pc.createDataChannel("chat")
        from protocols.webrtc import ice
        from tests.webrtc_client import LOOPBACK

        ice.install(asyncio.get_running_loop())
        with ice.applied(LOOPBACK):
            await pc.setLocalDescription(await pc.createOffer())
        sdp = pc.localDescription.sdp
        await pc.close()
        return sdp

    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, make()).result()
