"""The installed package carries the prebuilt extension and JupyterLab finds it enabled."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyterlab", reason="needs JupyterLab (pip install -e '.[lab]')")

PACKAGE = json.loads((Path(__file__).parents[2] / "labextension" / "package.json").read_text())


def test_jupyter_labextension_list_shows_the_extension_enabled_and_ok():
    listed = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                            capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # no colour codes
    lines = [line.split() for line in text.splitlines() if PACKAGE["name"] in line]
    assert [line[:4] for line in lines] == [[PACKAGE["name"], f"v{PACKAGE['version']}", "enabled", "OK"]], text


def test_the_installed_extension_is_prebuilt_from_this_source():
    from jupyter_core.paths import jupyter_path
    found = [Path(p) / PACKAGE["name"] for p in jupyter_path("labextensions") if (Path(p) / PACKAGE["name"]).is_dir()]
    assert found, "the extension is not installed in any labextensions folder"
    built = json.loads((found[0] / "package.json").read_text())
    assert (built["name"], built["version"]) == (PACKAGE["name"], PACKAGE["version"])
    entry = found[0] / built["jupyterlab"]["_build"]["load"]  # the federated module JupyterLab loads
    assert entry.is_file() and entry.stat().st_size > 0
