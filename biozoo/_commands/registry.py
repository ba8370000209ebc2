"""`biozoo list` and `biozoo info`."""

import json
import sys


def register(subparsers):
    parser = subparsers.add_parser(
        "list",
        help="list the registry's checkpoints",
        description="List the registry's checkpoints: name, family, size, licence, HF source.",
    )
    parser.add_argument("pattern", nargs="?", help="shell-style wildcard, e.g. 'biom_*' or '*bert*'")
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


def _millions(n):
    return f"{n / 1e6:.1f}M"


def list_command(args):
    from biozoo import registry

    names = registry.list_presets(args.pattern)
    entries = [registry.get_entry(n) for n in names]
    if args.json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    if not entries:
        print(f"no registry name matches '{args.pattern}'", file=sys.stderr)
        return 1
    rows = [("NAME", "FAMILY", "PARAMS", "TOKENIZER", "LICENSE", "HF SOURCE")]
    for e in entries:
        tok = e["tokenizer"]
        casing = "uncased" if tok["lowercase"] else "cased"
        rows.append((e["name"], e["family"], _millions(e["parameters"]), f"{tok['kind']} {casing}",
                     e["license"].split(" (")[0], e["sources"]["hf"]["repo"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def info_command(args):
    from biozoo import registry

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
        f"source        hf://{hf['repo']}@{hf['revision']}"
        + ("" if hf.get("revision_pinned", True) else "  (revision not pinned)"),
    ]
    for kind in ("tf1", "gluonnlp", "megatron"):
        for archive in entry["sources"].get(kind, []):
            lines.append(f"{kind:<14}{archive['url']}" + (f"  ({archive['note']})" if archive.get("note") else ""))
    lines.append(f"licence       {entry['license']}")
    c = entry["citation"]
    lines.append(f"citation      {c['authors']}. {c['title']}. {c['venue']}, {c['year']}."
                 + (f" {c.get('url') or c.get('doi')}" if c.get("url") or c.get("doi") else ""))
    lines.append("config")
    lines += [f"  {k} = {v}" for k, v in entry["config"].items()]
    lines.append("reported results")
    if not entry["reported_results"]:
        lines.append("  (none in the source papers)")
    for r in entry["reported_results"]:
        split = f" [{r['split']}]" if r.get("split") else ""
        lines.append(f"  {r['task']:<28} {r['metric']:<14} {r['value']:>7}{split}  ({r['source']})")
    for note in entry.get("notes", []):
        lines.append(f"note: {note}")
    print("\n".join(lines))
    return 0
