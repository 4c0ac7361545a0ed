# The pkg-config file and the Debian package (cpack -G DEB).
#
# LibTorch ships no pkg-config file, so its flags are written into ours from
# what find_package(Torch) found: include directories, the definitions its
# headers need and its libraries (--no-as-needed, as LibTorch's own CMake
# target links them: operators register themselves in static initializers).

set(TNT_PC_TORCH_CFLAGS "${TORCH_CXX_FLAGS}")
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  if(NOT dir STREQUAL "/usr/include")
    string(APPEND TNT_PC_TORCH_CFLAGS " -isystem ${dir}")
  endif()
endforeach()
get_target_property(tnt_torch_defs torch_cpu INTERFACE_COMPILE_DEFINITIONS)
if(tnt_torch_defs)
  foreach(def IN LISTS tnt_torch_defs)
    string(APPEND TNT_PC_TORCH_CFLAGS " -D${def}")
  endforeach()
endif()
get_filename_component(tnt_torch_libdir "${TORCH_LIBRARY}" DIRECTORY)
set(TNT_PC_TORCH_LIBS "-L${tnt_torch_libdir} -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed")
string(STRIP "${TNT_PC_TORCH_CFLAGS}" TNT_PC_TORCH_CFLAGS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tarantella.pc.in
               ${PROJECT_BINARY_DIR}/tarantella.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tarantella.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- cpack -G DEB ------------------------------------------------------------
# One package with the library, headers, launcher, CMake package files and
# the pkg-config file, installed under /usr. dpkg-shlibdeps adds the run-time
# libraries (libtorch, OpenMPI, fmt, protobuf, curl); the rest is what a user
# needs to build against the headers and to launch (mpirun).
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "tarantella")
set(CPACK_PACKAGE_VENDOR "Tarantella developers")
set(CPACK_PACKAGE_CONTACT "Tarantella developers <tarantella@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libtorch-dev, nlohmann-json3-dev, openmpi-bin, libopenmpi-dev")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake, pkg-config, g++")
if(TNT_PYTHON_ENABLED)
  # The Python package (lib/python3/dist-packages/tarantella) needs the
  # python3-torch it was built against.
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", python3-torch, python3-numpy")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "${PROJECT_DESCRIPTION}\n Keras-style compile/fit/evaluate for LibTorch models, data-parallel over\n MPI ranks, with the tarantella launcher. Build against it with\n find_package(Tarantella) or pkg-config tarantella.")
# Only the project's own install rules (not those of anything pulled in).
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};${PROJECT_NAME};ALL;/")
include(CPack)
