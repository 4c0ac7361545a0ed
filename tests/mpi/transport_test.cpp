// The runtime's OpenMPI settings for the TCP transport reach OpenMPI itself
// (read back through the MPI tool interface), and a user's own setting wins.
// Why the eager limit matters: runtime.cpp and docs/scaling.md (an 80 MB
// allreduce between two hosts ran at half the link without it).
#include <gtest/gtest.h>
#include <mpi.h>
#include <tarantella/tarantella.h>

#include <cstdlib>
#include <string>

namespace {

// The value OpenMPI uses for the integer control variable `name`.
unsigned long long control_variable(const std::string& name) {
  int provided = 0;
  EXPECT_EQ(MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided), MPI_SUCCESS);
  int count = 0;
  MPI_T_cvar_get_num(&count);
  unsigned long long value = 0;
  bool found = false;
  for (int i = 0; i < count && !found; ++i) {
    char cvar[256], desc[1024];
    int cvar_len = sizeof(cvar), desc_len = sizeof(desc), verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_cvar_get_info(i, cvar, &cvar_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS ||
        name != cvar) {
      continue;
    }
    MPI_T_cvar_handle handle;
    int n = 0;
    EXPECT_EQ(MPI_T_cvar_handle_alloc(i, nullptr, &handle, &n), MPI_SUCCESS);
    int size = 0;
    MPI_Type_size(type, &size);
    EXPECT_LE(size, static_cast<int>(sizeof(value))) << name << " is not an integer";
    MPI_T_cvar_read(handle, &value);  // little-endian: a narrower integer fills the low bytes
    MPI_T_cvar_handle_free(&handle);
    found = true;
  }
  MPI_T_finalize();
  EXPECT_TRUE(found) << "OpenMPI has no control variable " << name
                     << " (is the tcp BTL excluded by --mca btl?)";
  return value;
}

TEST(Transport, TcpEagerLimitCoversACollectivePiece) {
  // TNT_TEST_EAGER_LIMIT: what the test's launch line expects (the user's own
  // -x OMPI_MCA_btl_tcp_eager_limit=...); by default the runtime's value.
  const char* expected = std::getenv("TNT_TEST_EAGER_LIMIT");
  const unsigned long long want = expected ? std::stoull(expected) : 4u * 1024 * 1024 + 65536;
  EXPECT_EQ(control_variable("btl_tcp_eager_limit"), want);
  EXPECT_EQ(control_variable("btl_tcp_max_send_size"), expected ? 131072ull : want);
}

TEST(Transport, YieldWhenIdleIsLeftToOpenMpiAndTheUser) {
  // The runtime waits for peers with its own back-off; a job-wide
  // mpi_yield_when_idle slowed every blocking collective.
  const char* user = std::getenv("TNT_TEST_YIELD_WHEN_IDLE");
  EXPECT_STREQ(std::getenv("OMPI_MCA_mpi_yield_when_idle"), user);
  if (user) {
    EXPECT_EQ(control_variable("mpi_yield_when_idle"), std::stoull(user));
  }
}

}  // namespace
