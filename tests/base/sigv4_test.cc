// The signer against AWS's published Signature V4 vectors: the general test suite
// (aws-sig-v4-test-suite: example.amazonaws.com, service "service", 2015-08-30) and the S3
// examples of the S3 API reference (examplebucket, 2013-05-24). Each case is a request as the
// suite gives it and the signature AWS publishes for it; where the suite also publishes the
// canonical request or the string to sign, those are checked too, so that a failure names the
// step. The suite's cases that normalise paths (get-slash*, get-relative*) are left out: S3 signs
// the path as sent and never normalises it.
#include "base/sigv4.h"

#include <gtest/gtest.h>

#include "base/checksum.h"
#include "base/hex.h"

namespace cohort {
namespace {

constexpr char kSuiteAccessKey[] = "AKIDEXAMPLE";
constexpr char kSuiteSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr char kS3AccessKey[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kS3Secret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const SigV4Scope kSuiteScope{"20150830T123600Z", "us-east-1", "service"};
const SigV4Scope kS3Scope{"20130524T000000Z", "us-east-1", "s3"};

// A suite request: host and x-amz-date as every case has them, then the case's own headers.
SigV4Request SuiteRequest(std::string method, std::string uri,
                          std::vector<std::pair<std::string, std::string>> query = {},
                          std::vector<std::pair<std::string, std::string>> headers = {},
                          std::string_view body = "") {
  SigV4Request request;
  request.method = std::move(method);
  request.canonical_uri = std::move(uri);
  request.query = std::move(query);
  request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  for (auto& header : headers) request.headers.push_back(std::move(header));
  request.payload_sha256 = Sha256Hex(body);
  return request;
}

struct SuiteCase {
  const char* name;
  SigV4Request request;
  const char* signed_headers;
  const char* signature;
};

TEST(SigV4Test, SignsEveryApplicableCaseOfTheTestSuite) {
  const SuiteCase cases[] = {
      {"get-vanilla", SuiteRequest("GET", "/"), "host;x-amz-date",
       "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
      {"get-unreserved",
       SuiteRequest("GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
       "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
      {"get-vanilla-query-order-key-case",
       SuiteRequest("GET", "/", {{"Param2", "value2"}, {"Param1", "value1"}}), "host;x-amz-date",
       "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
      {"get-vanilla-query-order-value",
       SuiteRequest("GET", "/", {{"Param1", "value2"}, {"Param1", "value1"}}), "host;x-amz-date",
       "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
      {"get-vanilla-utf8-query", SuiteRequest("GET", "/", {{"\xE1\x88\xB4", "bar"}}),
       "host;x-amz-date", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
      {"get-header-value-order",
       SuiteRequest("GET", "/", {},
                    {{"My-Header1", "value4"},
                     {"My-Header1", "value1"},
                     {"My-Header1", "value3"},
                     {"My-Header1", "value2"}}),
       "host;my-header1;x-amz-date",
       "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
      {"get-header-key-duplicate",
       SuiteRequest("GET", "/", {},
                    {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}}),
       "host;my-header1;x-amz-date",
       "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
      {"get-header-value-trim",
       SuiteRequest("GET", "/", {}, {{"My-Header1", " value1"}, {"My-Header2", "\"a   b   c\""}}),
       "host;my-header1;my-header2;x-amz-date",
       "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
      {"post-x-www-form-urlencoded",
       SuiteRequest("POST", "/", {}, {{"Content-Type", "application/x-www-form-urlencoded"}},
                    "Param1=value1"),
       "content-type;host;x-amz-date",
       "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
      {"get-vanilla-with-session-token",
       SuiteRequest("GET", "/", {},
                    {{"X-Amz-Security-Token",
                      "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"}}),
       "host;x-amz-date;x-amz-security-token",
       "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"},
  };
  for (const SuiteCase& test : cases) {
    SCOPED_TRACE(test.name);
    const SigV4Signature signed_request =
        SignV4(test.request, kSuiteScope, kSuiteAccessKey, kSuiteSecret);
    EXPECT_EQ(signed_request.signed_headers, test.signed_headers);
    EXPECT_EQ(signed_request.signature, test.signature);
    EXPECT_EQ(signed_request.authorization,
              std::string("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                          "aws4_request, SignedHeaders=") +
                  test.signed_headers + ", Signature=" + test.signature);
  }
}

TEST(SigV4Test, GetVanillaCanonicalRequestAndStringToSignAreTheSuites) {
  const SigV4Signature signed_request =
      SignV4(SuiteRequest("GET", "/"), kSuiteScope, kSuiteAccessKey, kSuiteSecret);
  EXPECT_EQ(signed_request.canonical_request,
            std::string("GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                        "host;x-amz-date\n") +
                kEmptySha256);
  EXPECT_EQ(signed_request.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
}

TEST(SigV4Test, DerivesThePublishedSigningKey) {
  EXPECT_EQ(HexEncode(SigV4SigningKey(kSuiteSecret, "20120215", "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

// The S3 API reference's examples: what an S3 client actually sends, x-amz-content-sha256
// included.
SigV4Request S3Request(std::string method, std::string uri,
                       std::vector<std::pair<std::string, std::string>> query,
                       std::vector<std::pair<std::string, std::string>> headers,
                       std::string payload_sha256) {
  SigV4Request request;
  request.method = std::move(method);
  request.canonical_uri = std::move(uri);
  request.query = std::move(query);
  request.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                     {"x-amz-date", "20130524T000000Z"},
                     {"x-amz-content-sha256", payload_sha256}};
  for (auto& header : headers) request.headers.push_back(std::move(header));
  request.payload_sha256 = std::move(payload_sha256);
  return request;
}

TEST(SigV4Test, SignsTheS3ReferenceExamples) {
  {
    SCOPED_TRACE("GET object, first 10 bytes");
    const SigV4Signature result =
        SignV4(S3Request("GET", "/test.txt", {}, {{"Range", "bytes=0-9"}}, kEmptySha256), kS3Scope,
               kS3AccessKey, kS3Secret);
    EXPECT_EQ(result.signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
    EXPECT_EQ(Sha256Hex(result.canonical_request),
              "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    EXPECT_EQ(result.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  }
  {
    SCOPED_TRACE("PUT object with a '$' in its key");
    const std::string body = "Welcome to Amazon S3.";
    ASSERT_EQ(Sha256Hex(body), "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    const SigV4Signature result =
        SignV4(S3Request("PUT", "/" + UriEncode("test$file.text", false), {},
                         {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                          {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
                         Sha256Hex(body)),
               kS3Scope, kS3AccessKey, kS3Secret);
    EXPECT_EQ(result.signed_headers,
              "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
    EXPECT_EQ(result.string_to_sign,
              "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
              "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
    EXPECT_EQ(result.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  }
  {
    SCOPED_TRACE("GET bucket lifecycle (a query name without a value)");
    const SigV4Signature result =
        SignV4(S3Request("GET", "/", {{"lifecycle", ""}}, {}, kEmptySha256), kS3Scope, kS3AccessKey,
               kS3Secret);
    EXPECT_EQ(result.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
  }
  {
    SCOPED_TRACE("GET bucket listing (query sorted by name)");
    const SigV4Signature result =
        SignV4(S3Request("GET", "/", {{"prefix", "J"}, {"max-keys", "2"}}, {}, kEmptySha256),
               kS3Scope, kS3AccessKey, kS3Secret);
    EXPECT_EQ(result.canonical_request.substr(0, 26), "GET\n/\nmax-keys=2&prefix=J\n");
    EXPECT_EQ(result.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  }
}

TEST(SigV4Test, EncodesAsS3Wants) {
  EXPECT_EQ(UriEncode("a b/c~d$", false), "a%20b/c~d%24");
  EXPECT_EQ(UriEncode("a/b", true), "a%2Fb");
  EXPECT_EQ(UriEncode("a+b=c&d", true), "a%2Bb%3Dc%26d");
  EXPECT_EQ(UriEncode("\xC3\xA9", false), "%C3%A9");
  EXPECT_EQ(CanonicalQueryString({{"b", ""}, {"a", "1"}, {"a", "0"}}), "a=0&a=1&b=");
}

TEST(SigV4Test, ADifferentSecretOrBodyIsADifferentSignature) {
  const SigV4Request request = SuiteRequest("GET", "/");
  const std::string reference =
      SignV4(request, kSuiteScope, kSuiteAccessKey, kSuiteSecret).signature;
  EXPECT_NE(SignV4(request, kSuiteScope, kSuiteAccessKey, "another").signature, reference);
  SigV4Request changed = request;
  changed.payload_sha256 = Sha256Hex("x");
  EXPECT_NE(SignV4(changed, kSuiteScope, kSuiteAccessKey, kSuiteSecret).signature, reference);
}

}  // namespace
}  // namespace cohort
