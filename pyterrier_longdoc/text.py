"""``pyterrier_longdoc.text`` is :mod:`pyterrier_longdoc.data.documents`: this name keeps older imports working."""
import sys

from .data import documents

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = documents
