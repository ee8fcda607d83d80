"""For tools that still call ``setup.py``, and the one piece of metadata pyproject.toml cannot declare:
the long description, README.md with each relative link (a file of the source repository, which PyPI's
page cannot follow, and whose URL the project does not record) written as its text and the path."""
import re
from pathlib import Path

from setuptools import setup

# a Markdown link whose target has no scheme (https:, mailto:) and is no anchor (#...)
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#)([^)\s]+)\)")
NOTE = "*The paths in this description, such as `docs/guide/training.md`, are files of the source repository.*"


def long_description(readme: str) -> str:
    """``readme`` with each ``[text](path)`` as ``text (`path`)``, or as ``text`` alone where it
    names the path, and a note under the title saying where the paths are."""
    def plain(match: re.Match) -> str:
        text, path = match.groups()
        return text if text.strip("`") == path else f"{text} (`{path}`)"

    title, rest = readme.split("\n", 1)
    return f"{title}\n\n{NOTE}\n{RELATIVE_LINK.sub(plain, rest)}"


if __name__ == "__main__":  # setuptools' build backend runs this file as __main__ too
    setup(long_description=long_description(Path(__file__).with_name("README.md").read_text(encoding="utf-8")),
          long_description_content_type="text/markdown")
