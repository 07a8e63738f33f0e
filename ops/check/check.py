#!/usr/bin/env python3
"""Checks Aerie's monitoring files against the code and against a live Prometheus.

    check.py static                       dashboards' structure; every metric and label named in
                                          the dashboards and rules is in the CM's catalogue
                                          (cm/src/metrics/catalogue.rs); every alert has a
                                          promtool unit test that makes it fire; the README's
                                          metric table lists the catalogue
    check.py exposition URL...            each CM's /metrics: every aerie_ family is in the
                                          catalogue with its type and HELP text, with the
                                          catalogue's labels; every always-exported metric is
                                          there on every CM, the leader's on the leader
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


def static():
    cat = catalogue()
    dashes = dashboards()
    check_structure(dashes)
    exprs = [(f"{f} panel '{p.get('title')}'", t.get("expr", "")) for f, d in dashes.items()
             for p, t in panel_queries(d)]
    check_names(cat, exprs + rule_exprs())
    alerts = check_alert_tests()
    check_readme(cat)
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
    cat = catalogue()
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


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "static":
        static()
    elif cmd == "exposition":
        exposition(args)
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
