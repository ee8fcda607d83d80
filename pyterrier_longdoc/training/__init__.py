"""Training: samplers from PyTerrier frames, losses, and the end-to-end fit loop."""
from .fit import fit
from .losses import ListwiseSoftmaxLoss, MarginLoss

__all__ = ["fit", "MarginLoss", "ListwiseSoftmaxLoss"]
