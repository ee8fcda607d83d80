"""The documentation site: built with warnings as errors, every link between its pages (and to an
anchor) resolves, and every Python code block of the user guide runs, page by page, on the offline
stand-ins of ``docs_standins``."""
import functools
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDE = sorted((DOCS / "guide").glob("*.md"))
pytestmark = pytest.mark.slow  # the build renders the notebooks and imports every module (about a minute)


def python_blocks(text: str) -> list[str]:
    """The ```python fenced blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])


@functools.cache
def parsed(path: Path) -> Links:
    """A page's links and ids (parsed once: a page is the target of many links)."""
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def test_the_site_builds_strictly_and_its_internal_links_resolve(tmp_path):
    out = tmp_path / "html"
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html", str(DOCS),
                            str(out), "-d", str(tmp_path / "doctrees")], capture_output=True, text=True,
                           env={"PYTHONPATH": str(ROOT), **__import__("os").environ}, timeout=900)
    assert build.returncode == 0, build.stderr[-5000:]
    pages = sorted(out.rglob("*.html"))
    for name in ("guide/starting", "guide/unusual-input", "api", "results/benchmarks", "results/effectiveness",
                 "tutorials/notebooks/01_quickstart"):
        assert (out / f"{name}.html").exists(), name
    broken, checked = [], 0
    for page in pages:
        for link in parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue
            checked += 1
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append(f"{page.relative_to(out)} -> {link}")
            elif parts.fragment and target.suffix == ".html":
                if parts.fragment not in parsed(target).ids:
                    broken.append(f"{page.relative_to(out)} -> {link} (no such anchor)")
    assert checked > 100 and not broken, broken[:20]
    api = (out / "api.html").read_text()
    assert "Scores of <code" in api or "predict" in api  # the docstrings made it in
    assert "sentence-transformers" in (out / "guide" / "starting.html").read_text()


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    from helpers import docs_standins

    return docs_standins.prepare(tmp_path_factory.mktemp("standins"))


@pytest.fixture(scope="module")
def fresh_processes():
    from helpers.fresh_process import FreshProcesses

    return FreshProcesses()


@pytest.mark.parametrize("page", [p for p in GUIDE if python_blocks(p.read_text())], ids=lambda p: p.stem)
def test_every_code_block_of_the_guide_runs(page, standins, fresh_processes, tmp_path):
    """The page's blocks run in order, in one fresh process (one JVM for Pyserini's page), with the
    stand-ins' names and files; a block that fails names the page. The process is forked from one that
    has imported torch and PyTerrier already (helpers/fresh_process.py): the page's own state is fresh."""
    work = tmp_path / "work"
    shutil.copytree(standins, work)
    script = ["import sys", f"sys.path.insert(0, {str(ROOT / 'tests')!r})", "from helpers import docs_standins",
              "globals().update(docs_standins.namespace('.'))"]
    for number, block in enumerate(python_blocks(page.read_text()), 1):
        script += [f"print('--- block {number}', flush=True)", block]
    (work / "page.py").write_text("\n".join(script))
    returncode, printed = fresh_processes.run(work, "page.py")
    assert returncode == 0, f"{page.name}: {printed[-5000:]}"


def test_only_python_blocks_are_run():
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == ["x = 1\n"]


def test_every_public_class_is_in_the_api_reference():
    import inspect

    import pyterrier_longdoc as pl

    reference = (ROOT / "docs" / "api.md").read_text()
    public = [f"pyterrier_longdoc.{n}" for n in pl.__all__ if inspect.isclass(getattr(pl, n))]
    public += [f"pyterrier_longdoc.listwise.{n}" for n in ("ChatBackend", "OpenAIChat", "AnthropicChat",
                                                           "TransformersChat")]
    assert not [name for name in public if f"autoclass:: {name}\n" not in reference]


def test_every_method_the_readme_and_the_guide_call_is_in_the_api_reference():
    import pyterrier_longdoc as pl

    methods = {name for name in vars(pl.LongDocReranker) if not name.startswith("_")
               and callable(getattr(pl.LongDocReranker, name))}
    text = (ROOT / "README.md").read_text() + "".join(page.read_text() for page in (DOCS / "guide").glob("*.md"))
    called = methods & set(re.findall(r"\.(\w+)\(", text))
    members = re.search(r"autoclass:: pyterrier_longdoc\.LongDocReranker\n +:members: (.*)",
                        (DOCS / "api.md").read_text()).group(1).split(", ")
    assert sorted(called - set(members)) == []


def test_the_guide_states_the_progress_bars_delay_the_code_uses():
    from pyterrier_longdoc.engine.progress import PROGRESS_DELAY

    text = " ".join((DOCS / "guide" / "starting.md").read_text().split())
    assert f"`None` shows it once a call has run {PROGRESS_DELAY:g} seconds" in text


API_ONLY_CONF = """
import sys
sys.path.insert(0, {docs!r})
import conf as site

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
for _name in ("project", "autodoc_member_order", "autodoc_typehints", "napoleon_google_docstring",
              "napoleon_custom_sections", "myst_enable_extensions"):
    globals()[_name] = getattr(site, _name)


def setup(app):
    app.connect("autodoc-process-signature", site.constructor_signature)
"""


def test_the_api_reference_shows_every_constructor_with_its_settings_described(tmp_path):
    """The API reference alone (about ten seconds), with the site's settings and signature hook, as text:
    no class shows ``(*args, **kwargs)`` (pt.Transformer's ``__new__``) or ``**settings``, and every
    model's settings come with their one-line meaning."""
    source = tmp_path / "api"
    source.mkdir()
    shutil.copyfile(DOCS / "api.md", source / "index.md")
    (source / "conf.py").write_text(API_ONLY_CONF.format(docs=str(DOCS)))
    build = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-q", "-b", "text", str(source),
                            str(tmp_path / "text"), "-d", str(tmp_path / "doctrees")], capture_output=True, text=True,
                           env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    reference = (tmp_path / "text" / "index.txt").read_text()
    assert "class pyterrier_longdoc.LongDoc(scorer, *, aggregation='max'" in reference
    assert not [line for line in reference.splitlines() if "(*args, **kwargs)" in line]
    constructors = [line for line in reference.splitlines() if line.startswith("class ") or "from_pretrained(" in line
                    or "from_hf(" in line]
    assert not [line for line in constructors if "**settings" in line or "**overrides" in line]
    import pyterrier_longdoc as pl

    maxp = reference[reference.index("class pyterrier_longdoc.MaxP("):reference.index("class pyterrier_longdoc.SumP(")]
    for name, doc in pl.MaxP.Settings.docs().items():
        assert re.search(rf"\* \*\*{name}\*\* \(.*?\) -- {re.escape(doc.split()[0])}", maxp), name  # type, meaning
