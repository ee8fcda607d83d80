"""The package's public names, imported on first use by ``pyterrier_longdoc.__getattr__`` (they
load torch, transformers and PyTerrier; the command line's ``--help`` and ``--version`` do not)."""
from ._reranker import LongDocReranker, UntrainedHeadWarning, model_class, registered_models
from ._warn import CroppingWarning, LongDocDeprecationWarning, LongDocWarning
from ._version import __version__
from .data.collection import Collection
from .data.datasets import LongDocCollection, load_collection
from .data.documents import TextLoader
from .evaluation import (mean_interval, multi_seed_experiment, per_query_values, queries_needed, grid_scan,
                         query_controls, reads_the_query)
from .listwise import RankGPT
from .models import (AvgP, BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP, CedrDrmm, CedrKnrm, CedrPacrr, FirstP,
                     KMaxAvgP, LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP, LongP, MaxP, NeuralModel1,
                     ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                     ParadeTransformerPretrained, ParadeTransformerQ, SumP)
from .wrap import LongDoc
