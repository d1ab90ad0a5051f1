# Fails when a module includes a header of a module above it: a back-edge in
# sprintrt's layering, which would make two modules depend on each other.
# Run as a test (tests/CMakeLists.txt) and by scripts/lint.sh:
#   cmake -DSOURCE_DIR=<repository> -P cmake/check_layers.cmake
#
# The layers, from the bottom: a file in a layer may include headers of its
# own layer and of the layers before it, and the public "sprintrt/..."
# headers, which include only each other.

set(layers
    common
    protocol
    criterion
    sim
    config
    process
    actors/execution
    actors/worker
    actors/remote
    actors/pool
    actors/sources
    actors/seqtrain
    actors/caller
    tools
    python/csrc)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers: pass -DSOURCE_DIR=<repository root>")
endif()

# The layer an include path ("actors/pool/worker_pool.hpp") belongs to: the
# longest layer that prefixes it; "" if none (a system or third-party header).
function(layer_of path out)
  set(found "")
  foreach(layer IN LISTS layers)
    string(LENGTH "${layer}/" n)
    string(SUBSTRING "${path}" 0 ${n} head)
    string(LENGTH "${found}" found_n)
    if(head STREQUAL "${layer}/" AND n GREATER found_n)
      set(found "${layer}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

set(violations "")
list(LENGTH layers count)
math(EXPR last "${count} - 1")
foreach(rank RANGE ${last})
  list(GET layers ${rank} layer)
  file(GLOB_RECURSE files "${SOURCE_DIR}/${layer}/*.hpp" "${SOURCE_DIR}/${layer}/*.cpp")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" lines REGEX "^#include \"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      layer_of("${included}" target)
      if(target STREQUAL "")
        continue()
      endif()
      list(FIND layers "${target}" target_rank)
      if(target_rank GREATER rank)
        file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
        string(APPEND violations "\n  ${where} (layer ${layer}) includes \"${included}\" (layer ${target}, above it)")
      endif()
    endforeach()
  endforeach()
endforeach()

# The public headers may include only each other.
file(GLOB public_headers "${SOURCE_DIR}/include/sprintrt/*.hpp")
foreach(file IN LISTS public_headers)
  file(STRINGS "${file}" lines REGEX "^#include \"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT included MATCHES "^sprintrt/")
      file(RELATIVE_PATH where "${SOURCE_DIR}" "${file}")
      string(APPEND violations "\n  ${where} (a public header) includes \"${included}\"")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "check_layers: includes against the layering (see cmake/check_layers.cmake):${violations}")
endif()
message(STATUS "check_layers: no back-edges")
