# The Python front end's interpreter: which Python `import tarantella` is
# built for, recorded in the cache as TNT_PYTHON_EXECUTABLE (the launcher runs
# `.py` programs with it; the Python tests run under it).
#
# Why not simply python3 from PATH: on these machines PATH's python3 may be
# another Python (pyenv, conda) without torch, and the extension must be
# built against the Python whose torch shares our LibTorch build: Debian's
# /usr/bin/python3 with python3-torch. The choice, in order:
#   1. TNT_PYTHON_EXECUTABLE, when the user gave it (-DTNT_PYTHON_EXECUTABLE=...);
#   2. /usr/bin/python3, when it can `import torch`;
#   3. python3 from PATH.
# The chosen one must import torch and pybind11 and have Python.h; when it
# cannot, configuration says which interpreter, what failed and the fix, and
# the Python front end is skipped (TNT_PYTHON_ENABLED OFF) instead of breaking
# the C++ build.
#
# Sets: TNT_PYTHON_ENABLED, TNT_PYTHON_EXECUTABLE (cache), and for
# src/python: TNT_PYTHON_VERSION, TNT_PYTHON_INCLUDE_DIR,
# TNT_PYBIND11_INCLUDE_DIR, TNT_PYTHON_EXT_SUFFIX, TNT_TORCH_PYTHON_LIBRARY.

# Not TNT_PYTHON: tests/CMakeLists.txt keeps the interpreter of the test
# scripts in that variable.
option(TNT_BUILD_PYTHON "Build the Python front end (import tarantella)" ON)
set(TNT_PYTHON_EXECUTABLE "" CACHE FILEPATH
    "Python the front end is built for (default: /usr/bin/python3 if it can import torch, else python3 from PATH)")
set(TNT_PYTHON_ENABLED OFF)

# One probe answers everything, one fact per line; a failure names what.
set(_tnt_python_probe [=[
import os, sys, sysconfig
print(sys.version.split()[0])
print(sysconfig.get_paths()["include"])
print(sysconfig.get_config_var("EXT_SUFFIX"))
try:
    import torch
except Exception as e:
    sys.exit("import torch failed: %s: %s" % (type(e).__name__, e))
print(torch.__version__)
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
# torch's own pybind11 where the torch ships one (pip and conda wheels):
# <torch/extension.h> includes it anyway, and the extension must agree with
# libtorch_python on pybind11's internals.
torch_include = os.path.join(os.path.dirname(torch.__file__), "include")
if os.path.exists(os.path.join(torch_include, "pybind11", "pybind11.h")):
    print(torch_include)
else:
    try:
        import pybind11
    except Exception as e:
        sys.exit("import pybind11 failed: %s: %s" % (type(e).__name__, e))
    print(pybind11.get_include())
]=])

function(_tnt_python_run exe result_var output_var error_var)
  # -I: isolated mode. Under `pip install .` with build isolation, PYTHONPATH
  # names the isolated build environment; -I ignores it, so the probe sees
  # the target environment's torch, the one the extension will run with.
  execute_process(COMMAND ${exe} -I -c "${_tnt_python_probe}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  set(${result_var} ${rc} PARENT_SCOPE)
  set(${output_var} "${out}" PARENT_SCOPE)
  set(${error_var} "${err}" PARENT_SCOPE)
endfunction()

if(TNT_BUILD_PYTHON)
  if(TNT_PYTHON_EXECUTABLE AND TNT_PYTHON_EXECUTABLE STREQUAL _TNT_PYTHON_AUTO)
    set(_tnt_py "${TNT_PYTHON_EXECUTABLE}")
    set(_tnt_py_why "${_TNT_PYTHON_AUTO_WHY}, chosen at the first configuration")
  elseif(TNT_PYTHON_EXECUTABLE)
    set(_tnt_py "${TNT_PYTHON_EXECUTABLE}")
    set(_tnt_py_why "given as -DTNT_PYTHON_EXECUTABLE")
  elseif(SKBUILD AND Python_EXECUTABLE)
    # `pip install .`: the interpreter pip runs for, the target environment's.
    set(_tnt_py "${Python_EXECUTABLE}")
    set(_tnt_py_why "the interpreter of pip install")
  else()
    set(_tnt_py "")
    # A pip or conda torch: the interpreter of the environment that holds it
    # (<env>/lib/pythonX.Y/site-packages/torch -> <env>/bin/python3).
    get_filename_component(_tnt_torch_env "${TORCH_INSTALL_PREFIX}/../../../.." ABSOLUTE)
    if(TORCH_INSTALL_PREFIX MATCHES "/site-packages/torch/?$" AND EXISTS "${_tnt_torch_env}/bin/python3")
      set(_tnt_py "${_tnt_torch_env}/bin/python3")
      set(_tnt_py_why "the interpreter of the environment whose torch was found")
    elseif(EXISTS /usr/bin/python3)
      _tnt_python_run(/usr/bin/python3 _rc _out _err)
      if(_rc EQUAL 0)
        set(_tnt_py /usr/bin/python3)
        set(_tnt_py_why "Debian's interpreter, which has python3-torch")
      endif()
    endif()
    if(NOT _tnt_py)
      find_program(_tnt_path_python3 NAMES python3 NO_CACHE)
      if(_tnt_path_python3)
        set(_tnt_py "${_tnt_path_python3}")
        set(_tnt_py_why "python3 from PATH (/usr/bin/python3 cannot import torch or is missing)")
      endif()
    endif()
  endif()

  if(NOT _tnt_py)
    message(WARNING "Tarantella: no Python interpreter found, so the Python front end is "
                    "skipped. Fix: apt-get install python3 python3-torch, or pass "
                    "-DTNT_PYTHON_EXECUTABLE=/path/to/python3.")
  else()
    _tnt_python_run("${_tnt_py}" _rc _out _err)
    if(NOT _rc EQUAL 0)
      string(REGEX REPLACE ".*\n" "" _err_last "${_err}")
      message(WARNING
        "Tarantella: the Python front end is skipped: ${_tnt_py} (${_tnt_py_why}) "
        "failed: ${_err_last}\n"
        "Fix: install Debian's packages for that interpreter (apt-get install python3-torch "
        "python3-dev pybind11-dev python3-pybind11), or point the build at a Python that "
        "has torch: -DTNT_PYTHON_EXECUTABLE=/usr/bin/python3. The C++ library, launcher and "
        "examples build as usual.")
    else()
      string(REPLACE "\n" ";" _facts "${_out}")
      list(GET _facts 0 TNT_PYTHON_VERSION)
      list(GET _facts 1 TNT_PYTHON_INCLUDE_DIR)
      list(GET _facts 2 TNT_PYTHON_EXT_SUFFIX)
      list(GET _facts 3 TNT_PYTHON_TORCH_VERSION)
      list(GET _facts 4 _tnt_torch_lib)
      list(GET _facts 5 TNT_PYBIND11_INCLUDE_DIR)
      find_library(TNT_TORCH_PYTHON_LIBRARY torch_python
                   HINTS ${_tnt_torch_lib} ${TORCH_INSTALL_PREFIX}/lib NO_CACHE)
      # The same torch on both sides: the libc10 that Python loads is the one
      # the C++ build links (Debian's python3-torch links into /usr/lib).
      get_filename_component(_tnt_py_c10 "${_tnt_torch_lib}/libc10.so" REALPATH)
      get_filename_component(_tnt_cxx_c10 "${c10_LIBRARY}" REALPATH)
      set(_tnt_torch_mismatch OFF)
      if(c10_LIBRARY AND NOT _tnt_py_c10 STREQUAL _tnt_cxx_c10)
        set(_tnt_torch_mismatch ON)
      endif()
      if(_tnt_torch_mismatch)
        message(WARNING "Tarantella: the Python front end is skipped: ${_tnt_py} (${_tnt_py_why}) "
                        "has torch ${TNT_PYTHON_TORCH_VERSION} in ${_tnt_torch_lib}, but the C++ build uses "
                        "the LibTorch in ${TORCH_INSTALL_PREFIX}; the extension must link the torch "
                        "that Python loads. Fix: configure with -DCMAKE_PREFIX_PATH=$(PY -c 'import "
                        "torch;print(torch.utils.cmake_prefix_path)') -DTNT_PYTHON_EXECUTABLE=PY for "
                        "one interpreter PY.")
      elseif(NOT EXISTS "${TNT_PYTHON_INCLUDE_DIR}/Python.h")
        message(WARNING "Tarantella: the Python front end is skipped: ${_tnt_py} has no "
                        "Python.h in ${TNT_PYTHON_INCLUDE_DIR}. Fix: apt-get install python3-dev.")
      elseif(NOT TNT_TORCH_PYTHON_LIBRARY)
        message(WARNING "Tarantella: the Python front end is skipped: libtorch_python.so "
                        "is not in ${_tnt_torch_lib}. Fix: apt-get install python3-torch.")
      else()
        set(TNT_PYTHON_ENABLED ON)
        if(NOT _tnt_py_why MATCHES "^given")
          set(_TNT_PYTHON_AUTO "${_tnt_py}" CACHE INTERNAL "")
          string(REGEX REPLACE ", chosen at the first configuration$" "" _why "${_tnt_py_why}")
          set(_TNT_PYTHON_AUTO_WHY "${_why}" CACHE INTERNAL "")
        endif()
        set(TNT_PYTHON_EXECUTABLE "${_tnt_py}" CACHE FILEPATH
            "Python the front end is built for (default: /usr/bin/python3 if it can import torch, else python3 from PATH)"
            FORCE)
        message(STATUS "Tarantella Python front end: ${_tnt_py} (${_tnt_py_why}): Python "
                       "${TNT_PYTHON_VERSION}, torch ${TNT_PYTHON_TORCH_VERSION}")
      endif()
    endif()
  endif()
else()
  message(STATUS "Tarantella Python front end: off (TNT_BUILD_PYTHON=OFF)")
endif()
