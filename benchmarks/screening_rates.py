"""Detection and false-positive rates of the injection scanner on the labelled corpus.

Reads the sets of ``tests/fixtures/screening/corpus.py`` (or the files given with ``--corpus``; one JSON
object a line: ``id``, ``text``, ``label`` benign|attack, ``category``, ``language``), screens every
text with :func:`patchbay.runtime.screening.screen` and prints:

* overall: the false-positive rate (benign texts judged untrusted / benign texts) and the
  detection rate (attack texts judged untrusted / attack texts), with counts;
* the same per category and per language;
* the ids of the misses and false positives with the rules that fired (ids only, no text);
* the overall rates of the holdout sets (``holdout_1``..``holdout_3``; see
  ``tests/fixtures/screening/corpus.py`` for how each was used: only ``holdout_3`` is still
  unseen by the rules, and the dev corpus rates are optimistic by construction);
* with ``--throughput``: MiB/s over a 1 MiB mixed text (ASCII, CJK, base64, comments).

Usage::

    .venv/bin/python benchmarks/screening_rates.py [--corpus PATH ...] [--json] [--throughput]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from patchbay.runtime.screening import screen

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "screening"
HOLDOUTS = ("holdout_1", "holdout_2", "holdout_3")


def _sets() -> Any:
    spec = importlib.util.spec_from_file_location("screening_corpus", FIXTURES / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_sets(names: list[str]) -> list[dict[str, Any]]:
    """The rows of the named sets of ``tests/fixtures/screening/corpus.py``, in order."""
    corpus = _sets()
    return [row for name in names for row in corpus.rows(name)]


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """The rows of every JSONL corpus file, in order."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def _rate(flagged: int, total: int) -> float | None:
    return round(flagged / total, 4) if total else None


def measure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Screen every row; return overall, per-category and per-language rates plus misses and FPs.

    Returns:
        ``{"overall": {...}, "by_category": {...}, "by_language": {...}, "false_positives": [...],
        "misses": [...]}``; a rate block is ``{"benign", "false_positives", "fp_rate", "attacks",
        "detected", "detection_rate"}`` (a rate is None when its denominator is 0).
    """
    groups: dict[str, dict[str, dict[str, int]]] = {"overall": {}, "by_category": {}, "by_language": {}}
    counters: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    false_positives: list[dict[str, Any]] = []
    misses: list[dict[str, Any]] = []
    for row in rows:
        result = screen(row["text"], source=f"corpus:{row['id']}")
        attack = row["label"] == "attack"
        for key in (("overall", "all"), ("by_category", row["category"]), ("by_language", row["language"])):
            counter = counters[key]
            counter["attacks" if attack else "benign"] += 1
            if result.untrusted:
                counter["detected" if attack else "false_positives"] += 1
        if attack and not result.untrusted:
            misses.append({"id": row["id"], "category": row["category"]})
        if not attack and result.untrusted:
            false_positives.append({"id": row["id"], "category": row["category"], "rules": list(result.rules)})
    for (group, name), counter in sorted(counters.items()):
        groups[group][name] = dict(counter)
    report: dict[str, Any] = {}
    for group, entries in groups.items():
        block = {}
        for name, counter in entries.items():
            benign, attacks = counter.get("benign", 0), counter.get("attacks", 0)
            fps, detected = counter.get("false_positives", 0), counter.get("detected", 0)
            block[name] = {
                "benign": benign,
                "false_positives": fps,
                "fp_rate": _rate(fps, benign),
                "attacks": attacks,
                "detected": detected,
                "detection_rate": _rate(detected, attacks),
            }
        report[group] = block["all"] if group == "overall" else block
    report["false_positives"] = false_positives
    report["misses"] = misses
    return report


def throughput() -> dict[str, float]:
    """Seconds and MiB/s to screen a 1 MiB mixed text (English, Chinese, base64, HTML comments)."""
    unit = (
        "The deployment guide explains how to rotate credentials and configure the proxy. "
        "部署指南说明了如何轮换凭据并配置代理服务器。 <!-- layout: two columns --> "
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg== "
        "Please follow the steps above before you continue.\n"
    )
    text = unit * (1024 * 1024 // len(unit.encode()))
    size = len(text.encode())
    started = time.perf_counter()
    screen(text, source="bench:mixed", max_bytes=2 * 1024 * 1024)
    elapsed = time.perf_counter() - started
    return {"bytes": size, "seconds": round(elapsed, 3), "mib_per_s": round(size / 1024 / 1024 / elapsed, 2)}


def _print_block(name: str, block: dict[str, Any]) -> None:
    fp = "-" if block["fp_rate"] is None else f"{block['fp_rate']:.3f} ({block['false_positives']}/{block['benign']})"
    det = (
        "-"
        if block["detection_rate"] is None
        else f"{block['detection_rate']:.3f} ({block['detected']}/{block['attacks']})"
    )
    print(f"  {name:<24} FP rate {fp:<18} detection {det}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", help="a JSONL corpus (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--throughput", action="store_true", help="also time a 1 MiB mixed text")
    args = parser.parse_args(argv)
    report = measure(load(args.corpus) if args.corpus else load_sets(["corpus"]))
    if not args.corpus:
        report["holdouts"] = {name: measure(load_sets([name]))["overall"] for name in HOLDOUTS}
    if args.throughput:
        report["throughput"] = throughput()
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print("overall")
    _print_block("all", report["overall"])
    print("by category")
    for name, block in report["by_category"].items():
        _print_block(name, block)
    print("by language")
    for name, block in report["by_language"].items():
        _print_block(name, block)
    print(
        "false positives:",
        ", ".join(f"{fp['id']} [{fp['category']}: {'/'.join(fp['rules'])}]" for fp in report["false_positives"])
        or "none",
    )
    print("misses:", ", ".join(f"{miss['id']} [{miss['category']}]" for miss in report["misses"]) or "none")
    if report.get("holdouts"):
        print("holdout sets (overall)")
        for name, block in report["holdouts"].items():
            _print_block(name, block)
    if "throughput" in report:
        t = report["throughput"]
        print(f"throughput: {t['bytes']} bytes in {t['seconds']} s = {t['mib_per_s']} MiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
