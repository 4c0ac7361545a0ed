// The launcher's side of the network choice: asking every host for its
// IPv4 networks and picking those all share (network_choice.h), announced
// on stderr as INFO. Hosts of a hostfile are asked through the remote agent
// mpirun itself uses (like the restart probes); the nodes of a Slurm job
// through one srun step with a task per node.
#pragma once

#include "probe/host_probe.h"
#include "parse/launch_options.h"
#include "probe/node_facts.h"

namespace tnt::cli {

/// `options` with network_interface set to the networks this node and every
/// host of the job (the hostfile's, else the Slurm job's) share, when another
/// host takes part and the user named no network (--network-interface,
/// --mca or OMPI_MCA_ *_tcp_if_*). When a host cannot be asked, warns and
/// leaves the choice to OpenMPI. Throws LauncherError when the hosts share
/// no network.
LaunchOptions with_network(LaunchOptions options, const ProbeOptions& probe,
                           const NodeFacts& facts);

}  // namespace tnt::cli
