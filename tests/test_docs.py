"""The README and docs/: a user's guide of bounded length, links that resolve, examples that run, and
figures that each name their command, machine and date."""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))

#: A Markdown link to a file of the repository: [text](path) or [text](path#anchor).
_LINK = re.compile(r"\]\((?!https?://|#)(?P<path>[^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_guide_of_bounded_length_without_commit_hashes():
    text = README.read_text()
    assert len(text.splitlines()) <= 260
    assert re.findall(r"\b[0-9a-f]{7}\b", text) == []


@pytest.mark.parametrize("page", [README, ROOT / "CHANGELOG.md", *DOCS], ids=lambda path: path.name)
def test_links_to_files_resolve(page):
    missing = [m["path"] for m in _LINK.finditer(page.read_text()) if not (page.parent / m["path"]).exists()]
    assert missing == []


def test_the_readmes_python_examples_give_what_they_say():
    text = README.read_text()
    block = re.search(r"```python\n(?P<code>>>> .*?)```", text, re.DOTALL)["code"]
    test = doctest.DocTestParser().get_doctest(block, {}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def performance_rows() -> list[list[str]]:
    """The rows of docs/performance.md's tables that have a command, machine and date column."""
    rows, columns = [], None
    for line in (ROOT / "docs" / "performance.md").read_text().splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if columns is None:
            columns = cells
        elif not set(cells) <= {"---", "--- "} and "date" in columns:
            rows.append(dict(zip(columns, cells)))
    return rows


def test_every_figure_names_its_command_machine_and_date():
    rows = performance_rows()
    assert len(rows) >= 20
    for row in rows:
        assert "`" in row["command"] and row["result"] and row["machine"], row
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["date"]), row
