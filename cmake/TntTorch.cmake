# What the LibTorch found by find_package(Torch) means for the rest of the
# build: its version, its C++ ABI, and which fmt every target uses.
#
# Two LibTorch worlds build this tree: Debian 12's LibTorch 1.13
# (/usr/share/cmake/Torch) and pip/conda torch 2.x, configured with
# -DCMAKE_PREFIX_PATH=$(python -c 'import torch;print(torch.utils.cmake_prefix_path)').
# Their API differences live in include/tarantella/base/torch_compat.h; what
# differs for the build lives here.
#
# Sets TNT_TORCH_VERSION, TNT_TORCH_CXX11_ABI and (tnt_torch_settings) the
# target tnt_fmt.

# TorchConfig.cmake looks for its libraries with find_library(... PATHS
# <torch>/lib), and CMake searches PATHS after the system's folders: on a
# machine that also has Debian's libtorch-dev, a pip torch's headers would
# be paired with Debian's /usr/lib/x86_64-linux-gnu/libtorch.so. So the lib/
# folder of the torch that CMAKE_PREFIX_PATH (or Torch_DIR) names is put
# first in CMAKE_LIBRARY_PATH, which find_library searches before those.
# `pip install .`: the torch of the environment pip installs into, asked of
# its interpreter in isolated mode (-I), so that under build isolation the
# build's own PYTHONPATH does not hide it and no second torch is downloaded.
if(SKBUILD AND Python_EXECUTABLE)
  execute_process(COMMAND "${Python_EXECUTABLE}" -I -c "import torch;print(torch.utils.cmake_prefix_path)"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _tnt_torch_cmake ERROR_VARIABLE _err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "Tarantella: pip install needs torch in the environment it installs "
                        "into, but ${Python_EXECUTABLE} cannot import it: ${_err}\n"
                        "Fix: ${Python_EXECUTABLE} -m pip install torch, then install tarantella.")
  endif()
  # pyproject.toml keeps one build folder (build-wheel/) between installs; its
  # cache holds the paths of the torch it was first configured for.
  if(TNT_SKBUILD_TORCH AND NOT TNT_SKBUILD_TORCH STREQUAL _tnt_torch_cmake)
    message(FATAL_ERROR "Tarantella: ${CMAKE_BINARY_DIR} was configured for the torch in "
                        "${TNT_SKBUILD_TORCH}, but this pip install is for ${_tnt_torch_cmake}. "
                        "Fix: remove ${CMAKE_BINARY_DIR}, or give each environment its own "
                        "folder: pip install . -C build-dir=build-wheel-<name>")
  endif()
  set(TNT_SKBUILD_TORCH "${_tnt_torch_cmake}" CACHE INTERNAL "")
  list(PREPEND CMAKE_PREFIX_PATH "${_tnt_torch_cmake}")
endif()

set(_tnt_torch_roots)
# (Names with _tnt_: this file is included at the top level of projects,
# the fuzz tree's among them, whose own variables it must not overwrite.)
foreach(_tnt_p IN LISTS Torch_DIR CMAKE_PREFIX_PATH)
  foreach(_tnt_rel IN ITEMS "share/cmake/Torch" "Torch" ".")
    if(EXISTS "${_tnt_p}/${_tnt_rel}/TorchConfig.cmake")
      get_filename_component(_tnt_root "${_tnt_p}/${_tnt_rel}/../../.." ABSOLUTE)
      if(EXISTS "${_tnt_root}/lib")
        list(APPEND _tnt_torch_roots "${_tnt_root}/lib")
      endif()
      break()
    endif()
  endforeach()
endforeach()
list(PREPEND CMAKE_LIBRARY_PATH ${_tnt_torch_roots})
find_package(Torch REQUIRED)
get_filename_component(_tnt_torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
get_filename_component(_tnt_torch_lib_dir "${_tnt_torch_lib_dir}" REALPATH)
get_filename_component(_tnt_torch_prefix_lib "${TORCH_INSTALL_PREFIX}/lib" REALPATH)
if(NOT _tnt_torch_lib_dir STREQUAL _tnt_torch_prefix_lib AND
   NOT TORCH_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "Tarantella: torch's headers are from ${TORCH_INSTALL_PREFIX} but its "
                      "library is ${TORCH_LIBRARY}: two LibTorch installations are mixed. Fix: "
                      "-DTorch_DIR=${TORCH_INSTALL_PREFIX}/share/cmake/Torch")
endif()

# A pip torch built for CUDA loads the CUDA libraries and NCCL of the nvidia-*
# wheels beside it (site-packages/nvidia/*/lib, through libtorch_cuda's
# RPATH), which may be newer than the toolkit in /usr/local/cuda (2.15 is
# built for CUDA 13.2, the toolkit here is 13.0). torch's CMake links
# executables to the toolkit's libcudart, and the linker would check
# libtorch_cuda's needs against the toolkit's older libnccl. So: every link
# resolves torch's dependencies in the wheels' folders (-rpath-link), and
# torch::cudart is the wheel's libcudart, so that a process holds one CUDA
# runtime, the one torch itself uses. The toolkit still provides nvcc and
# headers.
get_filename_component(_tnt_nvidia "${TORCH_INSTALL_PREFIX}/../nvidia" ABSOLUTE)
file(GLOB _tnt_nvidia_libs LIST_DIRECTORIES true "${_tnt_nvidia}/*/lib")
if(_tnt_nvidia_libs)
  foreach(_tnt_dir IN LISTS _tnt_nvidia_libs)
    add_link_options("LINKER:-rpath-link,${_tnt_dir}")
  endforeach()
  file(GLOB _tnt_wheel_cudart "${_tnt_nvidia}/*/lib/libcudart.so.*")
  if(_tnt_wheel_cudart AND TARGET torch::cudart)
    list(GET _tnt_wheel_cudart 0 _tnt_wheel_cudart)
    # CUDA::cudart, which this replaces, was also what brought the toolkit's
    # headers (cuda.h, cuda_runtime.h) to c10_cuda and torch_cuda's users:
    # keep them, or every source that includes c10/cuda or nccl.h compiles
    # only where the headers happen to be in /usr/local/include.
    set_property(TARGET torch::cudart PROPERTY INTERFACE_LINK_LIBRARIES "${_tnt_wheel_cudart}")
    set_property(TARGET torch::cudart APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
                 ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  set(TNT_TORCH_NVIDIA_LIB_DIRS ${_tnt_nvidia_libs})
endif()

# libstdc++ before LibTorch. pip torch's libtorch.so (2.11 at least; not
# 2.15) exports its own statically linked copies of libstdc++'s
# std::filesystem functions (pytorch/pytorch#133437). The linker lists
# libstdc++.so.6 last among a binary's needed libraries, so the dynamic
# linker finds torch's copies first, and some of them crash: with 2.11,
# std::filesystem::remove_all jumps to address 0. Naming libstdc++ first
# makes every std::filesystem call, ours and torch's, use libstdc++'s own.
# TNT_LIBSTDCXX_FIRST is also a usage requirement of the tarantella target
# (src/CMakeLists.txt), for programs built against an installed Tarantella;
# the test layering.libstdcxx_first checks the order in the built binaries.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(TNT_LIBSTDCXX_FIRST "SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
  add_link_options("${TNT_LIBSTDCXX_FIRST}")
endif()

macro(tnt_torch_settings)
set(TNT_TORCH_VERSION "${Torch_VERSION}")
set(TNT_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib")
get_filename_component(TNT_TORCH_CMAKE_PREFIX "${Torch_DIR}" DIRECTORY)
if(NOT TNT_TORCH_VERSION)
  set(TNT_TORCH_VERSION "unknown")
endif()

# The C++ ABI: taken from the torch found (its TORCH_CXX_FLAGS), never
# assumed. Everything else we link (protobuf, GoogleTest, fmt, CLI11, the
# system's libstdc++ users) is built with the C++11 ABI, so a torch built
# with the old one (pip wheels before 2.7) cannot share a std::string with
# them.
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
  set(TNT_TORCH_CXX11_ABI ${CMAKE_MATCH_1})
else()
  set(TNT_TORCH_CXX11_ABI 1)
endif()
if(NOT TNT_TORCH_CXX11_ABI)
  message(FATAL_ERROR
    "Tarantella: torch ${TNT_TORCH_VERSION} (${TORCH_INSTALL_PREFIX}) is built with the pre-C++11 "
    "ABI (-D_GLIBCXX_USE_CXX11_ABI=0), but the system libraries Tarantella links (protobuf, "
    "GoogleTest, fmt) use the C++11 ABI. Fix: use torch 2.7 or newer from PyPI (built with the "
    "C++11 ABI), a conda torch, or Debian's libtorch-dev.")
endif()
# Every target, not only those that link torch: the launcher, the
# TensorBoard writer and the precompiled header must agree with LibTorch.
add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${TNT_TORCH_CXX11_ABI})

# Supported: 1.13 (Debian 12) and 2.7 or newer. 2.0 to 2.6 are refused, not
# guessed at: their pip wheels use the old ABI, and torch_compat.h uses the
# per-device autocast API of 2.4 and newer.
if(TNT_TORCH_VERSION VERSION_GREATER_EQUAL 2.0 AND TNT_TORCH_VERSION VERSION_LESS 2.7)
  message(FATAL_ERROR
    "Tarantella: torch ${TNT_TORCH_VERSION} (${TORCH_INSTALL_PREFIX}) is not supported: it "
    "builds against LibTorch 1.13 and torch 2.7 or newer. Fix: pip install 'torch>=2.7'.")
endif()

# fmt. A pip or conda torch bundles fmt's headers in its include directory,
# which comes before the system's in every target that links torch: such a
# target would compile against torch's fmt and link the system's libfmt (an
# undefined fmt::v12::vformat). So when torch bundles fmt, every target uses
# fmt header-only: the ones that link torch get torch's copy, the others (the
# launcher, the TensorBoard writer) the system's headers, and no libfmt is
# linked. Defined for every target because GCC rejects a precompiled header
# made with a -D the translation unit lacks. fmt's types never cross between
# targets (no public header includes fmt).
set(TNT_TORCH_BUNDLED_FMT OFF)
foreach(_tnt_dir IN LISTS TORCH_INCLUDE_DIRS)
  # Debian's LibTorch names /usr/include, where the system's fmt is.
  if(EXISTS "${_tnt_dir}/fmt/format.h" AND NOT _tnt_dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES
     AND NOT _tnt_dir STREQUAL "/usr/include")
    set(TNT_TORCH_BUNDLED_FMT ON)
  endif()
endforeach()
add_library(tnt_fmt INTERFACE)
if(TNT_TORCH_BUNDLED_FMT)
  add_compile_definitions(FMT_HEADER_ONLY=1)
  target_include_directories(tnt_fmt INTERFACE $<TARGET_PROPERTY:fmt::fmt,INTERFACE_INCLUDE_DIRECTORIES>)
  set(_tnt_fmt_why "header-only (torch bundles fmt)")
else()
  target_link_libraries(tnt_fmt INTERFACE fmt::fmt)
  set(_tnt_fmt_why "the system's libfmt")
endif()

message(STATUS "Tarantella: torch ${TNT_TORCH_VERSION} at ${TORCH_INSTALL_PREFIX}, "
               "C++11 ABI ${TNT_TORCH_CXX11_ABI}, fmt ${_tnt_fmt_why}")
endmacro()
