# Writes the JSON objects that C++ tests spell as raw string literals,
# R"({...})", one file each, as seeds of options_fuzzer: the options
# documents the tests read, valid and not.
#
#   cmake -DOUTPUT_DIR=<directory> -P json_literals.cmake <file>...
#
# A literal is taken from `R"({` to the next `)"`; its file is named after
# the test file and its place in it (options_test-12.json).

cmake_minimum_required(VERSION 3.16)
# The files are the arguments after this script's path.
set(sources "")
set(previous "")
set(script_seen FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(script_seen)
    list(APPEND sources "${CMAKE_ARGV${i}}")
  elseif(previous STREQUAL "-P")
    set(script_seen TRUE)
  endif()
  set(previous "${CMAKE_ARGV${i}}")
endforeach()
if(NOT OUTPUT_DIR OR NOT sources)
  message(FATAL_ERROR "json_literals: usage: cmake -DOUTPUT_DIR=<directory> -P json_literals.cmake <file>...")
endif()

set(count 0)
foreach(source IN LISTS sources)
  file(READ "${source}" rest)
  get_filename_component(stem "${source}" NAME_WE)
  set(index 0)
  # Searched with FIND rather than a regular expression: a literal may hold
  # ';' or an unbalanced '[', which would split or merge the items of a
  # CMake list of matches.
  while(TRUE)
    string(FIND "${rest}" "R\"({" start)
    if(start EQUAL -1)
      break()
    endif()
    math(EXPR body "${start} + 3")
    string(SUBSTRING "${rest}" ${body} -1 rest)
    string(FIND "${rest}" ")\"" end)
    if(end EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${end} literal)
    math(EXPR index "${index} + 1")
    file(WRITE "${OUTPUT_DIR}/${stem}-${index}.json" "${literal}")
    math(EXPR after "${end} + 2")
    string(SUBSTRING "${rest}" ${after} -1 rest)
  endwhile()
  math(EXPR count "${count} + ${index}")
endforeach()
message(STATUS "json_literals: ${count} seeds")
