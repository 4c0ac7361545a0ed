# Compiles through ccache where the machine has it: the main tree and the
# fuzz tree (tests/fuzz, a project of its own) alike.
#
#   tnt_use_ccache(BASEDIR)  paths under BASEDIR (the checkout) are hashed
#                            relative to it, so another clone (CI's, say)
#                            reuses the objects.
#
# ccache caches compilations that use a precompiled header only with these
# sloppiness settings (clang's header must also be made with
# -Xclang -fno-pch-timestamp). ccache 4.7 takes no settings on its command
# line, hence env.
macro(tnt_use_ccache basedir)
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(_tnt_ccache env CCACHE_SLOPPINESS=pch_defines,time_macros CCACHE_BASEDIR=${basedir}
                    CCACHE_NOHASHDIR=1 ${CCACHE_PROGRAM})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_tnt_ccache})
    set(CMAKE_C_COMPILER_LAUNCHER ${_tnt_ccache})
  endif()
endmacro()
