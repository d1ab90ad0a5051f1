# The package test: installs the build tree to a temporary prefix, checks
# that a project asking for the previous release does not get it, then
# configures, builds and runs tests/package/consumer against it (one batch
# through pool_client with the installed sprint-sim) and the engine example
# (examples/engine_trainer and its Catch2 test), and with PYTHON runs
# tests/package/consumer.py against the installed Python module (the same
# batch through SprintInstancePool).
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DVERSION=<the project's>
#       [-DPYTHON=<python3> -DPYTHON_DIR=<dir of the package below the prefix>]
#       -P package_test.cmake

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "package_test.cmake needs -D${var}=...")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()

run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed bin/sprintrt bin/sprint-sim include/sprintrt/pool_client.hpp
                  include/sprintrt/version.hpp lib/cmake/sprintrt/sprintrtConfig.cmake)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "not installed: ${installed}")
  endif()
endforeach()
# Nothing but the public headers: the consumer cannot reach the source tree.
if(EXISTS ${prefix}/include/protocol OR EXISTS ${prefix}/include/actors)
  message(FATAL_ERROR "internal headers were installed")
endif()

# A project asking for the release before this one is refused: while 0.x,
# a minor version may break what a project relies on (SameMinorVersion; an
# older request is what the looser modes would accept).
string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)\\..*" "\\1" major "${VERSION}")
string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)\\..*" "\\2" minor "${VERSION}")
if(minor GREATER 0)
  math(EXPR previous_minor "${minor} - 1")
  set(previous "${major}.${previous_minor}")
  file(WRITE ${WORK_DIR}/previous-release/CMakeLists.txt
       "cmake_minimum_required(VERSION 3.16)\nproject(previous_release LANGUAGES CXX)\n"
       "find_package(sprintrt ${previous} REQUIRED)\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/previous-release
                          -B ${WORK_DIR}/previous-release/build -DCMAKE_PREFIX_PATH=${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # CMake lists the configuration it did not accept with its version.
  if(rc EQUAL 0 OR NOT err MATCHES "sprintrtConfig.cmake, version: ${VERSION}")
    message(FATAL_ERROR "find_package(sprintrt ${previous}) accepted ${VERSION} "
                        "or failed otherwise (${rc}):\n${out}${err}")
  endif()
endif()

run("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/consumer
    -B ${WORK_DIR}/consumer-build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run("run the consumer" ${WORK_DIR}/consumer-build/consumer ${prefix}/bin/sprint-sim ${WORK_DIR})

# The engine example (examples/engine_trainer): an event-based trainer on its
# own actor system, and its Catch2 test against in-process workers.
run("configure the engine example" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/engine_trainer
    -B ${WORK_DIR}/example-build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run("build the engine example" ${CMAKE_COMMAND} --build ${WORK_DIR}/example-build)
run("test the engine example" ${WORK_DIR}/example-build/engine_trainer_test)

if(PYTHON)
  set(package ${prefix}/${PYTHON_DIR}/sprintrt)
  file(GLOB extension ${package}/_sprintrt*.so)
  if(NOT extension)
    message(FATAL_ERROR "not installed: ${PYTHON_DIR}/sprintrt/_sprintrt*.so")
  endif()
  foreach(installed __init__.py returnn.py torch.py _sprintrt.pyi py.typed)
    if(NOT EXISTS ${package}/${installed})
      message(FATAL_ERROR "not installed: ${PYTHON_DIR}/sprintrt/${installed}")
    endif()
  endforeach()
  run("run the Python consumer" ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PYTHON_DIR}
      ${PYTHON} ${SOURCE_DIR}/tests/package/consumer.py ${prefix} ${prefix}/bin/sprint-sim
      ${WORK_DIR})
endif()
file(REMOVE_RECURSE ${WORK_DIR})
