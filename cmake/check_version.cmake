# Fails unless the three places that state sprintrt's version agree: the
# CMake project's VERSION (which the C++ code, the tools' --version, the
# Python module's `sprintrt.__version__` and the CMake package take), the
# Python package's version in pyproject.toml (the wheel's), and the newest
# release in CHANGELOG.md (a `## [X.Y.Z] - YYYY-MM-DD` heading; an
# `## [Unreleased]` section may come before it). Run as a test
# (tests/CMakeLists.txt):
#   cmake -DSOURCE_DIR=<repository> -P cmake/check_version.cmake

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_version: pass -DSOURCE_DIR=<repository root>")
endif()

set(semver "[0-9]+\\.[0-9]+\\.[0-9]+")

# The first line of `file` matching `regex`, its first group in `out`; a
# failure naming `what` if there is none.
function(first_match file regex what out)
  file(STRINGS "${SOURCE_DIR}/${file}" lines REGEX "${regex}")
  if(NOT lines)
    message(FATAL_ERROR "check_version: ${file} states no ${what}")
  endif()
  list(GET lines 0 line)
  string(REGEX REPLACE ".*${regex}.*" "\\1" value "${line}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

first_match(CMakeLists.txt "^project\\(sprintrt VERSION (${semver})" "project(sprintrt VERSION ...)"
            cmake_version)
first_match(pyproject.toml "^version = \"(${semver})\"" "version = \"X.Y.Z\"" python_version)
first_match(CHANGELOG.md "^## \\[(${semver})\\] - [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$"
            "release heading \"## [X.Y.Z] - YYYY-MM-DD\"" changelog_version)

if(NOT python_version STREQUAL cmake_version OR NOT changelog_version STREQUAL cmake_version)
  message(FATAL_ERROR "check_version: the versions disagree:\n"
                      "  CMakeLists.txt ${cmake_version}\n"
                      "  pyproject.toml ${python_version}\n"
                      "  CHANGELOG.md ${changelog_version} (its newest release)")
endif()
message(STATUS "check_version: ${cmake_version} everywhere")
