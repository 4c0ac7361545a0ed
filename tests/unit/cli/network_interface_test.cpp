// --network-interface values: names and subnets accepted, typos refused.
#include "parse/network_interface.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(NetworkInterface, NamesSubnetsAndListsPassUnchanged) {
  for (const std::string ok :
       {"eth1", "ib0", "enp3s0f1", "eth0.100", "10.1.0.0/16", "192.168.1.0/24,eth2", "0.0.0.0/0"}) {
    EXPECT_EQ(parse_network_interface(ok), ok);
  }
}

TEST(NetworkInterface, BadItemsAreNamed) {
  EXPECT_THAT(error_of([] { parse_network_interface("10.1.0.0/33"); }),
              HasSubstr("'10.1.0.0/33' is neither an interface name"));
  EXPECT_THAT(error_of([] { parse_network_interface("10.1.0/16"); }),
              HasSubstr("'10.1.0/16' is neither"));
  EXPECT_THAT(error_of([] { parse_network_interface("256.1.0.0/16"); }), HasSubstr("is neither"));
  EXPECT_THAT(error_of([] { parse_network_interface("eth 1"); }), HasSubstr("'eth 1' is neither"));
  EXPECT_THAT(error_of([] { parse_network_interface("averyveryverylongname"); }),
              HasSubstr("is neither"));
  EXPECT_THAT(error_of([] { parse_network_interface("eth1,,eth2"); }), HasSubstr("'' is neither"));
  EXPECT_THAT(error_of([] { parse_network_interface(""); }),
              HasSubstr("--network-interface '': give an interface name"));
  EXPECT_THAT(error_of([] { parse_network_interface("eth1,"); }), HasSubstr("give an interface"));
}

}  // namespace
}  // namespace tnt::cli
