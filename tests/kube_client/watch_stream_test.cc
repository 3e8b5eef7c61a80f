#include "kube/client/watch_stream.h"

#include <gtest/gtest.h>

namespace cohort::kube {
namespace {

std::vector<std::string> Split(WatchLineSplitter& splitter, const std::string& stream,
                               size_t piece) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < stream.size(); at += piece) {
    StatusOr<bool> more =
        splitter.Feed(std::string_view(stream).substr(at, piece), [&](std::string_view line) {
          lines.emplace_back(line);
          return true;
        });
    EXPECT_TRUE(more.ok() && *more);
  }
  return lines;
}

TEST(WatchLineSplitterTest, LinesComeOutWholeHoweverTheBytesArrive) {
  const std::string stream = "{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}\n{\"partial";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SCOPED_TRACE(piece);
    WatchLineSplitter splitter(1024);
    EXPECT_EQ(Split(splitter, stream, piece),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
    EXPECT_EQ(splitter.pending_bytes(), std::string("{\"partial").size());
  }
}

TEST(WatchLineSplitterTest, StopsWhenTheReceiverSaysSo) {
  WatchLineSplitter splitter(1024);
  int lines = 0;
  StatusOr<bool> more = splitter.Feed("1\n2\n3\n", [&](std::string_view) { return ++lines < 2; });
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_EQ(lines, 2);
}

TEST(WatchLineSplitterTest, ALineOverTheBoundIsRefusedBeforeItEnds) {
  WatchLineSplitter splitter(8);
  auto ignore = [](std::string_view) { return true; };
  ASSERT_TRUE(splitter.Feed("12345678\n", ignore).ok());  // exactly the bound
  ASSERT_TRUE(splitter.Feed("12345", ignore).ok());
  StatusOr<bool> more = splitter.Feed("6789", ignore);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(more.status().message().find("8 bytes"), std::string::npos);
}

TEST(ParseWatchEventTest, EventTypes) {
  StatusOr<WatchEvent> added =
      ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "watch");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->type, WatchEvent::Type::kAdded);
  EXPECT_EQ(added->object["metadata"]["name"], "a");
  StatusOr<WatchEvent> bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})", "watch");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"DELETED","object":{}})", "w")->type,
            WatchEvent::Type::kDeleted);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"MODIFIED","object":{}})", "w")->type,
            WatchEvent::Type::kModified);
}

TEST(ParseWatchEventTest, ErrorsAndMalformedLines) {
  StatusOr<WatchEvent> expired =
      ParseWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",)"
                      R"json("message":"too old resource version: 5 (90)"}})json",
                      "watch Pod objects in namespace default");
  EXPECT_EQ(expired.status().code(), Status::Code::kOutOfRange);
  EXPECT_EQ(expired.status().message(),
            "cannot watch Pod objects in namespace default: too old resource version: 5 (90) "
            "(HTTP 410 Expired)");
  StatusOr<WatchEvent> internal = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"etcd"}})", "watch");
  EXPECT_EQ(internal.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(ParseWatchEvent("not json", "watch").status().code(), Status::Code::kInternal);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"ADDED"})", "watch").status().code(),
            Status::Code::kInternal);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"RESYNC","object":{}})", "watch").status().code(),
            Status::Code::kInternal);
}

}  // namespace
}  // namespace cohort::kube
