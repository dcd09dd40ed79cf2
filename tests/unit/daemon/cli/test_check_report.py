"""`hearth check` reports an unwritable state dir and listeners open without a key."""

import json

from daemon.cli.check import run_check
from daemon.config import parse_config


def report(capsys, text: str) -> tuple[int, dict]:
    code = run_check(parse_config(text, "test.yaml"), load=False, as_json=True)
    return code, json.loads(capsys.readouterr().out)


def test_a_state_dir_that_cannot_be_written_is_a_problem(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state dir should be")
    code, out = report(capsys, f"state_dir: {blocker / 'state'}\nhttp:\n  host: 127.0.0.1\n")
    assert code == 1
    assert any(p.startswith("storage-unwritable") and "state" in p for p in out["problems"])


def test_a_writable_state_dir_on_loopback_is_quiet(tmp_path, capsys):
    code, out = report(
        capsys,
        f"state_dir: {tmp_path}\nhttp:\n  host: 127.0.0.1\nwyoming:\n  uri: tcp://127.0.0.1:10300\n",
    )
    assert code == 0, out["problems"]
    assert not [w for w in out["warnings"] if "no auth" in w or "no authentication" in w]


def test_listening_on_the_lan_without_a_key_is_warned(tmp_path, capsys):
    code, out = report(capsys, f"state_dir: {tmp_path}\n")  # the defaults: 0.0.0.0, no key
    assert any("auth.api_key" in w and "HTTP" in w for w in out["warnings"])
    assert any("Wyoming" in w and "firewall" in w for w in out["warnings"])
    _, keyed = report(capsys, f'state_dir: {tmp_path}\nauth:\n  api_key: "k"\n')
    assert not any("HTTP API" in w for w in keyed["warnings"])


def test_home_assistant_shows_counts_and_time_only(tmp_path, capsys):
    from tests.fake_ha import TOKEN, Area, Entity, FakeHomeAssistant

    _, off = report(capsys, f"state_dir: {tmp_path}\n")
    assert off["homeassistant"] == {"state": "off"}
    fake = FakeHomeAssistant()
    fake.add_area(Area("niamh", "Niamh's Room"))
    fake.add_entity(Entity("light.niamh", "Niamh's Lamp", ["Moon Lamp"], area_id="niamh"))
    with fake.in_thread():
        ha = f"homeassistant:\n  url: {fake.url}\n  token: {TOKEN}\n"
        code, out = report(capsys, f"state_dir: {tmp_path}\n{ha}")
        house = out["homeassistant"]
        assert (house["names"], house["entity"], house["alias"], house["area"]) == (3, 1, 1, 1)
        assert house["refreshed_at"] and "Niamh" not in json.dumps(out)
        assert not [p for p in out["problems"] if "homeassistant" in p]
        run_check(parse_config(f"state_dir: {tmp_path}\n{ha}", "t.yaml"), load=False)
        text = capsys.readouterr().out
        assert "homeassistant  3 names (1 entities, 1 aliases, 1 areas, 0 floors)" in text
        bad = ha.replace(TOKEN, "wrong")
        code, out = report(capsys, f"state_dir: {tmp_path}\n{bad}")
        assert code == 1 and any("refused the token" in p for p in out["problems"])
