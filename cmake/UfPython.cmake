# The Python package (python/uringfeed) installed beside libufconsumer, so that
# `python3 -c "import uringfeed"` works after the .deb with no environment variable.
#
#   UF_PYTHON_INSTALL_DIR   prefix-relative folder for the package; default
#                           lib/python3/dist-packages: with prefix /usr (the .deb) that is where
#                           Debian's python3 looks. For another prefix add that folder to
#                           sys.path, or install with pip instead (docs/consumers.md, "Python").
#
# The package learns where the library is from uringfeed/_libpath.py, written here as a path
# relative to the package folder (both are prefix-relative), so it stays right under DESTDIR,
# cpack's staging and any --prefix. python/uringfeed/_lib.py says the lookup order.
set(UF_PYTHON_INSTALL_DIR "lib/python3/dist-packages"
    CACHE STRING "Where (relative to the prefix) cmake --install puts the uringfeed Python package")
if(IS_ABSOLUTE "${UF_PYTHON_INSTALL_DIR}")
  message(FATAL_ERROR "UF_PYTHON_INSTALL_DIR must be relative to the install prefix: "
                      "${UF_PYTHON_INSTALL_DIR}")
endif()
set(uf_py_pkg ${UF_PYTHON_INSTALL_DIR}/uringfeed)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(uf_py_lib "${CMAKE_INSTALL_LIBDIR}/libufconsumer.so.2")
else()
  file(RELATIVE_PATH uf_py_lib "/p/${uf_py_pkg}" "/p/${CMAKE_INSTALL_LIBDIR}/libufconsumer.so.2")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/python/_libpath.py
     "\"\"\"Written by cmake --install (cmake/UfPython.cmake): the libufconsumer to load, relative\n"
     "to this package's folder (python/uringfeed/_lib.py).\"\"\"\nLIBRARY = \"${uf_py_lib}\"\n")

install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/uringfeed/ DESTINATION ${uf_py_pkg}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/python/_libpath.py DESTINATION ${uf_py_pkg})
