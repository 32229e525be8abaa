#!/usr/bin/env bash
# Regenerates the committed trained models used by tests/properties/test_trained.py (a few KB each).
# Run from the repository root: bash tests/data/trained/make.sh
set -euo pipefail
for kind in full diag gdpp; do
  python -m numerics.cli train --model "$kind" --layers 3 --noise uniform:1 --n 8 --d 3 --steps 1500 \
    --batch 512 --seeds 2 --eval-sequences 20000 --dtype float64 --no-baselines --json \
    --out "runs/tests-trained-$kind" > "runs/tests-trained-$kind.json"
  cp "runs/tests-trained-$kind/model.npz" "tests/data/trained/$kind-3.npz"
done
