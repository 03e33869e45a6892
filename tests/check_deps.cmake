# Fails when a module under src/ includes or links something it must not
# (something above it in the dependency tree, or past an interface). Each
# test names what its module may use; tests/CMakeLists.txt's
# weft_deps_test() builds the command line.
#
#   cmake -DDIR=src/server -DTARGET=weft_server \
#         "-DLINKS=weft_engine|weft_util|..." \
#         "-DINCLUDE_DIRS=server|engine|util" "-DINCLUDE_FILES=sampling/params.h" \
#         "-DFORBIDDEN_FILES=engine/model_executor.h" "-DALLOWED_LIBS=weft_engine|weft_util" \
#         "-DWHY=engine assembly belongs in runtime/" -P tests/check_deps.cmake
#
# Lists are '|'-separated. LINKS is TARGET's LINK_LIBRARIES (the configured
# target's property). A "..." include is allowed when it is in
# INCLUDE_FILES, or when its first folder is in INCLUDE_DIRS and it is not in
# FORBIDDEN_FILES; a bare "x.h" (no folder) always fails. A weft_* library
# in LINKS must be in ALLOWED_LIBS (Boost, JSON, threads are not checked).
cmake_minimum_required(VERSION 3.25)

if(NOT DIR OR NOT IS_DIRECTORY "${DIR}")
  message(FATAL_ERROR "DIR (the module's folder under src/) is not set or missing")
endif()
if(NOT TARGET)
  message(FATAL_ERROR "TARGET (the module's library) is not set")
endif()
if(NOT DEFINED LINKS OR LINKS STREQUAL "")
  message(FATAL_ERROR "LINKS (${TARGET}'s link libraries) is empty")
endif()
if(NOT INCLUDE_DIRS)
  message(FATAL_ERROR "INCLUDE_DIRS (the folders ${TARGET} may include) is not set")
endif()
get_filename_component(DIR "${DIR}" ABSOLUTE)
get_filename_component(module "${DIR}" NAME)
set(links_text "${LINKS}")

foreach(var INCLUDE_DIRS INCLUDE_FILES FORBIDDEN_FILES ALLOWED_LIBS LINKS)
  string(REPLACE "|" ";" ${var} "${${var}}")
endforeach()

set(problems "")
file(GLOB_RECURSE sources RELATIVE "${DIR}" "${DIR}/*.h" "${DIR}/*.cc")
list(SORT sources)
if(NOT sources)
  message(FATAL_ERROR "no .h or .cc files under ${DIR}")
endif()
foreach(src ${sources})
  file(STRINGS "${DIR}/${src}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" inc "${line}")
    string(REGEX REPLACE "/.*$" "" top "${inc}")
    if(inc IN_LIST FORBIDDEN_FILES)
      set(ok FALSE)
    elseif(inc IN_LIST INCLUDE_FILES)
      set(ok TRUE)
    elseif(inc MATCHES "/" AND top IN_LIST INCLUDE_DIRS)
      set(ok TRUE)
    else()
      set(ok FALSE)
    endif()
    if(NOT ok)
      string(APPEND problems "  src/${module}/${src} includes \"${inc}\"\n")
    endif()
  endforeach()
endforeach()

foreach(lib ${LINKS})
  if(lib MATCHES "^weft_" AND NOT lib IN_LIST ALLOWED_LIBS)
    string(APPEND problems "  ${TARGET} links ${lib}\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "${module}/ depends on code it must not (${WHY}):\n${problems}")
endif()
list(LENGTH sources n)
message(STATUS "${module}/: ${n} files, links [${links_text}]: layering OK")
