// Private: turns an MPI error code into a tnt::Error naming the call. Our
// communicators use MPI_ERRORS_RETURN, so failures arrive here instead of
// aborting the process without a word.
#pragma once

#include <mpi.h>

#include <string>

#include <tarantella/base/error.h>

namespace tnt::comm {

inline void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  ::tnt::detail::throw_error(::tnt::detail::concat(call, " failed: ", std::string(text, len)));
}

}  // namespace tnt::comm
