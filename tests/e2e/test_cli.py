"""The CLI as a user runs it: say, transcribe, chat, check, --help."""

import subprocess
import sys

import pytest

from tests.helpers import assert_heard

pytestmark = pytest.mark.e2e


def hearth(*args: str, state=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "daemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_say_then_transcribe(tmp_path):
    wav = tmp_path / "lights.wav"
    flac = tmp_path / "lights.flac"
    exact = ("--noise-scale", "0", "--noise-w", "0")  # the same audio every run
    said = hearth("say", "Turn off the porch light.", "-o", str(wav), *exact)
    assert said.returncode == 0, said.stderr
    assert hearth("say", "Good night.", "-o", str(flac), "--rate", "16000", *exact).returncode == 0
    heard = hearth("transcribe", str(wav), str(flac))
    assert heard.returncode == 0, heard.stderr
    lines = heard.stdout.strip().splitlines()
    assert_heard(lines[0].split(":", 1)[1], "Turn off the porch light.", "porch")
    assert_heard(lines[1].split(":", 1)[1], "Good night.", "night")


def test_transcribe_reports_bad_files_and_keeps_going(tmp_path):
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio at all" * 10)
    result = hearth("transcribe", str(junk), str(tmp_path / "missing.mp3"))
    assert result.returncode == 1
    assert "invalid-audio" in result.stderr and "junk.wav" in result.stderr


def test_chat_streams_a_reply():
    result = hearth("chat", "Say hello to the family.")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_chat_answers_a_simple_question_with_the_embedded_model():
    result = hearth("chat", "What is the capital of France?")
    assert result.returncode == 0, result.stderr
    assert "paris" in result.stdout.lower(), result.stdout


def test_check_shows_every_decision():
    result = hearth("check")
    assert result.returncode == 0, result.stdout + result.stderr
    for needle in ("CUDA", "asr:tiny.en", "int8", "no usable CUDA device; using CPU", "MB", "ok"):
        assert needle in result.stdout


def test_every_command_has_help():
    for command in ("serve", "check", "transcribe", "say", "chat"):
        result = hearth(command, "--help")
        assert result.returncode == 0 and "usage: hearth" in result.stdout
