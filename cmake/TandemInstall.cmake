# `cmake --install BUILD [--prefix DIR]`: tandem and its dashboard helper in bin/ (stripped), the bash, zsh
# and fish completions where those shells look for a package's, and the man page. CPack packs the same
# files (cmake/TandemPackage.cmake). Included by the top-level CMakeLists.txt once both programs exist.
include(GNUInstallDirs)

# The completions and the man page come from the built tandem (cmake/TandemDocs.cmake), at every build
# that changes it, so they never drift from the binary they are installed with.
set(TANDEM_DOCS_DIR "${PROJECT_BINARY_DIR}/docs")
set(_tandem_docs "${TANDEM_DOCS_DIR}/tandem.bash" "${TANDEM_DOCS_DIR}/_tandem" "${TANDEM_DOCS_DIR}/tandem.fish"
  "${TANDEM_DOCS_DIR}/tandem.1" "${TANDEM_DOCS_DIR}/tandem.1.gz")
add_custom_command(OUTPUT ${_tandem_docs}
  COMMAND ${CMAKE_COMMAND} -DTANDEM=$<TARGET_FILE:tandem> -DOUT=${TANDEM_DOCS_DIR}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/cmake/TandemDocs.cmake
  DEPENDS tandem ${PROJECT_SOURCE_DIR}/cmake/TandemDocs.cmake ${PROJECT_SOURCE_DIR}/scripts/man-page
  COMMENT "Writing tandem's completion scripts and man page"
  VERBATIM)
add_custom_target(tandem_docs ALL DEPENDS ${_tandem_docs})

# `tandem dashboard` execs tandem-dashboard from the folder tandem is in (cli/cmd_dashboard.cpp).
install(TARGETS tandem tandem-dashboard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Stripped by the install itself, as dh_strip does for a Debian package: a RelWithDebInfo tandem is ~160 MB
# of debug information, ~6 MB without. A Debug build is installed as built.
if(CMAKE_STRIP)
  set(_tandem_strip [[
    if(NOT CMAKE_INSTALL_CONFIG_NAME STREQUAL "Debug")
      foreach(program tandem tandem-dashboard)
        set(path "@CMAKE_INSTALL_BINDIR@/${program}")
        if(NOT IS_ABSOLUTE "${path}")
          set(path "${CMAKE_INSTALL_PREFIX}/${path}")
        endif()
        execute_process(COMMAND "@CMAKE_STRIP@" --remove-section=.comment --remove-section=.note
          "$ENV{DESTDIR}${path}" RESULT_VARIABLE rc)
        if(NOT rc EQUAL 0)
          message(FATAL_ERROR "strip $ENV{DESTDIR}${path} failed")
        endif()
      endforeach()
    endif()
  ]])
  string(CONFIGURE "${_tandem_strip}" _tandem_strip @ONLY)
  install(CODE "${_tandem_strip}")
else()
  message(WARNING "tandem: no strip program found: `cmake --install` will install unstripped binaries")
endif()

install(FILES "${TANDEM_DOCS_DIR}/tandem.bash" RENAME tandem
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES "${TANDEM_DOCS_DIR}/_tandem" DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES "${TANDEM_DOCS_DIR}/tandem.fish" DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES "${TANDEM_DOCS_DIR}/tandem.1.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
