# Test conventions.
#
# uf_add_test(NAME <name> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <s>]
#             [LABELS <labels...>] [CONFORMANCE])
# builds one cmocka executable and registers it with CTest under a hard timeout (default 60 s).
# CONFORMANCE marks a test that reads the third-party captures in ../shared/data: it gets
# UF_SHARED_DATA in its environment and the label "conformance". Those files are never
# copied into the build or the repository.

set(UF_SHARED_DATA_DEFAULT "${CMAKE_SOURCE_DIR}/../shared/data")
if(DEFINED ENV{UF_SHARED_DATA})
  set(UF_SHARED_DATA_DEFAULT "$ENV{UF_SHARED_DATA}")
endif()
set(UF_SHARED_DATA "${UF_SHARED_DATA_DEFAULT}" CACHE PATH "Third-party captures for conformance tests")
get_filename_component(UF_SHARED_DATA "${UF_SHARED_DATA}" ABSOLUTE)
if(EXISTS "${UF_SHARED_DATA}/README.md")
  set(UF_HAVE_SHARED_DATA ON)
  message(STATUS "conformance data: ${UF_SHARED_DATA}")
else()
  set(UF_HAVE_SHARED_DATA OFF)
  message(WARNING "conformance data not found at ${UF_SHARED_DATA}: conformance tests "
                  "are NOT registered (set UF_SHARED_DATA to the shared/data folder)")
endif()

function(uf_add_test)
  cmake_parse_arguments(T "CONFORMANCE" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(T_CONFORMANCE AND NOT UF_HAVE_SHARED_DATA)
    message(STATUS "conformance test ${T_NAME} not registered: no data at ${UF_SHARED_DATA}")
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-bin)
  target_link_libraries(${T_NAME} PRIVATE PkgConfig::CMOCKA uf_common ${T_LIBS})
  target_compile_definitions(${T_NAME} PRIVATE UF_BIN_DIR="${CMAKE_BINARY_DIR}/bin"
                             UF_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set(env "UF_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  set(labels ${T_LABELS})
  if(T_CONFORMANCE)
    list(APPEND env "UF_SHARED_DATA=${UF_SHARED_DATA}")
    list(APPEND labels conformance)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${env}"
                       LABELS "${labels}")
endfunction()

# uf_add_fuzz_test(NAME <name> SOURCES <files...> [SECONDS <s>] [SEEDS <dir>])
# (only with -DUF_FUZZ=ON and clang) builds a libFuzzer target with ASan+UBSan, the code under
# test compiled into it so libFuzzer sees its coverage, and registers a bounded run (label
# "fuzz"): any crash, leak or sanitizer report fails the test. New inputs go to a corpus in
# the build tree; the committed seeds in <test dir>/fuzz-seeds (or SEEDS) are only read.
function(uf_add_fuzz_test)
  cmake_parse_arguments(F "" "NAME;SECONDS;SEEDS" "SOURCES" ${ARGN})
  if(NOT UF_FUZZ)
    return()
  endif()
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "UF_FUZZ needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang")
  endif()
  if(NOT F_SECONDS)
    set(F_SECONDS 20)
  endif()
  if(NOT F_SEEDS)
    set(F_SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz-seeds)
  endif()
  set(flags -fsanitize=fuzzer,address,undefined)
  add_executable(${F_NAME} ${F_SOURCES})
  target_include_directories(${F_NAME} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_options(${F_NAME} PRIVATE ${flags} -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_link_options(${F_NAME} PRIVATE ${flags})
  target_link_libraries(${F_NAME} PRIVATE PkgConfig::ZLIB) # UF_DECODE_SRCS' gzip reader
  set_target_properties(${F_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-bin)
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}-corpus)
  file(MAKE_DIRECTORY ${corpus})
  add_test(NAME ${F_NAME}
           COMMAND ${F_NAME} -max_total_time=${F_SECONDS} -rss_limit_mb=1024 -timeout=10
                   -print_final_stats=1 ${corpus} ${F_SEEDS})
  math(EXPR budget "${F_SECONDS} * 3")
  set_tests_properties(${F_NAME} PROPERTIES LABELS fuzz TIMEOUT ${budget})
endfunction()
