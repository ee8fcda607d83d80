"""The runtime's vocabulary and its one default batch size, without torch: the command line offers
them before it loads anything heavy; ``_runtime.Runtime`` checks values against them."""

BATCH_SIZE = 16  # (query, chunk) sequences per encoder call
DTYPES = ("auto", "bf16", "fp16", "fp32", "int8")  # the names a command line offers (models also take aliases)
BATCHINGS = ("length_sorted", "input_order")  # the engine's batch policies (``_batching`` maps each to its function)
