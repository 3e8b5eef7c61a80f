#include "kube/objects/quantity.h"

#include <gtest/gtest.h>

namespace cohort::kube {
namespace {

std::string Sum(std::initializer_list<const char*> texts) {
  Quantity total;
  for (const char* text : texts) {
    StatusOr<Quantity> quantity = Quantity::Parse(text);
    EXPECT_TRUE(quantity.ok()) << quantity.status().message();
    if (!quantity.ok()) return "";
    EXPECT_TRUE(total.Add(*quantity).ok());
  }
  return total.ToString();
}

TEST(QuantityTest, AddsExactlyInTheFirstQuantitysFormat) {
  EXPECT_EQ(Sum({"500m", "2", "2"}), "4500m");
  EXPECT_EQ(Sum({"1Gi", "512Mi"}), "1536Mi");
  EXPECT_EQ(Sum({"1Gi", "1Gi"}), "2Gi");
  EXPECT_EQ(Sum({"1k", "1000"}), "2k");
  EXPECT_EQ(Sum({"1.5", "0.5"}), "2");
  EXPECT_EQ(Sum({"1e3", "1E3"}), "2k");
  EXPECT_EQ(Sum({"100u", "1n"}), "100001n");
  EXPECT_EQ(Sum({"1E"}), "1E");
  EXPECT_EQ(Sum({"0", "1Mi"}), "1Mi");
  EXPECT_EQ(Sum({}), "0");
}

TEST(QuantityTest, RefusesWhatKubernetesRefuses) {
  for (const char* text : {"", "abc", "12Q", "-1", "1e", "1.2.3", "1ki", "1e1000"}) {
    StatusOr<Quantity> quantity = Quantity::Parse(text);
    EXPECT_FALSE(quantity.ok()) << text;
    if (!quantity.ok()) {
      EXPECT_NE(quantity.status().message().find("quantity"), std::string::npos);
    }
  }
  EXPECT_FALSE(Quantity::Parse(std::string(65, '1')).ok());
}

TEST(QuantityTest, SumsStayBounded) {
  Quantity total;
  StatusOr<Quantity> big = Quantity::Parse("100000000E");
  ASSERT_TRUE(big.ok());
  Status status;
  for (int i = 0; i < 20 && status.ok(); ++i) status = total.Add(*big);
  EXPECT_FALSE(status.ok());
}

}  // namespace
}  // namespace cohort::kube
