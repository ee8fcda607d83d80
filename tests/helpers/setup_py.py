"""setup.py's long description of README.md, as the build writes it into the metadata (setup.py
imported, not run: its ``setup`` call is under ``__main__``)."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def long_description(readme: str | None = None) -> str:
    spec = importlib.util.spec_from_file_location("setup_py", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.long_description((ROOT / "README.md").read_text() if readme is None else readme)
