// The dashboard's access rules (ui/access_control.h), request by request.
#include "ui/access_control.h"

#include <gtest/gtest.h>

namespace cohort::ui {
namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

RequestFacts Request(const std::string& method, const std::string& host = "127.0.0.1:8080") {
  RequestFacts facts;
  facts.method = method;
  facts.host = host;
  return facts;
}

TEST(AccessControlTest, LoopbackReadsNeedNoTokenButALoopbackHost) {
  AccessPolicy loopback{kToken, true};
  EXPECT_TRUE(CheckAccess(loopback, Request("GET")).allowed);
  EXPECT_TRUE(CheckAccess(loopback, Request("GET", "localhost:8080")).allowed);
  EXPECT_TRUE(CheckAccess(loopback, Request("GET", "[::1]:8080")).allowed);
  AccessDecision rebound = CheckAccess(loopback, Request("GET", "attacker.example:8080"));
  EXPECT_FALSE(rebound.allowed);
  EXPECT_EQ(rebound.http_status, 403);
}

TEST(AccessControlTest, ChangesNeedTheTokenInAHeaderAndTheSameOrigin) {
  AccessPolicy loopback{kToken, true};
  RequestFacts post = Request("POST");
  AccessDecision no_token = CheckAccess(loopback, post);
  EXPECT_EQ(no_token.http_status, 401);
  // A script never saw the page's token: the answer says how to choose one it knows.
  EXPECT_NE(no_token.message.find("--token-file"), std::string::npos) << no_token.message;
  post.cookie = std::string(kTokenCookie) + "=" + kToken;
  EXPECT_EQ(CheckAccess(loopback, post).http_status, 401);
  post.token_header = kToken;
  EXPECT_TRUE(CheckAccess(loopback, post).allowed);
  post.origin = "http://127.0.0.1:8080";
  post.sec_fetch_site = "same-origin";
  EXPECT_TRUE(CheckAccess(loopback, post).allowed);
  post.origin = "http://127.0.0.1:9999";
  EXPECT_EQ(CheckAccess(loopback, post).http_status, 403);
  post.origin = "";
  post.sec_fetch_site = "same-site";
  EXPECT_EQ(CheckAccess(loopback, post).http_status, 403);
  post.sec_fetch_site = "";
  post.token_header = "";
  post.authorization = "Bearer " + kToken;
  EXPECT_TRUE(CheckAccess(loopback, post).allowed);
  post.authorization = "Bearer " + kToken + "x";
  EXPECT_EQ(CheckAccess(loopback, post).http_status, 401);
}

TEST(AccessControlTest, OffLoopbackEveryRequestNeedsTheToken) {
  AccessPolicy open{kToken, false};
  RequestFacts get = Request("GET", "203.0.113.5:8080");
  EXPECT_EQ(CheckAccess(open, get).http_status, 401);
  get.query_token = kToken;
  EXPECT_TRUE(CheckAccess(open, get).allowed);
  get.query_token = "";
  get.cookie = "other=1; " + std::string(kTokenCookie) + "=" + kToken;
  EXPECT_TRUE(CheckAccess(open, get).allowed);
  get.cookie = std::string(kTokenCookie) + "=wrong";
  EXPECT_EQ(CheckAccess(open, get).http_status, 401);
}

TEST(AccessControlTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("192.168.1.1"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(TokensEqual("", ""));
  StatusOr<std::string> a = NewToken(), b = NewToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace cohort::ui
