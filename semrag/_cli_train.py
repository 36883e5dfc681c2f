"""``semrag train-boundary``: train PSC or MFC weights from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from semrag.errors import SemragError


def read_source(spec: str) -> tuple[str, list]:  # type: ignore[type-arg]
    """``KIND:PATH[@START:STOP]`` -> (a name that records no path, documents)."""
    from semrag.eval import datasets as ds

    readers = {
        "nicta": ds.read_nicta,
        "csabstruct": ds.read_csabstruct,
        "squad": ds.read_squad_articles,
        "choi": ds.read_choi,
        "pubmedqa": lambda p: [item.document for item in ds.read_pubmedqa(p)],
        "sectioned": lambda p: ds.read_sectioned_text(p, split_lines=True),
    }
    kind, sep, rest = spec.partition(":")
    path, at, window = rest.partition("@")
    if not sep or kind not in readers:
        raise SemragError(
            f"--data/--dev take KIND:PATH[@START:STOP] with KIND in {sorted(readers)}; got {spec!r}"
        )
    loaded = readers[kind](path)
    if at:
        start, _, stop = window.partition(":")
        loaded = loaded[int(start or 0) : int(stop) if stop else None]
    return f"{kind}:{Path(path).name}{at}{window}", loaded


def parse_negative_mix(value: str) -> dict[str, float]:
    mix = {}
    for part in value.split(","):
        key, eq, share = part.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError(f"expected KIND=SHARE[,KIND=SHARE...], got {value!r}")
        mix[key.strip()] = float(share)
    return mix


def cmd_train_boundary(args: argparse.Namespace) -> int:
    from semrag.chunking.boundary.data import DEFAULT_NEGATIVE_MIX, sample_pairs, split_documents
    from semrag.chunking.boundary.models import fit_boundary_model
    from semrag.chunking.boundary.rules import BREAK_RULES
    from semrag.chunking.boundary.train import (
        TrainConfig,
        accuracy_by_kind,
        choose_threshold,
        config_record,
    )
    from semrag.embeddings import SentenceTransformerEmbedder

    config = TrainConfig(
        epochs=args.epochs,
        lr=args.lr,
        weight_decay=args.weight_decay,
        proj_dim=args.proj_dim,
        seed=args.seed,
        average=args.average,
    )
    sources = [read_source(spec) for spec in args.data]
    if args.dev:
        train_docs = [d for _, docs in sources for d in docs]
        dev_sources = [read_source(spec) for spec in args.dev]
    else:
        train_docs, dev_sources = [], []
        for name, docs in sources:
            tr, dv, _test = split_documents(docs, name, fractions=args.split)
            train_docs += tr
            dev_sources.append((name, dv))
    dev_docs = [d for _, docs in dev_sources for d in docs]
    edge_reach = max(1, max(args.window) - 1)
    args.negative_mix = dict(args.negative_mix or DEFAULT_NEGATIVE_MIX)
    args.dev_negative_mix = dict(args.dev_negative_mix or DEFAULT_NEGATIVE_MIX)
    sampling = {"negative_ratio": args.negative_ratio, "negative_mix": args.negative_mix}
    edges = {"edge_share": args.edge_share, "edge_reach": args.edge_reach or edge_reach}
    train = sample_pairs(train_docs, seed=args.seed, **sampling, **edges)
    dev = sample_pairs(
        dev_docs,
        seed=args.seed + 1,
        negative_ratio=args.negative_ratio,
        negative_mix=args.dev_negative_mix,
    )
    embedder = SentenceTransformerEmbedder(model_path=args.encoder, cache_size=0)
    model, history = fit_boundary_model(
        args.model,
        train,
        dev,
        embedder,
        config=config,
        window=args.window,
        cache_dir=args.cache,
        show_progress=True,
    )
    cache = {"cache_dir": args.cache}
    if args.threshold == "auto":
        rules = BREAK_RULES if args.rule == "auto" else (args.rule,)
        chosen = choose_threshold(model, dev_sources, embedder, rules=rules, **cache)
        model.threshold, model.rule = chosen["threshold"], chosen["rule"]
    else:
        model.threshold = float(args.threshold)
        model.rule = "threshold" if args.rule == "auto" else args.rule
        chosen = {"threshold": model.threshold, "rule": model.rule}
    out = model.save(args.out)
    best = min(history, key=lambda h: h["dev_loss"])
    record = {
        "model": args.model,
        "command": "semrag train-boundary " + " ".join(portable_argv(args)),
        "data": [name for name, _ in sources],
        "dev": [name for name, _ in dev_sources],
        "split": list(args.split) if not args.dev else None,
        "window": model.get_config_dict()["window"],
        "sampling": {**sampling, **edges},
        "dev_negative_mix": args.dev_negative_mix,
        "train_pairs": train.counts(),
        "dev_pairs": dev.counts(),
        "config": config_record(config),
        "best_epoch": best["epoch"],
        "dev_accuracy_at_threshold": accuracy_by_kind(model, dev, embedder, **cache),
        "threshold": chosen,
        "history": history,
    }
    (Path(out) / "training.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


def portable_argv(args: argparse.Namespace) -> list[str]:
    """The training command with data paths reduced to their last part (no machine paths)."""
    out = ["--model", args.model]
    for flag in ("data", "dev"):
        if getattr(args, flag):
            out += [f"--{flag}"] + [
                f"{k}:{Path(rest).name}"
                for k, _, rest in (s.partition(":") for s in args.__dict__[flag])
            ]
    out += ["--split", "/".join(f"{f:g}" for f in args.split)]
    window = ",".join(str(w) for w in args.window)
    out += ["--window", window, "--negative-ratio", f"{args.negative_ratio:g}"]
    if args.edge_share:
        out += ["--edge-share", f"{args.edge_share:g}"]
        if args.edge_reach:
            out += ["--edge-reach", str(args.edge_reach)]
    for flag in ("negative_mix", "dev_negative_mix"):
        mix = ",".join(f"{k}={v:g}" for k, v in getattr(args, flag).items())
        out += ["--" + flag.replace("_", "-"), mix]
    out += ["--threshold", str(args.threshold), "--rule", args.rule]
    out += ["--epochs", str(args.epochs), "--lr", f"{args.lr:g}"]
    out += ["--weight-decay", f"{args.weight_decay:g}", "--proj-dim", str(args.proj_dim)]
    if args.average is not None:
        out += ["--average", f"{args.average:g}"]
    out += ["--seed", str(args.seed), "--out", Path(args.out).name]
    return out


def window_sizes(value: str) -> tuple[int, ...]:
    from semrag.chunking.boundary.data import check_windows

    try:
        return check_windows([int(v) for v in value.split(",")])
    except (ValueError, SemragError) as exc:
        raise argparse.ArgumentTypeError(
            f"expected N or N,N,... (e.g. 1,3,8), got {value!r}"
        ) from exc


def split_fractions(value: str) -> tuple[float, float, float]:
    parts = [float(v) for v in value.split("/")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected TRAIN/DEV/TEST fractions, got {value!r}")
    return parts[0], parts[1], parts[2]
