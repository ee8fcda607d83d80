"""The engine: what every model shares, private to the package (users import the public classes):
tokenization, chunking, batching, fast paths, runtime, backbone loading, weights I/O, the model
(``LongDocModel``), its settings and config. It imports nothing from ``models/``, the reranker or the
package ``__init__``.

This file stays light (no torch): the package ``__init__`` imports it first, so that oneDNN's and
ideep's kernel caches are capped at 16 kernels before anything has run oneDNN (see ``fast_paths``),
and the command line offers the runtime's vocabulary and its one default batch size before it loads
anything heavy (``runtime.Runtime`` checks values against them)."""
import os

#: the environment variables of oneDNN's and ideep's kernel caches, and the size this package sets
KERNEL_CACHES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
KERNEL_CACHE_SIZE = "16"
for _cache in KERNEL_CACHES:
    os.environ.setdefault(_cache, KERNEL_CACHE_SIZE)

BATCH_SIZE = 16  # (query, chunk) sequences per encoder call
DTYPES = ("auto", "bf16", "fp16", "fp32", "int8")  # the names a command line offers (models also take aliases)
BATCHINGS = ("length_sorted", "input_order")  # the engine's batch policies (``batching`` maps each to its function)
