// Object storage against a real S3 server: Ceph's radosgw, started for this test binary by the
// ctest fixture s3_server (scripts/s3-server.sh; tests/CMakeLists.txt), which names its directory
// in COHORT_S3_SERVER_DIR. Everything Cohort writes is read back by an independent client
// (Debian's python3-boto3), and what boto3 writes is read by Cohort, so that the two agree on the
// bytes, not only Cohort with itself. Fault cases: a wrong secret, a missing bucket, and an
// endpoint where no server listens (retried with a bound, then one error).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "base/checksum.h"
#include "base/file.h"
#include "base/s3_client.h"
#include "base/storage.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/s3_server.h"
#include "testing/scratch_directory.h"

namespace cohort {
namespace {

constexpr char kBucket[] = "cohort-test";

EnvironmentLookup Lookup(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  return bytes;
}

class S3StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::map<std::string, std::string>> server = testing::S3ServerEnvironment();
    if (!server) {
      COHORT_SKIP_OR_FAIL_IN_CI(
          "COHORT_S3_SERVER_DIR names no running S3 server: run this test through ctest, whose "
          "fixture s3_server starts one (scripts/s3-server.sh)");
    }
    server_ = *server;
    StatusOr<S3Settings> settings = ResolveS3Settings("s3", Lookup(server_));
    ASSERT_TRUE(settings.ok()) << settings.status().message();
    settings_ = *settings;
    options_.multipart_threshold = size_t{6} << 20;
    options_.part_size = size_t{5} << 20;
    options_.read_part_size = size_t{5} << 20;
    client_ = std::make_shared<const S3Client>(settings_, options_);
    storage_ = MakeObjectStorage(client_);
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = std::string("tests/") + test->name() + "-" + std::to_string(::getpid()) + "/";
  }

  std::string Url(const std::string& name) const {
    return std::string("s3://") + kBucket + "/" + prefix_ + name;
  }

  // boto3, the independent client, on the fixture's server; its standard output.
  std::string Boto3(const std::string& snippet) { return testing::RunBoto3(server_, snippet); }

  std::map<std::string, std::string> server_;
  S3Settings settings_;
  S3ClientOptions options_;
  std::shared_ptr<const S3Client> client_;
  std::unique_ptr<Storage> storage_;
  std::string prefix_;
};

TEST_F(S3StorageTest, WhatCohortWritesBoto3ReadsByteForByte) {
  const std::string contents = RandomBytes(100000, 1);
  const std::string name = "dir/a file+with $pecial chars \xC3\xA9.bin";
  ASSERT_TRUE(storage_->WriteFileAtomically(Url(name), contents).ok());
  const std::string output =
      Boto3("body = s3.get_object(Bucket='" + std::string(kBucket) + "', Key='" + prefix_ +
            "dir/a file+with $pecial chars \\u00e9.bin')['Body'].read()\n"
            "print(len(body), hashlib.sha256(body).hexdigest())\n");
  EXPECT_EQ(output, "100000 " + Sha256Hex(contents) + "\n");
}

// An object larger than a part (5 MiB here) is read in ranged parts, several at a time, bound to
// the first part's ETag; an empty object is read as empty (its first range is past its end).
TEST_F(S3StorageTest, ALargeObjectIsReadInPartsAndAnEmptyOneAsEmpty) {
  const std::string digest = Boto3(
      "import random\nbody = random.Random(3).randbytes((13 << 20) + 12345)\n"
      "s3.put_object(Bucket='" +
      std::string(kBucket) + "', Key='" + prefix_ +
      "large.bin', Body=body)\n"
      "s3.put_object(Bucket='" +
      kBucket + "', Key='" + prefix_ +
      "empty.bin', Body=b'')\n"
      "print(hashlib.sha256(body).hexdigest())\n");
  StatusOr<std::string> large = storage_->ReadFile(Url("large.bin"), size_t{20} << 20);
  ASSERT_TRUE(large.ok()) << large.status().message();
  EXPECT_EQ(large->size(), (size_t{13} << 20) + 12345);
  EXPECT_EQ(Sha256Hex(*large) + "\n", digest);
  StatusOr<std::string> bounded = storage_->ReadFile(Url("large.bin"), size_t{10} << 20);
  EXPECT_EQ(bounded.status().code(), Status::Code::kInvalidArgument);
  StatusOr<std::string> empty = storage_->ReadFile(Url("empty.bin"), 100);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(*empty, "");
}

TEST_F(S3StorageTest, WhatBoto3WritesCohortReadsWholeInRangesAndListed) {
  Boto3("s3.put_object(Bucket='" + std::string(kBucket) + "', Key='" + prefix_ +
        "from-boto3.txt', Body=b'0123456789abcdef')\n"
        "s3.put_object(Bucket='" +
        kBucket + "', Key='" + prefix_ + "sub/nested.txt', Body=b'n')\n");
  StatusOr<std::string> whole = storage_->ReadFile(Url("from-boto3.txt"), 1 << 20);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(*whole, "0123456789abcdef");
  StatusOr<std::string> middle = storage_->ReadFileRange(Url("from-boto3.txt"), 10, 4);
  ASSERT_TRUE(middle.ok()) << middle.status().message();
  EXPECT_EQ(*middle, "abcd");
  StatusOr<std::string> tail = storage_->ReadFileRange(Url("from-boto3.txt"), 12, 100);
  ASSERT_TRUE(tail.ok()) << tail.status().message();
  EXPECT_EQ(*tail, "cdef");
  StatusOr<std::string> past_end = storage_->ReadFileRange(Url("from-boto3.txt"), 16, 4);
  ASSERT_TRUE(past_end.ok()) << past_end.status().message();
  EXPECT_EQ(*past_end, "");
  EXPECT_EQ(*storage_->FileSize(Url("from-boto3.txt")), 16u);
  EXPECT_TRUE(*storage_->FileExists(Url("from-boto3.txt")));
  EXPECT_FALSE(*storage_->FileExists(Url("absent.txt")));
  EXPECT_EQ(storage_->ReadFile(Url("absent.txt"), 100).status().code(), Status::Code::kNotFound);
  // A bound smaller than the object stops the read.
  StatusOr<std::string> bounded = storage_->ReadFile(Url("from-boto3.txt"), 8);
  ASSERT_FALSE(bounded.ok());
  EXPECT_EQ(bounded.status().code(), Status::Code::kInvalidArgument);

  StatusOr<std::vector<StorageEntry>> listing =
      storage_->ListDirectory(std::string("s3://") + kBucket + "/" + prefix_);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  ASSERT_EQ(listing->size(), 2u);
  EXPECT_EQ((*listing)[0].name, "from-boto3.txt");
  EXPECT_EQ((*listing)[0].size, 16u);
  EXPECT_FALSE((*listing)[0].is_directory);
  EXPECT_EQ((*listing)[1].name, "sub");
  EXPECT_TRUE((*listing)[1].is_directory);
}

TEST_F(S3StorageTest, LargeObjectsGoUpInParallelPartsAndBoto3SeesOneWholeObject) {
  const std::string contents = RandomBytes((size_t{13} << 20) + 12345, 2);  // 3 parts of 5 MiB
  ASSERT_TRUE(storage_->WriteFileAtomically(Url("big.bin"), contents).ok());
  const std::string output = Boto3(
      "head = s3.head_object(Bucket='" + std::string(kBucket) + "', Key='" + prefix_ +
      "big.bin')\nbody = s3.get_object(Bucket='" + kBucket + "', Key='" + prefix_ +
      "big.bin')['Body'].read()\n"
      "uploads = s3.list_multipart_uploads(Bucket='" +
      kBucket + "', Prefix='" + prefix_ +
      "').get('Uploads', [])\n"
      "print(head['ETag'].strip('\"').split('-')[1], len(body), hashlib.sha256(body).hexdigest(),"
      " len(uploads))\n");
  EXPECT_EQ(output, "3 " + std::to_string(contents.size()) + " " + Sha256Hex(contents) + " 0\n");
  StatusOr<std::string> back = storage_->ReadFile(Url("big.bin"), contents.size());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == contents);
}

TEST_F(S3StorageTest, ListingFollowsContinuationTokens) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(storage_->WriteFileAtomically(Url("f" + std::to_string(i)), "x").ok());
  }
  StatusOr<S3Client::Listing> listing =
      client_->ListObjects(kBucket, prefix_, "", /*max_entries=*/100, /*page_size=*/2);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  ASSERT_EQ(listing->objects.size(), 7u);
  EXPECT_EQ(listing->objects[6].key, prefix_ + "f6");
  StatusOr<S3Client::Listing> bounded = client_->ListObjects(kBucket, prefix_, "", 3, 2);
  ASSERT_FALSE(bounded.ok());
  EXPECT_NE(bounded.status().message().find("more than 3 entries"), std::string::npos);
}

TEST_F(S3StorageTest, RemovedObjectsAreGoneForBoto3Too) {
  ASSERT_TRUE(storage_->WriteFileAtomically(Url("doomed"), "bye").ok());
  ASSERT_TRUE(storage_->RemoveFile(Url("doomed")).ok());
  ASSERT_TRUE(storage_->RemoveFile(Url("doomed")).ok());  // absent: still fine
  const std::string output = Boto3("print(s3.list_objects_v2(Bucket='" + std::string(kBucket) +
                                   "', Prefix='" + prefix_ + "')['KeyCount'])\n");
  EXPECT_EQ(output, "0\n");
}

TEST_F(S3StorageTest, PathsFromTheProcessEnvironmentReachTheServer) {
  for (const auto& [name, value] : server_) ::setenv(name.c_str(), value.c_str(), 1);
  ASSERT_TRUE(WriteStorageFileAtomically(Url("via-env"), "env").ok());
  StatusOr<std::string> back = ReadStorageFile(Url("via-env"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, "env");
}

TEST_F(S3StorageTest, GsUrlsSpeakTheSameProtocolToAnOverriddenEndpoint) {
  StatusOr<S3Settings> gs =
      ResolveS3Settings("gs", Lookup({{"GS_ACCESS_KEY_ID", server_["AWS_ACCESS_KEY_ID"]},
                                      {"GS_SECRET_ACCESS_KEY", server_["AWS_SECRET_ACCESS_KEY"]},
                                      {"GS_ENDPOINT_URL", server_["AWS_ENDPOINT_URL"]}}));
  ASSERT_TRUE(gs.ok()) << gs.status().message();
  std::unique_ptr<Storage> storage = MakeObjectStorage(std::make_shared<const S3Client>(*gs));
  ASSERT_TRUE(
      storage->WriteFileAtomically("gs://" + std::string(kBucket) + "/" + prefix_ + "g", "via gs")
          .ok());
  EXPECT_EQ(Boto3("print(s3.get_object(Bucket='" + std::string(kBucket) + "', Key='" + prefix_ +
                  "g')['Body'].read().decode())\n"),
            "via gs\n");
  EXPECT_FALSE(storage->WriteFileAtomically(Url("wrong-scheme"), "x").ok());
}

TEST_F(S3StorageTest, AWrongSecretFailsAtOnceWithOneClearLine) {
  S3Settings wrong = settings_;
  wrong.credentials.secret_access_key = "not-the-secret-5f3a";
  const S3Client client(wrong, options_);
  const auto start = std::chrono::steady_clock::now();
  const Status status = client.PutObject({"s3", kBucket, prefix_ + "denied"}, "x");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  const std::string& message = status.message();
  EXPECT_NE(message.find("PutObject s3://cohort-test/" + prefix_ + "denied"), std::string::npos)
      << message;
  EXPECT_NE(message.find("403 SignatureDoesNotMatch"), std::string::npos) << message;
  EXPECT_NE(message.find("endpoint " + settings_.endpoint), std::string::npos) << message;
  EXPECT_NE(message.find("credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("not-the-secret-5f3a"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LT(elapsed, std::chrono::seconds(5));  // no retries
  EXPECT_EQ(Boto3("print(s3.list_objects_v2(Bucket='" + std::string(kBucket) + "', Prefix='" +
                  prefix_ + "')['KeyCount'])\n"),
            "0\n");
}

TEST_F(S3StorageTest, AMissingBucketIsNamed) {
  StatusOr<std::string> read = storage_->ReadFile("s3://no-such-bucket-cohort/key", 100);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kNotFound);
  EXPECT_NE(read.status().message().find("NoSuchBucket"), std::string::npos)
      << read.status().message();
  const Status write = storage_->WriteFileAtomically("s3://no-such-bucket-cohort/key", "x");
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.message().find("NoSuchBucket"), std::string::npos) << write.message();
}

TEST_F(S3StorageTest, AnEndpointWithoutAServerIsRetriedWithABoundThenReported) {
  // Loopback's discard port, where nothing listens: what a client sees once its server stopped.
  S3Settings gone = settings_;
  gone.endpoint = "http://127.0.0.1:9";
  S3ClientOptions options = options_;
  options.retry.max_attempts = 4;
  options.retry.initial_backoff = std::chrono::milliseconds(50);
  options.retry.max_total = std::chrono::milliseconds(10000);
  const S3Client client(gone, options);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> read = client.GetObject({"s3", kBucket, "k"}, 100);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(read.status().message().find("failed after 4 attempts"), std::string::npos)
      << read.status().message();
  EXPECT_NE(read.status().message().find("endpoint http://127.0.0.1:9"), std::string::npos);
  // Back-off of 25-50, 50-100 and 100-200 ms between the attempts: at least 175 ms in all.
  EXPECT_GE(elapsed, std::chrono::milliseconds(175));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

}  // namespace
}  // namespace cohort
