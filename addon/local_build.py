"""Write the add-on as a folder the Home Assistant Supervisor builds itself.

Where no image is published (or to run unreleased code), the Supervisor builds an add-on
from a Dockerfile in its folder when the add-on's config.yaml names no ``image``. This
writes such a folder: the add-on's files, the repository's Dockerfile and the sources it
copies, Hearth's own config.yaml renamed (the folder's config.yaml is the add-on's), and a
build.yaml naming the Debian base for each architecture. Copy the folder to
``/addons/hearth`` on the Home Assistant machine (Samba or SSH add-on), then in Home
Assistant: Settings -> Add-ons -> Add-on store -> (menu) Check for updates -> Local
add-ons -> Hearth -> Install. The first build takes a while: it compiles llama.cpp.

    python3 addon/local_build.py DEST        (make addon-local ADDON_DEST=DEST)

Only the standard library: it runs with any Python 3.9 or newer.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADDON = ROOT / "addon"
SOURCES = (
    "pyproject.toml", "constraints.txt", "Makefile",
    "daemon", "protocols", "integrations", "voices",
)  # fmt: skip
"""What the Dockerfile copies from its context, besides Hearth's config.yaml and the
README.md (the add-on's own serves as the package's readme)."""
HEARTH_CONFIG = "hearth-config.yaml"
"""Hearth's own config.yaml in the folder (config.yaml there is the add-on's)."""
BASE = "debian:bookworm-slim"
BUILD_YAML = f"""\
# The base the Supervisor builds Hearth's Dockerfile on, per architecture.
build_from:
  amd64: {BASE}
  aarch64: {BASE}
"""
CACHES = ("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache")
IGNORED = shutil.ignore_patterns(*CACHES)


def without_image(text: str) -> str:
    """The add-on's config.yaml with its ``image`` key (and the comment above it) left
    out: the Supervisor then builds the folder's Dockerfile."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    for line in lines:
        if re.match(r"^image\s*:", line):
            while out and out[-1].startswith("#"):
                out.pop()
            continue
        out.append(line)
    return "".join(out)


def local_dockerfile(text: str) -> str:
    """The Dockerfile with Hearth's config copied from its renamed file."""
    copy = re.compile(r"^COPY config\.yaml ", re.M)
    if not copy.search(text):
        raise SystemExit("the Dockerfile no longer copies config.yaml: update local_build.py")
    return copy.sub(f"COPY {HEARTH_CONFIG} ", text)


def write(dest: Path) -> Path:
    """Write the folder at ``dest`` (replacing what a previous run wrote there)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(ADDON, dest, ignore=shutil.ignore_patterns("local_build.py", *CACHES))
    (dest / "config.yaml").write_text(without_image((ADDON / "config.yaml").read_text()))
    (dest / "build.yaml").write_text(BUILD_YAML)
    (dest / "Dockerfile").write_text(local_dockerfile((ROOT / "Dockerfile").read_text()))
    shutil.copy2(ROOT / "config.yaml", dest / HEARTH_CONFIG)
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=IGNORED)
        else:
            shutil.copy2(source, dest / name)
    (dest / ".wheels").mkdir(exist_ok=True)  # the Dockerfile takes prebuilt wheels from it
    return dest


def main(argv: list[str]) -> int:
    """Write the folder named on the command line."""
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python3 addon/local_build.py DEST", file=sys.stderr)
        return 2
    dest = write(Path(argv[0]).resolve())
    print(f"wrote the add-on for a local build to {dest}: copy it to /addons/hearth")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
