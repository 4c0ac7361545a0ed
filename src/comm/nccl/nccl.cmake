# The NCCL backend (comm/nccl/), included from src/CMakeLists.txt, which
# also lists the backend choice (comm/world/) that asks for it.
#
# TNT_WITH_NCCL: AUTO (the default) builds the NCCL backend when the torch
# found is a CUDA build and NCCL is found; ON demands it (configuration fails
# and says what is missing); OFF never builds it. Without it,
# comm/nccl/nccl_absent.cpp answers "not built" and every group runs on MPI
# exactly as before (Debian's CPU-only LibTorch 1.13 is such a build).
#
# One NCCL per process: the one torch itself loads. A pip torch's
# libtorch_cuda loads the nvidia-nccl wheel beside it
# (site-packages/nvidia/nccl/lib/libnccl.so.2, through its RPATH), so that
# library is looked for first; a conda or source torch loads the system's
# (the CUDA toolkit's, or the distribution's), found by the usual search,
# NCCL_ROOT first. nccl.h comes from the same installation where it has
# one, else from the CUDA toolkit. A torch that links NCCL statically (no
# libnccl among libtorch_cuda's needs) would make a second copy: refused.
#
# Hints: -DNCCL_ROOT=<prefix>, or -DTNT_NCCL_LIBRARY=... -DTNT_NCCL_INCLUDE_DIR=...

set(TNT_WITH_NCCL AUTO CACHE STRING "Build the NCCL backend: AUTO, ON or OFF")
set_property(CACHE TNT_WITH_NCCL PROPERTY STRINGS AUTO ON OFF)

target_sources(tarantella PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_plan.cpp)

# Sets _tnt_nccl_missing to why the backend cannot be built ("" when it can).
function(_tnt_find_nccl)
  set(_tnt_nccl_missing "" PARENT_SCOPE)
  if(NOT TARGET torch_cuda)
    set(_tnt_nccl_missing "torch ${TNT_TORCH_VERSION} at ${TORCH_INSTALL_PREFIX} is not a CUDA build"
        PARENT_SCOPE)
    return()
  endif()
  set(_torch_cuda "${TORCH_INSTALL_PREFIX}/lib/libtorch_cuda.so")
  if(EXISTS "${_torch_cuda}" AND CMAKE_OBJDUMP)
    execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${_torch_cuda}" OUTPUT_VARIABLE _dyn
                    ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND NOT _dyn MATCHES "NEEDED +libnccl")
      set(_tnt_nccl_missing "${_torch_cuda} carries its own NCCL (linked statically), and a second "
          "copy in the process is not allowed" PARENT_SCOPE)
      return()
    endif()
  endif()
  get_filename_component(_wheel "${TORCH_INSTALL_PREFIX}/../nvidia/nccl" ABSOLUTE)
  find_library(TNT_NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS "${_wheel}/lib" NO_DEFAULT_PATH)
  find_library(TNT_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda
               PATH_SUFFIXES lib lib64)
  if(NOT TNT_NCCL_LIBRARY)
    set(_tnt_nccl_missing "no libnccl found (looked in ${_wheel}/lib, NCCL_ROOT, the CUDA toolkit "
        "and the system's folders)" PARENT_SCOPE)
    return()
  endif()
  get_filename_component(_lib_dir "${TNT_NCCL_LIBRARY}" DIRECTORY)
  find_path(TNT_NCCL_INCLUDE_DIR nccl.h PATHS "${_lib_dir}/../include" NO_DEFAULT_PATH)
  find_path(TNT_NCCL_INCLUDE_DIR nccl.h
            HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda
            PATH_SUFFIXES include)
  if(NOT TNT_NCCL_INCLUDE_DIR)
    set(_tnt_nccl_missing "libnccl is ${TNT_NCCL_LIBRARY}, but no nccl.h was found beside it or in "
        "the CUDA toolkit" PARENT_SCOPE)
    return()
  endif()
  # 2.27 or later: the backend keeps several non-blocking communicators
  # (point-to-point channels) in progress on one thread, which earlier
  # NCCLs do not allow (one background job per thread).
  file(STRINGS "${TNT_NCCL_INCLUDE_DIR}/nccl.h" _v REGEX "^#define NCCL_(MAJOR|MINOR) +[0-9]+")
  string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
  string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
  if(NOT _major MATCHES "^[0-9]+$" OR NOT _minor MATCHES "^[0-9]+$")
    set(_tnt_nccl_missing "${TNT_NCCL_INCLUDE_DIR}/nccl.h does not say its version" PARENT_SCOPE)
  elseif(_major LESS 2 OR (_major EQUAL 2 AND _minor LESS 27))
    set(_tnt_nccl_missing "NCCL ${_major}.${_minor} (${TNT_NCCL_INCLUDE_DIR}) is older than 2.27, "
        "which the backend needs (non-blocking communicators side by side on one thread)"
        PARENT_SCOPE)
  endif()
endfunction()

string(TOUPPER "${TNT_WITH_NCCL}" _tnt_nccl_mode)
if(_tnt_nccl_mode MATCHES "^(1|TRUE|YES)$")
  set(_tnt_nccl_mode ON)
elseif(_tnt_nccl_mode MATCHES "^(0|FALSE|NO)$")
  set(_tnt_nccl_mode OFF)
endif()
if(NOT _tnt_nccl_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "Tarantella: TNT_WITH_NCCL=${TNT_WITH_NCCL} is not valid: use AUTO, ON or OFF")
endif()

set(TNT_HAVE_NCCL OFF)
if(_tnt_nccl_mode STREQUAL "OFF")
  set(_tnt_nccl_why "TNT_WITH_NCCL=OFF")
else()
  _tnt_find_nccl()
  if(_tnt_nccl_missing STREQUAL "")
    set(TNT_HAVE_NCCL ON)
  elseif(_tnt_nccl_mode STREQUAL "ON")
    message(FATAL_ERROR "Tarantella: TNT_WITH_NCCL=ON, but ${_tnt_nccl_missing}. Fix: build against "
                        "a CUDA build of torch (pip install torch, then "
                        "-DCMAKE_PREFIX_PATH=$(python -c 'import torch;print(torch.utils.cmake_prefix_path)')), "
                        "point -DNCCL_ROOT at an NCCL installation, or configure with "
                        "-DTNT_WITH_NCCL=AUTO or OFF.")
  else()
    set(_tnt_nccl_why "${_tnt_nccl_missing}")
  endif()
endif()

# For tests/cuda (a sibling of src/): whether there is a backend to test.
set(TNT_HAVE_NCCL ${TNT_HAVE_NCCL} PARENT_SCOPE)
if(TNT_HAVE_NCCL)
  target_sources(tarantella PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/nccl_factory.cpp
    ${CMAKE_CURRENT_LIST_DIR}/nccl_comm.cpp
    ${CMAKE_CURRENT_LIST_DIR}/nccl_backend.cpp
    ${CMAKE_CURRENT_LIST_DIR}/nccl_p2p.cpp)
  target_include_directories(tarantella SYSTEM PRIVATE "${TNT_NCCL_INCLUDE_DIR}")
  target_link_libraries(tarantella PRIVATE "${TNT_NCCL_LIBRARY}")
  if(SKBUILD AND TNT_NCCL_LIBRARY MATCHES "/nvidia/nccl/lib/")
    # In a wheel: the nvidia-nccl wheel beside torch, as libtorch_cuda finds it.
    get_target_property(_rpath tarantella INSTALL_RPATH)
    set_target_properties(tarantella PROPERTIES INSTALL_RPATH "${_rpath};$ORIGIN/../../nvidia/nccl/lib")
  endif()
  message(STATUS "Tarantella: NCCL backend ON (${TNT_NCCL_LIBRARY}, headers ${TNT_NCCL_INCLUDE_DIR})")
else()
  target_sources(tarantella PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_absent.cpp)
  message(STATUS "Tarantella: NCCL backend OFF (${_tnt_nccl_why})")
endif()
