// --mca NAME VALUE validation: values kept byte for byte, bad entries named.
#include "parse/mca_parameter.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(McaParameter, KeepsNameAndValueAsGiven) {
  EXPECT_EQ(parse_mca_parameter("btl_tcp_if_include", "10.0.0.0/24"),
            (McaParameter{"btl_tcp_if_include", "10.0.0.0/24"}));
  EXPECT_EQ(parse_mca_parameter("plm_rsh_agent", "/opt/my agent.sh -q"),
            (McaParameter{"plm_rsh_agent", "/opt/my agent.sh -q"}));
  EXPECT_EQ(parse_mca_parameter("btl", "^openib,vader"), (McaParameter{"btl", "^openib,vader"}));
}

TEST(McaParameter, BadNameIsNamedWithTheFix) {
  const auto message = error_of([] { parse_mca_parameter("btl tcp", "1"); });
  EXPECT_THAT(message, HasSubstr("'btl tcp' is not an MCA parameter name"));
  EXPECT_THAT(message, HasSubstr("ompi_info --all"));
  EXPECT_THAT(error_of([] { parse_mca_parameter("", "1"); }), HasSubstr("is not an MCA"));
  EXPECT_THAT(error_of([] { parse_mca_parameter("--mca", "1"); }), HasSubstr("is not an MCA"));
}

TEST(McaParameter, EmptyValueIsAnError) {
  EXPECT_THAT(error_of([] { parse_mca_parameter("btl", ""); }),
              HasSubstr("--mca btl '': the value is empty"));
}

}  // namespace
}  // namespace tnt::cli
