"""`biozoo list` and `biozoo info`."""

import json
import sys

from biozoo import registry
from biozoo.task_kinds import TASK_KINDS


def register(subparsers):
    parser = subparsers.add_parser(
        "list",
        help="list the registry's checkpoints",
        description="List the registry's checkpoints: name, family, size, licence, HF source. "
        "With --kind task (or a task kind: ner, re (alias classification), qa, aioner...) only task checkpoints "
        "(published fine-tunes) are "
        "listed, with their task kind, label count and base checkpoint.",
    )
    parser.add_argument("pattern", nargs="?", help="shell-style wildcard, e.g. 'biom_*' or '*bert*'")
    parser.add_argument(
        "--kind",
        choices=registry.ROLES + tuple(name for kind in TASK_KINDS.values() for name in (kind.name, *kind.aliases)),
        help="only backbones, only task checkpoints, or only task checkpoints of one task kind",
    )
    parser.add_argument("--json", action="store_true", help="print the entries as JSON")
    parser.set_defaults(func=list_command)

    parser = subparsers.add_parser(
        "info",
        help="show one checkpoint: config, sources, licence, reported results",
        description="Show a registry entry: architecture config, tokenizer, sources and revision, "
        "parameter count, licence, citation and the results its paper reports.",
    )
    parser.add_argument("name", help="registry name (see `biozoo list`)")
    parser.add_argument("--json", action="store_true", help="print the entry as JSON")
    parser.set_defaults(func=info_command)

    parser = subparsers.add_parser(
        "check-cache", aliases=["verify-cache"],
        help="re-check the cached presets' files against the digests recorded when they were written",
        description="Recompute the sha256 of every file of every preset (and tokenizer-only preset) in biozoo's "
        "cache ($BIOZOO_CACHE) and compare it with the digests recorded in its biozoo.json when it was written. "
        "Prints one line per entry, prefixed with its section (presets/, tokenizers/): ok, changed, missing, "
        "unrecorded (an unreadable biozoo.json is changed); exits 1 when an entry's files changed or are missing.",
    )
    parser.add_argument("--remove", action="store_true", help="delete entries whose files changed or are missing, "
                        "each checked again under its lock (one another process rebuilt meanwhile is kept: "
                        "'repaired meanwhile'); the next load converts them again")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=check_cache_command)


def _millions(n):
    return f"{n / 1e6:.1f}M"


def _licence(entry):
    licence = entry["license"]
    spdx = licence["spdx"] or "unspecified"
    return spdx + ("*" if licence["from"] == "code_repository" else "")


def _labels_count(task):
    return str(len(task["label_names"])) if task.get("label_names") else "-"


def list_command(args):
    kind = getattr(args, "kind", None)
    names = registry.list_presets(args.pattern, kind=kind)
    entries = [registry.get_entry(n) for n in names]
    if args.json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    if not entries:
        what = f"'{args.pattern}'" if args.pattern else "any name"
        print(f"no registry name matches {what}" + (f" with --kind {kind}" if kind else ""), file=sys.stderr)
        return 1
    if kind is not None and kind != "backbone":
        rows = [("NAME", "TASK", "LABELS", "FAMILY", "PARAMS", "BASE", "LICENSE", "HF SOURCE")]
        for e in entries:
            task = e["task"]
            rows.append((e["name"], task["kind"], _labels_count(task), e["family"], _millions(e["parameters"]),
                         task["base"], _licence(e), e["sources"]["hf"]["repo"]))
    else:
        rows = [("NAME", "FAMILY", "PARAMS", "TOKENIZER", "LICENSE", "HF SOURCE")]
        for e in entries:
            tok = e["tokenizer"]
            casing = "uncased" if tok["lowercase"] else "cased"
            rows.append((e["name"], e["family"], _millions(e["parameters"]), f"{tok['kind']} {casing}",
                         _licence(e), e["sources"]["hf"]["repo"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if any(e["license"]["from"] == "code_repository" for e in entries):
        print("* the HF repo has no licence tag: the licence of the authors' code repository (biozoo info NAME)",
              file=sys.stderr)
    return 0


def _result_lines(title, results, empty, row):
    return [title] + ([f"  ({empty})"] if not results else [f"  {row(r)}" for r in results])


def _task_lines(task):
    made = task.get("hf_class") or ", ".join(f"{k} {v}" for k, v in task.get(task["kind"], {}).items()
                                            if k in ("model_file", "decoder"))
    lines = [f"task          {task['kind']}" + (f" ({made})" if made else "") + f", fine-tuned from {task['base']}"]
    if task.get("label_names"):
        lines.append(f"labels        {len(task['label_names'])}: {', '.join(task['label_names'])}")
    if task.get("problem_type"):
        lines.append(f"problem type  {task['problem_type']}")
    for i, data in enumerate(task["data"]):
        extra = [x for x in (data.get("hf_dataset") and f"hf dataset {data['hf_dataset']}", data.get("url"),
                             data.get("note")) if x]
        lines.append(f"{'data' if i == 0 else '':<14}{data['name']}" + (f"  ({'; '.join(extra)})" if extra else ""))
    lines += _result_lines(
        "task results", task["reported"], "none published for this checkpoint",
        lambda r: f"{r['dataset']:<28} {r['metric']:<16} {r['value']:>7} [{r['split']}]  ({r['source']})"
                  + (f"  [inferred: {', '.join(r['inferred'])}]" if r.get("inferred") else ""))
    lines.append(f"inferred      {', '.join(task['inferred']) or 'nothing (every field read in a source)'}")
    return lines


def info_command(args):
    entry = registry.get_entry(args.name)
    if args.json:
        print(json.dumps(entry, indent=2, ensure_ascii=False))
        return 0
    hf = entry["sources"]["hf"]
    tok = entry["tokenizer"]
    lines = [
        f"{entry['name']}: {entry['title']}",
        f"  {entry['description']}",
        f"family        {entry['family']} ({_millions(entry['parameters'])} parameters, "
        f"{'with' if entry['pooler'] else 'no'} pooler)",
        f"tokenizer     {tok['kind']}, {'lower-cased' if tok['lowercase'] else 'cased'}, "
        f"{tok['vocab_size']} entries",
        f"heads         {', '.join(entry['heads']) or 'none'}",
        "integrity     " + (", ".join(f"{name} sha256 {record['sha256'][:12]}..."
                                       for name, record in hf.get("integrity", {}).items())
                             or "no sha256 recorded: the weights are checked against the hub's Git LFS pointer "
                                "when downloaded online (offline they are converted unverified, with a warning)"),
        f"source        hf://{hf['repo']}@{hf['revision']}"
        + ("" if hf.get("revision_pinned", True) else
           f"  (revision not pinned: {hf.get('revision_unpinned_reason', 'unknown').replace('_', ' ')}"
           + (f"; seen {', '.join(hf['revision_seen'])}" if hf.get("revision_seen") else "") + ")"),
    ]
    if entry.get("task"):
        lines += _task_lines(entry["task"])
    for kind in ("tf1", "gluonnlp", "megatron"):
        for archive in entry["sources"].get(kind, []):
            lines.append(f"{kind:<14}{archive['url']}" + (f"  ({archive['note']})" if archive.get("note") else ""))
    licence = entry["license"]
    lines.append(f"licence       {_licence(entry)} ({licence['url']}; {licence['note']})")
    if entry.get("inferred"):
        lines.append(f"inferred      {', '.join(entry['inferred'])} (not read in a source; see the notes)")
    c = entry["citation"]
    lines.append(f"citation      {c['authors']}. {c['title']}. {c['venue']}, {c['year']}."
                 + (f" {c.get('url') or c.get('doi')}" if c.get("url") or c.get("doi") else ""))
    lines.append("config")
    lines += [f"  {k} = {v}" for k, v in entry["config"].items()]
    lines += _result_lines(
        "reported results", entry["reported_results"], "none in the source papers",
        lambda r: f"{r['task']:<28} {r['metric']:<14} {r['value']:>7}"
                  + (f" [{r['split']}]" if r.get("split") else "") + f"  ({r['source']})"
                  + (f"  [applies to {r['other_checkpoint']}]" if r["applies_to"] != "this_checkpoint" else ""))
    for note in entry.get("notes", []):
        lines.append(f"note: {note}")
    lines.append(_certificate_line(entry["name"]))
    print("\n".join(lines))
    return 0


def _certificate_line(name):
    from biozoo.preset_files import read_certificate
    from biozoo.presets import cached_registry_preset

    preset = cached_registry_preset(name)
    certificate = read_certificate(preset) if preset else None
    if certificate is None:
        return "certificate   none (`biozoo verify " + name + "` compares it with transformers)"
    diffs = ", ".join(f"{k} {v:.1e}" for k, v in certificate["max_abs_diff"].items())
    tokens = certificate["tokenizer"]
    skipped = certificate.get("heads_not_compared") or {}
    skipped = "; not compared: " + ", ".join(f"{k} ({why})" for k, why in skipped.items()) if skipped else ""
    return (f"certificate   {'passed' if certificate['passed'] else 'FAILED'} {certificate['date']}: max |diff| {diffs}; "
            f"tokenizer ids identical on {tokens['identical']}/{tokens['sentences']} sentences "
            f"(transformers {certificate['versions']['transformers']}){skipped}")


def check_cache_command(args):
    from biozoo.presets.cache import cache_root, check_cache, remove_if_damaged

    results = check_cache()
    bad = [r for r in results if r["status"] in ("changed", "missing")]
    if args.remove:
        for result in bad:
            if remove_if_damaged(result["path"]):
                result["removed"] = True
            else:
                result["repaired_meanwhile"] = True  # rebuilt (or removed) by another process since the scan
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        if not results:
            print(f"nothing cached under {cache_root()}")
        for r in results:
            detail = f": {', '.join(r['files'])}" if r["files"] else ""
            after = ("  (removed)" if r.get("removed") else
                     "  (repaired meanwhile)" if r.get("repaired_meanwhile") else "")
            print(f"{r['status']:<10} {r['section']}/{r['preset']}{detail}{after}")
    return 1 if bad and not args.remove else 0
