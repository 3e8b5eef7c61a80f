// The parts of object storage that need no server: URL parsing, the credential and endpoint
// chain (s3_settings.h) with its files, the XML answers S3 gives, and the storage interface on
// the local file system.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/file.h"
#include "base/object_url.h"
#include "base/s3_settings.h"
#include "base/s3_xml.h"
#include "base/storage.h"
#include "testing/scratch_directory.h"

namespace cohort {
namespace {

TEST(ObjectUrlTest, ParsesBucketAndKey) {
  StatusOr<ObjectUrl> url = ParseObjectUrl("s3://my-bucket/runs/a/ckpt-1.index");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->scheme, "s3");
  EXPECT_EQ(url->bucket, "my-bucket");
  EXPECT_EQ(url->key, "runs/a/ckpt-1.index");
  StatusOr<ObjectUrl> root = ParseObjectUrl("gs://my_bucket");
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_EQ(root->key, "");
  EXPECT_TRUE(IsStorageUrl("s3://b/k"));
  EXPECT_FALSE(IsStorageUrl("/tmp/a://b"));
  EXPECT_FALSE(IsStorageUrl("relative/path"));
}

TEST(ObjectUrlTest, RefusesMalformedUrlsNamingTheRule) {
  const std::map<std::string, std::string> refused = {
      {"hdfs://cluster/path", "unsupported scheme 'hdfs'"},
      {"s3://ab/key", "3 to 63 characters"},
      {"s3://Bucket/key", "lower-case letters"},
      {"s3://my_bucket/key", "lower-case letters"},
      {"s3://-bucket/key", "start and end"},
      {"s3://bucket/a//b", "empty path segment"},
      {"s3://bucket//a", "empty path segment"},
      {"s3://bucket/a\nb", "control character"},
      {"s3://bucket/" + std::string(1025, 'k'), "longer than 1024"},
  };
  for (const auto& [url, why] : refused) {
    SCOPED_TRACE(url);
    StatusOr<ObjectUrl> parsed = ParseObjectUrl(url);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(why), std::string::npos) << parsed.status().message();
    EXPECT_FALSE(CheckStoragePath(url).ok());
  }
  EXPECT_TRUE(CheckStoragePath("/any/local/path").ok());
}

EnvironmentLookup FakeEnvironment(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

TEST(S3SettingsTest, EnvironmentVariablesComeFirst) {
  StatusOr<S3Settings> settings =
      ResolveS3Settings("s3", FakeEnvironment({{"AWS_ACCESS_KEY_ID", "id"},
                                               {"AWS_SECRET_ACCESS_KEY", "secret"},
                                               {"AWS_SESSION_TOKEN", "token"},
                                               {"AWS_DEFAULT_REGION", "eu-west-1"},
                                               {"HOME", "/nonexistent-home"}}));
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->credentials.access_key_id, "id");
  EXPECT_EQ(settings->credentials.session_token, "token");
  EXPECT_EQ(settings->credentials.source, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
  EXPECT_EQ(settings->region, "eu-west-1");
  EXPECT_EQ(settings->endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_FALSE(settings->path_style);  // AWS's own endpoint: virtual-hosted
}

TEST(S3SettingsTest, ServiceEndpointWinsOverTheGeneralOneAndIsPathStyle) {
  StatusOr<S3Settings> settings =
      ResolveS3Settings("s3", FakeEnvironment({{"AWS_ACCESS_KEY_ID", "id"},
                                               {"AWS_SECRET_ACCESS_KEY", "secret"},
                                               {"AWS_ENDPOINT_URL", "http://general:1"},
                                               {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"},
                                               {"AWS_REGION", "us-west-2"},
                                               {"AWS_DEFAULT_REGION", "eu-west-1"}}));
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(settings->endpoint_source, "AWS_ENDPOINT_URL_S3");
  EXPECT_EQ(settings->region, "us-west-2");
  EXPECT_TRUE(settings->path_style);
  StatusOr<S3Settings> virtual_hosted =
      ResolveS3Settings("s3", FakeEnvironment({{"AWS_ACCESS_KEY_ID", "id"},
                                               {"AWS_SECRET_ACCESS_KEY", "secret"},
                                               {"AWS_ENDPOINT_URL", "http://general:1"},
                                               {"COHORT_S3_ADDRESSING_STYLE", "virtual"}}));
  ASSERT_TRUE(virtual_hosted.ok());
  EXPECT_FALSE(virtual_hosted->path_style);
}

TEST(S3SettingsTest, ProfilesComeFromTheCredentialsAndConfigFiles) {
  testing::ScratchDirectory scratch;
  const std::string credentials = (scratch.path() / "credentials").string();
  const std::string config = (scratch.path() / "config").string();
  ASSERT_TRUE(WriteFileAtomically(credentials,
                                  "[default]\naws_access_key_id = default-id\n"
                                  "aws_secret_access_key = default-secret\n\n"
                                  "# a comment\n[work]\naws_access_key_id=work-id\n"
                                  "aws_secret_access_key = work-secret\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(config,
                                  "[default]\nregion = us-east-2\n[profile work]\n"
                                  "region = ap-south-1\ns3 =\n  addressing_style = path\n"
                                  "endpoint_url = http://10.0.0.1:7480\n"
                                  "[profile keys-in-config]\naws_access_key_id = c-id\n"
                                  "aws_secret_access_key = c-secret\n")
                  .ok());
  const std::map<std::string, std::string> files = {{"AWS_SHARED_CREDENTIALS_FILE", credentials},
                                                    {"AWS_CONFIG_FILE", config}};
  StatusOr<S3Settings> by_default = ResolveS3Settings("s3", FakeEnvironment(files));
  ASSERT_TRUE(by_default.ok()) << by_default.status().message();
  EXPECT_EQ(by_default->credentials.access_key_id, "default-id");
  EXPECT_EQ(by_default->credentials.source, "profile 'default' in " + credentials);
  EXPECT_EQ(by_default->region, "us-east-2");

  auto with_profile = files;
  with_profile["AWS_PROFILE"] = "work";
  StatusOr<S3Settings> work = ResolveS3Settings("s3", FakeEnvironment(with_profile));
  ASSERT_TRUE(work.ok()) << work.status().message();
  EXPECT_EQ(work->credentials.access_key_id, "work-id");
  EXPECT_EQ(work->credentials.secret_access_key, "work-secret");
  EXPECT_EQ(work->region, "ap-south-1");
  EXPECT_EQ(work->endpoint, "http://10.0.0.1:7480");
  EXPECT_TRUE(work->path_style);

  with_profile["AWS_PROFILE"] = "keys-in-config";
  StatusOr<S3Settings> in_config = ResolveS3Settings("s3", FakeEnvironment(with_profile));
  ASSERT_TRUE(in_config.ok()) << in_config.status().message();
  EXPECT_EQ(in_config->credentials.access_key_id, "c-id");
  EXPECT_EQ(in_config->credentials.source, "profile 'keys-in-config' in " + config);

  with_profile["AWS_PROFILE"] = "missing";
  StatusOr<S3Settings> missing = ResolveS3Settings("s3", FakeEnvironment(with_profile));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("profile 'missing'"), std::string::npos);
  EXPECT_NE(missing.status().message().find(credentials), std::string::npos);
}

TEST(S3SettingsTest, RefusesBadEndpointsAndMissingKeys) {
  EXPECT_FALSE(ResolveS3Settings("s3", FakeEnvironment({{"HOME", "/nonexistent-home"}})).ok());
  StatusOr<S3Settings> bad =
      ResolveS3Settings("s3", FakeEnvironment({{"AWS_ACCESS_KEY_ID", "id"},
                                               {"AWS_SECRET_ACCESS_KEY", "secret"},
                                               {"AWS_ENDPOINT_URL", "ftp://host"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("AWS_ENDPOINT_URL"), std::string::npos);
  EXPECT_EQ(bad.status().message().find("secret"), std::string::npos);
}

TEST(S3SettingsTest, CloudStorageUsesHmacKeysAndGooglesEndpoint) {
  StatusOr<S3Settings> gs = ResolveS3Settings(
      "gs", FakeEnvironment({{"GS_ACCESS_KEY_ID", "GOOG1E"}, {"GS_SECRET_ACCESS_KEY", "s"}}));
  ASSERT_TRUE(gs.ok()) << gs.status().message();
  EXPECT_EQ(gs->endpoint, "https://storage.googleapis.com");
  EXPECT_EQ(gs->region, "auto");
  EXPECT_FALSE(gs->path_style);
  StatusOr<S3Settings> overridden =
      ResolveS3Settings("gs", FakeEnvironment({{"GS_ACCESS_KEY_ID", "GOOG1E"},
                                               {"GS_SECRET_ACCESS_KEY", "s"},
                                               {"GS_ENDPOINT_URL", "http://127.0.0.1:1234"}}));
  ASSERT_TRUE(overridden.ok());
  EXPECT_TRUE(overridden->path_style);
  EXPECT_FALSE(ResolveS3Settings("gs", FakeEnvironment({})).ok());
}

TEST(S3XmlTest, ParsesAListingPageWithEscapedKeys) {
  StatusOr<S3ListPage> page = ParseListObjectsV2(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<Prefix>runs/</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<NextContinuationToken>1ueGcx&amp;z</NextContinuationToken>
<Contents><Key>runs/a&amp;b &lt;1&gt;</Key><LastModified>2026-11-27T00:00:00.000Z</LastModified>
<ETag>&quot;abc&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>runs/&#233;t&#xE9;</Key><Size>0</Size></Contents>
<CommonPrefixes><Prefix>runs/sub/</Prefix></CommonPrefixes></ListBucketResult>)");
  ASSERT_TRUE(page.ok()) << page.status().message();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "runs/a&b <1>");
  EXPECT_EQ(page->objects[0].size, 12u);
  EXPECT_EQ(page->objects[1].key, "runs/\xC3\xA9t\xC3\xA9");
  ASSERT_EQ(page->common_prefixes.size(), 1u);
  EXPECT_EQ(page->common_prefixes[0], "runs/sub/");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcx&z");
}

TEST(S3XmlTest, RefusesListingsOfTheWrongShape) {
  EXPECT_FALSE(ParseListObjectsV2("<Error><Code>x</Code></Error>").ok());
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Size>1</Size></Contents>"
                                  "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>x1</Size>"
                                  "</Contents></ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>")
          .ok());
}

TEST(S3XmlTest, ReadsErrorsAndUploadIds) {
  const S3ErrorBody error = ParseS3Error(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket "
      "does not exist</Message><BucketName>b</BucketName></Error>");
  EXPECT_EQ(error.code, "NoSuchBucket");
  EXPECT_EQ(error.message, "The specified bucket does not exist");
  EXPECT_EQ(ParseS3Error("").code, "");
  StatusOr<std::string> id = ParseInitiateMultipartUpload(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>2~abc</UploadId>"
      "</InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "2~abc");
  EXPECT_FALSE(ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>").ok());
  EXPECT_EQ(XmlEscape("\"a\"&<b>'"), "&quot;a&quot;&amp;&lt;b&gt;&apos;");
  EXPECT_EQ(XmlElementTexts("<A/><AB>x</AB><A>y</A>", "A"), (std::vector<std::string>{"", "y"}));
}

TEST(LocalStorageTest, TheInterfaceServesLocalFiles) {
  testing::ScratchDirectory scratch;
  const std::string directory = scratch.path().string();
  const std::string file = JoinStoragePath(directory, "a.bin");
  ASSERT_TRUE(WriteStorageFileAtomically(file, "hello world").ok());
  ASSERT_TRUE(WriteStorageFileAtomically(JoinStoragePath(directory, "z.bin"), "z").ok());
  std::filesystem::create_directory(scratch.path() / "sub");
  StatusOr<std::string> read = ReadStorageFile(file);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "hello world");
  StatusOr<std::string> range = ReadStorageFileRange(file, 6, 3);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, "wor");
  EXPECT_EQ(*StorageFileSize(file), 11u);
  EXPECT_TRUE(*StorageFileExists(file));
  StatusOr<std::vector<StorageEntry>> listing = ListStorageDirectory(directory);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 3u);
  EXPECT_EQ((*listing)[0].name, "a.bin");
  EXPECT_EQ((*listing)[0].size, 11u);
  EXPECT_TRUE((*listing)[1].is_directory);
  EXPECT_EQ(ReadStorageFile(file, 5).status().code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(RemoveStorageFile(file).ok());
  ASSERT_TRUE(RemoveStorageFile(file).ok());  // absent: still fine
  EXPECT_FALSE(*StorageFileExists(file));
  EXPECT_EQ(ReadStorageFile(file).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(StorageFileSize(file).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(ListStorageDirectory(directory + "/none").status().code(), Status::Code::kNotFound);
}

TEST(StorageForTest, RefusesMalformedUrlsBeforeAnyRequest) {
  StatusOr<Storage*> storage = StorageFor("s3://x/key");
  ASSERT_FALSE(storage.ok());
  EXPECT_NE(storage.status().message().find("s3://x/key"), std::string::npos);
  EXPECT_FALSE(StorageFor("ftp://bucket/key").ok());
}

}  // namespace
}  // namespace cohort
