# Fails when server/ reaches past the engine's interface: the HTTP layer
# may include only server/, engine/ (not engine/model_executor.h, the
# model-facing part), tokenizer/, chat/, util/ and sampling/params.h, and
# weft_server may link only weft_engine, weft_tokenizer, weft_chat,
# weft_sampling_params and weft_util among Weft's libraries (plus Boost,
# JSON, threads). Building an engine from a model file (model, kernels, kv,
# tensor, gguf, the sampler) is runtime/'s job. Any other "..." include or
# weft_* library fails, so an upward edge (runtime, bench) fails too.
#
#   cmake -DSERVER_DIR=src/server "-DLINKS=weft_engine|weft_util|..." \
#         -P tests/server/check_deps.cmake
#
# LINKS is weft_server's LINK_LIBRARIES, '|'-separated (tests/server/
# CMakeLists.txt passes the configured target's property).
cmake_minimum_required(VERSION 3.25)

if(NOT SERVER_DIR OR NOT IS_DIRECTORY "${SERVER_DIR}")
  message(FATAL_ERROR "SERVER_DIR (the src/server folder) is not set or missing")
endif()
get_filename_component(SERVER_DIR "${SERVER_DIR}" ABSOLUTE)
if(NOT DEFINED LINKS OR LINKS STREQUAL "")
  message(FATAL_ERROR "LINKS (weft_server's link libraries) is empty")
endif()

set(allowed_include_dirs server engine tokenizer chat util)
set(allowed_include_files sampling/params.h)
set(forbidden_include_files engine/model_executor.h)
set(allowed_libs weft_engine weft_tokenizer weft_chat weft_sampling_params weft_util)

set(problems "")
file(GLOB_RECURSE sources RELATIVE "${SERVER_DIR}" "${SERVER_DIR}/*.h" "${SERVER_DIR}/*.cc")
list(SORT sources)
if(NOT sources)
  message(FATAL_ERROR "no .h or .cc files under ${SERVER_DIR}")
endif()
foreach(src ${sources})
  file(STRINGS "${SERVER_DIR}/${src}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" inc "${line}")
    string(REGEX REPLACE "/.*$" "" top "${inc}")
    if(inc IN_LIST forbidden_include_files)
      set(ok FALSE)
    elseif(inc IN_LIST allowed_include_files)
      set(ok TRUE)
    elseif(inc MATCHES "/" AND top IN_LIST allowed_include_dirs)
      set(ok TRUE)
    else()
      set(ok FALSE)
    endif()
    if(NOT ok)
      string(APPEND problems "  src/server/${src} includes \"${inc}\"\n")
    endif()
  endforeach()
endforeach()

string(REPLACE "|" ";" links "${LINKS}")
foreach(lib ${links})
  if(lib MATCHES "^weft_" AND NOT lib IN_LIST allowed_libs)
    string(APPEND problems "  weft_server links ${lib}\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "server/ depends on code past the engine's interface or above "
          "itself (engine assembly belongs in runtime/):\n${problems}")
endif()
list(LENGTH sources n)
message(STATUS "server/: ${n} files, links [${LINKS}]: layering OK")
