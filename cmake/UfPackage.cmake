# The Debian package: `cpack -G DEB` in a configured and built folder gives
# uringfeed_<version>_<arch>.deb holding exactly what `cmake --install --prefix /usr` installs
# (cmake/UfInstall.cmake, plus the consumer library's own rules).
set(CPACK_PACKAGE_NAME uringfeed)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "uringfeed")
set(CPACK_PACKAGE_CONTACT "uringfeed maintainers <uringfeed@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "market data feed handler: io_uring ingest, ITCH 5.0 books, shared-memory rings")
set(CPACK_PACKAGE_DESCRIPTION
    "uringfeed receives Nasdaq ITCH 5.0 over MoldUDP64 on A/B multicast lines, arbitrates and recovers gaps, builds order books and publishes them to shared-memory rings read through libufconsumer (C/C++ headers <uringfeed/ufconsumer.h>, pkg-config, CMake package, and the Python package uringfeed). Includes the lab tools (uf-replay, uf-gen, uf-decode, uf-tail, uf-bench), systemd units, Prometheus rules and a Grafana dashboard.")
set(CPACK_GENERATOR DEB)
# The configuration is installed to the absolute /etc/uringfeed: stage with DESTDIR and prefix
# /usr whatever the configure-time prefix (so GNUInstallDirs' /usr/local never leaks in).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the binaries' NEEDED libraries (dpkg-shlibdeps): liburing2, libnuma1,
# libjansson4, libmicrohttpd12, libzmq5, libc6, with versions; a library added later is
# picked up without editing a list. libufconsumer is ours: found in the build's lib folder.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON) # shlibs for libufconsumer.so.2 + ldconfig trigger
# python3 for the uringfeed Python package (/usr/lib/python3/dist-packages), numpy optional.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd, python3")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, grafana, python3-numpy")
# conffiles: dpkg keeps an edited /etc/uringfeed file across upgrades (and asks).
set(uf_conffiles "")
foreach(f loopback.json nasdaq-production.json uf-replay.env uf-bridge.json)
  string(APPEND uf_conffiles "/etc/uringfeed/${f}\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/deb/conffiles "${uf_conffiles}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/conffiles
    ${CMAKE_SOURCE_DIR}/cmake/deb/postinst ${CMAKE_SOURCE_DIR}/cmake/deb/prerm
    ${CMAKE_SOURCE_DIR}/cmake/deb/postrm ${CMAKE_SOURCE_DIR}/cmake/deb/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Only the .deb: no source package of the build folder.
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
