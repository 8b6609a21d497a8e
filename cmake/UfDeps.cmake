# Finds the Debian packages uringfeed builds on, each through pkg-config, and says which
# package to install when one is missing (tools/setup.sh installs them all).
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config (or run tools/setup.sh)")
endif()
find_package(Threads REQUIRED)

# uf_require_pkg(PREFIX MODULE DEBIAN_PACKAGE): imported target PkgConfig::PREFIX or a clear error.
function(uf_require_pkg prefix module debpkg)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debpkg} (or run tools/setup.sh)")
  endif()
  message(STATUS "found ${module} ${${prefix}_VERSION}")
endfunction()

uf_require_pkg(URING liburing liburing-dev)
uf_require_pkg(JANSSON jansson libjansson-dev)
uf_require_pkg(CMOCKA cmocka libcmocka-dev)
uf_require_pkg(ZLIB zlib zlib1g-dev) # decode/: gzip'd captures read directly

# libnuma ships no .pc file on Debian 12: find header and library directly.
find_path(NUMA_INCLUDE_DIR numa.h)
find_library(NUMA_LIBRARY numa)
if(NOT NUMA_INCLUDE_DIR OR NOT NUMA_LIBRARY)
  message(FATAL_ERROR "libnuma not found: apt-get install libnuma-dev (or run tools/setup.sh)")
endif()
add_library(uf_numa INTERFACE)
target_include_directories(uf_numa INTERFACE ${NUMA_INCLUDE_DIR})
target_link_libraries(uf_numa INTERFACE ${NUMA_LIBRARY})

# Optional: baselines and the status endpoint. Their users check the _FOUND variables.
pkg_check_modules(ZMQ QUIET IMPORTED_TARGET GLOBAL libzmq)
pkg_check_modules(MHD QUIET IMPORTED_TARGET GLOBAL libmicrohttpd)
if(NOT ZMQ_FOUND)
  message(FATAL_ERROR "libzmq not found: apt-get install libzmq3-dev (or run tools/setup.sh)")
endif()
if(NOT MHD_FOUND)
  message(FATAL_ERROR "libmicrohttpd not found: apt-get install libmicrohttpd-dev (or run tools/setup.sh)")
endif()

# The Debian interpreter first: tools/setup.sh installs python3-pytest/python3-numpy for it,
# and a pyenv or venv python3 earlier on PATH would not see them.
find_program(UF_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)

# Operations checks (test/ops): promtool (Debian `prometheus`) lints /metrics and the alert
# rules; systemd-analyze verifies the units; dpkg-deb/dpkg-shlibdeps build and open the .deb.
foreach(tool promtool:prometheus systemd-analyze:systemd dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev
        python3:python3)
  string(REPLACE ":" ";" pair ${tool})
  list(GET pair 0 prog)
  list(GET pair 1 debpkg)
  string(TOUPPER "UF_${prog}" var)
  string(REPLACE "-" "_" var ${var})
  find_program(${var} ${prog})
  if(NOT ${var})
    message(FATAL_ERROR "${prog} not found: apt-get install ${debpkg} (or run tools/setup.sh)")
  endif()
endforeach()

# Optional: NATS JetStream fan-out (uf-bridge, libufconsumer's "nats://" attach, test/bridge).
# UF_NATS defaults to ON when the C client is installed; turning it ON without it is an error.
pkg_check_modules(NATS QUIET IMPORTED_TARGET GLOBAL libnats)
option(UF_NATS "NATS JetStream fan-out: uf-bridge and remote consumers (apt-get install libnats-dev)"
       ${NATS_FOUND})
if(UF_NATS)
  if(NOT NATS_FOUND)
    message(FATAL_ERROR "UF_NATS=ON but libnats not found: apt-get install libnats-dev "
                        "(or run tools/setup.sh), or configure with -DUF_NATS=OFF")
  endif()
  # the fan-out's optional shared key (HMAC-SHA256, ring/nats/nats_auth.h)
  pkg_check_modules(CRYPTO QUIET IMPORTED_TARGET GLOBAL libcrypto)
  if(NOT CRYPTO_FOUND)
    message(FATAL_ERROR "UF_NATS=ON but libcrypto not found: apt-get install libssl-dev "
                        "(or run tools/setup.sh), or configure with -DUF_NATS=OFF")
  endif()
  find_program(NATS_SERVER nats-server)
  if(NOT NATS_SERVER)
    message(FATAL_ERROR "UF_NATS=ON: the tests need nats-server: apt-get install nats-server "
                        "(or run tools/setup.sh), or configure with -DUF_NATS=OFF")
  endif()
  message(STATUS "found libnats ${NATS_VERSION}, nats-server ${NATS_SERVER}: NATS fan-out on")
else()
  message(STATUS "NATS fan-out off (UF_NATS=OFF)")
endif()
