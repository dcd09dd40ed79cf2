"""The Home Assistant card's repository layout and packaging."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

from protocols.http.pages import FILES

FOLDER = Path(__file__).resolve().parents[4] / "integrations" / "homeassistant"


def test_hacs_json_names_the_card_at_the_folders_root() -> None:
    meta = json.loads((FOLDER / "hacs.json").read_text())
    assert meta["content_in_root"] is True
    assert (FOLDER / meta["filename"]).is_file()
    assert meta["name"]


def test_hearth_serves_the_card_from_its_installed_package() -> None:
    assert FILES["hearth-voice-card.js"][0] == "homeassistant"
    served = importlib.resources.files("integrations") / "homeassistant" / "hearth-voice-card.js"
    assert served.read_bytes() == (FOLDER / "hearth-voice-card.js").read_bytes()


def test_the_readme_shows_the_card_and_its_images_exist() -> None:
    readme = (FOLDER / "README.md").read_text()
    images = [line.split("](", 1)[1].rstrip(")") for line in readme.splitlines() if "![" in line]
    assert "images/card.png" in images
    for image in images:
        assert (FOLDER / image).is_file(), image
