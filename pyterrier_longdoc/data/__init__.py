"""The collections: what a model re-ranks and trains on, and where document text comes from.

- ``collection``: the shape every collection has (``Collection``: topics, qrels, docs, splits,
  ``get_text``) and ``InMemoryCollection``;
- ``documents``: document text by docno for your own collections (``TextLoader``, ``read_documents``);
- ``datasets``: ir_datasets collections as long-document tasks with folds (``load_collection``);
- ``prose``: real prose shipped with the package (WordNet's glosses) as a FarRelevant collection, the
  demo's (answers near or far, in the backbone's tokens);
- ``synthetic``: the generated collection of the tutorials (answers near or far);
- ``longembed``: LongEmbed's passkey and needle retrieval tasks, generated at its lengths (256 to 32,768);
- ``bm25``: the first stage: PISA's BM25, or BM25 in pure Python (PISA's scoring) where PyTerrier-PISA does
  not install;
- ``dictionaries``, ``foldoc``: definition-finding tasks from Debian's dictd dictionaries (benchmarks).

The demo, an application of these and of the models, is ``pyterrier_longdoc.demo``.
"""
