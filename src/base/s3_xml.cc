#include "base/s3_xml.h"

#include <charconv>

namespace cohort {
namespace {

void AppendUtf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// XML text with its references replaced; an unknown reference is kept as written.
std::string DecodeXmlText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    const size_t semicolon = text.find(';', i);
    if (semicolon == std::string_view::npos || semicolon - i > 10) {
      out += text[i];
      continue;
    }
    const std::string_view entity = text.substr(i + 1, semicolon - i - 1);
    if (entity == "amp") {
      out += '&';
    } else if (entity == "lt") {
      out += '<';
    } else if (entity == "gt") {
      out += '>';
    } else if (entity == "quot") {
      out += '"';
    } else if (entity == "apos") {
      out += '\'';
    } else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x' || entity[1] == 'X';
      const std::string_view digits = entity.substr(hex ? 2 : 1);
      uint32_t code_point = 0;
      const auto [end, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), code_point, hex ? 16 : 10);
      if (error != std::errc() || end != digits.data() + digits.size() || code_point > 0x10FFFF) {
        out += text.substr(i, semicolon - i + 1);
      } else {
        AppendUtf8(code_point, out);
      }
    } else {
      out += text.substr(i, semicolon - i + 1);
    }
    i = semicolon;
  }
  return out;
}

StatusOr<uint64_t> ParseSize(const std::string& text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::InvalidArgument("S3 listing: Size '" + text + "' is not a number");
  }
  return value;
}

}  // namespace

std::vector<std::string> XmlElementTexts(std::string_view xml, std::string_view name,
                                         size_t max_count) {
  std::vector<std::string> texts;
  const std::string open = "<" + std::string(name);
  const std::string close = "</" + std::string(name) + ">";
  size_t at = 0;
  while (texts.size() < max_count) {
    at = xml.find(open, at);
    if (at == std::string_view::npos) break;
    const size_t after_name = at + open.size();
    if (after_name >= xml.size()) break;
    const char next = xml[after_name];
    if (next != '>' && next != ' ' && next != '/' && next != '\t' && next != '\n') {
      at = after_name;  // a longer name with the same beginning
      continue;
    }
    const size_t tag_end = xml.find('>', after_name);
    if (tag_end == std::string_view::npos) break;
    if (xml[tag_end - 1] == '/') {
      texts.emplace_back();
      at = tag_end + 1;
      continue;
    }
    const size_t end = xml.find(close, tag_end + 1);
    if (end == std::string_view::npos) break;
    texts.push_back(DecodeXmlText(xml.substr(tag_end + 1, end - tag_end - 1)));
    at = end + close.size();
  }
  return texts;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

StatusOr<S3ListPage> ParseListObjectsV2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return Status::InvalidArgument("S3 listing: the answer is not a ListBucketResult document");
  }
  S3ListPage page;
  // Each Contents element read raw, so that its Key is decoded exactly once.
  size_t at = 0;
  while ((at = xml.find("<Contents>", at)) != std::string_view::npos) {
    const size_t end = xml.find("</Contents>", at);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("S3 listing: a Contents element is not closed");
    }
    const std::string_view element = xml.substr(at, end - at);
    const std::vector<std::string> keys = XmlElementTexts(element, "Key", 1);
    const std::vector<std::string> sizes = XmlElementTexts(element, "Size", 1);
    if (keys.empty() || sizes.empty()) {
      return Status::InvalidArgument("S3 listing: a Contents element has no Key or no Size");
    }
    StatusOr<uint64_t> size = ParseSize(sizes[0]);
    if (!size.ok()) return size.status();
    page.objects.push_back({keys[0], *size});
    at = end;
  }
  at = 0;
  while ((at = xml.find("<CommonPrefixes>", at)) != std::string_view::npos) {
    const size_t end = xml.find("</CommonPrefixes>", at);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("S3 listing: a CommonPrefixes element is not closed");
    }
    const std::vector<std::string> prefix = XmlElementTexts(xml.substr(at, end - at), "Prefix", 1);
    if (!prefix.empty()) page.common_prefixes.push_back(prefix[0]);
    at = end;
  }
  const std::vector<std::string> truncated = XmlElementTexts(xml, "IsTruncated", 1);
  page.truncated = !truncated.empty() && truncated[0] == "true";
  if (page.truncated) {
    const std::vector<std::string> token = XmlElementTexts(xml, "NextContinuationToken", 1);
    if (token.empty() || token[0].empty()) {
      return Status::InvalidArgument(
          "S3 listing: the page is truncated but has no NextContinuationToken");
    }
    page.next_continuation_token = token[0];
  }
  return page;
}

S3ErrorBody ParseS3Error(std::string_view xml) {
  S3ErrorBody error;
  if (xml.find("<Error") == std::string_view::npos) return error;
  const std::vector<std::string> code = XmlElementTexts(xml, "Code", 1);
  const std::vector<std::string> message = XmlElementTexts(xml, "Message", 1);
  if (!code.empty()) error.code = code[0];
  if (!message.empty()) error.message = message[0];
  return error;
}

StatusOr<std::string> ParseInitiateMultipartUpload(std::string_view xml) {
  const std::vector<std::string> id = XmlElementTexts(xml, "UploadId", 1);
  if (id.empty() || id[0].empty()) {
    return Status::InvalidArgument(
        "S3 multipart upload: the answer to CreateMultipartUpload has no UploadId");
  }
  return id[0];
}

}  // namespace cohort
