// The network a multi-host job uses: `ip -o -4 addr show` parsed, and the
// networks every host shares chosen (or a clear error when there is none).
#include "probe/network_choice.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

const std::string kIpOutput =
    "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
    "2: eth0@if12    inet 10.77.81.11/24 brd 10.77.81.255 scope global eth0\\       valid_lft "
    "forever\n"
    "3: ib0    inet 192.168.7.130/25 scope global ib0\n"
    "garbage line\n"
    "4: eth1    inet6 fe80::1/64 scope link\n";

TEST(NetworkChoice, ParsesIpOutputIntoNetworksWithoutLoopback) {
  const auto networks = parse_ip_addresses(kIpOutput);
  ASSERT_EQ(networks.size(), 2u);
  EXPECT_EQ(networks[0].interface, "eth0");
  EXPECT_EQ(networks[0].network, "10.77.81.0/24");
  EXPECT_EQ(networks[1].interface, "ib0");
  EXPECT_EQ(networks[1].network, "192.168.7.128/25");
}

TEST(NetworkChoice, LinesPrefixedWithTheirNodeAreSplitPerNode) {
  const auto all = parse_node_prefixed_addresses(
      "n2 2: eth0    inet 10.0.0.12/24 scope global eth0\n"
      "n1 2: eth0    inet 10.0.0.11/24 scope global eth0\n"
      "n1 3: ib0    inet 10.9.0.11/16 scope global ib0\n",
      {"n1", "n2", "n3"});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].host, "n1");
  ASSERT_EQ(all[0].networks.size(), 2u);
  EXPECT_EQ(all[0].networks[1].network, "10.9.0.0/16");
  ASSERT_EQ(all[1].networks.size(), 1u);
  EXPECT_EQ(all[1].networks[0].network, "10.0.0.0/24");
  EXPECT_TRUE(all[2].networks.empty());  // n3 answered nothing: it shares nothing
}

HostNetworks host(std::string name, std::vector<InterfaceNetwork> networks) {
  return HostNetworks{std::move(name), std::move(networks)};
}

TEST(NetworkChoice, KeepsOnlyTheNetworkEveryHostIsOn) {
  const auto choice = choose_shared_network(
      {host("this node", {{"br0", "10.77.81.0/24"}, {"eth0", "172.30.0.0/16"}}),
       host("a", {{"eth0", "10.77.81.0/24"}, {"extra0", "10.99.0.0/24"}}),
       host("b", {{"eth1", "10.77.81.0/24"}, {"extra0", "10.99.1.0/24"}})});
  EXPECT_EQ(choice.value, "10.77.81.0/24");
  EXPECT_THAT(choice.explanation,
              HasSubstr("10.77.81.0/24 (br0 on this node), the IPv4 network(s) shared by this "
                        "node and all 2 host(s)"));
}

TEST(NetworkChoice, SeveralSharedNetworksAreAllKeptButContainerBridgesAreNot) {
  const std::vector<InterfaceNetwork> same = {
      {"docker0", "172.17.0.0/16"}, {"eth0", "10.0.0.0/16"}, {"ib0", "10.1.0.0/16"}};
  EXPECT_EQ(choose_shared_network({host("this node", same), host("a", same)}).value,
            "10.0.0.0/16,10.1.0.0/16");
}

TEST(NetworkChoice, NoSharedNetworkListsEveryHost) {
  const auto message = error_of([] {
    choose_shared_network({host("this node", {{"eth0", "10.0.0.0/24"}}),
                           host("a", {{"eth0", "10.0.1.0/24"}}), host("b", {})});
  });
  EXPECT_THAT(message, HasSubstr("no IPv4 network is shared by this node and every host (this "
                                 "node: 10.0.0.0/24 (eth0); a: 10.0.1.0/24 (eth0); b: no IPv4 "
                                 "network)"));
  EXPECT_THAT(message, HasSubstr("--network-interface NAME|CIDR"));
}

TEST(NetworkChoice, OnlyBridgesSharedIsNoSharedNetwork) {
  const std::vector<InterfaceNetwork> bridge = {{"docker0", "172.17.0.0/16"}};
  EXPECT_THAT(error_of([&] {
                choose_shared_network({host("this node", bridge), host("a", bridge)});
              }),
              HasSubstr("no IPv4 network is shared"));
}

}  // namespace
}  // namespace tnt::cli
