"""``pyterrier_longdoc.collection`` is :mod:`pyterrier_longdoc.data.collection`: this name keeps older imports working."""
import sys

from .data import collection

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = collection
