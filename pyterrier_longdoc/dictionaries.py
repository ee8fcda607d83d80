"""``pyterrier_longdoc.dictionaries`` is :mod:`pyterrier_longdoc.data.dictionaries`: this name keeps older imports working."""
import sys

from .data import dictionaries

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = dictionaries
