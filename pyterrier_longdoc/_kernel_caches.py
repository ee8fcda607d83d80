"""oneDNN's and ideep's kernel caches capped at 16 kernels when the package is imported (see
``_fast_paths``), before anything has run oneDNN: a light module, so ``import pyterrier_longdoc``
sets them without loading torch."""
import os

#: the environment variables of oneDNN's and ideep's kernel caches, and the size this package sets
KERNEL_CACHES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
KERNEL_CACHE_SIZE = "16"
for _cache in KERNEL_CACHES:
    os.environ.setdefault(_cache, KERNEL_CACHE_SIZE)
