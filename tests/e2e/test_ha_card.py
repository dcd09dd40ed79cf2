"""The Home Assistant card in headless Chromium, against a real ``hearth serve``.

A small web server on another origin plays the dashboard: it serves the card as
Home Assistant serves ``/config/www`` (``/local/...``) and a test page that mounts
it with a stub ``hass`` recording its calls and a fake microphone playing a Piper
WAV. The card loads Hearth's client module and signals WebRTC cross-origin, so the
CORS rules are exercised for real.
"""

from __future__ import annotations

import base64
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from daemon.audio.pcm import decode_file
from tests.browser import chrome, chromium_or_skip, firefox, screenshot, wait_for, write_wav
from tests.daemon import Daemon
from tests.dashboard import SHADOW, Dashboard, hold_to_talk, load_card, load_page, shown_error
from tests.helpers import assert_heard, hear, silence, sounds_like

pytestmark = pytest.mark.e2e

KEY = "card-test-key"
ANSWER = "The kitchen lights are on."
KITCHEN = "Turn on the kitchen lights."


@pytest.fixture(scope="module")
def dashboard(kitchen: np.ndarray, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    chromium_or_skip()
    folder = tmp_path_factory.mktemp("dashboard")
    wav = write_wav(folder / "mic.wav", np.concatenate([silence(0.3), kitchen, silence(0.9)]))
    server = Dashboard(wav)
    yield server
    server.close()


@pytest.fixture(scope="module")
def daemon(dashboard: Dashboard, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    extra = (
        f"auth:\n  api_key: {KEY}\n"
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 22100\n  port_max: 22199\n"
    )
    cors = f"  cors_origins: ['{dashboard.origin}']\n"
    yield from Daemon(tmp_path_factory.mktemp("ha-card"), extra, http=cors).serve()


def card_state(driver: Any) -> str:
    return driver.execute_script(f"{SHADOW} return $('.state').dataset.state")


def open_card(driver: Any, dashboard: Dashboard, daemon: Daemon, **config: Any) -> None:
    load_card(driver, dashboard.page(config={"url": daemon.https_url, "api_key": KEY} | config))


def answer_ended(driver: Any, quiet_s: float = 1.5, timeout: float = 60) -> None:
    """Wait until the page has heard no loud reply audio for ``quiet_s`` (the answer's
    pauses between words and sentences are shorter)."""
    deadline = time.monotonic() + timeout
    frames, since = -1, time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the spoken answer never ended"
        now = driver.execute_script("return received.frames")
        if now != frames:
            frames, since = now, time.monotonic()
        time.sleep(0.1)


def sessions_opened(daemon: Daemon) -> int:
    return daemon.log.count(" opened (")


def test_push_to_talk_goes_to_the_assist_pipeline_and_the_answer_is_spoken(
    daemon: Daemon, dashboard: Dashboard, engines: Any, driver: Any
) -> None:
    open_card(driver, dashboard, daemon, title="Kitchen")
    session = driver.execute_script("return card.client.sessionId")
    hold_to_talk(driver)
    run = wait_for(driver, "return calls.find((c) => c.type === 'assist_pipeline/run')", timeout=60)
    assert run["start_stage"] == "intent" and run["end_stage"] == "intent"
    assert_heard(run["input"]["text"], KITCHEN, "kitchen")
    assert "conversation_id" not in run  # a new conversation
    reply = wait_for(driver, f"{SHADOW} const r = $('.reply').textContent; return r !== '…' && r")
    assert reply == ANSWER
    # Samples of the spoken answer reach the page's WebAudio graph.
    wait_for(driver, "return received.frames > 10", timeout=30)
    answer_ended(driver)
    recording = base64.b64decode(
        driver.execute_async_script(
            "const done = arguments[arguments.length - 1]; takeRecording().then(done);"
        )
    )
    heard = hear(engines, decode_file(recording))
    assert sounds_like(heard, ANSWER), heard
    assert driver.execute_script("return card.heard.frames") > 0  # the card's meter too
    screenshot(driver, "ha-card.png", "hearth-voice-card")

    # Paused between utterances; the next one uses the same session and conversation.
    opened = sessions_opened(daemon)
    time.sleep(1.0)
    hold_to_talk(driver)
    wait_for(
        driver,
        "return calls.filter((c) => c.type === 'assist_pipeline/run').length === 2",
        timeout=60,
    )
    second = driver.execute_script(
        "return calls.filter((c) => c.type === 'assist_pipeline/run')[1]"
    )
    assert second["conversation_id"] == "conversation-1"
    assert driver.execute_script("return card.client.sessionId") == session
    assert sessions_opened(daemon) == opened
    assert card_state(driver) == "connected"


def test_hands_free_uses_conversation_process_and_pause_keeps_the_session(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    open_card(
        driver,
        dashboard,
        daemon,
        mode="hands-free",
        ha_api="conversation",
        agent_id="conversation.kitchen",
    )
    wait_for(driver, f"{SHADOW} return $('.talk').getAttribute('aria-pressed') === 'true'")
    session = driver.execute_script("return card.client.sessionId")
    time.sleep(0.5)
    driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    call = wait_for(
        driver, "return calls.find((c) => c.type === 'conversation/process')", timeout=60
    )
    assert_heard(call["text"], KITCHEN, "kitchen")
    assert call["agent_id"] == "conversation.kitchen"
    assert call["language"] == "en"
    wait_for(driver, "return received.frames > 10", timeout=30)

    # Pause: the microphone stops going out, the session stays.
    driver.execute_script(f"{SHADOW} $('.talk').dispatchEvent(new PointerEvent('pointerdown'))")
    wait_for(driver, f"{SHADOW} return $('.talk').getAttribute('aria-pressed') === 'false'")
    wait_for(driver, "return card.client.mode === 'idle'")
    driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    time.sleep(2.0)
    count = "return calls.filter((c) => c.type === 'conversation/process').length"
    assert driver.execute_script(count) == 1  # nothing heard while paused

    # Resume and talk again: same session.
    driver.execute_script(f"{SHADOW} $('.talk').dispatchEvent(new PointerEvent('pointerdown'))")
    wait_for(driver, "return card.client.mode === 'hands-free'")
    time.sleep(0.5)
    driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    wait_for(driver, count.replace("return ", "return 2 === "), timeout=60)
    assert driver.execute_script("return card.client.sessionId") == session

    # The editor switches to Hearth's LLM: the session listens with the new options.
    driver.execute_script(
        "card.setConfig({...card._config, agent: 'hearth', type: 'custom:hearth-voice-card'})"
    )
    time.sleep(0.5)
    driver.execute_script(f"{SHADOW} $('.reply').textContent = ''")
    driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    wait_for(driver, f"{SHADOW} const r = $('.reply').textContent; return r && r !== '…'")
    assert driver.execute_script(count) == 2  # Home Assistant was not asked
    assert driver.execute_script("return card.client.sessionId") == session


def test_hearths_own_llm_answers_and_speaks(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    open_card(driver, dashboard, daemon, agent="hearth", voice="en_US-joe-medium")
    hold_to_talk(driver)
    you = wait_for(
        driver,
        f"{SHADOW} return !$('.you').classList.contains('partial') && $('.you').textContent",
    )
    assert_heard(you, KITCHEN, "kitchen")
    wait_for(driver, f"{SHADOW} const r = $('.reply').textContent; return r && r !== '…'")
    wait_for(driver, "return received.frames > 10", timeout=60)
    assert driver.execute_script("return calls.length") == 0  # Home Assistant not asked


def test_a_wrong_key_is_explained(daemon: Daemon, dashboard: Dashboard, driver: Any) -> None:
    load_page(driver, dashboard.page(config={"url": daemon.https_url, "api_key": "not-the-key"}))
    error = shown_error(driver)
    assert "refused the API key" in error and "auth.api_key" in error
    assert driver.execute_script(f"{SHADOW} return $('.error').dataset.code") == "unauthorized"
    time.sleep(3)
    assert card_state(driver) == "error"  # no retry loop with a wrong key
    screenshot(driver, "ha-card-wrong-key.png", "hearth-voice-card")


def test_an_origin_not_in_cors_origins_is_refused_and_explained(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    # localhost is another origin than 127.0.0.1, and not in http.cors_origins.
    load_page(
        driver,
        dashboard.page(host="localhost", config={"url": daemon.https_url, "api_key": KEY}),
    )
    error = shown_error(driver)
    assert f"http://localhost:{dashboard.port} is listed in its http.cors_origins" in error
    assert card_state(driver) == "reconnecting"


def test_a_denied_microphone_is_explained(daemon: Daemon, dashboard: Dashboard) -> None:
    driver = chrome(fake_ui=False)  # headless denies the permission prompt
    try:
        load_page(
            driver, dashboard.page(mic="device", config={"url": daemon.https_url, "api_key": KEY})
        )
        error = shown_error(driver)
        assert "Microphone access was denied" in error
        assert card_state(driver) == "error"
    finally:
        driver.quit()


def test_the_editor_lists_voices_and_pipelines_and_reports_changes(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    # The card loaded straight from Hearth, as a dashboard resource can be.
    load_page(
        driver,
        dashboard.page(
            editor="1",
            card=f"{daemon.https_url}/web/hearth-voice-card.js",
            config={"url": daemon.https_url, "api_key": KEY},
        ),
    )
    ed = "const $ = (s) => editor.shadowRoot.querySelector(s);"
    voices = wait_for(
        driver,
        f"{ed} const o = [...$('select[name=voice]').options].map((o) => o.value);"
        "return o.length > 1 && o",
    )
    assert "en_US-joe-medium" in voices
    pipelines = wait_for(
        driver,
        f"{ed} const o = [...$('select[name=pipeline_id]').options].map((o) => o.value);"
        "return o.length > 1 && o",
    )
    assert pipelines == ["", "pipeline-home"]
    driver.execute_script(
        f"{ed} const s = $('select[name=mode]'); s.value = 'hands-free';"
        "s.dispatchEvent(new Event('change'));"
    )
    changes = driver.execute_script("return changes")
    assert changes[-1]["mode"] == "hands-free"
    assert changes[-1]["url"] == daemon.https_url
    # Hearth's LLM: the Home Assistant fields go away.
    driver.execute_script(
        f"{ed} const s = $('select[name=agent]'); s.value = 'hearth';"
        "s.dispatchEvent(new Event('change'));"
    )
    assert driver.execute_script(f"{ed} return $('select[name=ha_api]').closest('label').hidden")
    screenshot(driver, "ha-card-editor.png", "hearth-voice-card-editor")


def test_the_card_reconnects_after_hearth_restarts(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    open_card(driver, dashboard, daemon)
    before = driver.execute_script("return card.client.sessionId")
    out = daemon.stop()
    assert daemon.returncode == 0, out
    wait_for(driver, "return ['reconnecting', 'error'].includes(card.client.state)", timeout=60)
    daemon.start()
    wait_for(
        driver,
        f"return card.client.state === 'connected' && card.client.sessionId !== '{before}'",
        timeout=120,
    )
    hold_to_talk(driver)
    run = wait_for(driver, "return calls.find((c) => c.type === 'assist_pipeline/run')", timeout=60)
    assert_heard(run["input"]["text"], KITCHEN, "kitchen")


def test_bad_configurations_are_refused_with_a_reason(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    """Lovelace shows what setConfig throws in place of the card."""
    load_page(driver, dashboard.page(editor="1", config={"url": daemon.https_url}))
    result = driver.execute_async_script(
        """const done = arguments[arguments.length - 1];
        import('/local/hearth-voice-card.js').then(({ normalizeConfig }) => {
          const refused = [{}, { url: 'hearth.local' }, { url: 'ftp://hearth' },
            { url: 'https://h', mode: 'always' }, { url: 'https://h', agent: 'x' },
            { url: 'https://h', ha_api: 'x' }, { url: 'https://h', speak: 'yes' },
            { url: 'https://h', voice: 5 }].map((c) => {
              try { normalizeConfig(c); return null; } catch (e) { return e.message; }
            });
          done({ refused, ok: normalizeConfig({ url: 'https://h:19001/' }) });
        });"""
    )
    refused = result["refused"]
    assert all(refused), refused
    for message, key in zip(
        refused, ["url", "url", "url", "mode", "agent", "ha_api", "speak", "voice"], strict=True
    ):
        assert f"'{key}'" in message, message
    assert result["ok"]["url"] == "https://h:19001"
    assert result["ok"]["mode"] == "push-to-talk"
    assert result["ok"]["agent"] == "home-assistant"


def test_the_editor_preview_opens_no_session(
    daemon: Daemon, dashboard: Dashboard, driver: Any
) -> None:
    """Home Assistant rebuilds the preview on every edit: it must not take the microphone."""
    before = sessions_opened(daemon)
    load_page(driver, dashboard.page(preview="1", config={"url": daemon.https_url, "api_key": KEY}))
    time.sleep(3)
    assert card_state(driver) == "closed"
    assert driver.execute_script("return card.client") is None
    assert "Preview" in driver.execute_script(f"{SHADOW} return $('.hint').textContent")
    assert sessions_opened(daemon) == before


def test_the_card_works_in_firefox(
    daemon: Daemon, dashboard: Dashboard, tmp_path: pathlib.Path, engines: Any
) -> None:
    """Firefox runs without a WebDriver: the page drives one exchange and reports."""
    while not dashboard.results.empty():
        dashboard.results.get_nowait()
    # Plain HTTP to Hearth: this Firefox profile does not trust its certificate.
    url = dashboard.page(autotest="1", config={"url": daemon.url, "api_key": KEY})
    browser = firefox(url, tmp_path / "firefox")
    try:
        result = dashboard.results.get(timeout=90)
    finally:
        browser.terminate()
        browser.wait(30)
    assert result["ok"], repr(result)[:2000]
    assert "Firefox" in result["userAgent"]
    assert_heard(result["text"], KITCHEN, "kitchen")
    assert result["reply"] == ANSWER
    assert result["sameSession"]
    # Headless Firefox has no sound device, so no Web Audio: the page recorded the
    # answer's stream instead, and Whisper hears the stub's words in it.
    heard = hear(engines, decode_file(base64.b64decode(result["recording"])))
    assert sounds_like(heard, ANSWER), heard


def test_wake_word_mode_hears_only_what_follows_the_word(
    daemon: Daemon, dashboard: Dashboard, speak: Any, tmp_path: pathlib.Path, driver: Any
) -> None:
    """Hands-free with ``wake_word``: "okay nabu, turn on the kitchen lights" gives one
    transcript, without the word; speech without the word gives nothing."""
    wake = speak("Okay Nabu, turn on the kitchen lights.")
    plain = speak(KITCHEN)
    with_word = dashboard.add_wav(
        "wake", write_wav(tmp_path / "wake.wav", np.concatenate([silence(0.3), wake, silence(0.9)]))
    )
    without = dashboard.add_wav(
        "plain",
        write_wav(tmp_path / "plain.wav", np.concatenate([silence(0.3), plain, silence(0.9)])),
    )
    asked = "return calls.filter((c) => c.type === 'conversation/process')"
    config = {"url": daemon.https_url, "api_key": KEY, "mode": "hands-free"}
    config |= {"wake_word": "okay_nabu", "ha_api": "conversation"}

    # Without the word: nothing is transcribed, nothing goes to Home Assistant.
    load_card(driver, dashboard.page(config=config, wav=without))
    wait_for(driver, f"{SHADOW} return $('.talk').getAttribute('aria-pressed') === 'true'")
    waiting = f"{SHADOW} return $('.you').dataset.placeholder"
    assert "okay nabu" in driver.execute_script(waiting).lower()  # "Listening for ..."
    time.sleep(0.5)
    for _ in range(2):
        driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    time.sleep(3.0)  # the end of an utterance would have been decoded by now
    assert driver.execute_script(asked + ".length") == 0
    assert driver.execute_script(f"{SHADOW} return $('.you').textContent.trim()") in ("", "…")
    assert "okay nabu" in driver.execute_script(waiting).lower()  # still waiting

    # With the word: one transcript, the command only.
    load_card(driver, dashboard.page(config=config, wav=with_word))
    wait_for(driver, f"{SHADOW} return $('.talk').getAttribute('aria-pressed') === 'true'")
    time.sleep(0.5)
    driver.execute_async_script("mic.say().then(arguments[arguments.length - 1])")
    call = wait_for(driver, asked + "[0]", timeout=60)
    assert_heard(call["text"], KITCHEN, "kitchen")
    words = call["text"].lower()
    assert "nabu" not in words and "okay" not in words and "ok " not in words, words
    time.sleep(3.0)
    assert driver.execute_script(asked + ".length") == 1
    # Back to waiting for the word.
    wait_for(driver, f"{SHADOW} return $('.you').dataset.placeholder.startsWith('Listening for')")
