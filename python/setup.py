"""Build hook of the uringfeed package (metadata: pyproject.toml).

Records where libufconsumer is when UF_CONSUMER_LIB is set during `pip install`: the built
package gets uringfeed/_libpath.py naming that library (an absolute path), which _lib.py loads
without any environment variable afterwards. Without UF_CONSUMER_LIB nothing is recorded and
the package uses the system loader (an installed libufconsumer.so.2).
"""
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class BuildPyRecordingLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("UF_CONSUMER_LIB")
        if not lib:
            return
        # pip builds in a copy or in the source folder: only an absolute path means one file
        if not os.path.isabs(lib) or not os.path.isfile(lib):
            raise SystemExit("uringfeed: UF_CONSUMER_LIB=%s: give the library's absolute path"
                             % lib)
        out = os.path.join(self.build_lib, "uringfeed", "_libpath.py")
        with open(out, "w") as f:
            f.write('"""Written by pip install (python/setup.py): the libufconsumer to load."""\n')
            f.write("LIBRARY = %r\n" % lib)


# uringfeed and any subpackage it grows; not tests/
setup(packages=find_packages(include=["uringfeed", "uringfeed.*"]),
      cmdclass={"build_py": BuildPyRecordingLibrary})
