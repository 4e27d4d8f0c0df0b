"""Every relative link of the README, ARCHITECTURE.md and the pages under docs/ leads somewhere.

The README is short and points into docs/ for the rest, and the pages point at each other's
sections: a section renamed or moved would leave a link that GitHub shows as working and that
lands at the top of a page, or on nothing. So for each relative Markdown link (``[text](path)``,
``[text](path#anchor)``, ``[text](#anchor)`` and a reference ``[name]: path``) the file it names must
exist, and where it names an anchor the target must have a heading whose GitHub slug is that anchor
(or an HTML ``id``). Links with a scheme (``https:``, ``mailto:``) are not fetched: whether another
site is up is no fact about convy. Code blocks and code spans are not prose: a ``[x](y)`` or a
``# line`` in one is neither a link nor a heading.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:[^`\n]|\n(?!\s*\n))+?(?<!`)\1(?!`)")
LINK = re.compile(r"!?\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>\n]*>|\S+)", re.MULTILINE)
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ID = re.compile(r"<[a-zA-Z][^>]*?\s(?:id|name)=[\"']([^\"']+)[\"']")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def guides(root: Path) -> list[Path]:
    """The README, ARCHITECTURE.md and every Markdown page under docs/, as far as they exist."""
    found = [root / name for name in ("README.md", "ARCHITECTURE.md") if (root / name).is_file()]
    return found + sorted((root / "docs").rglob("*.md"))


def prose(text: str) -> str:
    """The text with its fenced code blocks blanked, line for line, so that line numbers still hold."""
    kept, fence = [], ""
    for line in text.split("\n"):
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = ""
            kept.append("")
        elif opened:
            fence = opened.group(1)
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept)


def spans_blanked(text: str) -> str:
    """Code spans replaced by as many spaces (newlines kept), so a link in one is not read as a link."""
    return CODE_SPAN.sub(lambda span: re.sub(r"[^\n]", " ", span.group(0)), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as shown, lower case, punctuation but - and _ dropped,
    each space a -. A link's text stays, code spans' backticks and emphasis's stars go."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a Markdown file: its headings' slugs, a repeated slug numbered -1, -2 as GitHub
    numbers it, and the ids of its HTML tags."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    lines = prose(text).split("\n")
    for number, line in enumerate(lines):
        atx = ATX.match(line)
        above = lines[number - 1] if number else ""
        if atx:
            title = atx.group(2) or ""
        elif SETEXT.match(line) and above.strip() and not ATX.match(above) and "|" not in above and number:
            title = above
        else:
            continue
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(HTML_ID.findall(text))
    return found


def links(text: str) -> list[tuple[int, str, str]]:
    """Each link of the prose: its line (from 1), its text, and where it points."""
    plain = spans_blanked(prose(text))
    found = [(match.start(), match.group(1), match.group(2)) for match in LINK.finditer(plain)]
    found += [(match.start(), match.group(1), match.group(2)) for match in REFERENCE.finditer(plain)]
    return [(plain.count("\n", 0, start) + 1, " ".join(label.split()), target.strip("<>")) for start, label, target in sorted(found)]


def broken(root: Path, files: list[Path]) -> list[str]:
    """One line for each relative link of the files that leads to no file, or to no such heading:
    the file and line, the link as written, and what is missing."""
    problems = []
    for source in files:
        text = source.read_text(encoding="utf-8")
        where = source.relative_to(root).as_posix()
        for line, label, target in links(text):
            if SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            file = (source.parent / unquote(path)).resolve() if path else source
            shown = f"{where}:{line}: [{label}]({target})"
            named = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
            if not file.exists():
                problems.append(f"{shown}: no such file: {named}")
            elif anchor and (file.suffix != ".md" or unquote(anchor) not in anchors(file.read_text(encoding="utf-8"))):
                problems.append(f"{shown}: {named} has no heading whose slug is {unquote(anchor)}")
    return problems


def test_every_relative_link_leads_to_a_file_and_a_heading() -> None:
    """The README, ARCHITECTURE.md and docs/: no link to a file that is not there, nor to a missing heading."""
    files = guides(ROOT)
    assert {"README.md", "ARCHITECTURE.md", "docs/README.md"} <= {file.relative_to(ROOT).as_posix() for file in files}
    problems = broken(ROOT, files)
    assert not problems, "links that lead nowhere:\n" + "\n".join(problems)


def test_every_page_is_linked_from_the_readme_and_the_index() -> None:
    """Each page of docs/ (its decisions apart, which their own index lists) is reached from the README's
    list of where to go next and from docs/README.md."""
    pages = {page.name for page in (ROOT / "docs").glob("*.md") if page.name != "README.md"}
    for index, prefix in ((ROOT / "README.md", "docs/"), (ROOT / "docs" / "README.md", "")):
        linked = {target.partition("#")[0] for _, _, target in links(index.read_text(encoding="utf-8"))}
        missing = sorted(page for page in pages if prefix + page not in linked)
        assert not missing, f"{index.relative_to(ROOT)} links no page {', '.join(missing)}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Results and exit codes", "results-and-exit-codes"),
        ("Attempts until decided: `--attempts auto`", "attempts-until-decided---attempts-auto"),
        ("Before a run: `convy check`", "before-a-run-convy-check"),
        ("Judging the judge: evidence, repeats, panels", "judging-the-judge-evidence-repeats-panels"),
        ("`runs`", "runs"),
        ("The `user_faults` field", "the-user_faults-field"),
        ("Two runs (base A, candidate B)", "two-runs-base-a-candidate-b"),
        ("See [the rule](#the-rule) **now**", "see-the-rule-now"),
    ],
)
def test_a_heading_s_anchor_is_github_s_slug(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_link_or_anchor_is_found_and_named(tmp_path: Path) -> None:
    """A link to a file that is not there, and one to a heading the page lacks, are each one line with the
    file, the line and the link; a good link, an external one, a repeated heading's -1 and links in code are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# convy\n\n"
        "See [a page](docs/gone.md), [the title](#convy) and [a\nsection](docs/page.md#no-such).\n"
        "The second [A section](docs/page.md#a-section-1), [the web](https://example.invalid/nowhere#x),\n"
        "`[in code](docs/gone.md)` and [an id](docs/page.md#kept).\n\n"
        "```md\n[in a block](docs/gone.md)\n# not a heading\n```\n\n"
        "[ref]: docs/also-gone.md\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## A section\n\n<a id=\"kept\"></a>\n\n## A section\n\n```\n## In code\n```\n", encoding="utf-8"
    )
    assert broken(tmp_path, guides(tmp_path)) == [
        "README.md:3: [a page](docs/gone.md): no such file: docs/gone.md",
        "README.md:3: [a section](docs/page.md#no-such): docs/page.md has no heading whose slug is no-such",
        "README.md:13: [ref](docs/also-gone.md): no such file: docs/also-gone.md",
    ]
    assert anchors((tmp_path / "docs" / "page.md").read_text(encoding="utf-8")) == {"page", "a-section", "a-section-1", "kept"}
