#!/usr/bin/env bash
# The packages .gpu/run.sh needs that the GPU machine's image lacks (it has torch, transformers,
# sentence-transformers, scipy, pandas, pytest, ...; not PyTerrier and what PyTerrier imports), as
# wheels for its Python 3.12 on x86-64, into .whl/ (ignored by git; about 3 MB, well inside the 64 MiB
# a device call carries). Run once, from anywhere, on a machine with pip and a package index:
#
#     bash .gpu/wheels.sh
#
# No dependencies are resolved (--no-deps): the list is the whole set, each pinned, one version each.
set -eu
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
wheels=(pyterrier==1.1.2 ir_measures==0.4.3 pytrec-eval-terrier==0.5.11 deprecated==1.3.1 more-itertools==11.2.1
        lz4==4.4.5 dill==0.4.1)
rm -rf .whl && mkdir .whl
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${wheels[@]}"
du -sh .whl
