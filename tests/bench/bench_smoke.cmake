# Smoke test of `sprintrt-bench all`: runs it with --quick --json and checks
# that every figure of the issues (a-g) is in the document with finite numbers
# (JSON has no NaN or infinity: nlohmann writes them as null) and a status,
# not what the numbers are. Only the Python-dependent figures (c, e.torch, g)
# may be "skipped" (no /usr/bin/python3 with NumPy or PyTorch, or no Python
# module built).
#
#   cmake -DBENCH=<sprintrt-bench> [-DNO_PYTHON=ON] -P bench_smoke.cmake
#
# NO_PYTHON=ON runs only the Python-dependent groups with a Python that does
# not exist and requires them to be skipped.
cmake_minimum_required(VERSION 3.19) # string(JSON)

if(NOT BENCH)
  message(FATAL_ERROR "pass -DBENCH=<path of sprintrt-bench>")
endif()

set(args all --quick --json)
set(required a b c d.transport d.faults_parent d.faults_child d.peak_rss e.speedup e.serial
    e.torch f g)
set(may_skip c e.torch g)
if(NO_PYTHON)
  list(APPEND args --python /nonexistent/python3 --only c e g)
  set(required c e.speedup e.serial e.torch g)
endif()

execute_process(COMMAND ${BENCH} ${args}
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err
                RESULT_VARIABLE rc
                TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sprintrt-bench ${args} failed (${rc}):\n${err}\n${out}")
endif()

string(JSON bench ERROR_VARIABLE json_error GET "${out}" bench)
if(json_error OR NOT bench STREQUAL "all")
  message(FATAL_ERROR "not the JSON document of `all`: ${json_error}\n${out}")
endif()
string(JSON count LENGTH "${out}" figures)

set(problems "")
foreach(id IN LISTS required)
  set(found -1)
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON this GET "${out}" figures ${i} id)
      if(this STREQUAL id)
        set(found ${i})
      endif()
    endforeach()
  endif()
  if(found EQUAL -1)
    list(APPEND problems "${id}: missing")
    continue()
  endif()
  string(JSON status GET "${out}" figures ${found} status)
  if(status STREQUAL "skipped")
    string(JSON reason GET "${out}" figures ${found} skipped)
    if(NOT id IN_LIST may_skip)
      list(APPEND problems "${id}: skipped (${reason}), only ${may_skip} may be")
    elseif(NO_PYTHON)
      message(STATUS "${id}: skipped as expected (${reason})")
    endif()
    continue()
  endif()
  if(NO_PYTHON AND id IN_LIST may_skip)
    list(APPEND problems "${id}: not skipped without Python")
  endif()
  if(NOT status MATCHES "^(met|missed|n/a)$")
    list(APPEND problems "${id}: status '${status}'")
  endif()
  foreach(path "median" "min" "max" "ratio" "baseline;median" "baseline;min" "baseline;max")
    string(JSON type TYPE "${out}" figures ${found} ${path})
    if(NOT type STREQUAL "NUMBER")
      string(REPLACE ";" "." name "${path}")
      list(APPEND problems "${id}: ${name} is ${type}, not a finite number")
    endif()
  endforeach()
  string(JSON text GET "${out}" figures ${found} target text)
  message(STATUS "${id}: ${status} (target '${text}')")
endforeach()

if(problems)
  string(REPLACE ";" "\n  " problems "${problems}")
  message(FATAL_ERROR "sprintrt-bench all --quick --json:\n  ${problems}")
endif()
