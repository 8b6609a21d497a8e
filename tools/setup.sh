#!/usr/bin/env bash
# Installs the Debian 12 packages uringfeed needs, only those that are missing.
# Used by tools/demo.sh and tools/test.sh; safe to run again (does nothing when all are there).
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      liburing-dev libnuma-dev libjansson-dev libcmocka-dev
      libzmq3-dev libmicrohttpd-dev libnats-dev nats-server gnuplot-nox iproute2 procps curl)

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
echo "setup: done"
