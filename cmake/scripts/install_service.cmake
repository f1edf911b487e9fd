# Install-time step of cmake/install.cmake: the exporter's systemd unit and its defaults file, with
# the paths of this install (CMAKE_INSTALL_PREFIX as `cmake --install --prefix` or cpack set it; the
# unit must name the binary where it lands, not where the build was configured to go). A /usr
# install keeps its configuration in /etc (FHS), any other prefix in <prefix>/etc. DESTDIR is
# applied by file(INSTALL), which also lists the files in install_manifest.txt.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()
set(EXITSCOPE_BIN "${CMAKE_INSTALL_PREFIX}/bin/exitscope")
set(EXITSCOPE_DEFAULTS "${etc}/default/exitscope")
# The unit's Documentation= names pages that exist (systemd-analyze verify runs man on each):
# exitscope-serve(1) once the serve command is in the binary.
set(EXITSCOPE_UNIT_DOCS "man:exitscope(1)")
if(EXISTS "${EXITSCOPE_DOCS_DIR}/man/exitscope-serve.1")
  set(EXITSCOPE_UNIT_DOCS "man:exitscope-serve(1) man:exitscope(1)")
endif()
configure_file("${EXITSCOPE_DEPLOY_DIR}/systemd/exitscope.service.in" "${EXITSCOPE_STAGING_DIR}/exitscope.service" @ONLY)
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     FILES "${EXITSCOPE_STAGING_DIR}/exitscope.service")
file(INSTALL DESTINATION "${etc}/default" TYPE FILE FILES "${EXITSCOPE_DEPLOY_DIR}/default/exitscope")
