# Issue 20: installable like the tools it replaces. `exitscope --version` names its build; the man
# pages and bash/zsh completions are generated at build time from the built binary's own command
# definitions (`exitscope --help-export`, src/cli/help_export.h) by scripts/gen_cli_docs.py, so they
# list exactly what --help lists; `cmake --install` (DESTDIR honoured) puts the binary, pages,
# completions, docs, the exporter's systemd unit and /etc/default file in place; `cpack` (or the
# `package` target) builds a .deb whose dependencies dpkg-shlibdeps reads from the binary.
include(GNUInstallDirs)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

# --version: git describe at every build, into one generated file linked into the binary alone.
set(EXITSCOPE_BUILD_ID "" CACHE STRING "what --version names as the build instead of git describe")
set(EXITSCOPE_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
add_custom_target(exitscope_build_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DOUT=${EXITSCOPE_GENERATED_DIR}/build_info.cc
          -DBUILD_ID=${EXITSCOPE_BUILD_ID} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/scripts/build_info.cmake
  BYPRODUCTS ${EXITSCOPE_GENERATED_DIR}/build_info.cc
  COMMENT "exitscope build id (git describe)" VERBATIM)
target_sources(exitscope PRIVATE ${EXITSCOPE_GENERATED_DIR}/build_info.cc)
add_dependencies(exitscope exitscope_build_info)

# Man pages (plain for tests, gzip -9n for install) and completions, from the binary's --help-export.
set(EXITSCOPE_DOCS_DIR ${CMAKE_CURRENT_BINARY_DIR}/docs)
add_custom_command(OUTPUT ${EXITSCOPE_DOCS_DIR}/stamp
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_cli_docs.py
          --exitscope $<TARGET_FILE:exitscope> --out ${EXITSCOPE_DOCS_DIR}
  DEPENDS exitscope ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gen_cli_docs.py
  COMMENT "man pages and shell completions from exitscope --help-export" VERBATIM)
add_custom_target(exitscope_docs ALL DEPENDS ${EXITSCOPE_DOCS_DIR}/stamp)

install(TARGETS exitscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${EXITSCOPE_DOCS_DIR}/man-gz/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${EXITSCOPE_DOCS_DIR}/completion/exitscope.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME exitscope)
install(FILES ${EXITSCOPE_DOCS_DIR}/completion/_exitscope DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
foreach(licence LICENSE LICENSE.txt LICENSE.md COPYING)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${licence})
    install(FILES ${licence} DESTINATION ${CMAKE_INSTALL_DOCDIR})
    install(FILES ${licence} DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)  # Debian policy 12.5
  endif()
endforeach()
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/deploy/prometheus)
  install(DIRECTORY deploy/prometheus/ DESTINATION ${CMAKE_INSTALL_DATADIR}/exitscope/prometheus)
endif()
# The unit names the installed binary and defaults file, known only at install time (cpack installs
# with prefix /usr whatever this build was configured with): written then by install_service.cmake.
install(CODE "set(EXITSCOPE_DEPLOY_DIR \"${CMAKE_CURRENT_SOURCE_DIR}/deploy\")
set(EXITSCOPE_STAGING_DIR \"${CMAKE_CURRENT_BINARY_DIR}/deploy\")
set(EXITSCOPE_DOCS_DIR \"${EXITSCOPE_DOCS_DIR}\")")
install(SCRIPT cmake/scripts/install_service.cmake)

# The Debian package: `cmake --build build --target package`, or cpack --config build/CPackConfig.cmake.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME exitscope)
set(CPACK_PACKAGE_VENDOR "exitscope")
set(CPACK_PACKAGE_CONTACT "exitscope maintainers <exitscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "where KVM guests lose time to VM exits")
set(CPACK_PACKAGE_DESCRIPTION "exitscope reads KVM traces (trace-cmd trace.dat, perf.data, trace text) \
and reports VM exits per reason, VM and vCPU with their handling time; it records and shows exits \
live, measures exit costs, advises on known exit-cost patterns and exports live exit metrics to \
Prometheus (exitscope.service).")
set(CPACK_SET_DESTDIR ON)  # /etc/default and the unit are absolute: stage them under DESTDIR
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps sees NEEDED entries only: serve's HTTP library is loaded at run time.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${EXITSCOPE_MICROHTTPD_PACKAGE}")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "trace-cmd, linux-perf")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm)
include(CPack)

# Label install: package, dpkg -i, demo, man pages, completion, unit (tests/install/*.sh).
set(INSTALL_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/install)
add_test(NAME install.man_pages
         COMMAND ${Python3_EXECUTABLE} ${INSTALL_TESTS}/check_docs.py man $<TARGET_FILE:exitscope> ${EXITSCOPE_DOCS_DIR})
add_test(NAME install.help_matches_man
         COMMAND ${Python3_EXECUTABLE} ${INSTALL_TESTS}/check_docs.py options $<TARGET_FILE:exitscope> ${EXITSCOPE_DOCS_DIR})
add_test(NAME install.help_matches_man_self_test
         COMMAND ${Python3_EXECUTABLE} ${INSTALL_TESTS}/check_docs.py self-test $<TARGET_FILE:exitscope> ${EXITSCOPE_DOCS_DIR})
add_test(NAME install.bash_completion
         COMMAND bash ${INSTALL_TESTS}/completion_test.sh ${EXITSCOPE_DOCS_DIR}/completion)
add_test(NAME install.version
         COMMAND sh ${INSTALL_TESTS}/version_test.sh $<TARGET_FILE:exitscope> ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME install.destdir
         COMMAND sh ${INSTALL_TESTS}/destdir_test.sh ${CMAKE_CURRENT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME install.deb
         COMMAND sh ${INSTALL_TESTS}/deb_test.sh ${CMAKE_CURRENT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME install.capabilities
         COMMAND sh ${INSTALL_TESTS}/capability_test.sh $<TARGET_FILE:exitscope>
                 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/systemd/exitscope.service.in)
set_tests_properties(install.capabilities PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(install.capabilities install.man_pages install.help_matches_man install.help_matches_man_self_test
                     install.bash_completion install.version install.destdir install.deb
                     PROPERTIES LABELS install TIMEOUT 300)
# One dpkg at a time, and the package's files come from the same staging tree as DESTDIR's.
set_tests_properties(install.deb install.destdir PROPERTIES RESOURCE_LOCK exitscope_install_tree)
