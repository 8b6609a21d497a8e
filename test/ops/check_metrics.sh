#!/usr/bin/env bash
# Lints Prometheus exposition text with `promtool check metrics`; any output is a failure.
#   check_metrics.sh FILE          (or - / nothing for stdin)
#   curl -s http://127.0.0.1:8080/metrics | test/ops/check_metrics.sh
# C tests use test/common/uf_test_promtool.h for the same check.
set -euo pipefail
command -v promtool >/dev/null || { echo "promtool not found: apt-get install prometheus" >&2; exit 2; }
src=${1:--}
if [ "$src" = - ]; then
	out=$(promtool check metrics 2>&1) && rc=0 || rc=$?
else
	out=$(promtool check metrics <"$src" 2>&1) && rc=0 || rc=$?
fi
if [ $rc -ne 0 ] || [ -n "$out" ]; then
	echo "promtool check metrics (exit $rc):"
	echo "$out"
	exit 1
fi
echo "promtool check metrics: clean"
