#!/usr/bin/env python3
"""Checks configs/grafana/uringfeed-dashboard.json (CTest ops_grafana_dashboard).

1. Every panel query is valid PromQL: with Grafana's variables replaced by values, the
   queries become recording rules that `promtool check rules` must accept.
2. Every uringfeed_* / process_* metric the dashboard and the alert rules use is listed in
   docs/operations.md's metric table, so the documented list is the one the monitoring reads.
   (test_daemon_metrics_names checks the same names against a live daemon's /metrics.)
usage: check_dashboard.py SOURCE_DIR PROMTOOL
"""
import json
import re
import subprocess
import sys
import tempfile

src, promtool = sys.argv[1], sys.argv[2]
dash = json.load(open(f"{src}/configs/grafana/uringfeed-dashboard.json"))
fail = 0

exprs = []
for p in dash["panels"]:
    for t in p.get("targets", []):
        exprs.append((p["title"], t["expr"]))
if not exprs:
    print("FAIL: dashboard has no queries")
    sys.exit(1)

subst = {"$__rate_interval": "1m", "$job": "uringfeed", "$instance": ".*", "$feed": ".*"}
rules = []
for i, (title, e) in enumerate(exprs):
    for k, v in subst.items():
        e = e.replace(k, v)
    if "$" in e:
        print(f"FAIL: panel '{title}': unknown variable in {e}")
        fail = 1
    rules.append({"record": f"dashboard:query:{i}", "expr": e})
with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
    json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
    f.flush()
    r = subprocess.run([promtool, "check", "rules", "--lint-fatal", f.name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: promtool check rules on the dashboard's {len(rules)} queries:")
        print(r.stdout + r.stderr)
        fail = 1
    else:
        print(f"ok: {len(rules)} dashboard queries are valid PromQL")

doc = open(f"{src}/docs/operations.md").read()
documented = set(re.findall(r"^\| `((?:uringfeed|process)_[a-z0-9_]+)", doc, re.M))
if len(documented) < 10:
    print(f"FAIL: docs/operations.md lists only {len(documented)} metrics")
    fail = 1
alerts = open(f"{src}/configs/prometheus/uringfeed-alerts.yml").read()
used = set(re.findall(r"(?<![:\w])((?:uringfeed|process)_[a-z0-9_]+)", alerts))
used |= set(re.findall(r"(?<![:\w])((?:uringfeed|process)_[a-z0-9_]+)", json.dumps(dash)))
used = {re.sub(r"_(bucket|sum|count)$", "", m) if m.endswith(("_bucket",)) else m for m in used}
missing = sorted(m for m in used if m not in documented)
if missing:
    print("FAIL: used by the dashboard or the alerts but not in docs/operations.md:", missing)
    fail = 1
else:
    print(f"ok: all {len(used)} metrics used are documented")
sys.exit(fail)
