# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# What `cmake --install` (and `make install PREFIX=dir`) puts besides the libraries, which
# install themselves (plugins: common/CMakeLists.txt, libtether-device.a: rpc/device,
# libtether-rpc: rpc/server):
#   <bindir>/tether-run                       finds the plugins relative to itself
#   <includedir>/tether/*.h                   public headers (port protocol: tether/port/, rpc/server)
#   <libdir>/pkgconfig/tether.pc              OpenMP programs: headers, libtether-device.a
#   <libdir>/pkgconfig/tether-rpc.pc          the server library libtether-rpc
#   <libdir>/cmake/tether/tetherConfig*.cmake find_package(tether): tether::device,
#                                             tether::rpc_server, tether::rpc_server_static
# All of them are relocatable: paths are worked out from where each file lies, so the tree may
# be moved (DESTDIR staging, cmake --install --prefix) as long as its layout stays.
# Also defines the `uninstall` target.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tether DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# tether-run: the installed copy gets the plugin directory relative to <bindir>.
file(RELATIVE_PATH tether_run_plugins ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_LIBDIR}/tether)
set(tether_run_src ${PROJECT_SOURCE_DIR}/scripts/tether-run)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${tether_run_src})
file(READ ${tether_run_src} tether_run_text)
string(FIND "${tether_run_text}" "\nplugins=../lib/tether\nversion=source-tree\n" tether_run_at)
if(tether_run_at EQUAL -1)
  message(FATAL_ERROR "scripts/tether-run has no lines 'plugins=../lib/tether' and "
                      "'version=source-tree' to configure")
endif()
string(REPLACE "\nplugins=../lib/tether\nversion=source-tree\n"
       "\nplugins=${tether_run_plugins}\nversion=${PROJECT_VERSION}\n" tether_run_text
       "${tether_run_text}")
set(tether_run_old "")
if(EXISTS ${CMAKE_BINARY_DIR}/tether-run)
  file(READ ${CMAKE_BINARY_DIR}/tether-run tether_run_old)
endif()
if(NOT tether_run_old STREQUAL tether_run_text)
  file(WRITE ${CMAKE_BINARY_DIR}/tether-run "${tether_run_text}")
  file(CHMOD ${CMAKE_BINARY_DIR}/tether-run PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endif()
install(PROGRAMS ${CMAKE_BINARY_DIR}/tether-run DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config files: prefix=${pcfiledir}/<path from <libdir>/pkgconfig up to the prefix>.
file(RELATIVE_PATH TETHER_PC_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TETHER_PC_PREFIX "${TETHER_PC_PREFIX}")
foreach(d INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(TETHER_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(TETHER_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
foreach(pc tether tether-rpc)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# The CMake package.
set(tether_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tether)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tetherConfig.cmake.in
  ${CMAKE_BINARY_DIR}/tetherConfig.cmake
  INSTALL_DESTINATION ${tether_cmake_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR
            TETHER_INSTALL_PLUGINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tetherConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tetherConfig.cmake ${CMAKE_BINARY_DIR}/tetherConfigVersion.cmake
        DESTINATION ${tether_cmake_dir})

# uninstall: removes what the last `cmake --install` of this build tree wrote
# (install_manifest.txt, DESTDIR included).
configure_file(${PROJECT_SOURCE_DIR}/cmake/tether_uninstall.cmake.in
               ${CMAKE_BINARY_DIR}/tether_uninstall.cmake @ONLY)
add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_BINARY_DIR}/tether_uninstall.cmake
  COMMENT "Removing the files listed in install_manifest.txt" VERBATIM)
