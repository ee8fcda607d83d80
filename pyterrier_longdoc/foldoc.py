"""``pyterrier_longdoc.foldoc`` is :mod:`pyterrier_longdoc.data.foldoc`: this name keeps older imports working."""
import sys

from .data import foldoc

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = foldoc
