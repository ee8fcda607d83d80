"""``pyterrier_longdoc.synthetic`` is :mod:`pyterrier_longdoc.data.synthetic`: this name keeps older imports working."""
import sys

from .data import synthetic

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = synthetic
