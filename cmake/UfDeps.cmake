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

# promtool (Debian package prometheus): the tests lint /metrics with `promtool check metrics`.
find_program(UF_PROMTOOL promtool)
if(NOT UF_PROMTOOL)
  message(FATAL_ERROR "promtool not found: apt-get install prometheus (or run tools/setup.sh)")
endif()
