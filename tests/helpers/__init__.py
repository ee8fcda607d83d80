"""What several test modules share: tiny models built offline (stand-ins for the hub's), toy tasks,
frames and files to feed them. Test modules import from here (``from helpers.toy_training import
toy_task``), never from each other: a test module is not a library."""
