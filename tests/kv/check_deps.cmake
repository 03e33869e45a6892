# Fails when kv/ reaches above itself: the KV block pool, block tables and
# sizing sit right above util/ and below model/ (model describes its KV
# needs to kv in a plain kv::KvLayout, never the other way round). kv/ may
# include only kv/ and util/, and weft_kv may link only weft_util among
# Weft's libraries.
#
#   cmake -DKV_DIR=src/kv "-DLINKS=weft_util" -P tests/kv/check_deps.cmake
#
# LINKS is weft_kv's LINK_LIBRARIES, '|'-separated (tests/kv/CMakeLists.txt
# passes the configured target's property).
cmake_minimum_required(VERSION 3.25)

if(NOT KV_DIR OR NOT IS_DIRECTORY "${KV_DIR}")
  message(FATAL_ERROR "KV_DIR (the src/kv folder) is not set or missing")
endif()
get_filename_component(KV_DIR "${KV_DIR}" ABSOLUTE)

set(allowed_include_dirs kv util)
set(allowed_libs weft_util)

set(problems "")
file(GLOB_RECURSE sources RELATIVE "${KV_DIR}" "${KV_DIR}/*.h" "${KV_DIR}/*.cc")
list(SORT sources)
if(NOT sources)
  message(FATAL_ERROR "no .h or .cc files under ${KV_DIR}")
endif()
foreach(src ${sources})
  file(STRINGS "${KV_DIR}/${src}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" inc "${line}")
    string(REGEX REPLACE "/.*$" "" top "${inc}")
    if(NOT (inc MATCHES "/" AND top IN_LIST allowed_include_dirs))
      string(APPEND problems "  src/kv/${src} includes \"${inc}\"\n")
    endif()
  endforeach()
endforeach()

string(REPLACE "|" ";" links "${LINKS}")
foreach(lib ${links})
  if(lib MATCHES "^weft_" AND NOT lib IN_LIST allowed_libs)
    string(APPEND problems "  weft_kv links ${lib}\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "kv/ depends on code above itself:\n${problems}")
endif()
list(LENGTH sources n)
message(STATUS "kv/: ${n} files, links [${LINKS}]: layering OK")
