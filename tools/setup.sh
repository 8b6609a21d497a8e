#!/usr/bin/env bash
# Installs the Debian 12 packages uringfeed needs, only those that are missing, then the
# uringfeed Python package (python/) into Debian's python3 with pip.
# Used by tools/demo.sh and tools/test.sh; safe to run again (the packages are installed only
# when missing; the Python package is reinstalled from this tree, a few seconds).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      liburing-dev libnuma-dev libjansson-dev libcmocka-dev zlib1g-dev
      libzmq3-dev libmicrohttpd-dev gnuplot-nox iproute2 procps libnats-dev libssl-dev nats-server curl strace
      python3 python3-pytest python3-numpy python3-setuptools python3-pip python3-venv prometheus
      dpkg-dev tshark jq)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#pkgs[@]} Debian packages present"
else
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
fi

# The Python package, the way docs/consumers.md tells users to install it: pip with Debian's
# setuptools as the build backend (--no-build-isolation) and no registry (--no-index: none is
# reachable, and the package needs nothing from one). Debian's pip refuses the system site
# (PEP 668, "externally managed") unless told: --break-system-packages puts it in
# /usr/local/lib/python3.11/dist-packages, beside apt's packages and not over them. It loads
# libufconsumer.so.2 through the system loader (the .deb, or `cmake --install` + ldconfig); the
# in-tree tests use the tree's python/ and library instead. Built from a copy: pip builds in
# the folder it is given.
pip_cmd=(/usr/bin/python3 -m pip install --no-build-isolation --no-index --no-cache-dir -q
         --break-system-packages --root-user-action=ignore)
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: not root, Python package not installed; as root: ${pip_cmd[*]} $repo/python"
else
	pysrc=$(mktemp -d /tmp/uf-setup-python.XXXXXX)
	cp -r "$repo/python/." "$pysrc"
	rm -rf "$pysrc/build" "$pysrc"/*.egg-info
	if ! "${pip_cmd[@]}" "$pysrc" >"$pysrc.log" 2>&1; then
		cat "$pysrc.log" >&2
		rm -rf "$pysrc" "$pysrc.log"
		echo "setup: pip install of python/ failed" >&2
		exit 1
	fi
	rm -rf "$pysrc" "$pysrc.log"
	echo "setup: Python package uringfeed installed in" \
		"$(/usr/bin/python3 -m pip show uringfeed 2>/dev/null | sed -n 's/^Location: //p')"
fi
echo "setup: done"
