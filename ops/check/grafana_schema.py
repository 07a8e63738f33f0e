#!/usr/bin/env python3
"""Validates Aerie's dashboards against Grafana's own dashboard schema.

Grafana defines the dashboard JSON model in CUE (kinds/dashboard/dashboard_kind.cue in the
grafana repository) and publishes it as TypeScript types in the npm package `@grafana/schema`
(`Dashboard`, `Panel`, `RowPanel`, `VariableModel`...). No Grafana server is needed: each
dashboard is written out as a TypeScript object literal typed `Dashboard`, and the TypeScript
compiler checks it, with the excess-property checks object literals get, so a misspelt or
unknown field fails as surely as a missing required one or a wrong type.

    grafana_schema.py            check ops/grafana/dashboards/*.json
    grafana_schema.py FILE...    check these dashboards

The packages are pinned in ops/check/grafana-schema/package.json (and package-lock.json);
`scripts/deps.sh` installs them (`npm ci --prefix ops/check/grafana-schema`). Missing, the
check fails and says so: it never passes without the schema. Before the real dashboards it
checks broken copies (one fault each) and expects the compiler to reject every one, so a compiler that accepts
anything cannot make it pass either."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PKG = os.path.join(HERE, "grafana-schema")
TSC = os.path.join(PKG, "node_modules", "typescript", "bin", "tsc")
SCHEMA = os.path.join(PKG, "node_modules", "@grafana", "schema", "package.json")
DASHBOARDS = os.path.join(ROOT, "ops", "grafana", "dashboards")


def require_schema():
    missing = [p for p in (TSC, SCHEMA) if not os.path.exists(p)]
    if missing or shutil.which("node") is None:
        print("FAIL: Grafana's dashboard schema is not installed ("
              + (", ".join(missing) if missing else "node not found") + "): run "
              "scripts/deps.sh, or npm ci --prefix ops/check/grafana-schema", file=sys.stderr)
        sys.exit(1)
    with open(SCHEMA) as f:
        return json.load(f)["version"]


def typescript_of(dash):
    return ("import type { Dashboard } from '@grafana/schema';\n"
            "export const dashboard: Dashboard = " + json.dumps(dash, indent=2, sort_keys=True)
            + ";\n")


def compile_all(named):
    """named: {label: dashboard}; returns {label: [errors]} from one tsc run."""
    work = tempfile.mkdtemp(prefix=".check-", dir=PKG)
    try:
        files = {}
        for i, (label, dash) in enumerate(named.items()):
            path = os.path.join(work, f"d{i}.ts")
            with open(path, "w") as f:
                f.write(typescript_of(dash))
            files[path] = label
        with open(os.path.join(work, "tsconfig.json"), "w") as f:
            json.dump({"compilerOptions": {
                "strict": True, "noEmit": True, "target": "es2022", "module": "esnext",
                "moduleResolution": "bundler", "skipLibCheck": True, "types": []},
                "files": sorted(os.path.basename(p) for p in files)}, f)
        out = subprocess.run(["node", TSC, "-p", work, "--pretty", "false"],
                             capture_output=True, text=True)
        errors = {label: [] for label in named}
        for line in (out.stdout + out.stderr).splitlines():
            for path, label in files.items():
                if line.startswith(path + "(") or f"{os.sep}{os.path.basename(path)}(" in line \
                        or line.startswith(os.path.basename(path) + "("):
                    # "dN.ts(L,C): error ...": line L of the TypeScript is line L-1 of the
                    # JSON file (written the same way, after one import line).
                    at = line[line.index("(", line.index(os.path.basename(path))) + 1:]
                    pos, _, msg = at.partition("):")
                    row = pos.split(",")[0]
                    where = f"line {int(row) - 1}" if row.isdigit() else pos
                    errors[label].append(f"{where}: {msg.strip()}")
                    break
            else:
                if line.strip() and not line.startswith(" "):
                    # An error not in one of the files (configuration, the schema itself).
                    errors.setdefault("(tsc)", []).append(line)
        if out.returncode != 0 and not any(errors.values()):
            errors["(tsc)"] = [f"tsc exited {out.returncode}: {out.stdout}{out.stderr}"]
        return errors
    finally:
        shutil.rmtree(work, ignore_errors=True)


def broken(dash):
    """Copies of `dash`, each with one fault Grafana's schema forbids: each must be rejected."""
    def mutated(fault):
        bad = json.loads(json.dumps(dash))
        fault(bad)
        return bad

    def panel_width_as_text(d):
        next(p for p in d["panels"] if p.get("type") != "row")["gridPos"]["w"] = "12"

    return {
        "(self-test: schemaVersion as text)": mutated(lambda d: d.update(schemaVersion="39")),
        "(self-test: a field Grafana does not know)": mutated(lambda d: d.update(refreshEvery="30s")),
        "(self-test: a panel's width as text)": mutated(panel_width_as_text),
        "(self-test: a time range without its end)": mutated(lambda d: d["time"].pop("to")),
    }


def main(argv):
    version = require_schema()
    paths = argv or sorted(os.path.join(DASHBOARDS, f) for f in os.listdir(DASHBOARDS)
                           if f.endswith(".json"))
    if not paths:
        print(f"FAIL: no dashboards in {DASHBOARDS}")
        return 1
    named = {}
    for p in paths:
        with open(p) as f:
            named[os.path.relpath(p, ROOT)] = json.load(f)
    first = next(iter(named.values()))
    faults = broken(first)
    named.update(faults)
    errors = compile_all(named)
    failed = 0
    for label in faults:
        if not errors.pop(label):
            print(f"FAIL: the schema check accepted a broken dashboard {label}: it cannot be trusted")
            failed += 1
    for label, errs in errors.items():
        for e in errs:
            print(f"FAIL: {label}: {e}")
        failed += bool(errs)
    if failed:
        return 1
    print(f"grafana schema: {len(named) - len(faults)} dashboards valid against @grafana/schema "
          f"{version}; {len(faults)} broken ones rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
