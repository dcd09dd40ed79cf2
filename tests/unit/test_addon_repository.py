"""The add-on repository against the Supervisor's rules (tests/addon_rules.py).

The Supervisor scans every ``config.*`` of a repository it is given, the root included:
Hearth's own ``config.yaml`` must be skipped (it is no add-on), and ``addon/`` must be
the one add-on, valid on the Supervisor releases of 2025 and 2026.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest
import yaml

from daemon import __version__
from daemon.config.addon import options_to_settings
from tests import addon_rules

ROOT = Path(__file__).resolve().parents[2]
ADDON = ROOT / "addon"


@pytest.fixture(scope="module")
def addon() -> dict:
    return addon_rules.load(ADDON / "config.yaml")


def test_the_scan_finds_one_add_on_and_skips_hearths_own_config():
    found = {path.relative_to(ROOT).as_posix(): path for path in addon_rules.scan(ROOT)}
    valid = [
        name
        for name, path in found.items()
        if not addon_rules.addon_problems(addon_rules.load(path))
    ]
    assert valid == ["addon/config.yaml"], found
    # Hearth's own config.yaml is read too, and refused: it is no add-on.
    refused = addon_rules.addon_problems(addon_rules.load(ROOT / "config.yaml"))
    assert refused and refused[0].startswith("missing required key"), refused
    assert not addon_rules.repository_problems(ROOT)


def test_the_add_on_config_follows_the_supervisors_rules(addon):
    assert addon_rules.addon_problems(addon) == []
    assert addon["discovery"] == ["wyoming"]
    assert addon["host_network"] is True and set(addon["arch"]) == {"amd64", "aarch64"}
    assert "{arch}" in addon["image"]


def test_the_checker_refuses_what_the_supervisor_refuses(addon):
    cases = {
        "slug": ("slug", "hearth add-on"),
        "arch": ("arch", ["amd64", "mips"]),
        "port range": ("ports", {"10000-10049/udp": 10000}),
        "map name": ("map", ["app_config:rw"]),
        "tagged image": ("image", "ghcr.io/hearth-voice/{arch}-addon-hearth:0.1.0"),
        "schema type": ("schema", {**addon["schema"], "voice": "text"}),
        "option type": ("options", {**addon["options"], "speakers": "yes"}),
        "option choice": ("options", {**addon["options"], "llm": "cloud"}),
        "model choice": ("options", {**addon["options"], "asr_model": "gigantic"}),
        "unknown option": ("options", {**addon["options"], "colour": "red"}),
    }
    for case, (key, value) in cases.items():
        broken = copy.deepcopy(addon)
        broken[key] = value
        assert addon_rules.addon_problems(broken), case
    required = copy.deepcopy(addon)
    del required["options"]["voice"]
    assert addon_rules.addon_problems(required)


def test_every_option_has_a_translation_and_a_mapping(addon):
    translations = addon_rules.load(ADDON / "translations" / "en.yaml")
    assert addon_rules.translation_problems(translations, addon["schema"], addon["ports"]) == []
    # Every option of the schema means something to Hearth (and nothing else does).
    sample = {key: value for key, value in addon["options"].items()}
    sample.update({"language": "en", "llm_url": "http://ollama.lan:11434/v1", "llm_model": "m",
                   "llm_api_key": "k", "api_key": "k", "custom_voice": "v",
                   "custom_asr_model": "owner/whisper-ct2"})  # fmt: skip
    assert set(sample) == set(addon["schema"])
    options_to_settings(sample)


def test_the_add_on_files_are_there(addon):
    for name in ("DOCS.md", "CHANGELOG.md", "README.md", "icon.png", "logo.png"):
        assert (ADDON / name).is_file(), name
    assert (ADDON / "icon.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"## {addon['version']}" in (ADDON / "CHANGELOG.md").read_text()


def test_the_version_and_image_match_what_the_workflow_publishes(addon):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert addon["version"] == project == __version__
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "image.yml").read_text())
    registry = workflow["env"]["REGISTRY"]
    arches = {item["arch"] for item in workflow["jobs"]["build"]["strategy"]["matrix"]["include"]}
    assert arches == set(addon["arch"])
    steps = workflow["jobs"]["build"]["steps"]
    (push,) = [s for s in steps if s.get("uses", "").startswith("docker/build-push-action")]
    tag = push["with"]["tags"].replace("${{ env.REGISTRY }}", registry)
    tag = tag.replace("${{ matrix.arch }}", "{arch}").replace(
        "${{ steps.version.outputs.version }}", addon["version"]
    )
    assert tag == f"{addon['image']}:{addon['version']}"
