# `cmake --install build --prefix P`: sprintrt as a CMake package.
#
# Installed: the static libraries of the six modules, the public headers
# (include/sprintrt, none of which includes a header outside it), the
# `sprintrt` and `sprint-sim` tools, and a package config, so that another
# project does
#
#   find_package(sprintrt 0.3 REQUIRED)
#   target_link_libraries(app PRIVATE sprintrt::sprintrt)
#
# The libraries are static: a trainer gets one self-contained binary and no
# RPATH to manage; CAF, spdlog and fmt stay shared (Debian's packages), found
# again by the package config (CAF through the FindCAF.cmake installed next
# to it, since Debian's CAF ships no config of its own).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SPRINTRT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/sprintrt)

# sprintrt::sprintrt: everything a trainer links (the actors pull in the
# modules below them). The executable already has the name `sprintrt`.
add_library(sprintrt_lib INTERFACE)
target_link_libraries(sprintrt_lib INTERFACE sprintrt_actors)
set_target_properties(sprintrt_lib PROPERTIES EXPORT_NAME sprintrt)
add_library(sprintrt::sprintrt ALIAS sprintrt_lib)

install(TARGETS sprintrt_lib sprintrt_actors sprintrt_caller sprintrt_seqtrain sprintrt_sources
                sprintrt_pool sprintrt_remote sprintrt_worker sprintrt_execution sprintrt_process sprintrt_config sprintrt_sim
                sprintrt_criterion sprintrt_protocol
                sprintrt_common
        EXPORT sprintrtTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS sprintrt sprint-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sprintrt ${PROJECT_BINARY_DIR}/include/sprintrt
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT sprintrtTargets NAMESPACE sprintrt:: DESTINATION ${SPRINTRT_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/sprintrtConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/sprintrtConfig.cmake
                              INSTALL_DESTINATION ${SPRINTRT_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API, so 0.3 accepts 0.3.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sprintrtConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sprintrtConfig.cmake
              ${PROJECT_BINARY_DIR}/sprintrtConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
        DESTINATION ${SPRINTRT_INSTALL_CMAKEDIR})
