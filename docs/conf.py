"""Sphinx configuration of pyterrier-longdoc's documentation (see docs/about.md for the choices).

Build: ``sphinx-build -W -b html docs docs/_build/html`` (tests/docs/test_docs.py builds it strictly).
"""
import inspect
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import pyterrier_longdoc  # noqa: E402

project = "pyterrier-longdoc"
author = "the pyterrier-longdoc authors"
release = version = pyterrier_longdoc.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
# the tutorials are rendered with the outputs saved in them (CI runs them separately: tests/docs/test_tutorials.py)
nb_execution_mode = "off"
exclude_patterns = ["_build", "README.md", "results/_*"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
html_theme = "alabaster"
html_static_path = []
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
# fit's second list of arguments: the fields of TrainingArguments beyond the papers' defaults
napoleon_custom_sections = [("Settings", "params_style")]
suppress_warnings = ["myst.header"]  # notebooks start at ### inside their cells


def _copy_tutorials(app):
    """The notebooks live in tutorials/ (run by the tests there); the site renders copies of them."""
    target = DOCS / "tutorials" / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    for notebook in sorted((ROOT / "tutorials").glob("*.ipynb")):
        shutil.copyfile(notebook, target / notebook.name)
    # the notebooks link their exercises' solutions: the site offers them as downloads
    shutil.copytree(ROOT / "tutorials" / "solutions", target / "solutions", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _results_pages(app):
    """The benchmarks' own output files, included as they are (results/_*.md, written at each build):
    every committed run of benchmarks/run.py, newest first (the current ones, then those in archive/),
    and the effectiveness tables (benchmarks/results/README.md says which file is current for what)."""
    results = ROOT / "benchmarks" / "results"
    archive = results / "archive"
    lines = []
    for run in sorted(results.glob("run-*.txt"), reverse=True) + sorted(archive.glob("run-*.txt"), reverse=True):
        where = run.relative_to(results).as_posix()
        lines += [f"## {run.name}", "", f"```{{literalinclude}} ../../benchmarks/results/{where}", ":language: text",
                  "```", ""]
    others = sorted(p for p in results.iterdir() if p.suffix in (".md", ".txt") and not
                    p.name.startswith(("run-", "effectiveness", "readme-commands", "README")))
    if others:
        lines += ["# Other benchmarks", ""]
    for other in others:  # each benchmark's own report (bi-encoders zero-shot, LongDoc's memory, ...)
        lines += [f"## {other.name}", ""]
        lines += ([f"```{{include}} ../../benchmarks/results/{other.name}", "```", ""] if other.suffix == ".md" else
                  [f"```{{literalinclude}} ../../benchmarks/results/{other.name}", ":language: text", "```", ""])
    (DOCS / "results" / "_runs.md").write_text("\n".join(lines))

    lines = []
    for report in sorted(results.glob("effectiveness-*.md")):  # one per collection, as the benchmark wrote it
        lines += [f"## {report.stem.removeprefix('effectiveness-')}", "",
                  f"```{{include}} ../../benchmarks/results/{report.name}", "```", ""]
    superseded = sorted(archive.glob("effectiveness-*.md"))
    if superseded:
        lines += ["## Superseded runs (archive/)", "", "Earlier recipes and rejected trials, kept for what they showed.",
                  ""]
    for report in superseded:
        lines += [f"### {report.stem.removeprefix('effectiveness-')}", "",
                  f"```{{include}} ../../benchmarks/results/archive/{report.name}", "```", ""]
    legacy = archive / "effectiveness.json"  # the run before the per-collection files, rendered by the benchmark
    if legacy.exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import json

        import effectiveness

        result = json.loads(legacy.read_text())
        lines += ["### The first run (archive/effectiveness.json)", "",
                  f"Machine: {result['machine']}; seeds {result['seeds']}; precision {result['dtype']}.", ""]
        for name, collection in result["collections"].items():
            lines += [f"#### {name}", "", collection["description"], "", effectiveness.markdown(collection), ""]
            if collection.get("targets"):
                lines += [effectiveness.targets_markdown(collection), ""]
    (DOCS / "results" / "_effectiveness.md").write_text("\n".join(lines))


def constructor_signature(app, what, name, obj, options, signature, return_annotation):
    """The constructor a class really has: autodoc reads ``__new__`` before ``__init__``, and
    ``pt.Transformer.__new__(cls, *args, **kwargs)`` hides every transformer's keywords (LongDoc, RankGPT,
    TextLoader, BM25, ...); ``inspect.signature`` (and ``help``) read ``__init__``'s, which is shown
    instead (the types go to the description, as everywhere: ``autodoc_typehints``)."""
    if what not in ("class", "exception") or signature != "(*args, **kwargs)":
        return None
    if getattr(obj, "_is_protocol", False):  # a typing.Protocol (diagnostics' Tokenizer) is not built
        return "", return_annotation
    try:
        real = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in real.parameters.values()]
    return str(real.replace(parameters=plain, return_annotation=inspect.Signature.empty)), return_annotation


def setup(app):
    app.connect("autodoc-process-signature", constructor_signature)
    app.connect("builder-inited", _copy_tutorials)
    app.connect("builder-inited", _results_pages)
