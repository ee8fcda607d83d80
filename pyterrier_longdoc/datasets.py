"""``pyterrier_longdoc.datasets`` is :mod:`pyterrier_longdoc.data.datasets`: this name keeps older imports working."""
import sys

from .data import datasets

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = datasets
