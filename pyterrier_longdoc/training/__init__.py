"""Training: samplers from PyTerrier frames, losses, the end-to-end fit loop, BeST and de-biasing."""
from .arguments import TrainingArguments
from .best import BestResult, as_maxp, fit_best, segment_documents
from .debias import PositionDebias, SegmentShuffle, debias_positions, move_passage, shuffle_segments
from .fit_loop import fit
from .losses import ListwiseSoftmaxLoss, MarginLoss
from .passage import passage_triples, train_passage_ranker
from .passage_arguments import PassageArguments
from .recipe import document_passage_triples, train_long_document_ranker

__all__ = ["fit", "TrainingArguments", "MarginLoss", "ListwiseSoftmaxLoss", "fit_best", "BestResult", "segment_documents",
           "as_maxp",
           "debias_positions", "PositionDebias", "move_passage", "SegmentShuffle", "shuffle_segments",
           "train_passage_ranker", "PassageArguments", "passage_triples",
           "train_long_document_ranker", "document_passage_triples"]
