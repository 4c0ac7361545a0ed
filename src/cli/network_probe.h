// The launcher's side of the network choice: asking every host of a
// hostfile for its IPv4 networks (through the remote agent mpirun itself
// uses, like the restart probes) and picking those all share
// (network_choice.h), announced on stderr as INFO.
#pragma once

#include "host_probe.h"
#include "launch_options.h"

namespace tnt::cli {

/// `options` with network_interface set to the networks this node and every
/// host of options.hosts() share, when there are remote hosts and the user
/// named no network (--network-interface, --mca or OMPI_MCA_ *_tcp_if_*).
/// When a host cannot be asked, warns and leaves the choice to OpenMPI.
/// Throws LauncherError when the hosts share no network.
LaunchOptions with_network(LaunchOptions options, const ProbeOptions& probe);

}  // namespace tnt::cli
