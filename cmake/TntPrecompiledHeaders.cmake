# One precompiled <torch/torch.h> for the whole tree.
#
# Nearly all of a cold build is the compiler parsing LibTorch's headers again
# for every translation unit (about 10 s each on the reference machine;
# docs/building.md has the numbers). A precompiled header takes that to
# about 3 s. But loading the 0.6 GB header also costs about 2.5 s, which a
# translation unit that never reaches LibTorch (the launcher, base/, the
# TensorBoard writer, most unit tests of the launcher) would pay for
# nothing. So the header goes only where it pays:
#
#  * _tnt_reaches_torch() follows a file's #include lines through the
#    project's own headers (include/, src/, the file's folder) and says
#    whether any of them includes a LibTorch header (torch/ or ATen/; c10/ alone is small);
#  * tnt_precompile_torch() gives every target with such a source the
#    precompiled header and marks its other sources SKIP_PRECOMPILE_HEADERS.
#
# With TNT_UNITY_BUILD, the sources that reach LibTorch are also compiled in
# batches (CMake's unity build): after the header is precompiled, most of a
# translation unit's time is generating code for the same inline LibTorch
# and GoogleTest functions again; a batch generates it once. Four test files
# took 20 s together instead of 46 s one by one.
#
# GCC accepts a precompiled header only when the flags it was made with
# match (-fPIC for the shared library, -fPIE for executables, the same -D
# definitions), so there are exactly two: the library's own, and the one of
# the small executable tnt_pch_host, reused by every test, example and
# benchmark. Static helper libraries of the tests compile without one. -Winvalid-pch (CMake adds it) reports a mismatch;
# scripts/measure-build.sh fails a build that shows one.

set(TNT_PCH_HEADER "<torch/torch.h>")

function(_tnt_reaches_torch file out)
  get_property(known GLOBAL PROPERTY "TNT_REACHES_TORCH:${file}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "TNT_REACHES_TORCH:${file}")
    set(${out} ${value} PARENT_SCOPE)
    return()
  endif()
  # Marked first so that headers including each other end the recursion.
  set_property(GLOBAL PROPERTY "TNT_REACHES_TORCH:${file}" OFF)
  set(result OFF)
  if(EXISTS "${file}" AND NOT IS_DIRECTORY "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    get_filename_component(dir "${file}" DIRECTORY)
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "[<\"]([^>\"]+)[>\"]")
        continue()
      endif()
      set(included "${CMAKE_MATCH_1}")
      if(included MATCHES "^(torch|ATen)/")
        set(result ON)
        break()
      endif()
      foreach(base IN ITEMS "${dir}" "${PROJECT_SOURCE_DIR}/include"
                            "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}")
        if(EXISTS "${base}/${included}" AND NOT IS_DIRECTORY "${base}/${included}")
          get_filename_component(resolved "${base}/${included}" ABSOLUTE)
          _tnt_reaches_torch("${resolved}" sub)
          if(sub)
            set(result ON)
          endif()
          break()
        endif()
      endforeach()
      if(result)
        break()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY "TNT_REACHES_TORCH:${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(_tnt_targets_under dir out)
  get_property(found DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _tnt_targets_under("${sub}" more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# Call once, at the end of the top-level CMakeLists.txt, after every target
# exists. `library` is the shared library that makes the -fPIC header.
function(tnt_precompile_torch library)
  add_executable(tnt_pch_host ${PROJECT_SOURCE_DIR}/cmake/pch_host.cpp)
  target_link_libraries(tnt_pch_host PRIVATE torch)
  target_precompile_headers(tnt_pch_host PRIVATE "${TNT_PCH_HEADER}")
  target_precompile_headers(${library} PRIVATE "${TNT_PCH_HEADER}")

  _tnt_targets_under("${PROJECT_SOURCE_DIR}" targets)
  foreach(target IN LISTS targets)
    if(target STREQUAL "tnt_pch_host")
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY|MODULE_LIBRARY)$")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    get_target_property(source_dir ${target} SOURCE_DIR)
    set(with_torch "")
    set(without_torch "")
    foreach(source IN LISTS sources)
      if(source MATCHES "\\$<" OR NOT source MATCHES "\\.(cpp|cc|cxx)$")
        continue()
      endif()
      get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
      _tnt_reaches_torch("${path}" reaches)
      if(reaches)
        list(APPEND with_torch "${path}")
      else()
        list(APPEND without_torch "${path}")
      endif()
    endforeach()
    if(NOT with_torch)
      continue()
    endif()
    if(type STREQUAL "EXECUTABLE")
      target_precompile_headers(${target} REUSE_FROM tnt_pch_host)
    elseif(NOT target STREQUAL library)
      # A static test library (one source) would need the library's -D
      # flags (FMT_SHARED, ...) to use its header: it parses on its own.
      continue()
    endif()
    if(without_torch)
      set_source_files_properties(${without_torch} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                             SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    if(TNT_UNITY_BUILD)
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                            UNITY_BUILD_BATCH_SIZE ${TNT_UNITY_BUILD_BATCH_SIZE})
    endif()
  endforeach()
endfunction()
