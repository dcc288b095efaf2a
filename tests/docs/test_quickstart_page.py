"""docs/quickstart.md sends a newcomer to the notebooks that exist, the first one first."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_quickstart_page_opens_the_first_notebook_and_names_only_existing_ones():
    named = re.findall(r"`([\w/]+\.ipynb)`", (ROOT / "docs" / "quickstart.md").read_text())
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert named and named[0] == notebooks[0] == "00_quickstart.ipynb"
    assert [n for n in named if not (ROOT / "notebooks" / n).exists()] == []
