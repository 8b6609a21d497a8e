# The consumer SDK's headers as a consumer includes them: <uringfeed/ufconsumer.h>,
# <uringfeed/ufbook.h>, <uringfeed/uf_record.h>, <uringfeed/uf_level.h>.
#
# In the source tree the four headers live in their modules (ring/, publish/) and include each
# other by module path ("publish/uf_record.h"), which the layering check and every in-tree
# target rely on. A consumer should not see the source tree's folders, so at configure time
# uf_sdk_headers() writes flat copies into BUILD/include/uringfeed/ whose include lines name
# their siblings ("uf_record.h": a quoted include is looked up beside the including file
# first, so it resolves in any prefix and in the build tree alike). Only those lines differ
# from the sources; editing a source re-runs the configure step (CMAKE_CONFIGURE_DEPENDS).
#
# The old paths (<prefix>/include/uringfeed/ring/ufconsumer.h with -I<prefix>/include/uringfeed)
# keep working through the 0.1.x releases: BUILD/include/uringfeed/ring/ufconsumer.h and the
# three others are one-line forwards to the flat headers. They go in 0.2.0 (docs/consumers.md).
#
# Fails the configure step when a header gains a quoted include of a project header that is not
# installed: the installed copy could not compile, so say so here rather than in a user's build.

# uf_sdk_headers(OUT_DIR dir SOURCES module/header.h...): writes OUT_DIR/uringfeed/<header>.h
# for each source and OUT_DIR/uringfeed/<module>/<header>.h forwards.
function(uf_sdk_headers)
  cmake_parse_arguments(arg "" "OUT_DIR" "SOURCES" ${ARGN})
  set(names "")
  foreach(src ${arg_SOURCES})
    get_filename_component(name ${src} NAME)
    list(APPEND names ${name})
  endforeach()
  set(out ${arg_OUT_DIR}/uringfeed)
  set(uf_sdk_template ${CMAKE_CURRENT_BINARY_DIR}/uf_sdk_header.in)
  if(NOT EXISTS ${uf_sdk_template})
    file(WRITE ${uf_sdk_template} "@uf_sdk_text@")
  endif()
  foreach(src ${arg_SOURCES})
    get_filename_component(name ${src} NAME)
    get_filename_component(module ${src} DIRECTORY)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${src})
    file(READ ${CMAKE_SOURCE_DIR}/${src} text)
    # "module/name.h" -> "name.h" for every installed sibling.
    foreach(sib ${names})
      string(REGEX REPLACE "(#[ \t]*include[ \t]*\")[A-Za-z0-9_]+/(${sib}\")" "\\1\\2" text
                           "${text}")
    endforeach()
    string(REGEX MATCHALL "#[ \t]*include[ \t]*\"[^\"]*/[^\"]*\"" left "${text}")
    if(left)
      message(FATAL_ERROR "${src} includes ${left}, which libufconsumer does not install: "
                          "install it too (ring/CMakeLists.txt, uf_sdk_headers) or include "
                          "it privately")
    endif()
    # configure_file substitutes the template's one @uf_sdk_text@, never inside the value, and
    # leaves the file (and its time stamp) alone when the text did not change.
    set(uf_sdk_text "${text}")
    configure_file(${uf_sdk_template} ${out}/${name} @ONLY)
    file(CONFIGURE OUTPUT ${out}/${module}/${name} CONTENT
"/* Deprecated include path, kept for the 0.1.x releases and removed in 0.2.0:
 * include <uringfeed/${name}> instead (docs/consumers.md, \"Include paths\"). */
#include \"../${name}\"
" @ONLY)
  endforeach()
endfunction()
