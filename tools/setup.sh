#!/usr/bin/env bash
# Installs the Debian 12 packages uringfeed needs, only those that are missing.
# Used by tools/demo.sh and tools/test.sh; safe to run again (does nothing when all are there).
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      liburing-dev libnuma-dev libjansson-dev libcmocka-dev
      libzmq3-dev libmicrohttpd-dev gnuplot-nox iproute2 procps libnats-dev nats-server curl strace
      python3 python3-pytest python3-numpy prometheus dpkg-dev)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#pkgs[@]} Debian packages present"
	exit 0
fi
echo "setup: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: not root; run as root or: sudo apt-get install -y ${missing[*]}" >&2
	exit 2
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
# `prometheus` is installed for promtool only (the tests lint /metrics and the alert rules
# with it); Debian enables and starts its server: stop that on a host running systemd.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	echo "setup: prometheus.service disabled (only promtool is needed)"
fi
echo "setup: done"
