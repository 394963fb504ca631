"""torchrun, as `python3 -m torch.distributed.run` (torchrun's own code).

Debian 12's PyTorch 1.13 cannot start workers under Python 3.11: the default
--redirects/--tee of 0 parse to None (Std.from_str), and
torch/distributed/elastic/multiprocessing's to_map then fails. This maps
None to Std.NONE, what 0 means, and runs torchrun's main unchanged; with a
PyTorch that is not broken it changes nothing. Exits 77 (a skipped test)
without PyTorch.
"""

import sys

try:
    import torch.distributed.elastic.multiprocessing as multiprocessing
    from torch.distributed.elastic.multiprocessing import api
    from torch.distributed.run import main
except ImportError as e:
    print(f"torchrun.py: no PyTorch ({e})", file=sys.stderr)
    sys.exit(77)

_to_map = api.to_map


def to_map(value, local_world_size):
    return _to_map(api.Std.NONE if value is None else value, local_world_size)


multiprocessing.to_map = to_map
api.to_map = to_map

if __name__ == "__main__":
    sys.exit(main())
