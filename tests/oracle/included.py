#!/usr/bin/env python3
"""Independent oracle for cvo's inclusion results, used by tests/corpus.rs.

A second implementation of the upstream CVO inclusion rules (library-go manifest.Include), in a
different language and over a different YAML parser (PyYAML, YAML 1.1 like go-yaml v2), so the
Rust code's pinned counts are checked by a method that shares no code with it.

Usage: included.py PAYLOAD_DIR CONFIGS_JSON
CONFIGS_JSON: a list of {"profile": str, "featureSet": str, "gates": [str], "known": [str], "enabled": [str]}
Prints, for each config, a JSON list of "dir/file#index" for every included document.
"""
import json
import os
import re
import sys

import yaml

KNOWN_FEATURE_SETS = {"CustomNoUpgrade", "Default", "DevPreviewNoUpgrade", "OKD", "TechPreviewNoUpgrade"}


class Loader(yaml.SafeLoader):
    pass


# PyYAML rejects a bare `=` (the YAML 1.1 value tag); go-yaml reads it as the string "=".
Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def documents(path):
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    # The CVO renders manifests/ as Go templates before parsing; these are the fields it uses.
    text = re.sub(r"\{\{\s*\.ReleaseImage\s*\}\}", "quay.io/release:test", text)
    text = re.sub(r"\{\{\s*\.ClusterProfile\s*\}\}", "self-managed-high-availability", text)
    if text.lstrip().startswith("{"):
        decoder = json.JSONDecoder()
        i, out = 0, []
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                return out
            obj, i = decoder.raw_decode(text, i)
            out.append(obj)
    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


def annotations(doc):
    value = (doc.get("metadata") or {}).get("annotations")
    if not isinstance(value, dict):
        return None
    out = {}
    for k, v in value.items():
        if v is None:
            v = ""
        if not isinstance(v, str):
            return None
        out[str(k)] = v
    return out


def included(doc, cfg):
    ann = annotations(doc)
    if ann is None:
        return False
    if "release.openshift.io/feature-set" in ann and "release.openshift.io/feature-gate" in ann:
        return False
    if "release.openshift.io/feature-set" in ann:
        listed = ann["release.openshift.io/feature-set"].split(",")
        if any(x not in KNOWN_FEATURE_SETS for x in listed):
            return False
        if (cfg["featureSet"] or "Default") not in listed:
            return False
    for req in ann.get("release.openshift.io/feature-gate", "").split(","):
        req = req.strip()
        if not req:
            continue
        if req.startswith("-"):
            if req[1:] in cfg["gates"]:
                return False
        elif req not in cfg["gates"]:
            return False
    if ann.get("include.release.openshift.io/" + cfg["profile"]) != "true":
        return False
    caps = ann.get("capability.openshift.io/name", "")
    for cap in caps.split("+") if caps else []:
        if cap not in cfg["known"] or cap not in cfg["enabled"]:
            return False
    return True


def main():
    root, configs = sys.argv[1], json.loads(sys.argv[2])
    docs = []
    for sub in ("manifests", "release-manifests"):
        d = os.path.join(root, sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d), key=lambda n: n.encode()):
            if not name.endswith((".yaml", ".yml", ".json")) or os.path.isdir(os.path.join(d, name)):
                continue
            for index, doc in enumerate(documents(os.path.join(d, name))):
                docs.append((f"{sub}/{name}#{index}", doc))
    json.dump([[key for key, doc in docs if included(doc, cfg)] for cfg in configs], sys.stdout)


if __name__ == "__main__":
    main()
