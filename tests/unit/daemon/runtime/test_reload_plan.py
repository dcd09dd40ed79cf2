"""Sorting config changes into live, engine and restart-only ones."""

from daemon.config import parse_config
from daemon.runtime.reload import changed_keys, plan_reload
from daemon.service import restart_keys


def plan(old: str, new: str):
    return plan_reload(parse_config(old, "old.yaml"), parse_config(new, "new.yaml"), restart_keys())


def test_nothing_changed():
    p = plan("http:\n  port: 1234\n", "http:\n  port: 1234\n")
    assert p.changed == []


def test_live_settings_apply_without_engines():
    p = plan(
        "", "auth:\n  api_key: s3cret\nlog:\n  level: debug\nlimits:\n  request_timeout_s: 9\n"
    )
    assert p.live == ["auth.api_key", "limits.request_timeout_s", "log.level"]
    assert p.engines == [] and p.restart == []
    assert p.config.auth.api_key == "s3cret"


def test_models_voices_and_queues_rebuild_the_engines():
    p = plan(
        "",
        "tts:\n  default_voice: other\nvoices:\n  dir: /v\nlimits:\n  max_queue: 4\n"
        "asr:\n  models:\n    tiny.en:\n      beam_size: 2\n",
    )
    assert p.engines == [
        "asr.models.tiny.en.beam_size",
        "limits.max_queue",
        "tts.default_voice",
        "voices.dir",
    ]


def test_listener_changes_wait_for_a_restart_and_keep_their_old_values():
    p = plan(
        "http:\n  port: 1000\nwyoming:\n  uri: tcp://0.0.0.0:10300\n",
        "http:\n  port: 2000\nwyoming:\n  uri: tcp://0.0.0.0:10400\n  max_connections: 3\n"
        "metrics:\n  enabled: false\n",
    )
    assert p.restart == ["http.port", "metrics.enabled", "wyoming.uri"]
    assert p.live == ["wyoming.max_connections"]
    assert p.config.http.port == 1000
    assert p.config.wyoming.uri == "tcp://0.0.0.0:10300"
    assert p.config.wyoming.max_connections == 3  # the live part of the section applies
    assert p.config.metrics.enabled is True


def test_added_and_removed_models_are_named():
    old = parse_config("", "a")
    new = parse_config(
        "asr:\n  default_model: small\n  models:\n    small:\n      path: small.en\n", "b"
    )
    assert changed_keys(old, new) == ["asr.default_model", "asr.models.small", "asr.models.tiny.en"]


def test_voice_settings_other_than_the_folder_are_live():
    p = plan("", "voices:\n  max_upload_mb: 5\n  train_dir: /t\n")
    assert p.live == ["voices.max_upload_mb", "voices.train_dir"]
    assert p.engines == []
