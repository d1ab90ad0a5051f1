# Smoke test of sprintrt-bench: runs every benchmark once in quick mode
# (--quick, --benchmark_min_time=0.01) and checks that every figure declared
# in the output's context has both sides measured with finite numbers, not
# what they are. Only the Python-dependent figures may be skipped (no
# /usr/bin/python3 with NumPy or PyTorch, or no Python module built). With
# PYTHON and FIGURES, scripts/bench/figures.py must also read the output.
#
#   cmake -DBENCH=<sprintrt-bench> -DWORK_DIR=<dir> [-DPYTHON=<python3> -DFIGURES=<figures.py>]
#         [-DNO_PYTHON=ON] -P bench_smoke.cmake
#
# NO_PYTHON=ON runs only the Python-dependent benchmarks with a Python that
# does not exist and requires their figures to be skipped.
cmake_minimum_required(VERSION 3.19) # string(JSON)

if(NOT BENCH OR NOT WORK_DIR)
  message(FATAL_ERROR "pass -DBENCH=<path of sprintrt-bench> -DWORK_DIR=<dir>")
endif()

set(out "${WORK_DIR}/bench_smoke.json")
if(NO_PYTHON)
  set(out "${WORK_DIR}/bench_smoke_no_python.json")
endif()
set(args --quick --benchmark_min_time=0.01 --benchmark_out=${out} --benchmark_out_format=json)
if(NO_PYTHON)
  list(APPEND args --python=/nonexistent/python3 --benchmark_filter=^python/)
endif()
execute_process(COMMAND ${BENCH} ${args}
                OUTPUT_VARIABLE console
                ERROR_VARIABLE err
                RESULT_VARIABLE rc
                TIMEOUT 110)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sprintrt-bench ${args} failed (${rc}):\n${err}\n${console}")
endif()
file(READ "${out}" doc)

# Every benchmark's name (without what Google Benchmark appends), its real
# time, its counters and its error, by index.
string(JSON count LENGTH "${doc}" benchmarks)
set(names "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${doc}" benchmarks ${i} run_name)
  string(REGEX REPLACE "(/(manual_time|real_time|iterations:[0-9]+|repeats:[0-9]+))+$" "" name
                       "${name}")
  list(APPEND names "${name}")
endforeach()

# Checks one side of a figure ("name" or "name@counter"); sets `side_status`
# to "ok", "skipped: ..." or the problem.
function(check_side ref)
  string(FIND "${ref}" "@" at)
  set(counter real_time)
  set(name "${ref}")
  if(at GREATER -1)
    string(SUBSTRING "${ref}" 0 ${at} name)
    math(EXPR from "${at} + 1")
    string(SUBSTRING "${ref}" ${from} -1 counter)
  endif()
  list(FIND names "${name}" i)
  if(i EQUAL -1)
    set(side_status "missing: ${name}" PARENT_SCOPE)
    return()
  endif()
  string(JSON failed ERROR_VARIABLE none GET "${doc}" benchmarks ${i} error_occurred)
  if(failed)
    string(JSON message GET "${doc}" benchmarks ${i} error_message)
    set(side_status "${message}" PARENT_SCOPE)
    return()
  endif()
  string(JSON type ERROR_VARIABLE missing TYPE "${doc}" benchmarks ${i} ${counter})
  if(NOT type STREQUAL "NUMBER")
    set(side_status "${ref}: ${counter} is not a number" PARENT_SCOPE)
    return()
  endif()
  set(side_status ok PARENT_SCOPE)
endfunction()

string(JSON figures GET "${doc}" context figures)
string(JSON nfigures LENGTH "${figures}")
math(EXPR last "${nfigures} - 1")
set(problems "")
set(checked 0)
foreach(f RANGE ${last})
  string(JSON title GET "${figures}" ${f} title)
  string(JSON python GET "${figures}" ${f} python)
  if(NO_PYTHON AND NOT python)
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  foreach(side value baseline)
    string(JSON ref GET "${figures}" ${f} ${side})
    if(NO_PYTHON AND NOT ref MATCHES "^python/")
      continue() # not run: only the Python side must be skipped
    endif()
    check_side("${ref}")
    if(side_status MATCHES "^skipped")
      if(NOT python)
        list(APPEND problems "${title}: ${side} ${side_status}, only Python figures may be")
      elseif(NO_PYTHON)
        message(STATUS "${title}: ${side_status} (as expected)")
      endif()
    elseif(NOT side_status STREQUAL "ok")
      list(APPEND problems "${title}: ${side}: ${side_status}")
    elseif(NO_PYTHON)
      list(APPEND problems "${title}: not skipped without Python")
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  list(APPEND problems "no figure to check")
endif()

if(PYTHON AND FIGURES AND NOT NO_PYTHON)
  execute_process(COMMAND ${PYTHON} ${FIGURES} ${out} --check
                  OUTPUT_VARIABLE table
                  ERROR_VARIABLE table_err
                  RESULT_VARIABLE table_rc)
  if(NOT table_rc EQUAL 0)
    list(APPEND problems "figures.py --check failed (${table_rc}): ${table_err}")
  endif()
  message(STATUS "${table}")
endif()

if(problems)
  string(REPLACE ";" "\n  " problems "${problems}")
  message(FATAL_ERROR "sprintrt-bench ${args}:\n  ${problems}")
endif()
message(STATUS "${checked} figures checked")
