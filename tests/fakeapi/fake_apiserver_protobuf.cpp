// Protobuf request bodies of the fake API server: the runtime.Unknown envelope and a v1
// ConfigMap (k8s.io/api/core/v1/generated.proto, k8s.io/apimachinery/.../meta/v1/generated.proto).

#include "fakeapi/fake_apiserver_protobuf.h"

#include <fmt/format.h>

#include <cstdint>
#include <ctime>
#include <string>

#include "fakeapi/fake_apiserver_status.h"
#include "fakeapi/fake_apiserver_tls.h"

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

ApiError malformed(std::string_view what) {
  return bad_request(
      fmt::format("the body of the request could not be decoded as protobuf: {}", what));
}

// One field of a message: its number and, for the wire types the messages above use, its value.
struct Field {
  std::uint32_t number = 0;
  int wire_type = 0;
  std::uint64_t varint = 0;  // wire type 0
  std::string_view bytes;    // wire type 2
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return data_.empty(); }

  Field next() {
    const std::uint64_t key = varint();
    Field field;
    field.number = static_cast<std::uint32_t>(key >> 3);
    field.wire_type = static_cast<int>(key & 7);
    switch (field.wire_type) {
      case 0:
        field.varint = varint();
        break;
      case 1:
        skip(8);
        break;
      case 2: {
        const std::uint64_t length = varint();
        if (length > data_.size()) throw malformed("a length runs past the end");
        field.bytes = data_.substr(0, length);
        data_.remove_prefix(length);
        break;
      }
      case 5:
        skip(4);
        break;
      default:
        throw malformed(fmt::format("wire type {}", field.wire_type));
    }
    return field;
  }

 private:
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (data_.empty()) throw malformed("a varint runs past the end");
      const auto byte = static_cast<unsigned char>(data_.front());
      data_.remove_prefix(1);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    throw malformed("a varint is too long");
  }
  void skip(std::size_t count) {
    if (count > data_.size()) throw malformed("a fixed-size field runs past the end");
    data_.remove_prefix(count);
  }

  std::string_view data_;
};

// A map<string, string|bytes> entry: key = 1, value = 2.
std::pair<std::string, std::string> map_entry(std::string_view bytes) {
  std::pair<std::string, std::string> entry;
  for (Reader reader(bytes); !reader.done();) {
    const Field field = reader.next();
    if (field.number == 1) entry.first = field.bytes;
    if (field.number == 2) entry.second = field.bytes;
  }
  return entry;
}

// metav1.Time: seconds = 1, nanos = 2. The zero time (what a client sends for an unset
// creationTimestamp) is null.
json time_of(std::string_view bytes) {
  std::int64_t seconds = 0;
  for (Reader reader(bytes); !reader.done();) {
    const Field field = reader.next();
    if (field.number == 1) seconds = static_cast<std::int64_t>(field.varint);
  }
  if (seconds == 0) return nullptr;
  const std::time_t time = seconds;
  std::tm utc{};
  gmtime_r(&time, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

json object_meta(std::string_view bytes) {
  json metadata = json::object();
  for (Reader reader(bytes); !reader.done();) {
    const Field field = reader.next();
    // Clients write every optional field, unset ones empty or zero: JSON omits those.
    if (field.wire_type == 2 ? field.bytes.empty() : field.varint == 0) continue;
    switch (field.number) {
      case 1:
        metadata["name"] = field.bytes;
        break;
      case 2:
        metadata["generateName"] = field.bytes;
        break;
      case 3:
        metadata["namespace"] = field.bytes;
        break;
      case 4:
        metadata["selfLink"] = field.bytes;
        break;
      case 5:
        metadata["uid"] = field.bytes;
        break;
      case 6:
        metadata["resourceVersion"] = field.bytes;
        break;
      case 7:
        metadata["generation"] = static_cast<std::int64_t>(field.varint);
        break;
      case 8:
      case 9: {
        json time = time_of(field.bytes);
        if (!time.is_null())
          metadata[field.number == 8 ? "creationTimestamp" : "deletionTimestamp"] = time;
        break;
      }
      case 10:
        metadata["deletionGracePeriodSeconds"] = static_cast<std::int64_t>(field.varint);
        break;
      case 11:
      case 12: {
        auto [key, value] = map_entry(field.bytes);
        metadata[field.number == 11 ? "labels" : "annotations"][key] = value;
        break;
      }
      case 14:
        metadata["finalizers"].push_back(field.bytes);
        break;
      default:
        throw unsupported_media_type(fmt::format(
            "application/json (this fake does not decode ObjectMeta field {} from protobuf)",
            field.number));
    }
  }
  return metadata;
}

json config_map(std::string_view bytes) {
  json object = {{"kind", "ConfigMap"}, {"apiVersion", "v1"}};
  for (Reader reader(bytes); !reader.done();) {
    const Field field = reader.next();
    switch (field.number) {
      case 1:
        object["metadata"] = object_meta(field.bytes);
        break;
      case 2: {
        auto [key, value] = map_entry(field.bytes);
        object["data"][key] = value;
        break;
      }
      case 3: {
        auto [key, value] = map_entry(field.bytes);
        object["binaryData"][key] = base64_encode(value);
        break;
      }
      case 4:
        object["immutable"] = field.varint != 0;
        break;
      default:
        throw malformed(fmt::format("unknown ConfigMap field {}", field.number));
    }
  }
  return object;
}

}  // namespace

json decode_protobuf_object(std::string_view body) {
  constexpr std::string_view kMagic("k8s\0", 4);
  if (!body.starts_with(kMagic)) throw malformed("no k8s envelope");
  body.remove_prefix(kMagic.size());
  // runtime.Unknown: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
  // contentType = 4.
  std::string api_version, kind;
  std::string_view raw;
  for (Reader reader(body); !reader.done();) {
    const Field field = reader.next();
    if (field.number == 1) {
      for (Reader type_meta(field.bytes); !type_meta.done();) {
        const Field meta = type_meta.next();
        if (meta.number == 1) api_version = meta.bytes;
        if (meta.number == 2) kind = meta.bytes;
      }
    } else if (field.number == 2) {
      raw = field.bytes;
    } else if (field.number == 3 && !field.bytes.empty()) {
      throw malformed(fmt::format("content encoding {}", field.bytes));
    }
  }
  if (api_version == "v1" && kind == "ConfigMap") return config_map(raw);
  throw unsupported_media_type(
      fmt::format("application/json (this fake decodes only v1 ConfigMap from protobuf, not {} {})",
                  api_version, kind));
}

}  // namespace gpushare::testing::fakeapi
