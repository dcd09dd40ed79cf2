"""Every way in is one kind (``protocols.listener.ListenerKind``) in the service's list:
each setting of its sections is bound at start (a reload waits for a restart) or
applied on reload, and never neither."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from daemon.config import Config, parse_config
from daemon.runtime.reload import plan_reload
from daemon.service import HearthService, listener_kinds, restart_keys
from protocols.listener import ListenerKind


def leaves(value: Any, prefix: str) -> list[str]:
    """Every setting under ``prefix`` as a dotted key."""
    if dataclasses.is_dataclass(value):
        return [
            key
            for f in dataclasses.fields(value)
            if not f.metadata.get("internal")
            for key in leaves(getattr(value, f.name), f"{prefix}.{f.name}")
        ]
    return [prefix]


def covered(key: str, roots: tuple[str, ...]) -> bool:
    return any(key == root or key.startswith(root + ".") for root in roots)


def setting(config: Config, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("kind", listener_kinds(), ids=lambda kind: kind.name)
def test_every_setting_of_a_listener_is_bound_at_start_or_applied_on_reload(
    kind: ListenerKind,
) -> None:
    config = Config()
    for key in kind.restart + kind.live:
        setting(config, key)  # a key that names no setting fails here
    for section in sorted(kind.sections):
        for key in leaves(getattr(config, section), section):
            where = [covered(key, kind.restart), covered(key, kind.live)]
            assert where.count(True) == 1, (
                f"{key}: say in {kind.name}'s kind whether a reload applies it (live) "
                "or it waits for a restart (restart)"
            )


def test_no_two_listeners_own_a_section() -> None:
    owned = [section for kind in listener_kinds() for section in kind.sections]
    assert len(owned) == len(set(owned)), owned


def test_a_reload_sorts_each_listeners_settings_as_its_kind_says(tmp_path: Path) -> None:
    base = f"state_dir: {tmp_path}\n"
    old = parse_config(base, "old.yaml")
    changes = {
        "wyoming.uri": "wyoming:\n  uri: tcp://127.0.0.1:10399\n",
        "http.port": "http:\n  port: 19999\n",
        "webrtc.port_max": "webrtc:\n  port_max: 10099\n",
        "metrics.enabled": "metrics:\n  enabled: false\n",
        "wyoming.max_connections": "wyoming:\n  max_connections: 3\n",
        "http.cors_origins": "http:\n  cors_origins: ['https://ha.example']\n",
    }
    for key, yaml in changes.items():
        plan = plan_reload(old, parse_config(base + yaml, "new.yaml"), restart_keys())
        bound = covered(key, restart_keys())
        assert plan.restart == ([key] if bound else []), key
        assert plan.live == ([] if bound else [key]), key
        if bound:  # the running value stays until the restart
            assert setting(plan.config, key) == setting(old, key)


def test_the_service_makes_one_listener_per_kind_in_order(tmp_path: Path) -> None:
    config = parse_config(f"state_dir: {tmp_path}\nmdns:\n  enabled: false\n", "test.yaml")
    service = HearthService(config, report=object())  # type: ignore[arg-type]
    made = service._make_listeners()
    assert [listener.name for listener in made] == [kind.name for kind in listener_kinds()]
