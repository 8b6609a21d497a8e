# What `cmake --install` puts on a host besides the consumer library (ring/CMakeLists.txt owns
# that): every tool, the configuration examples, the systemd units and drop-ins, the alert
# rules and dashboard, and the docs. The .deb (cmake/UfPackage.cmake) is this tree.
#
#   cmake --install build --prefix /usr      # the layout of the .deb: /usr/bin, /etc/uringfeed
#   cmake --install build --prefix /opt/uf   # self-contained: /opt/uf/etc/uringfeed, ...

# Tools whose own CMakeLists.txt has no install rule (uringfeed, uf-tail and uf-bench have one):
# uf-snap (snapshot files), and uf-bridge (ring to NATS) when its branch's target exists.
foreach(tool uf-gen uf-decode uf-replay uf-snap uf-bridge)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# Configuration goes to /etc/uringfeed for prefix /usr (the FHS and Debian place), else to
# PREFIX/etc/uringfeed. Decided when installing, not when configuring: cpack and
# `cmake --install --prefix` choose the prefix after configuration, so GNUInstallDirs'
# CMAKE_INSTALL_FULL_SYSCONFDIR (computed from the configure-time prefix) would be wrong.
set(uf_etc_files ${CMAKE_SOURCE_DIR}/configs/loopback.json
    ${CMAKE_SOURCE_DIR}/configs/nasdaq-production.json ${CMAKE_SOURCE_DIR}/configs/uf-replay.env
    ${CMAKE_SOURCE_DIR}/configs/uf-bridge.json)
install(CODE "set(uf_etc_files \"${uf_etc_files}\")")
install(CODE [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(uf_etc "/etc/uringfeed")
  else()
    set(uf_etc "${CMAKE_INSTALL_PREFIX}/etc/uringfeed")
  endif()
  # file(INSTALL) adds $DESTDIR and records the files in install_manifest.txt.
  file(INSTALL DESTINATION "${uf_etc}" TYPE FILE FILES ${uf_etc_files}
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
]])

# systemd: units, and the drop-ins their names say; prefix-relative, so /usr/lib/... in the
# .deb (systemd reads /usr/lib/systemd/system, /usr/lib/sysctl.d, ... on Debian 12).
set(uf_sd ${CMAKE_SOURCE_DIR}/configs/systemd)
install(FILES ${uf_sd}/uringfeed.service ${uf_sd}/uf-replay.service ${uf_sd}/uf-bridge.service
        DESTINATION lib/systemd/system)
install(FILES ${uf_sd}/uringfeed.sysctl DESTINATION lib/sysctl.d RENAME 60-uringfeed.conf)
install(FILES ${uf_sd}/uringfeed.tmpfiles DESTINATION lib/tmpfiles.d RENAME uringfeed.conf)
install(FILES ${uf_sd}/uringfeed.sysusers DESTINATION lib/sysusers.d RENAME uringfeed.conf)

# Monitoring: rules and dashboard to copy into Prometheus and Grafana.
install(FILES ${CMAKE_SOURCE_DIR}/configs/prometheus/uringfeed-alerts.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/uringfeed/prometheus)
install(FILES ${CMAKE_SOURCE_DIR}/configs/grafana/uringfeed-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/uringfeed/grafana)

# Docs: the README, every docs/*.md, and the configuration reference.
file(GLOB uf_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${uf_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/configs/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME configuration.md)
