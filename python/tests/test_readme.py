"""README.md is written for its readers: short, with a table of contents, its
sections in the order a reader needs them, RASR's limits before its figures,
and no relative link to a file that is not there. Pure text checks: no
sprintrt import, no build needed."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")

MAX_LINES = 350

# One distinctive piece of each `## ` heading, in the order the README must
# have them.
SECTIONS = [
    "What it is",
    "Quick start",
    "Python",
    "PyTorch",
    "RASR",
    "Command-line",
    "C++",
    "other machines",
    "Options",
    "read more",
]


def readme_text():
    with open(README, encoding="utf-8") as f:
        return f.read()


def outside_code(text):
    """The lines of ``text`` outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def headings(text):
    return [line[3:].strip() for line in outside_code(text) if line.startswith("## ")]


def anchor(heading):
    """GitHub's anchor of a heading: its text (without Markdown's backticks)
    lower-cased, every character but letters, digits, '_', '-' and spaces
    dropped, spaces turned into '-'."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def section(text, word):
    """The text of the `## ` section whose heading contains ``word``."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("## ") and word in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    return "\n".join(lines[start:end])


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_has_at_most_350_lines():
    n = len(readme_text().splitlines())
    assert n <= MAX_LINES, "README.md has %d lines, at most %d allowed" % (n, MAX_LINES)


def test_sections_are_in_the_readers_order():
    found = headings(readme_text())
    assert len(found) == len(SECTIONS), found
    for heading, word in zip(found, SECTIONS):
        assert word in heading, "heading %r should be the section about %r (in: %s)" % (
            heading, word, found)


def test_table_of_contents_links_to_every_section_in_order():
    text = readme_text()
    lines = text.split("\n")
    first_heading = next(i for i, line in enumerate(lines) if line.startswith("## "))
    # The table of contents: the anchor links before the first `## ` heading.
    toc = [target[1:] for target in LINK.findall("\n".join(lines[:first_heading]))
           if target.startswith("#")]
    assert toc, "no table of contents (links to #anchors) before the first section"
    assert toc == [anchor(h) for h in headings(text)]


def test_rasr_limits_come_before_any_figure_in_ms():
    rasr = section(readme_text(), "RASR")
    first_figure = re.search(r"\d\s*ms\b", rasr)
    assert first_figure, "the RASR section gives no figure in ms"
    for limit in ("b6ff1a89", "ONNX", "CTC"):
        at = rasr.find(limit)
        assert at >= 0, "the RASR section does not mention %s" % limit
        assert at < first_figure.start(), "%s comes after the first figure (%r)" % (
            limit, first_figure.group())


@pytest.mark.parametrize("target", sorted({
    t for t in LINK.findall(readme_text())
    if not t.startswith(("http://", "https://", "#", "mailto:"))}))
def test_relative_link_points_to_an_existing_file(target):
    path = target.split("#", 1)[0]
    assert os.path.exists(os.path.join(ROOT, path)), "README.md links to missing %s" % target
