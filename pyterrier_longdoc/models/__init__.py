"""The public model classes, one module per family: an aggregator head, defaults, and the paper."""
from .biencoder import BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP
from .cedr import CedrDrmm, CedrKnrm, CedrPacrr
from .llm import LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP
from .longp import LongP
from .model1 import NeuralModel1
from .parade import (AvgP, ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                     ParadeTransformerPretrained, ParadeTransformerQ)
from .score import FirstP, KMaxAvgP, MaxP, SumP

__all__ = ["FirstP", "MaxP", "SumP", "KMaxAvgP", "AvgP", "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn",
           "ParadeCNN", "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
           "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP",
           "LLMFirstP", "LLMMaxP", "LLMSumP", "LLMKMaxAvgP", "LLMLongP",
           "BiEncoderFirstP", "BiEncoderMaxP", "BiEncoderLongP"]
