// The transport seam holds: src/collective includes, of src/net, only the abstract connection set
// (net/connection_set.h) and deadlines. Linking enforces the rest (cohort_collective does not link
// cohort_net_tcp); this catches the concrete pieces that live in cohort_net itself (frames,
// connections, sockets, handshakes, same-host memory).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace cohort::collective {
namespace {

TEST(TransportSeamTest, CollectivesIncludeNoConcreteTransportHeader) {
  const std::filesystem::path source =
      std::filesystem::path(COHORT_TEST_DATA_DIR) / ".." / ".." / "src" / "collective";
  ASSERT_TRUE(std::filesystem::is_directory(source)) << source;
  const std::set<std::string> allowed = {"net/connection_set.h", "net/deadline.h"};
  const std::regex include(R"(^\s*#\s*include\s*[<"]([^">]+)[">])");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".h") && !name.ends_with(".cc")) continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch match;
      if (!std::regex_search(line, match, include)) continue;
      const std::string header = match[1].str();
      if (header.rfind("net/", 0) == 0) {
        EXPECT_TRUE(allowed.count(header) == 1)
            << "src/collective/" << name << ":" << number << " includes " << header
            << ": algorithms see the transport only through net/connection_set.h";
      }
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
}  // namespace cohort::collective
