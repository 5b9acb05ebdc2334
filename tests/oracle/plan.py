#!/usr/bin/env python3
"""Independent oracle for `cvo plan` (used by tests/plan.rs): a second implementation, over
PyYAML, of what an upgrade does to a cluster's resources (spec §4.2 and the CVO's apply rules).

Usage: plan.py OLD_DIR NEW_DIR CONFIG_JSON
CONFIG_JSON: {"profile", "featureSet", "known": [...], "enabled": [...], "major": int}
Prints {"implicit": [...], "create": [...], "update": [...], "delete": [...], "leftBehind": [...],
"unchanged": n} where resources are "group/kind/namespace/name".
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from included import annotations, documents, included  # noqa: E402


def load(root):
    docs = []
    for sub in ("manifests", "release-manifests"):
        d = os.path.join(root, sub)
        for name in sorted(os.listdir(d), key=lambda n: n.encode()):
            if name.endswith((".yaml", ".yml", ".json")) and not os.path.isdir(os.path.join(d, name)):
                docs.extend(documents(os.path.join(d, name)))
    return docs


def ident(doc):
    group = doc.get("apiVersion", "").rpartition("/")[0]
    meta = doc.get("metadata") or {}
    return f'{group}/{doc.get("kind", "")}/{meta.get("namespace") or ""}/{meta.get("name", "")}'


def major_ok(doc, major):
    ann = annotations(doc) or {}
    value = ann.get("release.openshift.io/major-version")
    if value is None:
        return True
    reqs = [r.strip() for r in value.split(",") if r.strip()]
    inc = {int(r) for r in reqs if not r.startswith("-")}
    exc = {int(r[1:]) for r in reqs if r.startswith("-")}
    return major in inc or (not inc and major not in exc)


def caps_of(doc):
    value = (annotations(doc) or {}).get("capability.openshift.io/name", "")
    return value.split("+") if value else []


def main():
    old_dir, new_dir, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    everything = dict(cfg, gates=[])

    # Load-time filter: every rule but capabilities (a document's own capabilities are made
    # known and enabled for the check, which turns that rule off).
    def loaded(docs):
        out = []
        for d in docs:
            probe = dict(everything, known=caps_of(d) + cfg["known"], enabled=caps_of(d) + cfg["enabled"])
            if annotations(d) is not None and included(d, probe) and major_ok(d, cfg["major"]):
                out.append(d)
        return out
    old, new = loaded(load(old_dir)), loaded(load(new_dir))
    enabled, known = set(cfg["enabled"]), set(cfg["known"])
    def applied(d, en):
        return all(c in en for c in caps_of(d))   # unknown caps tolerated (allowUnknown), then must be enabled
    implicit = set()
    by_id = {}
    for c in old:
        by_id.setdefault(ident(c), []).append(c)
    for u in new:
        if applied(u, enabled):
            continue
        for c in by_id.get(ident(u), []):
            if applied(c, enabled):
                implicit |= set(caps_of(u)) - set(caps_of(c)) - enabled
    after = enabled | implicit
    def managed(d, en):
        return all(c in known and c in en for c in caps_of(d))
    delete = lambda d: (annotations(d) or {}).get("release.openshift.io/delete") == "true"
    a = {ident(d): d for d in old if managed(d, enabled) and not delete(d)}
    b_all = {ident(d): d for d in new if managed(d, after)}
    result = {"implicit": sorted(implicit), "create": [], "update": [], "delete": [], "leftBehind": [], "unchanged": 0}
    for i, d in b_all.items():
        if delete(d):
            result["delete"].append(i)
        elif i not in a:
            result["create"].append(i)
        elif a[i] == d or str((annotations(d) or {}).get("release.openshift.io/create-only", "")).lower() == "true":
            result["unchanged"] += 1
        else:
            result["update"].append(i)
    result["leftBehind"] = sorted(i for i in a if i not in b_all)
    for k in ("create", "update", "delete"):
        result[k].sort()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
