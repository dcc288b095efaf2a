"""The side panel's style: text wraps between words, never inside one."""
import re
from pathlib import Path

CSS = (Path(__file__).resolve().parents[2] / "labextension" / "style" / "index.css").read_text()


def rule(selector: str) -> str:
    match = re.search(r"(^|\n)" + re.escape(selector) + r"\s*\{([^}]*)\}", CSS)
    assert match, selector
    return match.group(2)


def test_a_signature_wraps_between_parameters_not_inside_a_name():
    signature = rule(".tw-signature")
    assert "white-space: pre-wrap" in signature and "overflow-wrap: break-word" in signature
    assert "break-all" not in signature and "anywhere" not in signature


def test_no_text_of_the_panel_is_broken_at_any_letter():
    assert "word-break: break-all" not in CSS
