"""``pyterrier_longdoc.demo`` is :mod:`pyterrier_longdoc.data.demo`: this name keeps older imports working."""
import sys

from .data import demo

# the same module object, not a copy of its names: private names and monkeypatching keep working
sys.modules[__name__] = demo
