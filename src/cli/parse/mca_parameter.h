// `--mca NAME VALUE`: one OpenMPI MCA parameter handed to mpirun as it is.
//
// The launcher hides OpenMPI in everyday use, but some setups need to steer
// it: a remote-start agent other than ssh (bench/cluster's network
// namespaces, a batch system), or the network interfaces the TCP transport
// may use. mpirun passes --mca settings on to its daemons on every host and to
// every rank, which environment variables set only here would not reach.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// A validated MCA parameter. The value reaches mpirun as one argv word,
/// never through a shell.
/// Example: `parse_mca_parameter("btl_tcp_if_include", "10.0.0.0/24")`.
struct McaParameter {
  std::string name;
  std::string value;
  bool operator==(const McaParameter& other) const {
    return name == other.name && value == other.value;
  }
};

/// Checks that `name` looks like an MCA parameter name ([A-Za-z0-9_]+, as in
/// `ompi_info --all`) and that `value` is not empty; throws LauncherError
/// naming the entry otherwise.
McaParameter parse_mca_parameter(const std::string& name, const std::string& value);

}  // namespace tnt::cli
