"""The distributions: ``python -m build`` makes an sdist and a wheel that pass ``twine check``, hold
the package and its entry points (and no tests, benchmarks or results), and install into a fresh
virtual environment where the ``pyterrier-longdoc`` command runs."""
import os
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from helpers.setup_py import long_description

import pyterrier_longdoc

ROOT = Path(__file__).resolve().parents[2]
# the fresh environment sees only what is installed in it (PYTHONPATH may point at a checkout)
CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
pytestmark = pytest.mark.slow  # about half a minute: a build and an install


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The distributions built from a copy of the tracked files (the checkout stays clean)."""
    source = tmp_path_factory.mktemp("source")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((ROOT / name).read_bytes())
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: setuptools of this environment, so the build needs no download
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                   check=True, capture_output=True, env=CLEAN)
    return out


def test_sdist_and_wheel_pass_twine_check_and_hold_what_a_user_needs(dist):
    wheel, = dist.glob("*.whl")
    sdist, = dist.glob("*.tar.gz")
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    version = pyterrier_longdoc.__version__
    assert wheel.name == f"pyterrier_longdoc-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = z.read(f"pyterrier_longdoc-{version}.dist-info/entry_points.txt").decode()
    package = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pyterrier_longdoc").rglob("*.py"))
    assert sorted(n for n in names if n.endswith(".py")) == package
    assert "pyterrier_longdoc/py.typed" in names  # type checkers read the package's annotations
    assert not [n for n in names if n.endswith(".pyi")]  # the modules themselves are what type checkers read
    assert "pyterrier-longdoc = pyterrier_longdoc.cli:main" in entry_points
    assert "reranker.pyterrier_longdoc = " in entry_points
    with tarfile.open(sdist) as t:
        top = {Path(n).parts[1] for n in t.getnames() if len(Path(n).parts) > 1}
    assert {"pyproject.toml", "README.md", "pyterrier_longdoc", "PKG-INFO"} <= top
    assert not top & {"tests", "benchmarks", "tutorials", "docs", ".ci"}, top


def test_the_wheel_installs_into_a_fresh_environment_and_the_command_runs(dist, tmp_path):
    wheel, = dist.glob("*.whl")
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    # the dependencies are this environment's (no download); the package itself only from the wheel
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True, env=CLEAN).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--quiet", str(wheel)], check=True, capture_output=True, env=CLEAN)
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    version = subprocess.run([str(env / "bin" / "pyterrier-longdoc"), "--version"], cwd=tmp_path,
                             capture_output=True, text=True, env=CLEAN)
    assert version.stdout.strip() == f"pyterrier-longdoc {pyterrier_longdoc.__version__}", version.stderr
    where = subprocess.run([str(python), "-c", "import pyterrier_longdoc as pl, pyterrier as pt; "
                            "print(pl.__file__); print(pt.inspect.artifact_type_format(pl.MaxP))"],
                           cwd=tmp_path, capture_output=True, text=True, env=CLEAN)
    assert where.returncode == 0, where.stderr
    file, artifact = where.stdout.splitlines()[-2:]
    assert file.startswith(site) and artifact == "('reranker', 'pyterrier_longdoc')"


def test_the_license_is_declared_and_ships_in_both_distributions(dist):
    wheel, = dist.glob("*.whl")
    sdist, = dist.glob("*.tar.gz")
    version = pyterrier_longdoc.__version__
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(f"pyterrier_longdoc-{version}.dist-info/METADATA").decode()
        license_text = z.read(f"pyterrier_longdoc-{version}.dist-info/licenses/LICENSE").decode()
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    # the rest of the metadata, as pyproject.toml and setup.py declare it
    assert "Author: The pyterrier-longdoc maintainers" in metadata and "Classifier: Typing :: Typed" in metadata
    assert "Project-URL: PyTerrier, https://github.com/terrier-org/pyterrier" in metadata
    description = metadata.split("\n\n", 1)[1]
    assert description.strip() == long_description().strip()
    assert license_text == (ROOT / "LICENSE").read_text()
    with tarfile.open(sdist) as t:
        top = {Path(n).parts[1] for n in t.getnames() if len(Path(n).parts) > 1}
    assert {"LICENSE", "CITATION.cff", "setup.py"} <= top


def test_citation_file_parses_and_names_the_software_and_the_models_papers():
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["version"] == pyterrier_longdoc.__version__ and citation["license"] == "Apache-2.0"
    assert citation["authors"] and citation["title"].startswith("pyterrier-longdoc")
    titles = {reference["title"] for reference in citation["references"]}
    for paper in ("Deeper Text Understanding for IR", "PARADE", "CEDR", "Lexical Translation Models",
                  "Comprehensive Evaluation and Leaderboarding", "Longformer", "Big Bird",
                  "Fine-Tuning LLaMA", "Is ChatGPT Good at Search", "Sentence-BERT"):
        assert any(paper in title for title in titles), paper
    for reference in citation["references"]:
        assert reference["authors"] and reference["year"], reference["title"]
