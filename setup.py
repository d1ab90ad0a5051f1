"""The build behind `pip install .` (pyproject.toml has the package's
metadata): CMake builds the extension `sprintrt._sprintrt` against the
interpreter that runs pip, and the `sprintrt` and `sprint-sim` programs,
which go into the package's `bin` directory (where
`sprintrt.executable_path` finds them; the `sprintrt` and `sprint-sim`
commands of the environment run them). Nothing is downloaded: the C++
dependencies are the system's (scripts/setup.sh)."""

import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# The programs the package carries: name -> path in the CMake build tree.
PROGRAMS = {"sprintrt": os.path.join("tools", "sprintrt", "sprintrt"),
            "sprint-sim": os.path.join("tools", "sprint-sim", "sprint-sim")}


class CMakeExtension(Extension):
    """An extension whose sources CMake knows, not setuptools."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures and builds the CMake project (Release, no tests or
    benchmarks) in the build's temporary directory, then copies the
    extension and the programs into the package."""

    def build_extension(self, ext):
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        self._run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                   "-DCMAKE_BUILD_TYPE=Release", "-DPython_EXECUTABLE=" + sys.executable,
                   "-DSPRINTRT_PYTHON=ON", "-DSPRINTRT_REQUIRE_PYTHON=ON",
                   "-DSPRINTRT_BUILD_TESTS=OFF", "-DSPRINTRT_BUILD_BENCHMARKS=OFF"])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        self._run(["cmake", "--build", build_dir, "--parallel", jobs, "--target", "_sprintrt",
                   *PROGRAMS])
        built = glob.glob(os.path.join(build_dir, "python", "sprintrt", "_sprintrt*.so"))
        if len(built) != 1:
            sys.exit("setup.py: expected one extension _sprintrt*.so in %s, found %s"
                     % (os.path.join(build_dir, "python", "sprintrt"), built))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(built[0], target)
        bin_dir = os.path.join(os.path.dirname(target), "bin")
        os.makedirs(bin_dir, exist_ok=True)
        for name, path in PROGRAMS.items():
            shutil.copy2(os.path.join(build_dir, path), os.path.join(bin_dir, name))

    @staticmethod
    def _run(command):
        print("setup.py:", " ".join(command), flush=True)
        try:
            subprocess.run(command, check=True)
        except FileNotFoundError:
            sys.exit("setup.py: %s is not installed (scripts/setup.sh installs what sprintrt "
                     "builds with)" % command[0])
        except subprocess.CalledProcessError as e:
            sys.exit("setup.py: '%s' failed with exit status %d (its output is above)"
                     % (" ".join(command[:3]), e.returncode))


# pip builds in the source tree it is given, the user's checkout: the build
# (the CMake tree, the wheel's staging) goes into a temporary directory
# instead, removed when the build ends, so that nothing is left there and
# nothing stale from an earlier build is packed.
build_base = tempfile.mkdtemp(prefix="sprintrt-build-")
atexit.register(shutil.rmtree, build_base, ignore_errors=True)
setup(ext_modules=[CMakeExtension("sprintrt._sprintrt")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": build_base}, "egg_info": {"egg_base": build_base}})
