#!/usr/bin/env python3
"""Checks Aerie's monitoring files against the code and against a live Prometheus.

    check.py static                       dashboards' structure; every metric and label named in
                                          the dashboards and rules is in the CM's catalogue
                                          (cm/src/metrics/catalogue.rs); every alert has a
                                          promtool unit test that makes it fire; the README's
                                          metric table lists the catalogue; the Debian
                                          package's metadata is complete
    check.py exposition URL...            each CM's /metrics: every aerie_ family is in the
                                          catalogue with its type and HELP text, with the
                                          catalogue's labels; every always-exported metric is
                                          there on every CM, the leader's on the leader
    check.py node-exposition URL...       each execute node's or access point's /metrics against
                                          the metrics its code records (node/src/*/metrics.rs)
    check.py quotas TABLE BEFORE AFTER    `cmctl userprio -quotas` output against the last cycle
                                          record (`cmctl negotiator status --json` before and
                                          after it; exit 2 when a cycle came in between)
    check.py live PROMETHEUS_URL          every dashboard panel's query runs on Prometheus and
                                          returns data; every rule evaluates without error

Exits 1 naming each problem. Standard library only."""
import json
import os
import re
import sys
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOGUE_RS = os.path.join(ROOT, "cm/src/metrics/catalogue.rs")
# The execute node's and access point's metrics: each recorded by one `metrics::` macro call
# with a literal name (and literal label names) in these files.
NODE_METRICS_RS = [os.path.join(ROOT, "node/src/execute/metrics.rs"),
                   os.path.join(ROOT, "node/src/schedd/metrics.rs")]
DASHBOARDS = os.path.join(ROOT, "ops/grafana/dashboards")
PROM = os.path.join(ROOT, "ops/prometheus")
KINDS = {"C": "counter", "G": "gauge", "H": "histogram"}
# Labels Prometheus itself adds to every scraped series (the pool label comes from file_sd).
TARGET_LABELS = {"job", "instance", "pool"}
PANEL_TYPES = {"row", "timeseries", "stat", "table", "gauge", "bargauge", "text", "heatmap"}

problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def catalogue():
    """name -> (kind, labels, scope, help) parsed from the Rust catalogue."""
    text = open(CATALOGUE_RS).read()
    pat = re.compile(r'd\("(aerie_\w+)", ([CGH]), &\[([^\]]*)\], "(\w+)", "((?:[^"\\]|\\.)*)"\)')
    out = {}
    for m in pat.finditer(text):
        labels = set(re.findall(r'"(\w+)"', m.group(3)))
        out[m.group(1)] = (KINDS[m.group(2)], labels, m.group(4), m.group(5).replace('\\"', '"'))
    if len(out) < 20:
        problem(f"could parse only {len(out)} metrics out of {CATALOGUE_RS}")
    return out


def node_catalogue():
    """name -> (kind, labels, scope, help=None) from the node's metrics modules: gauges are
    set at start (scope all), counters once their event happens (scope event)."""
    out = {}
    call = re.compile(r'metrics::(counter|gauge|histogram)!\(')
    for path in NODE_METRICS_RS:
        text = open(path).read()
        found = 0
        for m in call.finditer(text):
            # The macro's arguments, up to its balanced closing parenthesis.
            depth, end = 1, m.end()
            while depth and end < len(text):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            args = text[m.end():end - 1]
            named = re.match(r'\s*"(aerie_\w+)"', args)
            if not named:
                problem(f"{path}: a metrics::{m.group(1)}! call without a literal name: {args!r}")
                continue
            kind, name = m.group(1), named.group(1)
            labels = set(re.findall(r'"(\w+)"\s*=>', args))
            if name in out and out[name][:2] != (kind, labels):
                problem(f"{path}: {name} recorded as {kind} {sorted(labels)} and as {out[name][0]} {sorted(out[name][1])}")
            out[name] = (kind, labels, "all" if kind == "gauge" else "event", None)
            found += 1
        # A name recorded through a variable would escape the checks.
        for name in set(re.findall(r'"(aerie_\w+)"', text)) - set(out):
            problem(f"{path}: {name} is not recorded by a metrics:: macro with a literal name")
        if found == 0:
            problem(f"{path}: no metrics found")
    return out


def base_name(name, cat):
    """The catalogue name behind a series name (histogram suffixes stripped)."""
    if name in cat:
        return name
    for suf in ("_bucket", "_count", "_sum"):
        if name.endswith(suf) and cat.get(name[: -len(suf)], ("",))[0] == "histogram":
            return name[: -len(suf)]
    return None


def dashboards():
    out = {}
    for f in sorted(os.listdir(DASHBOARDS)):
        if f.endswith(".json"):
            with open(os.path.join(DASHBOARDS, f)) as fh:
                out[f] = json.load(fh)
    if not out:
        problem(f"no dashboards in {DASHBOARDS}")
    return out


def panel_queries(dash):
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            yield p, t


def check_structure(dashes):
    uids = set()
    for f, d in dashes.items():
        where = f"dashboard {f}"
        for key, typ in [("uid", str), ("title", str), ("schemaVersion", int), ("panels", list),
                         ("templating", dict), ("time", dict), ("tags", list)]:
            if not isinstance(d.get(key), typ):
                problem(f"{where}: '{key}' missing or not a {typ.__name__}")
        if d.get("uid") in uids:
            problem(f"{where}: uid {d.get('uid')} used twice")
        uids.add(d.get("uid"))
        variables = {v.get("name") for v in d.get("templating", {}).get("list", [])}
        ids, cells = set(), {}
        for p in d.get("panels", []):
            pw = f"{where} panel {p.get('id')} '{p.get('title')}'"
            if p.get("type") not in PANEL_TYPES:
                problem(f"{pw}: unknown type {p.get('type')}")
            if not isinstance(p.get("id"), int) or p["id"] in ids:
                problem(f"{pw}: id missing or repeated")
            ids.add(p.get("id"))
            g = p.get("gridPos", {})
            if not all(isinstance(g.get(k), int) for k in "xywh") or g["x"] + g["w"] > 24 or g["w"] < 1:
                problem(f"{pw}: bad gridPos {g}")
                continue
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in cells:
                        problem(f"{pw}: overlaps panel {cells[(x, y)]}")
                        break
                    cells[(x, y)] = p.get("id")
            if p.get("type") == "row":
                continue
            if not p.get("title"):
                problem(f"{pw}: no title")
            targets = p.get("targets") or []
            if not targets:
                problem(f"{pw}: no queries")
            refs = [t.get("refId") for t in targets]
            if len(set(refs)) != len(refs) or not all(refs):
                problem(f"{pw}: refIds missing or repeated: {refs}")
            for t in targets:
                if not t.get("expr"):
                    problem(f"{pw}: empty query")
                for var in re.findall(r"\$\{?(\w+)", t.get("expr", "") + json.dumps(t.get("datasource"))):
                    if var not in variables and not var.startswith("__"):
                        problem(f"{pw}: variable ${var} is not defined")


SELECTOR = re.compile(r"\b(aerie_\w+|up)\s*(\{([^}]*)\})?")


def names_and_labels(expr):
    """(metric, {label names in its selector}) for each metric an expression names."""
    for m in SELECTOR.finditer(expr):
        labels = set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", m.group(3) or ""))
        yield m.group(1), labels


def check_names(cat, exprs):
    """exprs: (where, expr) pairs; every aerie_ metric must be in the catalogue, every
    selector label one the metric has."""
    for where, expr in exprs:
        for name, labels in names_and_labels(expr):
            if name == "up":
                continue
            b = base_name(name, cat)
            if b is None:
                problem(f"{where}: {name} is not a metric of the catalogue (misspelt?)")
                continue
            allowed = cat[b][1] | TARGET_LABELS | ({"le"} if name.endswith("_bucket") else set())
            for l in labels - allowed:
                problem(f"{where}: {name} has no label '{l}' (it has {sorted(cat[b][1])})")


def rule_exprs():
    """(where, expr) of every rule, from the YAML files (exprs on one line or a `|` block)."""
    out = []
    for f in ("recording.yml", "alerts.yml"):
        lines = open(os.path.join(PROM, f)).read().splitlines()
        name = None
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r"\s*- (?:alert|record): (\S+)", line)
            if m:
                name = m.group(1)
            m = re.match(r"(\s*)expr: (.*)", line)
            if m:
                if m.group(2).strip() == "|":
                    indent = len(m.group(1))
                    block = []
                    i += 1
                    while i < len(lines) and (len(lines[i]) - len(lines[i].lstrip()) > indent):
                        block.append(lines[i].strip())
                        i += 1
                    out.append((f"{f} rule {name}", " ".join(block)))
                    continue
                out.append((f"{f} rule {name}", m.group(2)))
            i += 1
    return out


def check_alert_tests():
    alerts = re.findall(r"- alert: (\w+)", open(os.path.join(PROM, "alerts.yml")).read())
    tests_dir = os.path.join(PROM, "tests")
    text = "".join(open(os.path.join(tests_dir, f)).read() for f in sorted(os.listdir(tests_dir)))
    # An alert is tested when some alert_rule_test names it and expects it with labels.
    for a in alerts:
        block = re.search(rf"alertname: {a}\n\s*exp_alerts:\n\s*- exp_labels", text)
        if not block:
            problem(f"alerts.yml: {a} has no promtool test in which it fires")
    return alerts


def check_readme(cat):
    readme = open(os.path.join(ROOT, "ops/README.md")).read()
    for name in cat:
        if f"`{name}`" not in readme:
            problem(f"ops/README.md: metric {name} is not in the metrics table")
    for a in re.findall(r"- alert: (\w+)", open(os.path.join(PROM, "alerts.yml")).read()):
        if not re.search(rf"^### {a}$", readme, re.M):
            problem(f"ops/README.md: alert {a} has no runbook section '### {a}'")


def check_deb():
    """The Debian package's metadata (cargo-deb, `[package.metadata.deb]` of cm/Cargo.toml) is
    complete: every asset's source exists (the binaries are ones the workspace builds), every
    systemd file of ops/systemd is packaged, the example configuration is a conffile, the
    maintainer scripts exist and run, and ops/README.md says how to build it."""
    import glob
    import tomllib
    cargo = os.path.join(ROOT, "cm/Cargo.toml")
    with open(cargo, "rb") as f:
        deb = tomllib.load(f).get("package", {}).get("metadata", {}).get("deb")
    if not deb:
        problem(f"{cargo}: no [package.metadata.deb]")
        return
    for key in ("name", "maintainer", "copyright", "extended-description", "depends", "assets"):
        if not deb.get(key):
            problem(f"{cargo}: [package.metadata.deb] has no {key}")
    bins = set()
    for crate in ("cm", "node", "cli"):
        with open(os.path.join(ROOT, crate, "Cargo.toml"), "rb") as f:
            bins |= {b["name"] for b in tomllib.load(f).get("bin", [])}
    packaged = set()
    for src, dest, mode in deb.get("assets", []):
        if src.startswith("target/release/"):
            if src[len("target/release/"):] not in bins:
                problem(f"{cargo}: asset {src} is not a binary of aerie-cm, aerie-node or cmctl")
            continue
        found = glob.glob(os.path.join(ROOT, "cm", src))
        if not found:
            problem(f"{cargo}: asset {src} does not exist")
        packaged |= {os.path.normpath(p) for p in found}
        if not re.fullmatch(r"[0-7]{3,4}", mode):
            problem(f"{cargo}: asset {src} has mode {mode!r}")
    for want in ("aerie-cm", "aerie-node", "cmctl"):
        if f"target/release/{want}" not in [a[0] for a in deb.get("assets", [])]:
            problem(f"{cargo}: the Debian package lacks the {want} binary")
    for f in sorted(os.listdir(os.path.join(ROOT, "ops/systemd"))):
        if os.path.normpath(os.path.join(ROOT, "ops/systemd", f)) not in packaged:
            problem(f"{cargo}: ops/systemd/{f} is not packaged")
    if "/etc/aerie/aerie.conf" not in deb.get("conf-files", []):
        problem(f"{cargo}: /etc/aerie/aerie.conf is not a conffile (an upgrade would overwrite it)")
    scripts = os.path.join(ROOT, "cm", deb.get("maintainer-scripts", "-"))
    for s in ("postinst", "postrm"):
        path = os.path.join(scripts, s)
        if not os.access(path, os.X_OK):
            problem(f"{cargo}: maintainer script {path} missing or not executable")
    readme = open(os.path.join(ROOT, "ops/README.md")).read()
    if "cargo deb -p aerie-cm" not in readme:
        problem("ops/README.md: does not say how to build the Debian package (cargo deb -p aerie-cm)")


def static():
    cat = {**catalogue(), **node_catalogue()}
    dashes = dashboards()
    check_structure(dashes)
    exprs = [(f"{f} panel '{p.get('title')}'", t.get("expr", "")) for f, d in dashes.items()
             for p, t in panel_queries(d)]
    check_names(cat, exprs + rule_exprs())
    alerts = check_alert_tests()
    check_readme(cat)
    check_deb()
    print(f"static: {len(dashes)} dashboards, {len(exprs)} panel queries, {len(alerts)} alerts, "
          f"{len(cat)} metrics checked")


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def parse_exposition(text):
    """family -> {"help", "type", "labels": set of label names seen}."""
    fam = {}
    for line in text.splitlines():
        m = re.match(r"# (HELP|TYPE) (\w+) (.*)", line)
        if m:
            fam.setdefault(m.group(2), {"labels": set()})[m.group(1).lower()] = m.group(3)
            continue
        m = re.match(r"(\w+)(\{(.*)\})? ", line)
        if m and not line.startswith("#"):
            name = m.group(1)
            for suf in ("_bucket", "_count", "_sum"):
                if name.endswith(suf) and name[: -len(suf)] in fam:
                    name = name[: -len(suf)]
            labels = set(re.findall(r'(\w+)="', m.group(3) or "")) - {"le"}
            fam.setdefault(name, {"labels": set()})["labels"] |= labels
    return fam


def node_exposition(urls):
    """Each execute node's or access point's /metrics: every aerie_ family is one the node's
    code records, with its type and labels; every gauge of that role is there."""
    cat = node_catalogue()
    for url in urls:
        fam = parse_exposition(fetch(url))
        ours = {n for n in fam if n.startswith("aerie_")}
        prefix = "aerie_node_" if any(n.startswith("aerie_node_") for n in ours) else "aerie_ap_"
        for name in sorted(ours):
            if name not in cat:
                problem(f"{url}: {name} is exported but not recorded in {', '.join(NODE_METRICS_RS)}")
                continue
            kind, labels, _, _ = cat[name]
            if fam[name].get("type") != kind:
                problem(f"{url}: {name} has TYPE {fam[name].get('type')}, the code records a {kind}")
            if fam[name]["labels"] != labels:
                problem(f"{url}: {name} has labels {sorted(fam[name]['labels'])}, the code records {sorted(labels)}")
        for name, (kind, _, scope, _) in cat.items():
            if name.startswith(prefix) and scope == "all" and name not in fam:
                problem(f"{url}: {name} ({kind}, set at start) is missing")
        print(f"exposition: {url}: {len(ours)} {prefix}* families")


def exposition(urls):
    cat = catalogue()
    leaders = 0
    for url in urls:
        text = fetch(url)
        fam = parse_exposition(text)
        leader = re.search(r"^aerie_raft_is_leader 1$", text, re.M) is not None
        leaders += leader
        for name, f in fam.items():
            if not name.startswith("aerie_"):
                continue
            if name not in cat:
                problem(f"{url}: {name} is exported but not in the catalogue")
                continue
            kind, labels, _, help_ = cat[name]
            if f.get("type") != kind:
                problem(f"{url}: {name} has TYPE {f.get('type')}, the catalogue says {kind}")
            if f.get("help") != help_:
                problem(f"{url}: {name} has HELP {f.get('help')!r}, the catalogue says {help_!r}")
            if f["labels"] != labels:
                problem(f"{url}: {name} has labels {sorted(f['labels'])}, the catalogue says {sorted(labels)}")
        for name, (kind, _, scope, _) in cat.items():
            if (scope == "all" or (scope == "leader" and leader)) and name not in fam:
                problem(f"{url}: {name} ({scope}) is missing")
        print(f"exposition: {url}: {sum(1 for n in fam if n.startswith('aerie_'))} aerie families"
              + (" (leader)" if leader else ""))
    if leaders != 1:
        problem(f"exposition: {leaders} leaders among {len(urls)} CMs, expected 1")


def query(prom, expr):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        body = json.loads(fetch(url))
    except urllib.error.HTTPError as e:
        body = json.loads(e.read().decode())
    return body


def substitute(expr):
    """Grafana's variables as a dashboard with pool=All and a short range would set them."""
    return (expr.replace("$__rate_interval", "30s").replace("$__interval", "5s")
            .replace("$__range", "5m").replace("$pool", ".*"))


def live(prom):
    cat = {**catalogue(), **node_catalogue()}
    dashes = dashboards()
    n = empty_events = 0
    for f, d in dashes.items():
        for p, t in panel_queries(d):
            n += 1
            where = f"{f} panel '{p.get('title')}' query {t.get('refId')}"
            body = query(prom, substitute(t["expr"]))
            if body.get("status") != "success":
                problem(f"{where}: {body.get('error')} in {t['expr']}")
                continue
            if body["data"]["result"]:
                continue
            # Metrics that count events which a healthy test pool may never see (relay
            # errors...) may be empty; say so, never pass them over silently.
            names = {base_name(x, cat) for x, _ in names_and_labels(t["expr"]) if x != "up"}
            if names and all(x and cat[x][2] == "event" for x in names):
                empty_events += 1
                print(f"EMPTY (event metrics not seen yet: {sorted(names)}): {where}")
            else:
                problem(f"{where}: no data for {t['expr']}")
    rules = json.loads(fetch(f"{prom}/api/v1/rules"))["data"]["groups"]
    nrules = 0
    for g in rules:
        for r in g["rules"]:
            nrules += 1
            if r.get("health") != "ok":
                problem(f"rule {r.get('name')}: health {r.get('health')}: {r.get('lastError')}")
    if nrules == 0:
        problem("Prometheus loaded no rules")
    print(f"live: {n} panel queries ran, {n - empty_events} returned data, {empty_events} empty "
          f"event-only; {nrules} rules evaluated")


def quotas(table_path, before_path, after_path):
    """`cmctl userprio -quotas` against the last cycle record (`cmctl negotiator status
    --json` before and after it ran): each group of the record has its line with the record's
    effective, configured and subtree quotas, surplus policy and requested resources. Exits 2
    (try again) when a cycle was committed in between."""
    before, after = (json.load(open(p))["cycles"] for p in (before_path, after_path))
    if not after or not before or before[-1] != after[-1]:
        print("quotas: a cycle was committed meanwhile; again")
        return 2
    record = after[-1]
    groups = [g for g in record.get("groups", []) if g["name"] != "<none>"]
    if not groups:
        problem(f"quotas: the last cycle record (term {record['term']}, cycle {record['cycle']}) "
                "has no group quotas")
    table = open(table_path).read()
    for g in groups:
        line = next((l for l in table.splitlines() if l.startswith(g["name"] + " ")), None)
        if line is None:
            problem(f"quotas: no line for {g['name']} in cmctl userprio -quotas:\n{table}")
            continue
        want = [g["name"], f"{g['effective_quota']:.2f}", f"{g['config_quota']:.2f}",
                "ByQuota" if g["accept_surplus"] else "no", f"{g['subtree_quota']:.2f}",
                f"{g['requested']:.0f}"]
        if line.split()[:6] != want:
            problem(f"quotas: {g['name']}: cmctl shows {line.split()[:6]}, the cycle record says {want}")
    if not problems:
        print(f"quotas: cmctl userprio -quotas shows the last cycle's quotas of {len(groups)} groups")
    return 0


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "static":
        static()
    elif cmd == "exposition":
        exposition(args)
    elif cmd == "node-exposition":
        node_exposition(args)
    elif cmd == "quotas":
        if quotas(*args) == 2:
            return 2
    elif cmd == "live":
        live(args[0].rstrip("/"))
    else:
        print(__doc__)
        return 2
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
