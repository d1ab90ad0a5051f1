# Helpers shared by every sprintrt target: one place for warnings, sanitizers and
# include paths, so a new library or test is a two-line change.

# sprintrt_configure_target(<target>)
#   C++17, -Wall -Wextra (and -Werror with SPRINTRT_WERROR), sanitizers from
#   SPRINTRT_SANITIZE, and the two include roots: the repository itself (for
#   "protocol/...", "criterion/...", ...) and include/ (for the public "sprintrt/...").
#   Installed, only the public headers remain: <prefix>/include.
function(sprintrt_configure_target target)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(SPRINTRT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(SPRINTRT_SANITIZE)
    target_compile_options(${target} PUBLIC -fsanitize=${SPRINTRT_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PUBLIC -fsanitize=${SPRINTRT_SANITIZE})
  endif()
  if(SPRINTRT_FUZZ)
    # Coverage feedback for libFuzzer in every library the fuzzers link.
    target_compile_options(${target} PUBLIC -fsanitize=fuzzer-no-link)
  endif()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                              $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                              $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
                                              $<INSTALL_INTERFACE:include>)
endfunction()

# sprintrt_add_library(<name> SOURCES <files...> DEPENDS <targets...>)
#   A static library of one module (protocol/, criterion/, sim/, process/,
#   actors/).
function(sprintrt_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  sprintrt_configure_target(${name})
  target_link_libraries(${name} PUBLIC ${ARG_DEPENDS})
endfunction()

# sprintrt_add_test(<name> SOURCES <files...> DEPENDS <targets...>)
#   A Catch2 test executable whose test cases ctest discovers one by one. Tests run
#   with the tests/data directory as SPRINTRT_TEST_DATA (compile definition).
function(sprintrt_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  sprintrt_configure_target(${name})
  target_link_libraries(${name} PRIVATE Catch2::Catch2WithMain ${ARG_DEPENDS})
  target_compile_definitions(${name} PRIVATE
                             SPRINTRT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
  catch_discover_tests(${name} TEST_PREFIX "${name}: ")
endfunction()
