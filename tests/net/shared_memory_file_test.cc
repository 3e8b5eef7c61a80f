#include "net/shared_memory_file.h"

#include <gtest/gtest.h>

#include <cstring>

namespace cohort::net {
namespace {

TEST(MemoryFileSharedMemoryTest, AnOpenedMappingSharesTheCreatorsPages) {
  auto created = MemoryFileSharedMemory::Create(3 * 4096);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SharedMemory& creator = **created;
  ASSERT_EQ(creator.size(), 3u * 4096);
  EXPECT_EQ(creator.data()[0], 0);
  EXPECT_EQ(creator.data()[3 * 4096 - 1], 0);
  const SharedMemory::Invitation invitation = creator.invitation();
  EXPECT_GT(invitation[0], 0);
  EXPECT_GE(invitation[1], 0);

  // Opened through /proc/<pid>/fd/<n>: another mapping of the same pages.
  auto opened = MemoryFileSharedMemory::Open(invitation, 3 * 4096);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  SharedMemory& guest = **opened;
  ASSERT_NE(guest.data(), creator.data());
  std::memcpy(creator.data() + 4096, "written by the creator", 23);
  EXPECT_STREQ(reinterpret_cast<const char*>(guest.data() + 4096), "written by the creator");
  guest.data()[2 * 4096] = 42;
  EXPECT_EQ(creator.data()[2 * 4096], 42);
  EXPECT_EQ(guest.invitation()[0], -1);

  // Once sealed, nobody else can open it; the mappings stay.
  creator.Seal();
  EXPECT_EQ(creator.invitation()[1], -1);
  EXPECT_FALSE(MemoryFileSharedMemory::Open(invitation, 3 * 4096).ok());
  EXPECT_EQ(guest.data()[2 * 4096], 42);
}

TEST(MemoryFileSharedMemoryTest, AnotherSizeOrNoMemoryIsRefused) {
  auto created = MemoryFileSharedMemory::Create(4096);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto wrong = MemoryFileSharedMemory::Open((*created)->invitation(), 8192);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("is not 8192 bytes long"), std::string::npos)
      << wrong.status().ToString();
  EXPECT_FALSE(MemoryFileSharedMemory::Open({-1, -1}, 4096).ok());
  EXPECT_FALSE(MemoryFileSharedMemory::Create(0).ok());
}

}  // namespace
}  // namespace cohort::net
